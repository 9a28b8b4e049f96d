// The chat page (docs/DESIGN.md [react]): send a message, watch the turn's events arrive over
// SSE (status line, streamed answer, tool call cards, approval questions, proposals), stop
// it, and list, search, rename, reopen and delete conversations.
//
// A turn belongs to the server, not to the page (decision 0018): closing or reloading the page
// never stops it, only Stop does. A page that opens a conversation whose turn is running, or
// whose message got 409 because another tab's turn runs, or whose stream broke, follows that
// turn from the store (GET /agent/conversations/{id}/events from the turn's start) and can
// answer its approvals and stop it like the page that started it. An idle page looks every
// few seconds whether another tab or device started a turn, and follows it when one did.

import { api, ApiError, followEvents, setApiKey, sseEvents, startChat, whenUnauthorized } from './api.js';
import { el, parseMaybe } from './cards.js';
import { preloadHighlighter } from './hl.js';
import { LANGUAGES, errorRef, label, language, pickLanguage, remember, setLanguage, t } from './i18n.js';
import { Turn } from './turn.js';

const $ = (id) => document.getElementById(id);
const ui = {
  log: $('log'), composer: $('composer'), input: $('input'), send: $('send'), stop: $('stop'),
  status: $('status'), elapsed: $('elapsed'), mode: $('mode'), verification: $('verification'),
  lang: $('lang'), theme: $('theme'), notify: $('notify'), list: $('conv-list'), more: $('conv-more'),
  empty: $('conv-empty'), newConv: $('new-conv'), sidebar: $('sidebar'), toggle: $('toggle-list'),
  auth: $('auth'), authKey: $('auth-key'), authError: $('auth-error'), listError: $('conv-error'),
  search: $('conv-search'), jump: $('jump'), retry: $('retry'), editing: $('editing'),
  editCancel: $('edit-cancel'), settings: $('settings'), settingsToggle: $('settings-toggle'),
  toast: $('toast'), scrim: $('scrim'),
};

const WATCH_MS = 2000; // an idle page looks this often whether a turn started elsewhere
const UNDO_MS = 6000; // a deleted conversation can be brought back this long
const RECONNECT_MS = [1000, 2000, 4000, 8000];

const state = {
  convId: null, // the open conversation (null: a new one, made by the first message)
  unsettled: false, // the drawn conversation has calls a dead turn left pending, not yet flagged
  live: null, // the turn this page shows as it runs: {turn, kind: post|follow, abort, stopping}
  cursor: null, // next page of the conversation list
  query: '', // the list's search text
  lastSeq: 0, // the last recorded event of the open conversation this page knows of
  watch: null, // the idle page's timer
  tick: null, // the elapsed-time timer
  since: 0, // when the running turn began (performance.now())
  skew: 0, // the server's clock minus ours (learnSkew)
  editing: null, // {position, text}: the next message replaces the last one
  deleted: new Map(), // id -> timer of a delete that can still be undone
  attention: false, // an approval waits
  reconnect: null, // timer while the server cannot be reached
  acting: 0, // proposals this page is running or discarding right now
};

/* ---- status line and input lock ------------------------------------------------------ */

// kind: idle | busy | done | warn | error (styles the line). The same status twice is not
// written twice, so a screen reader announces it once.
function setStatus(key, params, kind = 'busy') {
  const sig = JSON.stringify([key, params || null, kind]);
  if (ui.status.dataset.sig === sig) return;
  ui.status.dataset.sig = sig;
  label(ui.status, key, params);
  ui.status.dataset.state = kind;
}

