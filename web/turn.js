// One exchange in the log: the person's message, then the assistant's text segments and tool
// cards in the order they happened, then notices about how the turn ended, what it cost (time,
// tokens, the model) and what can be done with it (copy, regenerate, edit). The same view is
// filled from a live stream, from a replay of the recorded events, or from the store.

import { ToolCard, el } from './cards.js';
import { errorRef, has, label } from './i18n.js';
import { MarkdownView } from './markdown.js';

const FRAME_MS = 8; // the time one frame spends drawing an answer's text

export class Turn {
  // log: the element turns go in; userText: the person's message (null: none); position: the
  // stored position of that message (for edit and regenerate), when known.
  constructor(log, userText, position = null) {
    this.log = log;
    this.position = position;
    this.userText = userText;
    if (userText !== null) {
      this.user = this.article('user');
      this.userTextEl = el('div', 'text', userText);
      this.user.append(this.userTextEl, this.actions('user'));
    }
    this.article = this.article('assistant');
    this.flow = el('div', 'flow');
    this.notices = el('div', 'notices');
    this.meta = el('p', 'turn-meta');
    this.meta.hidden = true;
    this.tools = this.actions('assistant');
    this.article.append(this.flow, this.notices, this.meta, this.tools);
    this.cards = new Map();
    this.segs = []; // text segments: {view: MarkdownView, text}
    this.seg = null; // the segment deltas go to
    this.kept = 0; // its length at the last status event (a retry drops what follows)
    this.frame = 0; // the animation frame asked for, while one is
    this.ended = false;
    this.lastNotice = null;
    this.retryNotice = null;
  }

  article(role) {
    const a = el('article', `msg ${role}`);
    a.append(label(el('h3', 'who'), `role.${role}`));
    this.log.append(a);
    return a;
  }

  // The buttons under a message; the page shows the ones that apply (app.js).
  actions(role) {
    const row = el('div', 'msg-actions');
    const copy = label(el('button', 'copy ghost small'), 'copy.message');
    copy.type = 'button';
    copy.dataset.copy = role;
    row.append(copy);
    if (role === 'user') {
      const edit = label(el('button', 'edit ghost small'), 'msg.edit');
      edit.type = 'button';
      edit.hidden = true;
      row.append(edit);
    } else {
      const again = label(el('button', 'regenerate ghost small'), 'msg.regenerate');
      again.type = 'button';
      again.hidden = true;
      row.append(again);
    }
    return row;
  }

  remove() {
    if (this.user) this.user.remove();
    this.article.remove();
  }

  // The text of the answer (every segment, in order), for the copy button.
  answerText() {
    return this.segs.map((s) => s.text).filter((x) => x.trim()).join('\n\n');
  }

  segment() {
    if (!this.seg) {
      this.seg = { view: new MarkdownView(), text: '' };
      this.segs.push(this.seg);
      const box = el('div', 'answer');
      box.append(this.seg.view.root);
      this.flow.append(box);
    }
    return this.seg;
  }

  addText(text, onPaint) {
    this.segment().text += text;
    this.render(false, onPaint);
  }

  setText(text) {
    this.segment().text = text;
    this.render(true);
  }

