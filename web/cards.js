// Tool call cards: one per call the model made, with the tool's name (and the name the model
// used when rein repaired it), the arguments, the status, the latency, and the result or the
// invalid payload folded in a <details>. A card can also hold an approval question (a
// destructive call waiting for a person) or a proposal (propose mode: run or discard). Every
// value from the model or a tool is put in as text.

import { errorRef, has, label } from './i18n.js';

export function el(tag, cls, text) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  if (text !== undefined) n.textContent = text;
  return n;
}

function pretty(value) {
  if (typeof value === 'string') {
    try {
      return JSON.stringify(JSON.parse(value), null, 2);
    } catch {
      return value;
    }
  }
  return JSON.stringify(value, null, 2);
}

// The status a person should see. The ledger has pending, success, error and invalid; a denied
// call is "invalid" with a "Denied: …" payload or the code "denied", a stopped one "error" with
// the code "cancelled". result is what the model read ({ok, error: {code}}, the invalid
// payload {error: "Denied: …"}) or the ledger's record of a failure ({code, message}).
export function displayStatus(status, result) {
  let code = null;
  if (result && typeof result === 'object') {
    const err = result.error;
    if (err && typeof err === 'object') code = err.code;
    else if (typeof err === 'string' && err.startsWith('Denied:')) code = 'denied';
    else if (status !== 'success' && typeof result.code === 'string') code = result.code;
  }
  if (code === 'denied' || code === 'cancelled') return code;
  const known = ['pending', 'success', 'error', 'invalid', 'proposed', 'cancelled', 'denied', 'discarded'];
  return known.includes(status) ? status : 'error';
}

// JSON text parsed, or the value itself (not a string, or not JSON).
export function parseMaybe(value) {
  if (typeof value !== 'string') return value;
  try {
    return JSON.parse(value);
  } catch {
    return value;
  }
}

// What a person reads of a result: {kind: output | error | refused, text, code}; code is
// rein's error code, which the page says in its own words when it knows it.
function essence(r) {
  if (r && typeof r === 'object' && !Array.isArray(r)) {
    if (typeof r.ok === 'boolean') {
      if (r.ok) return { kind: 'output', text: pretty(r.output ?? r.result ?? null) };
      const e = r.error && typeof r.error === 'object' ? r.error : {};
      return { kind: 'error', text: [e.code, e.message].filter(Boolean).join(': ') || pretty(r), code: e.code };
    }
    if (typeof r.error === 'string') return { kind: 'refused', text: r.error };
    if (r.status === 'proposed') return { kind: 'refused', text: r.message || '' };
    if (typeof r.code === 'string' && typeof r.message === 'string') {
      return { kind: 'error', text: `${r.code}: ${r.message}`, code: r.code };
    }
  }
  return { kind: 'output', text: pretty(r) };
}

export class ToolCard {
  // call: {call_id, tool (the name the model sent)}
  constructor(call) {
    this.callId = call.call_id;
    this.sentName = call.tool;
    this.tool = call.tool;
    this.status = 'pending';
    this.root = el('details', 'card');
    const summary = el('summary');
    this.nameEl = el('span', 'tool-name', call.tool);
    this.sentEl = el('span', 'sent-as');
    this.sentEl.hidden = true;
    this.statusEl = el('span', 'badge');
    this.latencyEl = el('span', 'latency');
    summary.append(this.nameEl, this.sentEl, this.statusEl, this.latencyEl);
    this.body = el('div', 'card-body');
    this.argsHead = label(el('h4'), 'card.args');
    this.argsEl = el('pre', 'json');
    this.resultHead = el('h4');
    this.resultHead.hidden = true;
    this.resultEl = el('pre', 'json');
    this.resultEl.hidden = true;
    this.notes = el('div', 'card-notes');
    this.raw = el('details', 'raw');
    this.raw.hidden = true;
    this.rawEl = el('pre', 'json');
    this.raw.append(label(el('summary'), 'card.raw'), this.rawEl);
    this.body.append(this.argsHead, this.argsEl, this.resultHead, this.resultEl, this.raw);
    this.root.append(summary, this.body);
    // Questions and notes stay visible outside the fold: a person must see them.
    this.outer = el('div', 'card-wrap');
    this.outer.dataset.callId = call.call_id;
    this.outer.append(this.root, this.notes);
    this.setArguments(call.arguments);
    this.setStatus('pending');
  }