function startElapsed(sinceMs = 0) {
  clearInterval(state.tick);
  state.since = performance.now() - sinceMs;
  const show = () => {
    const ms = performance.now() - state.since;
    ui.elapsed.textContent = `${(ms / 1000).toFixed(1)} s`;
    const card = state.live && state.live.running;
    if (card && card.status === 'pending') card.setElapsed(performance.now() - card.startedAt);
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
  if (!locked && (document.activeElement === ui.stop || document.activeElement === document.body ||
      !document.activeElement)) {
    ui.input.focus();
  }
  updateActions();
}

// The tab's title and a notification say when an approval waits for a person.
function setAttention(on, tool) {
  if (state.attention === on) return;
  state.attention = on;
  document.title = on ? t('title.approval', { tool }) : t('app.title');
  if (on && window.Notification && Notification.permission === 'granted' &&
      localStorage.getItem('rein.notify') === 'on' && (document.hidden || !document.hasFocus())) {
    try {
      const n = new Notification(t('title.approval', { tool }), { body: t('notify.body', { tool }), tag: 'rein-approval' });
      n.onclick = () => window.focus();
    } catch {
      // Some browsers allow notifications only from a service worker; the title still says it.
    }
  }
}

/* ---- the log ------------------------------------------------------------------------- */

function nearBottom() {
  return ui.log.scrollHeight - ui.log.scrollTop - ui.log.clientHeight < 80;
}

// Whether the log follows new messages: it was at its end when the person last scrolled (or
// the page scrolled it there). Asked before new text grows the log, not after: an answer that
// came in one piece left the log "far from the end" and it stayed where it was.
let following = true;

function scrollDown(force) {
  if (force || following) {
    ui.log.scrollTop = ui.log.scrollHeight;
    following = true;
  }
  showJump();
}

function showJump() {
  ui.jump.hidden = nearBottom();
}

function onLogScroll() {
  following = nearBottom();
  showJump();
}

// Shows the actions that apply: edit on the last message of the person, regenerate (or retry)
// on the last answer, none while a turn runs.
function updateActions() {
  const running = !!state.live;
  const users = ui.log.querySelectorAll('.msg.user');
  const answers = ui.log.querySelectorAll('.msg.assistant');
  ui.log.querySelectorAll('button.edit, button.regenerate').forEach((b) => { b.hidden = true; });
  if (running || !state.convId) return;
  const lastUser = users[users.length - 1];
  const lastAnswer = answers[answers.length - 1];
  if (lastUser && lastUser.querySelector('button.edit')) lastUser.querySelector('button.edit').hidden = false;
  const again = lastAnswer && lastAnswer.querySelector('button.regenerate');
  if (again && lastAnswer.turn && lastAnswer.turn.userText !== null) {
    again.hidden = false;
    label(again, lastAnswer.turn.failedTurn ? 'msg.retry' : 'msg.regenerate');
  }
}

function newTurn(userText, position) {
  const turn = new Turn(ui.log, userText, position);
  turn.article.turn = turn;
  if (turn.user) turn.user.turn = turn;
  return turn;
}

/* ---- events of a turn, live or replayed ------------------------------------------------ */

function statusFor(ev) {
  if (ev.state === 'idle') return;
  setStatus(`status.${ev.state}`, { tool: ev.tool || '' });
}

function proposalAction(card) {
  return async (run) => {
    // While it is on its way the idle page does not redraw: the event it records would look
    // like news from elsewhere until the answer is shown here.
    state.acting++;
    try {
      const out = await api.proposal(state.convId, card.callId, run);
      const meta = out.result && out.result.meta ? out.result.meta : {};
      return { status: out.status, result: out.result, latency_ms: meta.latency_ms };
    } finally {
      state.acting--;
    }
  };
}

// After a proposal was run or discarded, focus goes to the next one waiting, or the input.
function proposalDone(turn) {
  return (card) => {
    turn.proposalsChanged();
    const next = [...turn.cards.values()].find((c) => c !== card && c.proposal);
    const target = next ? next.proposal.querySelector('button.run') : ui.input;
    if (target && !target.disabled) target.focus();
  };
}

function offerProposal(turn, card, result) {
  const destructive = !!(result && typeof result === 'object' && result.destructive);
  card.propose(proposalAction(card), destructive, proposalDone(turn));
}

// ev.recorded_ms is set on replayed events: when the server wrote them (its clock).
function handleEvent(turn, ev) {
  const live = state.live;
  switch (ev.type) {
    case 'status': {
      turn.markStatus();
      statusFor(ev);
      const card = ev.call_id ? turn.cards.get(ev.call_id) : null;
      if (live) {
        live.running = ev.state === 'executing' ? card : null;
        if (card) card.startedAt = performance.now() - ageOf(ev);
      }
      break;
    }
    case 'text_delta':
      turn.addText(ev.text || '', () => scrollDown(false));
      break;
    case 'tool_call':
      turn.card(ev);
      scrollDown(false);
      break;
    case 'tool_result': {
      const card = turn.card(ev);
      card.setTool(ev.tool);
      card.setResult(ev.status, ev.result, ev.latency_ms);
      if (ev.status === 'proposed') offerProposal(turn, card, ev.result);
      break;
    }
    case 'approval_required': {
      const card = turn.card(ev);
      card.setArguments(ev.arguments);
      const left = ev.recorded_ms ? (ev.timeout_ms || 60000) - ageOf(ev) : ev.timeout_ms;
      if (left > 0) {
        const first = card.ask({ ...ev, left_ms: left }, (approve) => api.approve(state.convId, ev.call_id, approve));
        first.focus();
        first.scrollIntoView({ block: 'nearest' });
        setAttention(true, ev.tool || '');
        // Said here too: a page that follows the turn from the store may not get the status.
        setStatus('status.waiting_approval', { tool: ev.tool || '' });
      }
      break;
    }
    case 'verification':
      turn.card(ev).verification(ev);
      if (ev.kind === 'approval') setAttention(false);
      break;
    case 'claims':
      turn.claims(ev.action, ev.claims);
      break;
    case 'final':
      turn.final = ev;
      if (ev.code === 'composed') {
        if (turn.composedText === undefined) turn.composed(ev.stop_reason, ev.text || '');
      } else if (ev.text && turn.answerText() !== ev.text && !turn.segs.some((s) => s.text === ev.text)) {
        turn.setText(ev.text);
      }
      break;
    case 'error':
      turn.error(ev);
      break;
    default:
      break;
  }
}

// How long ago (ms) a replayed event was recorded, on the server's clock; 0 for live ones.
function ageOf(ev) {
  return ev.recorded_ms ? Math.max(0, Date.now() + state.skew - ev.recorded_ms) : 0;
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
  // A new conversation is in the list as soon as it exists, not only after its first turn.
  loadConversations();
  const run = state.live;
  if (run && run.stopAsked) api.cancel(id).catch(() => {});
}

// Reads a turn's event stream into turn (or, when following, into the turn its start event
// opens). Resolves to "result", "end" (the server ended the stream without a result: no turn
// runs, or the one followed died) or "broken" (the connection failed before the end).
async function readStream(body, run, onStart) {
  try {
    for await (const sse of sseEvents(body)) {
      if (state.live !== run) return 'left';
      let data;
      try {
        data = JSON.parse(sse.data);
      } catch {
        continue;
      }
      if (sse.id) state.lastSeq = Math.max(state.lastSeq, Number(sse.id) || 0);
      if (sse.event === 'result') {
        if (run.turn) handleResult(run.turn, data);
        return 'result';
      } else if (data.type === 'start') {
        if (onStart) await onStart(data);
        else adoptConversation(data.conversation_id);
      } else if (data.type && run.turn) {
        handleEvent(run.turn, data);
      }
    }
  } catch (e) {
    if (e.name === 'AbortError' || state.live !== run) return 'left';
    return 'broken';
  }
  return state.live !== run ? 'left' : 'end';
}

// The server's clock minus ours, from a page's now_ms, or from a response's Date header
// (whole seconds: a difference below two of them is taken as none). Replayed events carry
// the server's recorded_ms.
function learnSkew(serverMs, coarse = false) {
  if (!Number.isFinite(serverMs) || serverMs <= 0) return;
  const skew = serverMs - Date.now();
  state.skew = coarse && Math.abs(skew) < 2000 ? 0 : skew;
}

/* ---- a turn this page starts ----------------------------------------------------------- */

async function sendMessage(text, replaceFrom = null) {
  stopWatch();
  clearReconnect();
  if (replaceFrom !== null) dropFrom(replaceFrom);
  const turn = newTurn(text, replaceFrom);
  const abort = new AbortController();
  const run = { turn, kind: 'post', abort, stopping: false };
  state.live = run;
  lockInput(true, true);
  setStatus('status.sending');
  startElapsed();
  scrollDown(true);
  const request = { message: text, mode: ui.mode.value, verification: ui.verification.value };
  if (state.convId) request.conversation_id = state.convId;
  if (replaceFrom !== null) request.replace_from = replaceFrom;
  let resp;
  try {
    resp = await startChat(request, abort.signal);
  } catch (e) {
    notSent(run, text, e, replaceFrom);
    return;
  }
  adoptConversation(resp.headers.get('X-Conversation-Id'));
  const how = await readStream(resp.body, run);
  if (how === 'left') return;
  if (how === 'result') finishTurn(run);
  else reattach(run); // the stream broke: the turn may still run; follow it from the store
}

// The message was not taken: give the text back and say why (nothing was sent, or the server
// refused it, or another tab's turn runs: then follow that one).
function notSent(run, text, e, replaceFrom) {
  state.live = null;
  stopElapsed();
  run.turn.remove();
  if (replaceFrom !== null && state.convId) openConversation(state.convId);
  ui.input.value = text;
  growInput();
  lockInput(false, false);
  if (e instanceof ApiError && e.status === 409 && e.code === 'conversation_busy' && state.convId) {
    setStatus('status.busyFollow', {}, 'warn');
    openConversation(state.convId);
    return;
  }
  if (e instanceof ApiError && e.status === 0) {
    setStatus('status.offline', {}, 'error');
    ui.retry.hidden = false;
    startReconnect();
    return;
  }
  setStatus('status.refused', { msg: errorRef(e) }, 'error');
  if (e.status === 401) ui.input.focus();
  startWatch();
}

// Tries the server every few seconds until it answers again.
function startReconnect(attempt = 0) {
  clearTimeout(state.reconnect);
  state.reconnect = setTimeout(async () => {
    try {
      await api.health();
      state.reconnect = null;
      setStatus('status.online', {}, 'done');
      loadConversations();
    } catch {
      startReconnect(attempt + 1);
    }
  }, RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]);
}

