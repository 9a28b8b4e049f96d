// The chat page (docs/DESIGN.md [react]): send a message, watch the turn's events arrive over
// SSE (status line, streamed answer, tool call cards, approval questions, proposals), stop
// it, and list, reopen and delete conversations. The input stays locked while a turn runs,
// here or in another window (the server's 409 and the conversation's lock), because a second
// message to a running conversation would race the first.

import { api, ApiError, setApiKey, sseEvents, startChat, whenUnauthorized } from './api.js';
import { ToolCard, el } from './cards.js';
import { LANGUAGES, label, language, pickLanguage, remember, setLanguage, t } from './i18n.js';
import { renderMarkdown } from './markdown.js';

const $ = (id) => document.getElementById(id);
const ui = {
  log: $('log'), composer: $('composer'), input: $('input'), send: $('send'), stop: $('stop'),
  status: $('status'), elapsed: $('elapsed'), mode: $('mode'), verification: $('verification'),
  lang: $('lang'), list: $('conv-list'), more: $('conv-more'), empty: $('conv-empty'),
  newConv: $('new-conv'), sidebar: $('sidebar'), toggle: $('toggle-list'), auth: $('auth'),
  listError: $('conv-error'),
  authKey: $('auth-key'),
};

const BUSY_POLL_MS = 1000;

const state = {
  convId: null, // the open conversation (null: a new one, made by the first message)
  turn: null, // the Turn running in this window
  busy: null, // {timer} while another window's turn holds the conversation
  cursor: null, // next page of the conversation list
  since: 0, // when the current status began (performance.now())
  tick: null, // the elapsed-time timer
};

/* ---- status line and input lock ------------------------------------------------------ */

// kind: idle | busy | done | warn | error (styles the line; the text is announced).
function setStatus(key, params, kind = 'busy') {
  label(ui.status, key, params);
  ui.status.dataset.state = kind;
}

function startElapsed(card) {
  clearInterval(state.tick);
  state.since = performance.now();
  const show = () => {
    const ms = performance.now() - state.since;
    ui.elapsed.textContent = `${(ms / 1000).toFixed(1)} s`;
    if (card && card.status === 'pending') card.setElapsed(ms);
  };
  show();
  state.tick = setInterval(show, 100);
}

function stopElapsed() {
  clearInterval(state.tick);
  state.tick = null;
  ui.elapsed.textContent = '';
}

function lockInput(locked, stoppable) {
  const hadFocus = document.activeElement === ui.input || document.activeElement === ui.send;
  ui.input.disabled = locked;
  ui.send.disabled = locked;
  ui.stop.disabled = !stoppable;
  ui.composer.setAttribute('aria-busy', String(locked));
  // Keep keyboard users somewhere useful: on Stop while locked, back in the box after.
  if (locked && stoppable && hadFocus) ui.stop.focus();
  if (!locked && (document.activeElement === ui.stop || document.activeElement === document.body)) {
    ui.input.focus();
  }
}

/* ---- the log ------------------------------------------------------------------------- */

function nearBottom() {
  return ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 80;
}

function scrollDown(force) {
  if (force || nearBottom()) ui.log.scrollTop = ui.log.scrollHeight;
}

function article(role) {
  const a = el('article', `msg ${role}`);
  a.append(label(el('h3', 'who'), `role.${role}`));
  ui.log.append(a);
  return a;
}

// One exchange in the log: the person's message, then the assistant's text segments and tool
// cards in the order they happened, then notices about how the turn ended.
class Turn {
  constructor(userText) {
    if (userText !== null) article('user').append(el('div', 'text', userText));
    this.article = article('assistant');
    this.flow = el('div', 'flow');
    this.notices = el('div', 'notices');
    this.article.append(this.flow, this.notices);
    this.cards = new Map();
    this.seg = null; // the text segment deltas go to
    this.kept = 0; // its length at the last status event (a retry drops what follows)
    this.pending = false; // a render is scheduled
    this.finalSeen = false;
  }

  segment() {
    if (!this.seg) {
      this.seg = { el: el('div', 'answer'), text: '' };
      this.flow.append(this.seg.el);
    }
    return this.seg;
  }

