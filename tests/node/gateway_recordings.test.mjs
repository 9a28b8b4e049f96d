// rein's gateway reading real provider recordings (../shared/fixtures, SOURCES.md there) as its
// upstream's reply, with the official SDKs as clients. Each recording is served verbatim by the
// scripted model server; the client asks through rein on the same wire and on the other one, and
// what the client's SDK assembles must be what the recording says: the text, the reasoning, each
// tool call (id, name, arguments), the finish reason and the token counts. What the recording
// says is read here from the recorded bytes, without rein and without an SDK.
//
// usage: node gateway_recordings.test.mjs MODEL_SERVER REIN_OPENAI REIN_ANTHROPIC FIXTURES_DIR
//          REIN_OLLAMA REIN_DASHSCOPE_NATIVE
//        (run by tests/scripts/gateway_sdk.sh when the shared fixtures are there; each REIN_* is
//        a rein serve whose upstream speaks that wire)
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { modelServer, run } from './harness.mjs';

const [ms, reinOA, reinAN, fx, reinOL, reinDS] = process.argv.slice(2);
if (!reinDS) {
  console.error('usage: node gateway_recordings.test.mjs MODEL_SERVER REIN_OPENAI REIN_ANTHROPIC ' +
    'FIXTURES REIN_OLLAMA REIN_DASHSCOPE_NATIVE');
  process.exit(2);
}
const KEY = 'rein-test-key';
const PASS = { headers: { 'x-rein-on-invalid': 'pass' } };

const control = modelServer(ms);

// ---- what a recording says ---------------------------------------------------------------

// The data payloads of a recording, as the wire carries them: an .sse file's data lines (with or
// without the space after the colon), a .stream.jsonl file's lines, a .json file whole.
// first: only the recording's first message, up to its message_stop (a multi-step recording
// holds several).
function recorded(file, first) {
  const text = readFileSync(`${fx}/${file}`, 'utf8');
  return first ? text.slice(0, text.indexOf('\n', text.indexOf('"message_stop"')) + 1) : text;
}

function payloads(file, first) {
  const text = recorded(file, first).replace(/^\uFEFF/, '');
  if (file.endsWith('.json')) return [JSON.parse(text)];
  const lines = text.split(/\r?\n/);
  if (file.endsWith('.stream.jsonl')) return lines.filter((l) => l.trim()).map((l) => JSON.parse(l));
  return lines.filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim())
    .filter((d) => d !== '[DONE]').map((d) => JSON.parse(d));
}

// OpenAI's prompt_tokens hold the cached ones.
const openaiUsage = (u) => ({ in: u.prompt_tokens, out: u.completion_tokens,
  cached: u.prompt_tokens_details?.cached_tokens ?? undefined });

const empty = () => ({ text: '', reasoning: '', refusal: '', calls: [], finish: null,
  usage: null });

// OpenAI chat completion chunks (choice 0), from a recording or from the openai SDK's stream.
function fromOpenAIChunks(chunks) {
  const r = empty();
  for (const c of chunks) {
    if (c.usage) r.usage = openaiUsage(c.usage);
    for (const ch of c.choices ?? []) {
      if ((ch.index ?? 0) !== 0) continue;
      const d = ch.delta ?? {};
      r.text += d.content ?? '';
      r.reasoning += d.reasoning_content ?? d.reasoning ?? '';
      r.refusal += d.refusal ?? '';
      for (const [i, tc] of (d.tool_calls ?? []).entries()) {
        const k = tc.index ?? i;
        const call = r.calls[k] ?? (r.calls[k] = { id: '', name: '', args: '' });
        if (tc.id && !call.id) call.id = tc.id;
        if (tc.function?.name && !call.name) call.name = tc.function.name;
        call.args += tc.function?.arguments ?? '';
      }
      if (ch.finish_reason) r.finish = ch.finish_reason;
    }
  }
  return done(r);
}

function fromOpenAIMessage(body) {
  const r = empty();
  const ch = body.choices[0];
  r.text = ch.message.content ?? '';
  r.reasoning = ch.message.reasoning_content ?? '';
  r.refusal = ch.message.refusal ?? '';
  r.calls = (ch.message.tool_calls ?? []).map((tc) => ({ id: tc.id, name: tc.function.name,
    args: tc.function.arguments }));
  r.finish = ch.finish_reason;
  if (body.usage) r.usage = openaiUsage(body.usage);
  return done(r);
}