function clearReconnect() {
  clearTimeout(state.reconnect);
  state.reconnect = null;
  ui.retry.hidden = true;
}

// Drops the log from the turn whose message is at position (edit and regenerate replace it).
function dropFrom(position) {
  const users = [...ui.log.querySelectorAll('.msg.user')];
  const from = users.find((u) => u.turn && u.turn.position === position) || users[users.length - 1];
  if (!from) return;
  let n = from;
  while (n) {
    const next = n.nextSibling;
    n.remove();
    n = next;
  }
}

function finishTurn(run) {
  const turn = run.turn;
  if (state.live === run) state.live = null;
  stopElapsed();
  setAttention(false);
  const fin = turn.final;
  const res = turn.result;
  let stop = fin ? fin.stop_reason : res && res.meta ? res.meta.stop_reason : null;
  if (!stop && run.stopping) stop = 'cancelled';
  const success = fin ? fin.success : res ? res.success : false;
  turn.ended = true;
  turn.render(true);
  for (const c of turn.cards.values()) {
    c.endQuestion();
    if (c.status === 'pending') c.setElapsed(null); // it is not running any more here
  }
  turn.summarize(stop, success, res && res.meta ? res.meta.detail : '');
  turn.failedTurn = !success && stop !== 'cancelled' && stop !== 'proposed';
  if (res && res.meta) turn.showMeta(res.meta);
  scrollDown(false);
  lockInput(false, false);
  if (stop === 'cancelled') setStatus('status.cancelled', {}, 'warn');
  else if (stop === 'proposed') setStatus('status.proposed', {}, 'done');
  else if (success) setStatus('status.done', {}, 'done');
  else if (stop) setStatus('status.failed', { reason: { key: `turn.stop.${stop}` } }, 'warn');
  // Proposals wait for a person: bring the first into view and give it the focus.
  const first = [...turn.cards.values()].find((c) => c.proposal);
  if (first) {
    first.outer.scrollIntoView({ block: 'center' });
    first.proposal.querySelector('button.run').focus();
  }
  loadConversations();
  startWatch();
}