  setArguments(args) {
    if (args !== undefined) this.argsEl.textContent = pretty(args);
  }

  // tool: the registry's name after repair; shown with the model's name when they differ.
  setTool(tool) {
    if (!tool) return;
    this.tool = tool;
    this.nameEl.textContent = tool;
    if (this.sentName && tool !== this.sentName) {
      label(this.sentEl, 'card.sentAs', { name: this.sentName });
      this.sentEl.hidden = false;
    }
  }

  setStatus(status) {
    this.status = status;
    this.root.dataset.status = status;
    this.outer.dataset.status = status;
    label(this.statusEl, `st.${status}`);
    this.statusEl.className = `badge st-${status}`;
  }

  setLatency(ms) {
    if (typeof ms === 'number') label(this.latencyEl, 'card.latency', { ms });
  }

  // Running time while the call executes (not announced; the status line says it runs);
  // null clears it.
  setElapsed(ms) {
    this.latencyEl.removeAttribute('data-i18n');
    this.latencyEl.textContent = ms === null ? '' : `${(ms / 1000).toFixed(1)} s`;
  }

  // result: what the model read (normalized result, invalid payload or proposal). The card
  // shows what matters to a person: the tool's output, or the error's code and message, or
  // the reason a call was refused; the whole envelope (ids, timings) stays one click away.
  setResult(status, result, latency) {
    this.setStatus(displayStatus(status, result));
    // A proposal was only checked: its "latency" says nothing about the tool.
    if (status !== 'proposed') this.setLatency(latency);
    if (result === undefined || result === null) return;
    const shown = essence(parseMaybe(result));
    label(this.resultHead, shown.kind === 'output' ? 'card.result' : shown.kind === 'error'
      ? 'card.error' : 'card.invalid');
    this.resultHead.hidden = false;
    // rein's own error codes in the page's words; its English message stays in the raw view
    // below. A tool's own failure (execution_failed) shows what the tool said.
    if (shown.kind === 'error' && shown.code && has(`call.code.${shown.code}`)) {
      label(this.resultEl, `call.code.${shown.code}`);
    } else {
      delete this.resultEl.dataset.i18n;
      this.resultEl.textContent = shown.text;
    }
    this.resultEl.hidden = false;
    this.rawEl.textContent = pretty(result);
    this.raw.hidden = false;
  }

  note(cls, key, params) {
    const p = label(el('p', `note ${cls}`), key, params);
    this.notes.append(p);
    return p;
  }

  verification(v) {
    if (v.kind === 'approval') {
      this.endQuestion();
      if (v.code && has(`approval.code.${v.code}`)) this.note(v.passed ? 'ok' : 'warn', `approval.code.${v.code}`);
      else if (v.passed) this.note('ok', 'card.approvalGiven');
      else this.note('warn', 'card.approvalDenied', { reason: v.reason || '' });
      return;
    }
    // The self-check's code says what its reason is: rein's own words (said in the page's
    // language) or the verifier's (shown as it said them).
    const key = { approved: 'check.approved', rejected: 'check.rejected', unclear: 'check.unclear',
      failed: 'check.failed', said: v.passed ? 'check.saidYes' : 'check.saidNo' }[v.code];
    if (key) this.note(v.passed ? 'ok' : 'warn', key, { reason: v.reason || '' });
    else this.note(v.passed ? 'ok' : 'warn', v.passed ? 'card.verifyOk' : 'card.verifyNo', { reason: v.reason || '' });
  }