// Ollama's /api/chat body, and DashScope's native chunks and body, read as the OpenAI shapes
// they carry: Ollama's arguments are an object and its calls have no id; DashScope's message
// is a chunk's delta, with the finish reason "null" while it streams.
function fromOllama(body) {
  const m = body.message;
  return fromOpenAIMessage({ choices: [{ message: { content: m.content,
    tool_calls: (m.tool_calls ?? []).map((c) => ({ id: '', function: { name: c.function.name,
      arguments: JSON.stringify(c.function.arguments) } })) }, finish_reason: body.done_reason }],
    usage: { prompt_tokens: body.prompt_eval_count, completion_tokens: body.eval_count } });
}

function fromDashScope(bodies, stream) {
  const shaped = bodies.map((b) => ({
    choices: b.output.choices.map((ch) => ({ index: ch.index ?? 0,
      [stream ? 'delta' : 'message']: ch.message,
      finish_reason: ch.finish_reason === 'null' ? null : ch.finish_reason })),
    usage: b.usage && { prompt_tokens: b.usage.input_tokens,
      completion_tokens: b.usage.output_tokens } }));
  return stream ? fromOpenAIChunks(shaped) : fromOpenAIMessage(shaped[0]);
}

// Anthropic stream events, from a recording (one message).
function fromAnthropicEvents(events) {
  const blocks = [];
  let message = null;
  for (const e of events) {
    if (e.type === 'message_start') message = { ...e.message, content: blocks };
    else if (e.type === 'content_block_start') blocks[e.index] = { ...e.content_block, json: '' };
    else if (e.type === 'content_block_delta') {
      const b = blocks[e.index], d = e.delta;
      if (d.type === 'text_delta') b.text += d.text;
      else if (d.type === 'input_json_delta') b.json += d.partial_json;
      else if (d.type === 'thinking_delta') b.thinking += d.thinking;
      else if (d.type === 'signature_delta') b.signature = (b.signature ?? '') + d.signature;
    } else if (e.type === 'message_delta') {
      message.stop_reason = e.delta.stop_reason;
      message.usage = { ...message.usage, ...e.usage };
    }
  }
  for (const b of blocks) {
    if (b.type.endsWith('tool_use') && b.json !== '') b.input = JSON.parse(b.json);
    delete b.json;
  }
  return fromAnthropicMessage(message);
}

// kept: the blocks Claude wants back as they came (thinking with its signature, redacted
// thinking, server tools' blocks), whole and in order.
function fromAnthropicMessage(m) {
  const r = { ...empty(), kept: [] };
  for (const b of m.content) {
    if (b.type === 'text') r.text += b.text;
    else if (b.type === 'tool_use') r.calls.push({ id: b.id, name: b.name,
      args: JSON.stringify(b.input) });
    else r.kept.push(b);
    if (b.type === 'thinking') r.reasoning += b.thinking;
  }
  if (r.refusal === '' && m.stop_reason === 'refusal') [r.refusal, r.text] = [r.text, ''];
  r.finish = m.stop_reason;
  // Anthropic counts the prompt cache's reads and writes apart from input_tokens
  if (m.usage) r.usage = { in: m.usage.input_tokens + (m.usage.cache_read_input_tokens ?? 0) +
    (m.usage.cache_creation_input_tokens ?? 0), out: m.usage.output_tokens,
    cached: m.usage.cache_read_input_tokens ?? undefined };
  r.blocks = m.content.map((b) => b.type);
  return done(r);
}

// Arguments compared as values: the wire may space them differently.
function done(r) {
  r.calls = r.calls.filter(Boolean).map((c) => ({ ...c,
    args: c.args === '' ? {} : JSON.parse(c.args) }));
  return r;
}

const FINISH = { end_turn: 'stop', stop_sequence: 'stop', tool_use: 'tool_calls',
  max_tokens: 'length', refusal: 'content_filter', stop: 'stop', tool_calls: 'tool_calls',
  length: 'length', content_filter: 'content_filter' };

// ---- asking through rein -------------------------------------------------------------------

const rein = { openai: reinOA, anthropic: reinAN, ollama: reinOL, dashscope: reinDS };
const oa = {}, an = {};
for (const [wire, url] of Object.entries(rein)) {
  oa[wire] = new OpenAI({ apiKey: KEY, baseURL: url + '/v1', maxRetries: 0 });
  an[wire] = new Anthropic({ apiKey: KEY, baseURL: url, maxRetries: 0 });
}
const user = [{ role: 'user', content: 'Go on.' }];
const anyArgs = { type: 'object' };