async function stopTurn() {
  const run = state.live;
  if (!run || run.stopping) return;
  run.stopping = true;
  ui.stop.disabled = true;
  setStatus('status.stopping');
  if (!state.convId) {
    run.stopAsked = true; // sent as soon as the conversation has an id
    return;
  }
  try {
    await api.cancel(state.convId);
  } catch (e) {
    if (e.code !== 'not_running') {
      run.stopping = false;
      ui.stop.disabled = false;
      setStatus('status.error', { msg: errorRef(e) }, 'error');
    }
  }
}

/* ---- following a turn from the store --------------------------------------------------- */

// The stream of this page's turn broke: the server went away, or the network. The turn may go
// on without us; follow it from the store once the server answers again.
function reattach(run, attempt = 0) {
  if (state.live !== run) return;
  setStatus('status.reconnecting', {}, 'warn');
  const id = state.convId;
  if (!id) {
    finishTurn(run);
    return;
  }
  setTimeout(async () => {
    if (state.live !== run) return;
    try {
      const conv = await api.conversation(id);
      state.live = null;
      follow(id, conv);
    } catch (e) {
      if (e.status === 0 || e.status >= 500) reattach(run, attempt + 1);
      else {
        state.live = null;
        finishTurn(run);
      }
    }
  }, RECONNECT_MS[Math.min(attempt, RECONNECT_MS.length - 1)]);
}

// Follows the last turn of conversation id from its start: the stored messages before it are
// drawn from conv (GET /agent/conversations/{id}), the turn from its events.
async function follow(id, conv) {
  stopWatch();
  const abort = new AbortController();
  const run = { turn: null, kind: 'follow', abort, stopping: false };
  if (state.live) state.live.abort.abort();
  state.live = run;
  lockInput(true, true);
  setStatus('status.attaching');
  let resp;
  try {
    resp = await followEvents(id, null, abort.signal);
    learnSkew(Date.parse(resp.headers.get('Date')), true);
  } catch (e) {
    if (state.live !== run) return;
    state.live = null;
    renderConversation(conv);
    lockInput(false, false);
    setStatus('conv.openFailed', { msg: errorRef(e) }, 'error');
    return;
  }
  let started = false;
  const how = await readStream(resp.body, run, async (start) => {
    started = true;
    let c = conv;
    if (!c || !(c.messages || []).some((m) => m.position >= start.position)) {
      c = await api.conversation(id).catch(() => conv);
    }
    if (state.live !== run) return;
    renderConversation(c, start.position);
    const first = (c.messages || []).find((m) => m.position >= start.position &&
      (m.message || m).role === 'user');
    run.turn = newTurn(first ? (first.message || first).content ?? '' : null, first ? first.position : null);
    startElapsed(start.recorded_ms ? Date.now() + state.skew - start.recorded_ms : 0);
    setStatus('status.following');
    lockInput(true, true);
    scrollDown(true);
  });
  if (how === 'left') return;
  if (how === 'result' && run.turn) {
    finishTurn(run);
    return;
  }
  // No turn to follow, or it ended without a result (its process died): the store says the
  // rest. A lock still held belongs to a dead turn until its lease runs out.
  state.live = null;
  stopElapsed();
  lockInput(false, false);
  if (how === 'broken') {
    setStatus('status.reconnecting', {}, 'warn');
    setTimeout(() => state.convId === id && !state.live && openConversation(id), RECONNECT_MS[1]);
    return;
  }
  const fresh = await api.conversation(id).catch(() => conv);
  if (state.convId !== id || state.live) return;
  await renderStored(id, fresh);
  if (started) setStatus('status.ended', {}, 'warn');
  else setStatus('status.idle', {}, 'idle');
  startWatch();
}

// An idle page looks now and then whether the conversation moved on elsewhere: a turn started
// (follow it) or events came (redraw from the store).
function startWatch() {
  stopWatch();
  if (!state.convId) return;
  const id = state.convId;
  state.watch = setInterval(async () => {
    if (document.hidden || state.live || state.acting || state.convId !== id) return;
    try {
      const page = await api.events(id, { after: state.lastSeq, limit: 20 });
      learnSkew(page.now_ms);
      if (state.live || state.acting || state.convId !== id) return;
      if (page.running) {
        openConversation(id);
      } else if (!state.unsettled && page.events.length && page.next_after == null &&
          page.events.every(shownAlready)) {
        state.lastSeq = page.last_seq; // what this page did itself (a proposal it ran)
      } else if (page.last_seq > state.lastSeq || state.unsettled) {
        // New events, or calls a dead turn left running that recovery flags in the ledger
        // (it records no event): draw the conversation from the store again.
        openConversation(id, true);
      }
    } catch (e) {
      if (e.status === 404) newConversation();
    }
  }, WATCH_MS);
}

// A recorded event this page shows already: the outcome of a proposal it ran or discarded
// itself (the event tells pages elsewhere).
function shownAlready(ev) {
  const d = ev.data || {};
  if (ev.type !== 'tool_result' || !d.call_id) return false;
  for (const a of ui.log.querySelectorAll('.msg.assistant')) {
    const card = a.turn && a.turn.cards.get(d.call_id);
    if (card) return !card.proposal && card.status !== 'proposed';
  }
  return false;
}