  addText(text) {
    this.segment().text += text;
    this.render();
  }

  setText(text) {
    this.segment().text = text;
    this.render(true);
  }

  render(now) {
    const paint = () => {
      this.pending = false;
      if (!this.seg) return;
      const stick = nearBottom();
      this.seg.el.replaceChildren(renderMarkdown(this.seg.text));
      scrollDown(stick);
    };
    if (now) return paint();
    if (this.pending) return;
    this.pending = true;
    requestAnimationFrame(paint);
  }

  markStatus() {
    this.kept = this.seg ? this.seg.text.length : 0;
  }

  // kind "retry": the reply is being asked for again; what it streamed since the last status
  // will come again.
  dropSinceStatus() {
    if (!this.seg) return;
    this.seg.text = this.seg.text.slice(0, this.kept);
    this.render(true);
  }

  card(call) {
    let c = this.cards.get(call.call_id);
    if (!c) {
      const stick = nearBottom();
      c = new ToolCard(call);
      this.cards.set(call.call_id, c);
      this.flow.append(c.outer);
      this.seg = null; // text after a call is a new segment
      scrollDown(stick);
    }
    return c;
  }

  notice(cls, key, params) {
    return this.noticeEl(label(el('p', `notice ${cls}`), key, params));
  }

  noticeText(cls, text) {
    return this.noticeEl(el('p', `notice ${cls}`, text));
  }

  noticeEl(p) {
    const stick = nearBottom();
    this.notices.append(p);
    scrollDown(stick);
    return p;
  }

  // Claims in the answer that no call of the turn backs (rein's claims check): shown on the
  // answer; "reask" means they went back to the model, whose corrected answer follows.
  claims(action, claims) {
    if (!claims || !claims.length) return;
    if (action === 'reask') {
      this.notice('muted', 'turn.claims.reask', { n: claims.length });
      this.seg = null;
      return;
    }
    if (this.claimsShown) return;
    this.claimsShown = true;
    const box = el('div', 'notice warn claims');
    box.append(label(el('p', 'claims-title'), 'turn.claims.refuted', { n: claims.length }));
    const list = el('ul');
    for (const c of claims) {
      const item = el('li');
      item.append(el('q', null, c.text || ''), el('span', 'claims-why', ` ${c.evidence || ''}`));
      list.append(item);
    }
    box.append(list);
    this.noticeEl(box);
  }

  // What a person must know about how the turn ended: it failed, calls never got a result,
  // checks denied calls, or it was stopped.
  summarize(stop, success, detail) {
    const list = (status) =>
      [...this.cards.values()].filter((c) => c.status === status).map((c) => `${c.tool} (${c.callId})`);
    const pending = list('pending');
    if (!stop) {
      this.notice('error', 'turn.broken');
    } else if (stop === 'cancelled') {
      const cancelled = list('cancelled');
      this.notice('warn', 'status.cancelled');
      if (cancelled.length) this.notice('warn', 'turn.cancelledCalls', { calls: cancelled.join(', ') });
      else if (!this.cards.size) this.notice('muted', 'turn.cancelledNone');
    } else if (success === false) {
      this.notice('warn', 'turn.problem', { reason: { key: `turn.stop.${stop}` } });
    }
    if (detail) this.noticeText('muted', detail);
    if (pending.length) this.notice('warn', 'turn.pending', { n: pending.length, calls: pending.join(', ') });
    const denied = list('denied');
    if (denied.length) this.notice('warn', 'turn.denied', { calls: denied.join(', ') });
  }
}

/* ---- a turn in this window ------------------------------------------------------------ */

function statusFor(ev) {
  const tool = ev.tool || '';
  if (ev.state === 'idle') return;
  setStatus(`status.${ev.state}`, { tool });
}

function proposalAction(card) {
  return async (run) => {
    const out = await api.proposal(state.convId, card.callId, run);
    const meta = out.result && out.result.meta ? out.result.meta : {};
    return { status: out.status, result: out.result, latency_ms: meta.latency_ms };
  };
}