async function serve(file, first, status) {
  const reply = { stream: !file.endsWith('.json'), times: 0 };
  if (status) reply.status = status;
  if (first) reply.body = recorded(file, first);
  else reply.body_file = `${fx}/${file}`;
  if (file.endsWith('.stream.jsonl')) reply.wrap_lines = 'sse';
  await control('/__reset', {});
  await control('/__script', { name: file, validate: true, replies: [reply] });
}

async function askOpenAI(wire, names, stream) {
  const req = { model: 'recorded', messages: user,
    tools: names.map((name) => ({ type: 'function', function: { name, parameters: anyArgs } })) };
  if (!stream) {
    const r = await oa[wire].chat.completions.create(req, PASS);
    return { got: fromOpenAIMessage(r), ext: r.rein };
  }
  const chunks = [];
  const s = await oa[wire].chat.completions.create({ ...req, stream: true,
    stream_options: { include_usage: true } }, PASS);
  for await (const c of s) chunks.push(c);
  return { got: fromOpenAIChunks(chunks), ext: chunks.find((c) => c.rein)?.rein };
}

async function askAnthropic(wire, names, stream) {
  const req = { model: 'recorded', max_tokens: 1024, messages: user,
    tools: names.map((name) => ({ name, input_schema: anyArgs })) };
  const m = stream ? await an[wire].messages.stream(req, PASS).finalMessage()
    : await an[wire].messages.create(req, PASS);
  return { got: fromAnthropicMessage(m), ext: m.rein, message: m };
}

// The next turn sends the reply back as the client got it; Claude must see the kept blocks
// as it wrote them.
async function sendBack(message, stream) {
  const uses = message.content.filter((b) => b.type === 'tool_use');
  const next = uses.length ? uses.map((b) => ({ type: 'tool_result', tool_use_id: b.id,
    content: 'done' })) : 'Go on.';
  await control('/__reset', {});
  await control('/__script', { name: 'next turn', replies: [{ text: 'ok' }] });
  const req = { model: 'recorded', max_tokens: 1024, tools: [...new Set(uses.map((b) => b.name))]
    .map((name) => ({ name, input_schema: anyArgs })), messages: [...user, { role: 'assistant', content: message.content },
    { role: 'user', content: next }] };
  if (stream) await an.anthropic.messages.stream(req).finalMessage();
  else await an.anthropic.messages.create(req);
  const log = await control('/__requests');
  assert.equal(log.length, 1);
  assert.equal(log[0].error, null, `the next turn upstream: ${log[0].error}`);
  return fromAnthropicMessage(log[0].json.messages.at(-2));
}

// What a client on `client`'s wire must get for a recording made on `wire`.
function compare(got, want, sameWire, what) {
  assert.equal(got.text, want.text, `${what}: text`);
  assert.deepEqual(got.calls.map((c) => [c.name, c.args]), want.calls.map((c) => [c.name, c.args]),
    `${what}: calls`);
  if (sameWire) assert.deepEqual(got.calls.map((c) => c.id), want.calls.map((c) => c.id),
    `${what}: call ids`);
  assert.equal(FINISH[got.finish] ?? got.finish, FINISH[want.finish] ?? want.finish,
    `${what}: finish`);
  if (want.usage) {
    assert.deepEqual([got.usage.in, got.usage.out], [want.usage.in, want.usage.out],
      `${what}: usage`);
    // the prompt cache's reads, when the provider said
    if (want.usage.cached !== undefined)
      assert.equal(got.usage.cached, want.usage.cached, `${what}: cached tokens`);
  }
}

const cases = [];