function stopWatch() {
  clearInterval(state.watch);
  state.watch = null;
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
  const ren = el('button', 'rename ghost', '✎');
  ren.type = 'button';
  ren.dataset.i18nAriaLabel = 'conv.renameLabel';
  ren.dataset.i18nArgs = JSON.stringify({ name: convName(c) });
  ren.setAttribute('aria-label', t('conv.renameLabel', { name: convName(c) }));
  ren.addEventListener('click', () => startRename(li, c));
  const del = el('button', 'delete ghost', '×');
  del.type = 'button';
  del.dataset.i18nAriaLabel = 'conv.deleteLabel';
  del.dataset.i18nArgs = JSON.stringify({ name: convName(c) });
  del.setAttribute('aria-label', t('conv.deleteLabel', { name: convName(c) }));
  del.addEventListener('click', () => deleteConversation(c.id));
  li.append(open, ren, del);
  if (state.deleted.has(c.id)) li.hidden = true;
  return li;
}

// Loads the list again (as many as are shown, so a refresh never folds pages away) or, with
// more, its next page.
let listSerial = 0;
async function loadConversations(more = false) {
  const serial = ++listSerial;
  const shown = Math.min(100, Math.max(20, ui.list.children.length));
  try {
    const page = await api.conversations(more ? state.cursor : null, more ? 20 : shown, state.query);
    if (serial !== listSerial && !more) return;
    if (!more) ui.list.replaceChildren();
    for (const c of page.conversations || []) ui.list.append(listItem(c));
    state.cursor = page.next_cursor || null;
    ui.more.hidden = !state.cursor;
    const visible = [...ui.list.children].filter((li) => !li.hidden).length;
    ui.empty.hidden = visible > 0;
    label(ui.empty, state.query ? 'conv.noMatch' : 'conv.empty');
    markCurrent();
    ui.listError.hidden = true;
  } catch (e) {
    // Shown in the list, not the status line, which belongs to the conversation.
    if (e.status !== 401) {
      label(ui.listError, 'conv.loadFailed', { msg: errorRef(e) }).hidden = false;
      ui.empty.hidden = true;
    }
  }
}

function startRename(li, c) {
  const open = li.querySelector('.open');
  const input = el('input', 'rename-input');
  input.type = 'text';
  input.value = c.title || '';
  input.maxLength = 200;
  input.setAttribute('aria-label', t('conv.renameLabel', { name: convName(c) }));
  open.hidden = true;
  li.prepend(input);
  input.focus();
  input.select();
  let done = false;
  const finish = async (save) => {
    if (done) return;
    done = true;
    const title = input.value.trim();
    if (save && title && title !== c.title) {
      try {
        await api.rename(c.id, title);
        c.title = title;
        setStatus('conv.renamed', {}, 'done');
      } catch (e) {
        setStatus('status.error', { msg: errorRef(e) }, 'error');
      }
    }
    loadConversations();
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      finish(true);
    } else if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      finish(false);
    }
  });
  input.addEventListener('blur', () => finish(true));
}

// Deleting hides the conversation at once and offers Undo for a few seconds; the DELETE goes
// out when that time is up (or when the page is closed meanwhile).
function deleteConversation(id) {
  const li = ui.list.querySelector(`li[data-id="${CSS.escape(id)}"]`);
  if (li) li.hidden = true;
  if (state.convId === id) {
    if (state.live) state.live.abort.abort();
    state.live = null;
    newConversation();
  }
  const timer = setTimeout(() => commitDelete(id), UNDO_MS);
  state.deleted.set(id, timer);
  showToast('conv.deleted', () => {
    clearTimeout(timer);
    state.deleted.delete(id);
    if (li) li.hidden = false;
    setStatus('conv.restored', {}, 'done');
  });
}

async function commitDelete(id, keepalive = false) {
  state.deleted.delete(id);
  try {
    await api.remove(id, keepalive);
  } catch (e) {
    const li = ui.list.querySelector(`li[data-id="${CSS.escape(id)}"]`);
    if (li) li.hidden = false;
    setStatus('conv.deleteFailed', { msg: errorRef(e) }, 'error');
  }
  hideToast();
  if (!keepalive) loadConversations();
}

function showToast(key, undo) {
  ui.toast.replaceChildren();
  const text = label(el('span'), key);
  const button = label(el('button', 'ghost'), 'conv.undo');
  button.type = 'button';
  button.addEventListener('click', () => {
    undo();
    hideToast();
  });
  ui.toast.append(text, button);
  ui.toast.hidden = false;
}

function hideToast() {
  ui.toast.hidden = true;
  ui.toast.replaceChildren();
}

function newConversation() {
  if (state.live) state.live.abort.abort(); // the turn goes on; this page stops watching it
  state.live = null;
  stopWatch();
  stopElapsed();
  setAttention(false);
  cancelEdit();
  state.convId = null;
  state.lastSeq = 0;
  history.replaceState(null, '', location.pathname);
  ui.log.replaceChildren();
  markCurrent();
  lockInput(false, false);
  setStatus('status.idle', {}, 'idle');
  closeOverlays();
  ui.input.focus();
}

// Opens id: drawn from the store, then followed when a turn runs. quiet keeps the status line.
async function openConversation(id, quiet = false) {
  if (state.live && state.convId !== id) {
    state.live.abort.abort(); // the other conversation's turn goes on without this page
  }
  if (state.live && state.convId === id) return;
  state.live = null;
  stopWatch();
  stopElapsed();
  setAttention(false);
  if (state.convId !== id) {
    cancelEdit();
    state.lastSeq = 0;
  }
  state.convId = id;
  history.replaceState(null, '', `#c=${encodeURIComponent(id)}`);
  markCurrent();
  closeOverlays();
  lockInput(false, false);
  try {
    const conv = await api.conversation(id);
    if (state.convId !== id || state.live) return;
    if (conv.lock) {
      follow(id, conv);
      return;
    }
    await renderStored(id, conv);
    if (!quiet) setStatus('status.idle', {}, 'idle');
    startWatch();
  } catch (e) {
    if (state.convId !== id) return;
    ui.log.replaceChildren();
    setStatus('conv.openFailed', { msg: errorRef(e) }, 'error');
  }
}