function handleEvent(turn, ev) {
  switch (ev.type) {
    case 'status': {
      turn.markStatus();
      statusFor(ev);
      const card = ev.call_id ? turn.cards.get(ev.call_id) : null;
      startElapsed(ev.state === 'executing' ? card : null);
      break;
    }
    case 'text_delta':
      turn.addText(ev.text || '');
      break;
    case 'tool_call':
      turn.card(ev);
      break;
    case 'tool_result': {
      const card = turn.card(ev);
      card.setTool(ev.tool);
      card.setResult(ev.status, ev.result, ev.latency_ms);
      if (ev.status === 'proposed') card.propose(proposalAction(card));
      break;
    }
    case 'approval_required': {
      const card = turn.card(ev);
      card.setArguments(ev.arguments);
      const first = card.ask(ev, (approve) => api.approve(state.convId, ev.call_id, approve));
      first.focus();
      break;
    }
    case 'verification':
      turn.card(ev).verification(ev);
      break;
    case 'claims':
      turn.claims(ev.action, ev.claims);
      break;
    case 'final':
      turn.finalSeen = true;
      if (ev.text && (!turn.seg || turn.seg.text !== ev.text)) turn.setText(ev.text);
      turn.final = ev;
      break;
    case 'error':
      if (ev.kind === 'retry') {
        turn.dropSinceStatus();
        turn.notice('muted', 'turn.retry');
      } else {
        turn.noticeText(ev.kind === 'warning' ? 'muted' : 'error', ev.message || ev.kind);
      }
      break;
    default:
      break;
  }
}

// The result object that ends the stream (DESIGN's POST /agent/chat object).
function handleResult(turn, res) {
  if (res.conversation_id) adoptConversation(res.conversation_id);
  for (const c of res.tool_calls || []) {
    const card = turn.card({ call_id: c.call_id, tool: c.sent_name || c.tool, arguments: c.arguments });
    card.setTool(c.tool);
    if (card.status === 'pending' && c.status !== 'pending') card.setResult(c.status, c.result, c.latency_ms);
  }
  if (res.meta) turn.claims('report', res.meta.claims);
  turn.result = res;
}

function adoptConversation(id) {
  if (!id || id === state.convId) return;
  state.convId = id;
  history.replaceState(null, '', `#c=${encodeURIComponent(id)}`);
  markCurrent();
}

async function sendMessage(text) {
  const turn = new Turn(text);
  const abort = new AbortController();
  state.turn = { view: turn, abort, stopping: false };
  lockInput(true, true);
  setStatus('status.sending');
  startElapsed(null);
  scrollDown(true);
  const request = { message: text, mode: ui.mode.value, verification: ui.verification.value };
  if (state.convId) request.conversation_id = state.convId;
  try {
    const resp = await startChat(request, abort.signal);
    adoptConversation(resp.headers.get('X-Conversation-Id'));
    for await (const sse of sseEvents(resp.body)) {
      let data;
      try {
        data = JSON.parse(sse.data);
      } catch {
        continue;
      }
      if (sse.event === 'result') handleResult(turn, data);
      else if (data.type === 'start') adoptConversation(data.conversation_id);
      else if (data.type) handleEvent(turn, data);
    }
  } catch (e) {
    if (e instanceof ApiError && e.status === 409) {
      // Not sent: give the text back and wait for the other window's turn.
      turn.article.previousSibling.remove();
      turn.article.remove();
      ui.input.value = text;
      state.turn = null;
      showBusy(e.body && e.body.error ? e.body.error.lock : null);
      return;
    }
    // An HTTP error answer says what was wrong; a stream that broke is told by finishTurn.
    if (e instanceof ApiError && e.status > 0) turn.noticeText('error', e.message);
    else if (e instanceof ApiError && e.code === 'network') turn.notice('error', 'error.network');
  }
  finishTurn(turn);
}