function recording(wire, file, opts = {}) {
  cases.push({ name: `${wire} recording ${file}`, fn: async () => {
    const events = payloads(file, opts.first);
    const stream = !file.endsWith('.json');
    const want = wire === 'anthropic'
      ? (stream ? fromAnthropicEvents(events) : fromAnthropicMessage(events[0]))
      : wire === 'ollama' ? fromOllama(events[0])
      : wire === 'dashscope' ? fromDashScope(events, stream)
      : (stream ? fromOpenAIChunks(events) : fromOpenAIMessage(events[0]));
    // a reply with calls ends for them, whatever word the provider used (DashScope and Ollama
    // say "stop")
    if (want.calls.length) want.finish = 'tool_calls';
    const names = [...new Set(want.calls.map((c) => c.name))];
    await serve(file, opts.first);
    for (const client of ['openai', 'anthropic']) {
      const what = `${client} client`;
      const ask = client === 'openai' ? askOpenAI : askAnthropic;
      const { got, ext, message } = await ask(wire, names, stream);
      // Anthropic's wire has no refusal member: an OpenAI model's refusal is its answer's text
      const w = client === 'anthropic' && wire === 'openai'
        ? { ...want, text: want.text + want.refusal, refusal: '' } : want;
      assert.equal(ext?.problems?.length ?? 0, 0, `${what}: problems ${JSON.stringify(ext)}`);
      compare(got, w, client === wire, what);
      assert.equal(got.reasoning, w.reasoning, `${what}: reasoning`);
      assert.equal(got.refusal, w.refusal, `${what}: refusal`);
      if (client === 'anthropic' && wire === 'anthropic') {
        assert.deepEqual(got.blocks, want.blocks, `${what}: content blocks`);
        assert.deepEqual(got.kept, want.kept, `${what}: thinking and server blocks`);
        const back = await sendBack(message, stream);
        assert.deepEqual(back.kept, want.kept, `${what}: the blocks sent back upstream`);
        await serve(file, opts.first);
      }
    }
  } });
}

// OpenAI's wire: api.openai.com and the OpenAI-compatible servers.
for (const f of ['openai/openai-python-gpt4o-single-strict-tool.sse',
  'openai/openai-python-gpt4o-refusal.sse',
  'openai/openai-python-gpt4o-max-tokens-length.sse',
  'openai/pydantic-gpt4o-parallel-2-tool-calls.sse',
  'openai/pydantic-gpt4o-parallel-2-tool-calls-split-args.sse',
  'openai/pydantic-single-tool-call.sse',
  'openai/vercel-azure-model-router-content-filter.stream.jsonl',
  'openai-compatible/vercel-deepseek-reasoner-tool-call.json',
  'openai-compatible/vercel-deepseek-reasoner-tool-call.stream.jsonl',
  'openai-compatible/vercel-groq-llama33-tool-call.json',
  'openai-compatible/vercel-groq-llama33-tool-call.stream.jsonl',
  'openai-compatible/vercel-mistral-glm-incremental-tool-call.stream.jsonl',
  'openai-compatible/vercel-xai-grok3mini-reasoning-tool-call.stream.jsonl',
  'dashscope/vercel-qwen-reasoning-content.stream.jsonl',
  'dashscope/vercel-qwen3-max-tool-call.json',
  'vllm/apertus70b-vllm-0.23-tool-call-nonstream.json',
  'vllm/llama31-8b-vllm-tool-call-nonstream.json',
  'vllm/qwen3-8b-vllm-after-tool-results-empty-tool_calls-array-nonstream.json',
  'vllm/qwen3-8b-vllm-parallel-2-tool-calls-reasoning-nonstream.json',
  'vllm/vercel-vllm-llama31-hermes-tool-call-usage-every-chunk.sse',
  'llamacpp/llama-server-b7342-qwen3coder-tool-call-nonstream.json',
  'llamacpp/llama-server-b7342-qwen3coder-after-tool-result-nonstream.json'])
  recording('openai', f);

// Anthropic's wire.
for (const f of ['anthropic/llm-anthropic-haiku45-2-parallel-tool-use.sse',
  'anthropic/llm-anthropic-haiku45-thinking-then-tool-use.sse',
  'anthropic/pydantic-redacted-thinking.sse',
  'anthropic/pydantic-sonnet4-thinking-stream.sse',
  'anthropic/sdkpy-haiku45-tool-use-first-block-stream.sse',
  'anthropic/sdkpy-sonnet4-text-then-tool-use.sse',
  'anthropic/vercel-json-tool-input-json-delta.stream.jsonl',
  'anthropic/vercel-text-then-tool-use-empty-input.json',
  'anthropic/vercel-text-then-tool-use-empty-input.stream.jsonl',
  'anthropic/vercel-thinking-signature.stream.jsonl'])
  recording('anthropic', f);
// The native wires: Ollama's /api/chat, DashScope's own API.
recording('ollama', 'ollama/ollama-docs-api-chat-tool-call-nonstream.json');
for (const f of ['dashscope/cnblogs-native-qwen-max-parallel-tool-calls.sse',
  'dashscope/cnblogs-native-tool-call-nonstream.json', 'dashscope/cnblogs-native-reasoning.sse'])
  recording('dashscope', f);
// Server tools (tool search): their blocks go back to Claude with the next turn, as they came.
recording('anthropic', 'anthropic/vercel-server-tool-use-tool-search.stream.jsonl', { first: true });