// What the recorded events add to the stored messages: each turn's result and final event (by
// trace id) and each call's checks and approvals (by call id). Events are kept for the newest
// turns only.
async function turnRecords(id) {
  const out = { results: new Map(), finals: new Map(), checks: new Map(), last: 0 };
  let after = 0;
  for (let page = 0; page < 5; page++) {
    const r = await api.events(id, { type: 'result,final,verification', after, limit: 1000 });
    out.last = r.last_seq;
    for (const ev of r.events) {
      if (ev.type === 'result' && ev.trace_id) out.results.set(ev.trace_id, ev.data);
      if (ev.type === 'final' && ev.trace_id) out.finals.set(ev.trace_id, ev.data);
      if (ev.type === 'verification' && ev.data && ev.data.call_id) {
        if (!out.checks.has(ev.data.call_id)) out.checks.set(ev.data.call_id, []);
        out.checks.get(ev.data.call_id).push(ev.data);
      }
    }
    if (r.next_after === null || r.next_after === undefined) break;
    after = r.next_after;
  }
  return out;
}

async function renderStored(id, conv) {
  let rec = null;
  try {
    rec = await turnRecords(id);
  } catch {
    rec = null;
  }
  if (state.convId !== id || state.live) return;
  if (rec) state.lastSeq = Math.max(state.lastSeq, rec.last);
  renderConversation(conv, Infinity, rec);
}