function finishTurn(turn) {
  const stopping = state.turn && state.turn.stopping;
  state.turn = null;
  stopElapsed();
  const fin = turn.final;
  const res = turn.result;
  let stop = fin ? fin.stop_reason : res && res.meta ? res.meta.stop_reason : null;
  if (!stop && stopping) stop = 'cancelled';
  const success = fin ? fin.success : res ? res.success : false;
  for (const c of turn.cards.values()) {
    c.endQuestion();
    if (c.status === 'pending') c.setElapsed(null); // it is not running any more here
  }
  const stick = nearBottom();
  turn.summarize(stop, success, res && res.meta ? res.meta.detail : '');
  scrollDown(stick);
  lockInput(false, false);
  if (stop === 'cancelled') setStatus('status.cancelled', {}, 'warn');
  else if (success) setStatus('status.done', {}, 'done');
  else if (stop) setStatus('status.failed', { reason: { key: `turn.stop.${stop}` } }, 'warn');
  else {
    // The stream broke before the turn ended: the turn may still run on the server.
    setStatus('status.broken', {}, 'error');
    if (state.convId) {
      api.conversation(state.convId).then((c) => c.lock && showBusy(c.lock)).catch(() => {});
    }
  }
  loadConversations();
}

async function stopTurn() {
  if (state.busy) {
    // Another window's turn: the cancel reaches it through the server, whichever it is.
    if (state.convId) api.cancel(state.convId).catch(() => {});
    setStatus('status.stopping');
    return;
  }
  const run = state.turn;
  if (!run || run.stopping) return;
  run.stopping = true;
  ui.stop.disabled = true;
  setStatus('status.stopping');
  if (!state.convId) {
    run.abort.abort();
    return;
  }
  try {
    await api.cancel(state.convId);
  } catch (e) {
    // Nothing to cancel through the API (the turn just ended, or no conversation yet):
    // dropping the stream cancels the turn on the server.
    if (state.turn === run) run.abort.abort();
  }
}

/* ---- another window's turn ------------------------------------------------------------ */

function showBusy(lock) {
  const lk = lock || {};
  const params = { state: { key: `state.${lk.state || 'thinking'}` }, tool: lk.tool || '' };
  setStatus(lk.tool ? 'status.busyTool' : 'status.busy', params, 'warn');
  lockInput(true, true);
  if (state.busy) return;
  const id = state.convId;
  state.busy = {
    timer: setInterval(async () => {
      if (state.convId !== id) return endBusy();
      try {
        const conv = await api.conversation(id);
        if (conv.lock) {
          const l = conv.lock;
          setStatus(l.tool ? 'status.busyTool' : 'status.busy',
            { state: { key: `state.${l.state}` }, tool: l.tool || '' }, 'warn');
          return;
        }
        endBusy();
        renderConversation(conv);
        setStatus('status.freed', {}, 'done');
      } catch (e) {
        if (e.status === 404) endBusy();
      }
    }, BUSY_POLL_MS),
  };
}

function endBusy() {
  if (!state.busy) return;
  clearInterval(state.busy.timer);
  state.busy = null;
  lockInput(false, false);
}

/* ---- conversations -------------------------------------------------------------------- */

function convName(c) {
  return c.title || t('conv.untitled', { id: c.id });
}

function markCurrent() {
  for (const li of ui.list.children) {
    const open = li.querySelector('.open');
    if (li.dataset.id === state.convId) open.setAttribute('aria-current', 'page');
    else open.removeAttribute('aria-current');
  }
}

// Dates are written in the page's language (and rewritten when it changes).
function showDate(timeEl) {
  const d = new Date(timeEl.dateTime);
  timeEl.textContent = Number.isNaN(d.getTime()) ? '' : d.toLocaleString(language());
}

function listItem(c) {
  const li = el('li');
  li.dataset.id = c.id;
  const open = el('button', 'open');
  open.type = 'button';
  const title = el('span', 'title');
  if (c.title) title.textContent = c.title;
  else label(title, 'conv.untitled', { id: c.id });
  const meta = el('span', 'meta');
  const when = el('time');
  if (c.updated_at) when.dateTime = c.updated_at;
  const count = label(el('span'), 'conv.messages', { n: c.message_count ?? 0 });
  meta.append(when, ' · ', count);
  showDate(when);
  open.append(title, meta);
  open.addEventListener('click', () => openConversation(c.id));
  const del = el('button', 'delete ghost', '×');
  del.type = 'button';
  del.dataset.i18nAriaLabel = 'conv.deleteLabel';
  del.dataset.i18nArgs = JSON.stringify({ name: convName(c) });
  del.setAttribute('aria-label', t('conv.deleteLabel', { name: convName(c) }));
  del.addEventListener('click', () => deleteConversation(c.id));
  li.append(open, del);
  return li;
}