  // Draws the segments' text: at once, or once per frame while deltas stream in. A frame
  // draws for about FRAME_MS (and at most a few KB: markdown.js); what is left (a burst of
  // text that came while the page was busy) goes on in the next frames, so no frame becomes a
  // long task. One frame is asked for at a time: drawing at once while one is asked for (the
  // turn ended) must not leave two to come, each drawing its share, in every frame after.
  render(now, onPaint) {
    if (onPaint) this.onPaint = onPaint;
    if (now) this.paint();
    else if (!this.frame) this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.paint();
    });
  }

  paint() {
    const deadline = performance.now() + FRAME_MS;
    let done = true;
    for (const s of this.segs) {
      if (!s.view.set(s.text, this.ended || s !== this.seg, deadline)) done = false;
    }
    if (this.onPaint) this.onPaint();
    if (!done) this.render(false);
  }

  markStatus() {
    this.kept = this.seg ? this.seg.text.length : 0;
  }

  // kind "retry": the reply is being asked for again; what it streamed since the last status
  // will come again. One notice says how often, however many times it happens.
  // Nothing streamed yet (an HTTP error before any text) is not an answer that broke off.
  retry() {
    const broke = !!(this.seg && this.seg.text.length > this.kept);
    if (broke) {
      this.seg.text = this.seg.text.slice(0, this.kept);
      this.render(true);
    }
    this.retries = (this.retries || 0) + 1;
    this.retryKey = broke || this.retryKey === 'turn.retry' ? 'turn.retry' : 'turn.retryError';
    if (!this.retryNotice) this.retryNotice = this.notice('muted', this.retryKey, { n: this.retries });
    else label(this.retryNotice, this.retryKey, { n: this.retries });
  }

  card(call) {
    let c = this.cards.get(call.call_id);
    if (!c) {
      c = new ToolCard(call);
      this.cards.set(call.call_id, c);
      this.flow.append(c.outer);
      this.seg = null; // text after a call is a new segment
    }
    return c;
  }

  // A notice; the same one twice in a row is shown once, with a count.
  notice(cls, key, params) {
    const sig = JSON.stringify([cls, key, params || null]);
    if (this.lastNotice && this.lastNotice.sig === sig) {
      this.lastNotice.n++;
      this.lastNotice.count.textContent = ` (×${this.lastNotice.n})`;
      return this.lastNotice.p;
    }
    const p = el('p', `notice ${cls}`);
    const text = label(el('span'), key, params);
    const count = el('span', 'count');
    p.append(text, count);
    this.notices.append(p);
    this.lastNotice = { sig, n: 1, p, count };
    return text;
  }

  // A notice with the server's own words folded under it (they are not translated).
  noticeDetail(cls, key, params, detail) {
    const text = this.notice(cls, key, params);
    const p = text.closest('.notice');
    if (detail && !p.querySelector('details')) {
      const d = el('details', 'detail');
      d.append(label(el('summary'), 'turn.detail'), el('span', '', detail));
      p.append(d);
    }
    return text;
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
    this.notices.append(box);
    this.lastNotice = null;
  }

  // An error event of the turn, by its kind (the code the page translates).
  error(ev) {
    const kind = ev.kind || 'internal';
    if (kind === 'retry') return this.retry();
    if (kind === 'provider') this.providerFailed = true;
    const key = ['provider', 'warning', 'persistence'].includes(kind) ? `turn.error.${kind}` : 'turn.error.internal';
    return this.noticeDetail(kind === 'warning' ? 'muted' : 'error', key, {}, ev.message || '');
  }

  // The answer rein wrote because the model gave none (final event code "composed"): said in
  // the page's words, by how the turn stopped; rein's English text is folded under it.
  composed(stop, text) {
    this.composedText = text;
    if (stop === 'proposed') return; // the proposals' own notice says it
    const key = has(`turn.composed.${stop}`) ? `turn.composed.${stop}` : 'turn.composed';
    this.noticeDetail('muted', key, {}, text);
  }

  // Every call of the turn ran and none succeeded (rein's "not a success").
  failedAll() {
    const all = [...this.cards.values()];
    return all.length > 0 && all.every((c) => !['success', 'pending', 'proposed'].includes(c.status));
  }

  named(status) {
    return [...this.cards.values()].filter((c) => c.status === status).map((c) => `${c.tool} (${c.callId})`);
  }

  // What a person must know about how the turn ended: it failed, calls never got a result,
  // checks denied calls, or it was stopped. Said once per turn.
  summarize(stop, success, detail) {
    if (this.summarized) return;
    this.summarized = true;
    if (!stop) {
      this.notice('error', 'turn.broken');
    } else if (stop === 'cancelled') {
      const cancelled = this.named('cancelled');
      this.notice('warn', 'status.cancelled');
      if (cancelled.length) this.notice('warn', 'turn.cancelledCalls', { calls: cancelled.join(', ') });
      else if (!this.cards.size && !this.answerText()) this.notice('muted', 'turn.cancelledNone');
    } else if (stop === 'proposed') {
      this.proposalNotice = this.notice('muted', 'turn.proposed', { n: this.named('proposed').length });
    } else if (success === false && ['final_answer', 'success_cap'].includes(stop) && this.failedAll()) {
      // It answered, but no tool call of it succeeded: said from its cards.
      const all = [...this.cards.values()];
      const denied = all.filter((c) => c.status === 'denied').length;
      this.noticeDetail('warn', denied === all.length ? 'turn.notSuccess.denied' : 'turn.notSuccess.failed',
        { n: all.length }, detail);
    } else if (success === false && !(stop === 'provider_error' && this.providerFailed)) {
      this.noticeDetail('warn', 'turn.problem', { reason: { key: `turn.stop.${stop}` } },
        stop === 'provider_error' ? '' : detail);
    }
    const pending = this.named('pending');
    if (pending.length) this.notice('warn', 'turn.pending', { n: pending.length, calls: pending.join(', ') });
    const denied = this.named('denied');
    if (denied.length) this.notice('warn', 'turn.denied', { calls: denied.join(', ') });
  }

  // A proposal was run or discarded: the notice counts what still waits.
  proposalsChanged() {
    if (!this.proposalNotice) return;
    const n = this.named('proposed').length;
    label(this.proposalNotice, n ? 'turn.proposed' : 'turn.proposedDone', { n });
  }

  // What the turn cost: {latency_ms, input_tokens, output_tokens, model}.
  showMeta(m) {
    if (!m) return;
    const parts = [];
    if (typeof m.latency_ms === 'number') parts.push(['meta.duration', { s: (m.latency_ms / 1000).toFixed(1) }]);
    if (typeof m.input_tokens === 'number' && (m.input_tokens || m.output_tokens)) {
      parts.push(['meta.tokens', { in: m.input_tokens, out: m.output_tokens }]);
    }
    if (m.model) parts.push(['meta.model', { model: m.model }]);
    this.meta.replaceChildren();
    parts.forEach(([key, params], i) => {
      if (i) this.meta.append(' · ');
      this.meta.append(label(el('span'), key, params));
    });
    this.meta.hidden = parts.length === 0;
  }

  // A request that failed before the turn began (nothing was sent, or the server refused it).
  failed(e) {
    this.notice('error', 'turn.notSent', { msg: errorRef(e) });
  }
}