// "[rein] A person ran the proposed call ID (TOOL)…": rein's own note to the model about a
// proposal, shown on the card in the page's language.
const PROPOSAL_NOTE = /^\[rein\] A person (ran|discarded) the proposed call (\S+) \(/;

// Rebuilds the log from a stored conversation: messages before position upTo, each assistant
// call as a card whose status and result come from the ledger (the record of what really ran),
// with the recorded checks and each turn's outcome when rec has them.
function renderConversation(conv, upTo = Infinity, rec = null) {
  ui.log.replaceChildren();
  state.unsettled = !conv.lock && (conv.ledger || []).some((e) => e.status === 'pending' && !e.interrupted);
  const ledger = new Map((conv.ledger || []).map((e) => [e.call_id, e]));
  const turns = [];
  let turn = null;
  // Calls only the ledger knows (the gateway's re-asked invalid calls and the tools it ran
  // itself never reach the messages): each is a card where it happened, before the first
  // message stored after it.
  const named = new Set((conv.messages || []).flatMap((i) => ((i.message || i).tool_calls || []).map((tc) => tc.id)));
  const unnamed = (conv.ledger || []).filter((e) => !named.has(e.call_id))
    .sort((a, b) => String(a.call_time).localeCompare(String(b.call_time)));
  const ledgerCards = (before) => {
    while (unnamed.length && (before === undefined || String(unnamed[0].call_time) < before)) {
      const e = unnamed.shift();
      if (!turn) {
        turn = newTurn(null);
        turns.push(turn);
      }
      const card = turn.card({ call_id: e.call_id, tool: e.sent_name || e.tool, arguments: e.args });
      card.setTool(e.tool);
      card.setResult(e.status, e.result, e.latency_ms);
    }
  };
  let cut = false;
  for (const item of conv.messages || []) {
    if (item.position >= upTo) {
      cut = true;
      break;
    }
    const m = item.message || item;
    if (m.role !== 'user') ledgerCards(item.created_at || '');
    if (m.role === 'system') continue;
    const content = typeof m.content === 'string' ? m.content : '';
    if (m.role === 'user' && turn && content.startsWith('[rein] ')) {
      const pm = PROPOSAL_NOTE.exec(content);
      if (pm) continue; // the card says it (from the ledger)
      turn.notice('muted', 'turn.reinNote');
      continue;
    }
    if (m.role === 'user') {
      turn = newTurn(content, item.position);
      turn.trace = item.trace_id;
      turns.push(turn);
      continue;
    }
    if (!turn) {
      turn = newTurn(null);
      turns.push(turn);
    }
    if (m.role === 'assistant') {
      // An answer rein wrote because the model gave none is said in the page's words.
      const fin = rec && turn.trace ? rec.finals.get(turn.trace) : null;
      if (content && fin && fin.code === 'composed' && fin.text === content) turn.composed(fin.stop_reason, content);
      else if (content) turn.setText(content);
      for (const tc of m.tool_calls || []) {
        const e = ledger.get(tc.id);
        const card = turn.card({
          call_id: tc.id,
          tool: (e && e.sent_name) || tc.name,
          arguments: e ? e.args : parseMaybe(tc.arguments),
        });
        card.setTool((e && e.tool) || tc.name);
        for (const v of (rec && rec.checks.get(tc.id)) || []) card.verification(v);
      }
      turn.seg = null;
    } else if (m.role === 'tool') {
      const card = turn.cards.get(m.tool_call_id);
      if (!card) continue;
      const e = ledger.get(m.tool_call_id);
      const c = parseMaybe(m.content);
      if (c && c.status === 'proposed') {
        card.setResult('proposed', c);
        if (!e) {
          offerProposal(turn, card, c);
        } else if (e.status === 'invalid') {
          card.setStatus('discarded');
          card.note('muted', 'proposal.discarded');
        } else {
          card.setResult(e.status, e.result, e.latency_ms);
          card.note('ok', 'proposal.ran');
        }
      } else if (e) {
        card.setResult(e.status, e.status === 'invalid' ? c : e.result ?? c, e.latency_ms);
      } else {
        card.setResult(m.is_error ? 'error' : 'success', c);
      }
    }
  }
  if (!cut) ledgerCards();
  for (const view of turns) {
    view.ended = true;
    view.render(true);
    for (const card of view.cards.values()) {
      const e = ledger.get(card.callId);
      if (e && e.status === 'pending') {
        card.setStatus('pending');
        if (e.interrupted) card.note('warn', 'card.interrupted');
      }
    }
    const res = rec && view.trace ? rec.results.get(view.trace) : null;
    if (res && res.meta) {
      view.summarize(res.meta.stop_reason, res.success, res.meta.detail);
      view.failedTurn = !res.success && !['cancelled', 'proposed'].includes(res.meta.stop_reason);
      view.showMeta(res.meta);
    } else {
      const pending = view.named('pending');
      if (pending.length) view.notice('warn', 'turn.pending', { n: pending.length, calls: pending.join(', ') });
      const denied = view.named('denied');
      if (denied.length) view.notice('warn', 'turn.denied', { calls: denied.join(', ') });
      if (!view.cards.size && !view.answerText() && upTo === Infinity) view.notice('muted', 'turn.noAnswer');
    }
  }
  scrollDown(true);
  updateActions();
}

/* ---- edit, regenerate, copy ------------------------------------------------------------ */

// The stored position of the conversation's last message from the person (edit and
// regenerate replace from there).
async function lastUserPosition() {
  const conv = await api.conversation(state.convId);
  const users = (conv.messages || []).filter((m) => (m.message || m).role === 'user' &&
    !String((m.message || m).content || '').startsWith('[rein] '));
  return users.length ? users[users.length - 1].position : null;
}

async function regenerate(turn) {
  if (state.live || !state.convId) return;
  try {
    const pos = await lastUserPosition();
    if (pos !== null) sendMessage(turn.userText, pos);
  } catch (e) {
    setStatus('status.error', { msg: errorRef(e) }, 'error');
  }
}

async function startEdit(turn) {
  if (state.live || !state.convId) return;
  try {
    const pos = await lastUserPosition();
    if (pos === null) return;
    state.editing = { position: pos };
    ui.input.value = turn.userText;
    ui.editing.hidden = false;
    growInput();
    ui.input.focus();
  } catch (e) {
    setStatus('status.error', { msg: errorRef(e) }, 'error');
  }
}

function cancelEdit() {
  state.editing = null;
  ui.editing.hidden = true;
}

async function copyText(text, button) {
  let ok = false;
  try {
    await navigator.clipboard.writeText(text);
    ok = true;
  } catch {
    // Without the clipboard API (a page served over plain HTTP to another machine): the old way.
    const area = el('textarea');
    area.value = text;
    area.setAttribute('readonly', '');
    area.style.position = 'fixed';
    area.style.opacity = '0';
    document.body.append(area);
    area.select();
    try {
      ok = document.execCommand('copy');
    } catch {
      ok = false;
    }
    area.remove();
  }
  const key = button.dataset.i18n;
  label(button, ok ? 'copy.done' : 'copy.failed');
  setTimeout(() => label(button, key), 1500);
}

function onLogClick(e) {
  const b = e.target.closest('button');
  if (!b || !ui.log.contains(b)) return;
  const article = b.closest('.msg');
  const turn = article && article.turn;
  if (b.dataset.copy === 'code') {
    const code = b.closest('.codeblock').querySelector('code');
    copyText(code.textContent, b);
  } else if (b.dataset.copy === 'user' && turn) {
    copyText(turn.userText, b);
  } else if (b.dataset.copy === 'assistant' && turn) {
    copyText(turn.answerText(), b);
  } else if (b.classList.contains('regenerate') && turn) {
    regenerate(turn);
  } else if (b.classList.contains('edit') && turn) {
    startEdit(turn);
  }
}

/* ---- small things --------------------------------------------------------------------- */

function narrow() {
  return window.matchMedia('(max-width: 720px)').matches;
}

function setOverlay(which, open) {
  const [panel, button] = which === 'list' ? [ui.sidebar, ui.toggle] : [ui.settings, ui.settingsToggle];
  panel.classList.toggle('open', open);
  button.setAttribute('aria-expanded', String(open));
  ui.scrim.hidden = !(ui.sidebar.classList.contains('open') || ui.settings.classList.contains('open'));
}

function closeOverlays() {
  if (ui.sidebar.classList.contains('open')) setOverlay('list', false);
  if (ui.settings.classList.contains('open')) setOverlay('settings', false);
}

function fillLanguages() {
  for (const [code, name] of LANGUAGES) {
    const o = el('option', '', name);
    o.value = code;
    o.lang = code;
    ui.lang.append(o);
  }
}

// theme: light, dark or system (kept in localStorage by the switch); theme.js turns it into
// the colours (data-scheme), the same way as before the first paint.
function applyTheme(theme) {
  if (theme === 'light' || theme === 'dark') document.documentElement.dataset.theme = theme;
  else delete document.documentElement.dataset.theme;
  if (window.reinApplyScheme) window.reinApplyScheme();
}

function growInput() {
  ui.input.style.height = 'auto';
  ui.input.style.height = `${Math.min(ui.input.scrollHeight + 2, window.innerHeight * 0.4)}px`;
}

function conversationFromHash() {
  const m = /^#c=(.+)$/.exec(location.hash);
  return m ? decodeURIComponent(m[1]) : null;
}

function submit() {
  const text = ui.input.value.trim();
  if (!text || state.live) return;
  ui.input.value = '';
  growInput();
  const edit = state.editing;
  cancelEdit();
  sendMessage(text, edit ? edit.position : null);
}

function wire() {
  ui.composer.addEventListener('submit', (e) => {
    e.preventDefault();
    submit();
  });
  ui.input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      ui.composer.requestSubmit();
    }
  });
  ui.input.addEventListener('input', growInput);
  document.addEventListener('keydown', (e) => {
    if (e.key !== 'Escape') return;
    if (ui.sidebar.classList.contains('open') || ui.settings.classList.contains('open')) {
      closeOverlays();
      (narrow() ? ui.toggle : ui.input).focus();
    } else if (state.editing) {
      cancelEdit();
      ui.input.value = '';
    } else if (state.live && !ui.stop.disabled) {
      stopTurn();
    }
  });
  ui.stop.addEventListener('click', stopTurn);
  ui.retry.addEventListener('click', () => {
    clearReconnect();
    submit();
  });
  ui.editCancel.addEventListener('click', () => {
    cancelEdit();
    ui.input.value = '';
    ui.input.focus();
  });
  ui.newConv.addEventListener('click', newConversation);
  ui.more.addEventListener('click', () => loadConversations(true));
  let searchTimer = null;
  ui.search.addEventListener('input', () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      state.query = ui.search.value.trim();
      loadConversations();
    }, 250);
  });
  ui.lang.addEventListener('change', () => {
    remember(ui.lang.value);
    setLanguage(ui.lang.value);
    if (state.attention) document.title = t('title.approval', { tool: '' });
    for (const time of ui.list.querySelectorAll('time')) showDate(time);
  });
  ui.theme.value = localStorage.getItem('rein.theme') || 'system';
  ui.theme.addEventListener('change', () => {
    localStorage.setItem('rein.theme', ui.theme.value);
    applyTheme(ui.theme.value);
  });
  ui.notify.checked = localStorage.getItem('rein.notify') === 'on' && window.Notification &&
    Notification.permission === 'granted';
  ui.notify.addEventListener('change', async () => {
    if (!ui.notify.checked) {
      localStorage.removeItem('rein.notify');
      return;
    }
    const p = window.Notification ? await Notification.requestPermission() : 'denied';
    ui.notify.checked = p === 'granted';
    if (p === 'granted') localStorage.setItem('rein.notify', 'on');
    else setStatus('notify.denied', {}, 'warn');
  });
  ui.toggle.addEventListener('click', () => setOverlay('list', !ui.sidebar.classList.contains('open')));
  ui.settingsToggle.addEventListener('click', () => setOverlay('settings', !ui.settings.classList.contains('open')));
  ui.scrim.addEventListener('click', closeOverlays);
  ui.jump.addEventListener('click', () => {
    scrollDown(true);
    ui.input.focus();
  });
  ui.log.addEventListener('scroll', onLogScroll, { passive: true });
  ui.log.addEventListener('click', onLogClick);
  for (const sel of [ui.mode, ui.verification]) {
    sel.value = localStorage.getItem(`rein.${sel.id}`) || sel.value;
    sel.addEventListener('change', () => localStorage.setItem(`rein.${sel.id}`, sel.value));
  }
  ui.auth.addEventListener('submit', (e) => {
    e.preventDefault();
    setApiKey(ui.authKey.value.trim());
    ui.authKey.value = '';
    ui.authError.hidden = true;
    ui.auth.dataset.tried = 'true';
    loadConversations().then(() => {
      if (ui.auth.dataset.tried === 'true') ui.auth.hidden = true;
    });
    const id = conversationFromHash();
    if (id) openConversation(id);
  });
  whenUnauthorized(() => {
    const again = ui.auth.dataset.tried === 'true';
    ui.auth.dataset.tried = 'false';
    ui.auth.hidden = false;
    // A key that was just given and refused: say so, and keep the form.
    if (again) label(ui.authError, 'auth.refused').hidden = false;
    setStatus('auth.needed', {}, 'warn');
    ui.authKey.focus();
  });
  window.addEventListener('hashchange', () => {
    const id = conversationFromHash();
    if (id && id !== state.convId) openConversation(id);
  });
  document.addEventListener('visibilitychange', () => {
    if (!document.hidden && state.convId && !state.live) startWatch();
  });
  // Deletes still waiting for their Undo window go out with the page.
  window.addEventListener('pagehide', () => {
    for (const [id, timer] of state.deleted) {
      clearTimeout(timer);
      commitDelete(id, true);
    }
  });
}

function main() {
  fillLanguages();
  const lang = pickLanguage();
  ui.lang.value = lang;
  setLanguage(lang);
  applyTheme(localStorage.getItem('rein.theme') || 'system');
  wire();
  setStatus('status.idle', {}, 'idle');
  loadConversations();
  const id = conversationFromHash();
  if (id) openConversation(id);
  else ui.input.focus();
  document.body.dataset.ready = 'true';
  preloadHighlighter();
}

main();