async function loadConversations(more = false) {
  try {
    const page = await api.conversations(more ? state.cursor : null);
    if (!more) ui.list.replaceChildren();
    for (const c of page.conversations || []) ui.list.append(listItem(c));
    state.cursor = page.next_cursor || null;
    ui.more.hidden = !state.cursor;
    ui.empty.hidden = ui.list.children.length > 0;
    markCurrent();
    ui.listError.hidden = true;
  } catch (e) {
    // Shown in the list, not the status line, which belongs to the conversation.
    if (e.status !== 401) {
      label(ui.listError, 'conv.loadFailed', { msg: e.message }).hidden = false;
      ui.empty.hidden = true;
    }
  }
}

async function deleteConversation(id) {
  if (!window.confirm(t('conv.confirmDelete'))) return;
  try {
    await api.remove(id);
    if (state.convId === id) newConversation();
    setStatus('conv.deleted', {}, 'done');
    loadConversations();
  } catch (e) {
    if (e.status === 409) showBusyFor(id, e);
    else setStatus('status.error', { msg: e.message }, 'error');
  }
}

function showBusyFor(id, e) {
  const lock = e.body && e.body.error ? e.body.error.lock : null;
  const lk = lock || {};
  setStatus(lk.tool ? 'status.busyTool' : 'status.busy',
    { state: { key: `state.${lk.state || 'thinking'}` }, tool: lk.tool || '' }, 'warn');
}

function newConversation() {
  if (state.turn) return;
  endBusy();
  state.convId = null;
  history.replaceState(null, '', location.pathname);
  ui.log.replaceChildren();
  markCurrent();
  setStatus('status.idle', {}, 'idle');
  ui.input.focus();
}

async function openConversation(id) {
  if (state.turn) return;
  endBusy();
  state.convId = id;
  history.replaceState(null, '', `#c=${encodeURIComponent(id)}`);
  markCurrent();
  closeSidebarOnNarrow();
  try {
    const conv = await api.conversation(id);
    if (state.convId !== id) return;
    renderConversation(conv);
    if (conv.lock) showBusy(conv.lock);
    else setStatus('status.idle', {}, 'idle');
  } catch (e) {
    ui.log.replaceChildren();
    setStatus('conv.openFailed', { msg: e.message }, 'error');
  }
}

