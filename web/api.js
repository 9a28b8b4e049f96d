// The page's client of rein's HTTP API (docs/DESIGN.md's table): JSON requests, the API key when
// the server asks for one, POST /agent/chat and GET /agent/conversations/{id}/events read as
// Server-Sent Events. EventSource can neither POST nor send the API key, so streams are read
// from fetch() and split into events here. Errors carry the server's code (or "network" when
// nothing answered), which the page translates; the server's message is kept as detail.

export class ApiError extends Error {
  constructor(status, code, message, body) {
    super(message);
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

let apiKey = sessionStorage.getItem('rein.apiKey') || '';
let onUnauthorized = null;

export function setApiKey(key) {
  apiKey = key || '';
  if (apiKey) sessionStorage.setItem('rein.apiKey', apiKey);
  else sessionStorage.removeItem('rein.apiKey');
}

// fn() is called on a 401 (the page asks for a key).
export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

function headers(extra = {}) {
  const h = { ...extra };
  if (apiKey) h.Authorization = `Bearer ${apiKey}`;
  return h;
}

async function errorFrom(resp) {
  let body = null;
  try {
    body = await resp.json();
  } catch {
    body = null;
  }
  const e = body && body.error ? body.error : {};
  if (resp.status === 401 && onUnauthorized) onUnauthorized();
  return new ApiError(resp.status, e.code || `http_${resp.status}`, e.message || resp.statusText, body);
}

async function send(method, path, body, extra = {}) {
  let resp;
  try {
    resp = await fetch(path, {
      method,
      headers: headers(body === undefined ? {} : { 'Content-Type': 'application/json' }),
      body: body === undefined ? undefined : JSON.stringify(body),
      ...extra,
    });
  } catch (e) {
    throw new ApiError(0, 'network', e.message);
  }
  if (!resp.ok) throw await errorFrom(resp);
  return resp.status === 204 ? null : resp.json();
}

const conv = (id) => `/agent/conversations/${encodeURIComponent(id)}`;

export const api = {
  conversations: (cursor, limit = 20, query = '') =>
    send('GET', `/agent/conversations?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}${
      query ? `&q=${encodeURIComponent(query)}` : ''}`),
  conversation: (id) => send('GET', conv(id)),
  // keepalive: a delete sent while the page is going away still reaches the server.
  remove: (id, keepalive = false) => send('DELETE', conv(id), undefined, { keepalive }),
  rename: (id, title) => send('PATCH', conv(id), { title }),
  // A page of recorded events as JSON: {events: [{seq, type, time, trace_id, data}], last_seq,
  // running, now_ms, next_after}. params: {after, from, type, limit}.
  events: (id, params = {}) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null) q.set(k, v);
    return send('GET', `${conv(id)}/events?${q}`, undefined, { headers: headers({ Accept: 'application/json' }) });
  },
  health: () => send('GET', '/healthz'),
  cancel: (id) => send('POST', `/agent/conversations/${encodeURIComponent(id)}/cancel`, {}),
  approve: (id, callId, approve) =>
    send('POST', `/agent/conversations/${encodeURIComponent(id)}/approvals/${encodeURIComponent(callId)}`,
      { approve }),
  // Runs or discards a call proposed in propose mode: {conversation_id, call_id, tool,
  // action, status, result} (the normalized result when run, null when discarded).
  proposal: (id, callId, run) =>
    send('POST', `/agent/conversations/${encodeURIComponent(id)}/proposals/${encodeURIComponent(callId)}`,
      { action: run ? 'run' : 'discard' }),
};

// Splits a byte stream into SSE events ({event, data, id}); comments (heartbeats) are
// skipped. Handles CRLF, CR and LF line ends and data split over several "data:" lines.
export async function* sseEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const eol = /\r\n|\r|\n/g;
  let buf = '';
  let ev = { event: 'message', data: [], id: null };
  for (;;) {
    const { value, done } = await reader.read();
    if (!done) buf += value;
    // Lines are read by position and what was read is dropped once per chunk: slicing the
    // buffer after every line made a chunk of many small events cost its size squared.
    let pos = 0;
    let m;
    eol.lastIndex = 0;
    while ((m = eol.exec(buf))) {
      const nl = m.index;
      // A CR at the end may be the first half of a CRLF still on its way (unless the stream
      // has ended).
      if (m[0] === '\r' && nl === buf.length - 1 && !done) break;
      const line = buf.slice(pos, nl);
      pos = eol.lastIndex;
      if (line === '') {
        if (ev.data.length) yield { event: ev.event, data: ev.data.join('\n'), id: ev.id };
        ev = { event: 'message', data: [], id: null };
        continue;
      }
      if (line.startsWith(':')) continue;
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? '' : line.slice(colon + 1);
      if (text.startsWith(' ')) text = text.slice(1);
      if (field === 'event') ev.event = text;
      else if (field === 'data') ev.data.push(text);
      else if (field === 'id') ev.id = text;
    }
    buf = buf.slice(pos);
    // An event not closed by a blank line when the stream ends is dropped (as EventSource does).
    if (done) return;
  }
}

// Starts a turn: POST /agent/chat with Accept: text/event-stream. Resolves to the Response
// once the headers are in (throws ApiError for 409 busy, 400, 401, ...); read its body with
// sseEvents(). signal only stops reading: a turn outlives its client, only cancel stops it.
export async function startChat(request, signal) {
  let resp;
  try {
    resp = await fetch('/agent/chat', {
      method: 'POST',
      headers: headers({ 'Content-Type': 'application/json', Accept: 'text/event-stream' }),
      body: JSON.stringify(request),
      signal,
    });
  } catch (e) {
    throw new ApiError(0, e.name === 'AbortError' ? 'aborted' : 'network', e.message);
  }
  if (!resp.ok) throw await errorFrom(resp);
  return resp;
}

// Follows a conversation's turn: GET /agent/conversations/{id}/events as an event stream,
// from after (an event id) or from the start of the last turn. Resolves to the Response.
export async function followEvents(id, after, signal) {
  let resp;
  const query = after ? `after=${encodeURIComponent(after)}` : 'from=turn';
  try {
    resp = await fetch(`${conv(id)}/events?${query}`, {
      headers: headers({ Accept: 'text/event-stream' }),
      signal,
    });
  } catch (e) {
    throw new ApiError(0, e.name === 'AbortError' ? 'aborted' : 'network', e.message);
  }
  if (!resp.ok) throw await errorFrom(resp);
  return resp;
}