  // A destructive call waits for a person: the question, the arguments, two buttons and the
  // time left. answer(approve) sends it; it resolves or throws an Error with a message.
  ask(ev, answer) {
    this.endQuestion();
    const box = el('div', 'question');
    box.setAttribute('role', 'group');
    const q = label(el('p', 'q'), 'approval.question', { tool: ev.tool });
    q.id = `q-${this.callId}`;
    box.setAttribute('aria-labelledby', q.id);
    const args = el('pre', 'json', pretty(ev.arguments));
    const row = el('div', 'row');
    const yes = label(el('button', 'approve'), 'approval.approve');
    const no = label(el('button', 'reject danger'), 'approval.reject');
    yes.type = no.type = 'button';
    const left = el('span', 'countdown');
    left.setAttribute('aria-hidden', 'true');
    const msg = el('p', 'note');
    msg.setAttribute('role', 'status');
    row.append(yes, no, left);
    box.append(q, args, row, msg);
    this.notes.append(box);
    this.question = box;
    // A question replayed after a reload has less time left: ev.left_ms says how much.
    const deadline = performance.now() + (ev.left_ms ?? ev.timeout_ms ?? 60000);
    const tick = () => {
      const s = Math.max(0, Math.ceil((deadline - performance.now()) / 1000));
      label(left, 'approval.left', { s });
      if (s === 0) {
        this.endQuestion();
        this.note('warn', 'approval.timeout');
      }
    };
    tick();
    this.timer = setInterval(tick, 250);
    const reply = async (approve) => {
      yes.disabled = no.disabled = true;
      try {
        await answer(approve);
        label(msg, approve ? 'approval.sentYes' : 'approval.sentNo');
      } catch (e) {
        label(msg, 'approval.failed', { msg: errorRef(e) });
        yes.disabled = no.disabled = false;
      }
    };
    yes.addEventListener('click', () => reply(true));
    no.addEventListener('click', () => reply(false));
    return yes;
  }

  endQuestion() {
    clearInterval(this.timer);
    this.timer = null;
    if (this.question) this.question.remove();
    this.question = null;
  }

  // Propose mode: the checked call waits for a person to run or discard it. act(run) does it
  // and resolves to the outcome {status, result, latency_ms}; done(card) is told after. A
  // destructive call is marked and runs only after a second, explicit click.
  propose(act, destructive, done) {
    const box = el('div', 'question proposal');
    const intro = label(el('p', 'q'), destructive ? 'proposal.introDestructive' : 'proposal.intro');
    const row = el('div', 'row');
    const run = label(el('button', 'run'), 'proposal.run');
    const drop = label(el('button', 'discard ghost'), 'proposal.discard');
    run.type = drop.type = 'button';
    const msg = el('p', 'note');
    msg.setAttribute('role', 'status');
    row.append(run, drop);
    box.append(intro, row, msg);
    if (destructive) {
      this.outer.classList.add('destructive');
      this.nameEl.after(label(el('span', 'badge st-destructive'), 'card.destructive'));
    }
    this.notes.append(box);
    this.proposal = box;
    let armed = !destructive;
    const go = async (doRun) => {
      if (doRun && !armed) {
        armed = true;
        label(run, 'proposal.confirmRun');
        run.classList.add('danger');
        label(msg, 'proposal.confirm');
        return;
      }
      run.disabled = drop.disabled = true;
      try {
        const out = await act(doRun);
        box.remove();
        this.proposal = null;
        if (doRun) {
          this.setResult(out.status, out.result, out.latency_ms);
          this.note('ok', 'proposal.ran');
        } else {
          this.setStatus('discarded');
          this.note('muted', 'proposal.discarded');
        }
        if (done) done(this);
      } catch (e) {
        label(msg, 'proposal.failed', { msg: errorRef(e) });
        run.disabled = drop.disabled = false;
      }
    };
    run.addEventListener('click', () => go(true));
    drop.addEventListener('click', () => go(false));
    return run;
  }
}