function parseJson(text) {
  if (typeof text !== 'string') return text;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

// Rebuilds the log from a stored conversation: messages in order, each assistant call as a
// card whose status and result come from the ledger (the record of what really ran).
function renderConversation(conv) {
  ui.log.replaceChildren();
  const ledger = new Map((conv.ledger || []).map((e) => [e.call_id, e]));
  const turns = [];
  let turn = null;
  for (const item of conv.messages || []) {
    const m = item.message || item;
    if (m.role === 'system') continue;
    if (m.role === 'user' && turn && String(m.content).startsWith('[rein] ')) {
      // rein's own note to the model (what became of a proposal): shown as a note.
      turn.noticeText('muted', m.content.slice(7));
      continue;
    }
    if (m.role === 'user') {
      turn = new Turn(m.content ?? '');
      turns.push(turn);
      continue;
    }
    if (!turn) {
      turn = new Turn(null);
      turns.push(turn);
    }
    if (m.role === 'assistant') {
      if (m.content) turn.setText(m.content);
      for (const tc of m.tool_calls || []) {
        const e = ledger.get(tc.id);
        const card = turn.card({
          call_id: tc.id,
          tool: (e && e.sent_name) || tc.name,
          arguments: e ? e.args : parseJson(tc.arguments),
        });
        card.setTool((e && e.tool) || tc.name);
      }
      turn.seg = null;
    } else if (m.role === 'tool') {
      const card = turn.cards.get(m.tool_call_id);
      if (!card) continue;
      const e = ledger.get(m.tool_call_id);
      const content = parseJson(m.content);
      if (content && content.status === 'proposed') {
        card.setResult('proposed', content);
        if (!e) {
          card.propose(proposalAction(card));
        } else if (e.status === 'invalid') {
          card.setStatus('discarded');
          card.note('muted', 'proposal.discarded');
        } else {
          card.setResult(e.status, e.result, latencyOf(e));
          card.note('ok', 'proposal.ran');
        }
      } else if (e) {
        card.setResult(e.status, e.status === 'invalid' ? content : e.result ?? content, latencyOf(e));
      } else {
        card.setResult(m.is_error ? 'error' : 'success', content);
      }
    }
  }
  // Ledger entries still pending were never answered: say so.
  for (const turnView of turns) {
    for (const card of turnView.cards.values()) {
      const e = ledger.get(card.callId);
      if (e && e.status === 'pending') {
        card.setStatus('pending');
        if (e.interrupted) card.note('warn', 'card.interrupted');
      }
    }
    const named = (status) => [...turnView.cards.values()].filter((c) => c.status === status)
      .map((c) => `${c.tool} (${c.callId})`);
    const pending = named('pending');
    if (pending.length) turnView.notice('warn', 'turn.pending', { n: pending.length, calls: pending.join(', ') });
    const denied = named('denied');
    if (denied.length) turnView.notice('warn', 'turn.denied', { calls: denied.join(', ') });
  }
  scrollDown(true);
}

function latencyOf(e) {
  const a = Date.parse(e.call_time);
  const b = Date.parse(e.response_time);
  return Number.isFinite(a) && Number.isFinite(b) ? Math.max(0, b - a) : undefined;
}

/* ---- small things --------------------------------------------------------------------- */

function closeSidebarOnNarrow() {
  if (window.matchMedia('(max-width: 720px)').matches) {
    ui.sidebar.classList.remove('open');
    ui.toggle.setAttribute('aria-expanded', 'false');
  }
}

function fillLanguages() {
  for (const [code, name] of LANGUAGES) {
    const o = el('option', '', name);
    o.value = code;
    o.lang = code;
    ui.lang.append(o);
  }
}

function conversationFromHash() {
  const m = /^#c=(.+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

function wire() {
  ui.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    const text = ui.input.value.trim();
    if (!text || state.turn || state.busy) return;
    ui.input.value = '';
    sendMessage(text);
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && (state.turn || state.busy) && !ui.stop.disabled) stopTurn();
  });
  ui.stop.addEventListener('click', stopTurn);
  ui.newConv.addEventListener('click', newConversation);
  ui.more.addEventListener('click', () => loadConversations(true));
  ui.lang.addEventListener('change', () => {
    remember(ui.lang.value);
    setLanguage(ui.lang.value);
    for (const time of ui.list.querySelectorAll('time')) showDate(time);
  });
  ui.toggle.addEventListener('click', () => {
    const open = !ui.sidebar.classList.contains('open');
    ui.sidebar.classList.toggle('open', open);
    ui.toggle.setAttribute('aria-expanded', String(open));
  });
  for (const sel of [ui.mode, ui.verification]) {
    sel.value = localStorage.getItem(`rein.${sel.id}`) || sel.value;
    sel.addEventListener('change', () => localStorage.setItem(`rein.${sel.id}`, sel.value));
  }
  ui.auth.addEventListener('submit', (e) => {
    e.preventDefault();
    setApiKey(ui.authKey.value.trim());
    ui.auth.hidden = true;
    ui.authKey.value = '';
    loadConversations();
    const id = conversationFromHash();
    if (id) openConversation(id);
  });
  whenUnauthorized(() => {
    ui.auth.hidden = false;
    ui.authKey.focus();
  });
  window.addEventListener('hashchange', () => {
    const id = conversationFromHash();
    if (id && id !== state.convId) openConversation(id);
  });
}

function main() {
  fillLanguages();
  const lang = pickLanguage();
  ui.lang.value = lang;
  setLanguage(lang);
  wire();
  setStatus('status.idle', {}, 'idle');
  loadConversations();
  const id = conversationFromHash();
  if (id) openConversation(id);
  else ui.input.focus();
  document.body.dataset.ready = 'true';
}

main();