// ---- errors --------------------------------------------------------------------------------

// What the client's SDK threw for a request it made through rein.
async function thrown(client, wire, stream) {
  const req = client === 'openai'
    ? oa[wire].chat.completions.create({ model: 'recorded', messages: user, stream })
    : an[wire].messages.create({ model: 'recorded', max_tokens: 64, messages: user, stream });
  try {
    const r = await req;
    if (stream) for await (const piece of r) void piece;
  } catch (e) {
    return e;
  }
  throw new Error('no error reached the client');
}

// An upstream error answer keeps its status; on its own wire the client gets the provider's
// error object as it was sent, on the other wire that wire's error shape with the provider's
// message.
function errorRecording(wire, file, status) {
  cases.push({ name: `${wire} error recording ${file}`, fn: async () => {
    const body = JSON.parse(readFileSync(`${fx}/${file}`, 'utf8').replace(/^\uFEFF/, ''));
    await serve(file, false, status);
    for (const client of ['openai', 'anthropic']) {
      for (const stream of [false, true]) {
        const what = `${client} client${stream ? ', stream' : ''}`;
        const e = await thrown(client, wire, stream);
        assert.equal(e.status, status, `${what}: status (${e.message})`);
        const message = body.error?.message ?? body.message;
        if (client === 'openai') {
          // the openai SDK keeps the body's "error" member
          if (client === wire) assert.deepEqual(e.error, body.error, `${what}: body`);
          else assert.equal(e.error.message, message, `${what}: message`);
        } else {
          // the body as Claude sent it, its request_id kept (decision 0086)
          if (client === wire) assert.deepEqual(e.error, body, `${what}: body`);
          else {
            assert.equal(e.error.type, 'error', `${what}: shape`);
            assert.equal(e.error.error.message, message, `${what}: message`);
          }
        }
      }
    }
  } });
}

errorRecording('openai', 'openai/pydantic-error-400.json', 400);
errorRecording('openai', 'openrouter/pydantic-openrouter-429.json', 429);
errorRecording('openai', 'groq/pydantic-groq-tool-use-failed-400.json', 400);
errorRecording('anthropic', 'anthropic/sdkpy-error-400.json', 400);
errorRecording('anthropic', 'anthropic/sdkpy-error-429-rate-limit.json', 429);
errorRecording('anthropic', 'anthropic/pydantic-error-400-invalid-request.json', 400);
errorRecording('dashscope', 'dashscope/cnblogs-native-parameter-error-400.json', 400);
errorRecording('dashscope', 'dashscope/cnblogs-native-auth-error-401.json', 401);

// An error inside a stream the upstream began with 200: a streaming client gets an error in
// its own wire's stream, with the provider's message, and no made-up success.
function streamError(wire, file, message) {
  cases.push({ name: `${wire} stream error recording ${file}`, fn: async () => {
    await serve(file);
    for (const client of ['openai', 'anthropic']) {
      const e = await thrown(client, wire, true);
      assert.match(e.message, message, `${client} client: ${e.message}`);
    }
  } });
}

streamError('openai', 'groq/pydantic-groq-tool-use-failed-stream-error.sse',
  /Tool call validation failed/);
streamError('dashscope', 'dashscope/cnblogs-native-parameter-error-event.sse',
  /Role must be user or assistant/);

// Anthropic's overloaded error in the middle of a stream (the recorded event's payload, after
// a recorded stream's first events), and the stream closed with no message_stop.
cases.push({ name: 'anthropic stream error recording anthropic/issue-sdkgo-200-overloaded-error-event-data.json',
  fn: async () => {
    const head = recorded('anthropic/sdkpy-sonnet4-text-then-tool-use.sse').split('\n\n')
      .slice(0, 4).join('\n\n');
    const error = readFileSync(`${fx}/anthropic/issue-sdkgo-200-overloaded-error-event-data.json`,
      'utf8').trim();
    await control('/__reset', {});
    await control('/__script', { name: 'overloaded', replies: [{ stream: true, times: 0,
      body: `${head}\n\nevent: error\ndata: ${error}\n\n` }] });
    for (const client of ['openai', 'anthropic']) {
      const e = await thrown(client, 'anthropic', true);
      assert.match(e.message, /Overloaded/, `${client} client: ${e.message}`);
      if (client === 'anthropic') assert.equal(e.error?.error?.type, 'overloaded_error');
    }
  } });

await run(cases);
