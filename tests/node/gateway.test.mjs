// rein's gateway (include/rein/gateway.h) with the official SDKs as its clients: `openai`,
// `@anthropic-ai/sdk`, the Vercel AI SDK (`ai` with `@ai-sdk/openai-compatible`, `@ai-sdk/openai`
// and `@ai-sdk/anthropic`), the OpenAI Agents SDK (`@openai/agents`) and LangChain's chat
// models (`@langchain/openai`, `@langchain/anthropic`) talk to `rein serve`, whose upstream is
// the scripted model server (tests/support/model_server.h). Google's `@google/genai` and the
// AI SDK's `@ai-sdk/google` talk to it through its Gemini wire (decision 0092).
// Five rein servers run: one whose upstream speaks OpenAI's chat completions wire, one
// Anthropic's, one OpenAI's Responses API, one Gemini's, one Bedrock's (signing with SigV4), so
// each client reaches every wire. Every case
// scripts the upstream, makes the SDK call, and checks what the client got and what the
// upstream received.
//
// usage: node gateway.test.mjs MODEL_SERVER_URL REIN_OPENAI_UPSTREAM_URL REIN_ANTHROPIC_UPSTREAM_URL
//        REIN_RESPONSES_UPSTREAM_URL REIN_GEMINI_UPSTREAM_URL REIN_BEDROCK_UPSTREAM_URL
//        (run by tests/scripts/gateway_sdk.sh; the servers need the key rein-test-key)
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { generateText, generateObject, streamText, jsonSchema, stepCountIs, tool } from 'ai';
import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { Agent, Runner, OpenAIProvider, tool as agentTool, setTracingDisabled } from '@openai/agents';
import { ChatOpenAI } from '@langchain/openai';
import { ChatAnthropic } from '@langchain/anthropic';
import { tool as lcTool } from '@langchain/core/tools';
import { HumanMessage, ToolMessage } from '@langchain/core/messages';
import { z } from 'zod';
import { GoogleGenAI, Type, FunctionCallingConfigMode } from '@google/genai';
import { createGoogleGenerativeAI } from '@ai-sdk/google';
import { modelServer, run } from './harness.mjs';

const [ms, reinOA, reinAN, reinRS, reinGM, reinBD] = process.argv.slice(2);
if (!reinBD) {
  console.error('usage: node gateway.test.mjs MODEL_SERVER REIN_OPENAI REIN_ANTHROPIC ' +
    'REIN_RESPONSES REIN_GEMINI REIN_BEDROCK');
  process.exit(2);
}
const KEY = 'rein-test-key';

const control = modelServer(ms);

async function scenario(replies) {
  await control('/__reset', {});
  await control('/__script', { name: 'gateway', replies });
}

// What the upstream received, each request refused by none of its checks.
async function upstream(n) {
  const log = await control('/__requests');
  if (n !== undefined) assert.equal(log.length, n, 'requests the upstream saw');
  for (const r of log) assert.equal(r.error, null, `upstream request ${r.index}: ${r.error}`);
  return log;
}

const oa = new OpenAI({ apiKey: KEY, baseURL: reinOA + '/v1', maxRetries: 0 });
const oaToAn = new OpenAI({ apiKey: KEY, baseURL: reinAN + '/v1', maxRetries: 0 });
const an = new Anthropic({ apiKey: KEY, baseURL: reinAN, maxRetries: 0 });
const anToOa = new Anthropic({ apiKey: KEY, baseURL: reinOA, maxRetries: 0 });

const user = [{ role: 'user', content: 'What is the weather in Paris?' }];
const weatherSchema = { type: 'object', properties: { city: { type: 'string' } },
  required: ['city'], additionalProperties: false };
const oaTools = [{ type: 'function', function: { name: 'get_weather', description: 'weather',
  parameters: weatherSchema } }];
const anTools = [{ name: 'get_weather', description: 'weather', input_schema: weatherSchema }];
const call = (id, args, name = 'get_weather') => ({ id, name, arguments: args });
const base = { model: 'gpt-test', messages: user, tools: oaTools };
const anBase = { model: 'claude-test', max_tokens: 256, messages: user, tools: anTools };
const rsCountTools = [{ type: 'function', name: 'get_weather', description: 'weather',
  parameters: weatherSchema }];

// The body of a failed request, read without an SDK (to see the "rein" member).
async function rawPost(url, body, headers = {}) {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json',
    authorization: `Bearer ${KEY}`, ...headers }, body: JSON.stringify(body) });
  return { status: res.status, headers: res.headers, json: await res.json() };
}

async function metric(server, name, labels) {
  const res = await fetch(server + '/metrics', { headers: { authorization: `Bearer ${KEY}` } });
  const text = await res.text();
  for (const line of text.split('\n')) {
    if (!line.startsWith(name + '{')) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.split(' ').at(-1));
  }
  return 0;
}

async function until(what, fn, ms = 10000) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`timed out waiting for ${what}`);
}

const cases = [];
const check = (name, fn) => cases.push({ name, fn });

// ---- OpenAI clients ------------------------------------------------------------------------

check('openai: a valid call passes unchanged (ids, arguments, usage)', async () => {
  await scenario([{ tool_calls: [call('call_abc', '{"city": "Paris"}')],
    usage: { input_tokens: 12, output_tokens: 5 } }]);
  const { data: r, response } = await oa.chat.completions.create(base).withResponse();
  const m = r.choices[0].message;
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(m.tool_calls.length, 1);
  assert.equal(m.tool_calls[0].id, 'call_abc');
  assert.equal(m.tool_calls[0].function.name, 'get_weather');
  assert.equal(m.tool_calls[0].function.arguments, '{"city": "Paris"}');
  assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens],
    [12, 5, 17]);
  assert.equal(r.rein, undefined, 'nothing to report: no rein member');
  assert.match(response.headers.get('x-trace-id'), /^[0-9a-f]{32}$/);
  const [req] = await upstream(1);
  assert.equal(req.format, 'openai');
  assert.equal(req.json.tools[0].function.name, 'get_weather');
  assert.notEqual(req.headers.authorization, `Bearer ${KEY}`, 'the client key never goes upstream');
});

check('openai: a misspelled tool name is repaired to the declared one', async () => {
  await scenario([{ tool_calls: [call('call_1', '{"city":"Paris"}', 'get_wether')] }]);
  const r = await oa.chat.completions.create(base);
  const c = r.choices[0].message.tool_calls[0];
  assert.equal(c.function.name, 'get_weather');
  assert.equal(c.id, 'call_1');
  assert.deepEqual(r.rein.repairs.map((x) => [x.from, x.to]), [['get_wether', 'get_weather']]);
  await upstream(1);
});

check('openai: invalid arguments are re-asked; the client sees only the valid reply', async () => {
  await scenario([
    { tool_calls: [call('call_1', '{"town":"Paris"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_2', '{"city":"Paris"}')] }]);
  const r = await oa.chat.completions.create(base);
  const m = r.choices[0].message;
  assert.deepEqual(m.tool_calls.map((c) => [c.id, c.function.arguments]),
    [['call_2', '{"city":"Paris"}']]);
  assert.equal(r.rein.reasks, 1);
  assert.equal(r.rein.problems[0].code, 'invalid_arguments');
  const log = await upstream(2);
  const last = log[1].json.messages.at(-1);
  assert.equal(last.role, 'tool');
  assert.equal(last.tool_call_id, 'call_1');
  const payload = JSON.parse(last.content);
  assert.deepEqual(payload.receivedArgs, { town: 'Paris' });
  assert.ok(payload.errors.some((e) => e.path === '/city'));
  assert.deepEqual(payload.expected, weatherSchema);
});

check('openai: pass policy returns the invalid call with rein.problems', async () => {
  await scenario([{ tool_calls: [call('call_1', '{"town":"Paris"}')] }]);
  const r = await oa.chat.completions.create(base, { headers: { 'x-rein-on-invalid': 'pass' } });
  assert.equal(r.choices[0].message.tool_calls[0].function.arguments, '{"town":"Paris"}');
  assert.equal(r.rein.problems.length, 1);
  assert.equal(r.rein.problems[0].call_id, 'call_1');
  assert.equal(r.rein.problems[0].code, 'invalid_arguments');
  await upstream(1);
});

check('openai: error policy answers 422 with the problems', async () => {
  await scenario([{ tool_calls: [call('call_1', '{"city":7}')] }]);
  await assert.rejects(
    oa.chat.completions.create(base, { headers: { 'x-rein-on-invalid': 'error' } }),
    (e) => e instanceof OpenAI.UnprocessableEntityError && e.status === 422 &&
      /invalid tool call/.test(e.message));
  await scenario([{ tool_calls: [call('call_1', '{"city":7}')] }]);
  const raw = await rawPost(reinOA + '/v1/chat/completions', base,
    { 'x-rein-on-invalid': 'error' });
  assert.equal(raw.status, 422);
  assert.equal(raw.json.rein.problems[0].errors[0].path, '/city');
});

check('openai: re-asks stop at x-rein-max-reasks with a 422', async () => {
  await scenario([{ tool_calls: [call('call_1', '{}')], times: 0 }]);
  const raw = await rawPost(reinOA + '/v1/chat/completions', base, { 'x-rein-max-reasks': '1' });
  assert.equal(raw.status, 422);
  assert.equal(raw.json.rein.reasks, 1);
  await upstream(2);
});

check('openai: a tool call written as text becomes a native call', async () => {
  await scenario([{ text: 'Sure.\n<tool_call>\n{"name": "get_weather", "arguments": ' +
    '{"city": "Paris"}}\n</tool_call>' }]);
  const r = await oa.chat.completions.create(base);
  const m = r.choices[0].message;
  assert.equal(r.choices[0].finish_reason, 'tool_calls');
  assert.equal(m.tool_calls.length, 1);
  assert.equal(m.tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(m.tool_calls[0].function.arguments), { city: 'Paris' });
  assert.ok(!m.content || !m.content.includes('<tool_call>'), 'the markup left the text');
  assert.equal(r.rein.converted.length, 1);
});

check('openai: parallel calls keep their order; a duplicate id is made unique', async () => {
  await scenario([{ tool_calls: [call('call_a', '{"city":"Paris"}'),
    call('call_b', '{"city":"Rome"}'), call('call_a', '{"city":"Oslo"}')] }]);
  const r = await oa.chat.completions.create({ ...base, parallel_tool_calls: true });
  const calls = r.choices[0].message.tool_calls;
  assert.deepEqual(calls.map((c) => JSON.parse(c.function.arguments).city),
    ['Paris', 'Rome', 'Oslo']);
  assert.equal(calls[0].id, 'call_a');
  assert.equal(calls[1].id, 'call_b');
  assert.notEqual(calls[2].id, 'call_a');
  assert.equal(new Set(calls.map((c) => c.id)).size, 3);
  assert.equal(r.rein.renamed_ids[0].from, 'call_a');
  const [req] = await upstream(1);
  assert.equal(req.json.parallel_tool_calls, true);
});

check('openai: streaming with a re-ask mid-stream continues the same stream', async () => {
  await scenario([
    { text: ['Let me ', 'check.'], tool_calls: [call('call_1', '{"town":"Paris"}')],
      usage: { input_tokens: 10, output_tokens: 4 } },
    { match: { tool_result_contains: 'Invalid arguments' }, text: ' Fixed.',
      tool_calls: [call('call_2', '{"city":"Paris"}')],
      usage: { input_tokens: 20, output_tokens: 6 } }]);
  const stream = await oa.chat.completions.create({ ...base, stream: true,
    stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null, textChunks = 0;
  const calls = new Map();
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    const ch = chunk.choices[0];
    if (!ch) continue;
    if (ch.delta.content) { text += ch.delta.content; textChunks++; }
    for (const tc of ch.delta.tool_calls ?? []) {
      const c = calls.get(tc.index) ?? { id: tc.id, name: '', args: '' };
      c.name += tc.function?.name ?? '';
      c.args += tc.function?.arguments ?? '';
      calls.set(tc.index, c);
    }
    finish = ch.finish_reason ?? finish;
  }
  assert.equal(text, 'Let me check. Fixed.');
  assert.ok(textChunks >= 3, 'text deltas passed through as they came');
  assert.deepEqual([...calls.values()], [{ id: 'call_2', name: 'get_weather',
    args: '{"city":"Paris"}' }]);
  assert.equal(finish, 'tool_calls');
  assert.deepEqual([usage.prompt_tokens, usage.completion_tokens], [30, 10]);
  await upstream(2);
  // The SDK's own stream helper assembles the same message.
  await scenario([
    { text: 'Checking.', tool_calls: [call('call_1', '{}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_2', '{"city":"Paris"}')] }]);
  const done = await oa.chat.completions.stream(base).finalChatCompletion();
  assert.equal(done.choices[0].message.tool_calls[0].id, 'call_2');
});

check('openai: upstream 429 keeps its status, body and Retry-After', async () => {
  await scenario([{ status: 429, headers: { 'Retry-After': '2' } }]);
  await assert.rejects(oa.chat.completions.create(base),
    (e) => e instanceof OpenAI.RateLimitError && e.headers.get('retry-after') === '2' &&
      /Rate limit reached/.test(e.error.message) && e.error.type === 'requests');
  await upstream(1);
  // The SDK's own retry honours it and then succeeds.
  await scenario([{ status: 429, headers: { 'retry-after-ms': '30' } }, { text: 'second try' }]);
  const retrying = new OpenAI({ apiKey: KEY, baseURL: reinOA + '/v1', maxRetries: 2 });
  const r = await retrying.chat.completions.create(base);
  assert.equal(r.choices[0].message.content, 'second try');
  await upstream(2);
});

check('openai: a client that goes away cancels the upstream request', async () => {
  await scenario([{ fault: { hang: true } }]);
  const before = await metric(reinOA, 'rein_gateway_upstream_calls_total',
    { outcome: 'cancelled' });
  const ac = new AbortController();
  const pending = oa.chat.completions.create(base, { signal: ac.signal });
  await until('the upstream request', async () => (await control('/__requests')).length === 1);
  ac.abort();
  await assert.rejects(pending, (e) => e instanceof OpenAI.APIUserAbortError);
  await until('the cancelled upstream call', async () => await metric(reinOA,
    'rein_gateway_upstream_calls_total', { outcome: 'cancelled' }) === before + 1);
});

check('openai client → Anthropic upstream, JSON and stream', async () => {
  await scenario([{ text: 'Looking.', tool_calls: [call('toolu_1', '{"city":"Paris"}')],
    usage: { input_tokens: 8, output_tokens: 3 } },
  { text: ['It is ', 'sunny.'] }]);
  const r = await oaToAn.chat.completions.create(base);
  const m = r.choices[0].message;
  assert.equal(m.content, 'Looking.');
  assert.equal(m.tool_calls[0].id, 'toolu_1');
  assert.equal(m.tool_calls[0].function.arguments, '{"city":"Paris"}');
  assert.equal(r.usage.prompt_tokens, 8);
  const done = await oaToAn.chat.completions.stream({ ...base, messages: [...user, m,
    { role: 'tool', tool_call_id: 'toolu_1', content: '{"temp":21}' }] }).finalChatCompletion();
  assert.equal(done.choices[0].message.content, 'It is sunny.');
  const log = await upstream(2);
  assert.ok(log.every((q) => q.format === 'anthropic'));
  assert.equal(log[0].json.tools[0].input_schema.type, 'object');
  assert.equal(log[1].json.messages.at(-1).content[0].type, 'tool_result');
});

// A user's pasted image crosses wires (decision 0097): a data URL from the openai SDK reaches
// Claude as an image block; an Anthropic SDK image block reaches OpenAI as an image_url.
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC';

check('openai client → Anthropic upstream: an image_url data URL is an image block', async () => {
  await scenario([{ text: 'A red pixel.' }]);
  const r = await oaToAn.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user',
    content: [{ type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }] }] });
  assert.equal(r.choices[0].message.content, 'A red pixel.');
  const [req] = await upstream(1);
  assert.equal(req.format, 'anthropic');
  assert.deepEqual(req.json.messages[0].content, [{ type: 'text', text: 'What is this?' },
    { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }]);
});

check('anthropic client → OpenAI upstream: an image block is an image_url data URL', async () => {
  await scenario([{ text: 'A red pixel.' }]);
  const r = await anToOa.messages.create({ model: 'claude-test', max_tokens: 64, messages: [{
    role: 'user', content: [{ type: 'text', text: 'What is this?' },
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }] });
  assert.equal(r.content[0].text, 'A red pixel.');
  const [req] = await upstream(1);
  assert.deepEqual(req.json.messages[0].content, [{ type: 'text', text: 'What is this?' },
    { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } }]);
});

// A tool's image crosses wires (decision 0098): the Anthropic SDK's tool_result with a base64
// image (Claude Code's Read of a PNG, a computer-use screenshot) reaches an OpenAI chat upstream
// as a user message of the image after the tool message, which takes text only.
check('anthropic client → OpenAI upstream: a tool_result image follows the tool message', async () => {
  const shotTools = [{ name: 'screenshot', description: 'screen', input_schema: { type: 'object',
    properties: {} } }];
  await scenario([{ tool_calls: [call('call_1', '{}', 'screenshot')] },
    { text: 'A red pixel.' }]);
  const ask = [{ role: 'user', content: 'What is on the screen?' }];
  const first = await anToOa.messages.create({ model: 'claude-test', max_tokens: 64,
    tools: shotTools, messages: ask });
  assert.equal(first.stop_reason, 'tool_use');
  const use = first.content.find((b) => b.type === 'tool_use');
  const r = await anToOa.messages.create({ model: 'claude-test', max_tokens: 64, tools: shotTools,
    messages: [...ask, { role: 'assistant', content: first.content }, { role: 'user', content: [{
      type: 'tool_result', tool_use_id: use.id, content: [{ type: 'text', text: 'the screen' },
        { type: 'image', source: { type: 'base64', media_type: 'image/png', data: PNG } }] }] }] });
  assert.equal(r.content[0].text, 'A red pixel.');
  const log = await upstream(2);
  const msgs = log[1].json.messages;
  assert.deepEqual(msgs.map((m) => m.role), ['user', 'assistant', 'tool', 'user']);
  assert.match(msgs[2].content, /the screen/);
  assert.match(msgs[3].content[0].text, new RegExp(use.id));
  assert.deepEqual(msgs[3].content[1],
    { type: 'image_url', image_url: { url: `data:image/png;base64,${PNG}` } });
});

check('openai client → Anthropic upstream: an image by URL is refused by name', async () => {
  await scenario([]);
  await assert.rejects(oaToAn.chat.completions.create({ model: 'gpt-test', messages: [{
    role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }],
  }] }), (e) => e.status === 400 && e.param === 'messages[0].content[0]' &&
    /send it inline/.test(e.message));
  await upstream(0);
});

check('openai: runTools completes through the gateway (with a re-ask on the way)', async () => {
  await scenario([
    { tool_calls: [call('call_1', '{"town":"Paris"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_2', '{"city":"Paris"}')] },
    { match: { tool_result_contains: '"temp":21' }, text: 'It is 21°C in Paris.' }]);
  const seen = [];
  const runner = oa.chat.completions.runTools({ model: 'gpt-test', messages: user,
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: weatherSchema,
      parse: JSON.parse, function: async (args) => { seen.push(args); return { temp: 21 }; } } }] });
  assert.equal(await runner.finalContent(), 'It is 21°C in Paris.');
  assert.deepEqual(seen, [{ city: 'Paris' }]);
  await upstream(3);
});

check('server-side tools: x-rein-tools runs echo in rein and the loop continues', async () => {
  await scenario([{ tool_calls: [call('call_e', '{"text":"hello from rein"}', 'echo')] },
    { match: { tool_result_contains: 'hello from rein' }, text: 'The echo said hello.' }]);
  const r = await oa.chat.completions.create(base, { headers: { 'x-rein-tools': 'echo' } });
  const m = r.choices[0].message;
  assert.equal(m.content, 'The echo said hello.');
  assert.equal(m.tool_calls, undefined);
  const log = await upstream(2);
  assert.deepEqual(log[0].json.tools.map((t) => t.function.name), ['get_weather', 'echo']);
});

check('recording: x-rein-conversation shows in the conversations API', async () => {
  await scenario([{ tool_calls: [call('call_r1', '{"town":"x"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_r2', '{"city":"Paris"}')] }]);
  const conv = `gw-node-${Date.now()}`;
  await oa.chat.completions.create(base, { headers: { 'x-rein-conversation': conv } });
  const res = await fetch(`${reinOA}/agent/conversations/${conv}`,
    { headers: { authorization: `Bearer ${KEY}` } });
  const c = await res.json();
  assert.equal(res.status, 200);
  assert.deepEqual(c.messages.map((x) => x.message.role), ['user', 'assistant']);
  assert.equal(c.messages[1].message.tool_calls[0].id, 'call_r2');
  assert.equal(c.ledger[0].call_id, 'call_r1');
  assert.equal(c.ledger[0].status, 'invalid');
});

check('auth: without a key the gateway answers 401', async () => {
  const res = await fetch(reinOA + '/v1/chat/completions', { method: 'POST',
    headers: { 'content-type': 'application/json' }, body: JSON.stringify(base) });
  assert.equal(res.status, 401);
});

// ---- Anthropic clients ------------------------------------------------------------------

check('anthropic: a valid call passes unchanged, JSON and stream', async () => {
  await scenario([{ text: 'Checking.', tool_calls: [call('toolu_a', '{"city":"Paris"}')],
    usage: { input_tokens: 9, output_tokens: 4 } }, { text: ['Sun', 'ny.'] }]);
  const r = await an.messages.create(anBase);
  assert.deepEqual(r.content.map((b) => b.type), ['text', 'tool_use']);
  assert.equal(r.content[1].id, 'toolu_a');
  assert.deepEqual(r.content[1].input, { city: 'Paris' });
  assert.equal(r.stop_reason, 'tool_use');
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens], [9, 4]);
  const m = await an.messages.stream({ ...anBase, messages: [...user,
    { role: 'assistant', content: r.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_a',
      content: '{"temp":21}' }] }] }).finalMessage();
  assert.equal(m.content[0].text, 'Sunny.');
  assert.equal(m.stop_reason, 'end_turn');
  const log = await upstream(2);
  assert.ok(log.every((q) => q.format === 'anthropic'));
});

check('anthropic: streaming with a re-ask mid-stream', async () => {
  await scenario([
    { text: 'Let me check.', tool_calls: [call('toolu_1', '{"town":"Paris"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('toolu_2', '{"city":"Paris"}')] }]);
  const events = [];
  const stream = an.messages.stream(anBase);
  stream.on('streamEvent', (e) => events.push(e.type));
  const m = await stream.finalMessage();
  assert.deepEqual(m.content.map((b) => b.type), ['text', 'tool_use']);
  assert.equal(m.content[0].text, 'Let me check.');
  assert.equal(m.content[1].id, 'toolu_2');
  assert.deepEqual(m.content[1].input, { city: 'Paris' });
  assert.equal(events.filter((t) => t === 'message_start').length, 1);
  assert.equal(events.at(-1), 'message_stop');
  await upstream(2);
});

check('anthropic: error policy answers 422', async () => {
  await scenario([{ tool_calls: [call('toolu_1', '{"city":1}')] }]);
  await assert.rejects(an.messages.create(anBase, { headers: { 'x-rein-on-invalid': 'error' } }),
    (e) => e instanceof Anthropic.UnprocessableEntityError && e.status === 422);
});

check('anthropic: upstream 429 keeps its status, body and Retry-After', async () => {
  await scenario([{ status: 429, headers: { 'retry-after': '3' } }]);
  await assert.rejects(an.messages.create(anBase),
    (e) => e instanceof Anthropic.RateLimitError && e.headers.get('retry-after') === '3' &&
      e.error.error.type === 'rate_limit_error');
});

check('anthropic: the SDK\'s _request_id is Claude\'s, in a message, a stream and an error', async () => {
  const limits = { 'anthropic-ratelimit-unified-status': 'allowed',
    'anthropic-ratelimit-tokens-remaining': '39000' };
  await scenario([{ text: 'Mild.', headers: { 'request-id': 'req_claude_1', ...limits } },
    { text: 'Mild.', headers: { 'request-id': 'req_claude_2' } },
    { status: 429, headers: { 'request-id': 'req_claude_3', 'retry-after': '1' } }]);
  const { data: m, response } = await an.messages.create(anBase).withResponse();
  assert.equal(m._request_id, 'req_claude_1');
  assert.equal(response.headers.get('anthropic-ratelimit-unified-status'), 'allowed');
  assert.equal(response.headers.get('anthropic-ratelimit-tokens-remaining'), '39000');
  assert.match(response.headers.get('x-request-id'), /^req_/, 'rein\'s own id stays');
  assert.notEqual(response.headers.get('x-request-id'), 'req_claude_1');
  const stream = an.messages.stream(anBase);
  await stream.finalMessage();
  assert.equal(stream.request_id, 'req_claude_2');
  await assert.rejects(an.messages.create(anBase), (e) => e instanceof Anthropic.RateLimitError &&
    e.requestID === 'req_claude_3' && e.error.request_id === 'req_claude_3');
});

check('openai: the upstream\'s x-request-id comes as x-upstream-request-id', async () => {
  await scenario([{ text: 'Mild.', headers: { 'x-request-id': 'req_openai_1',
    'x-ratelimit-remaining-tokens': '29000' } }]);
  const { data: r, response } = await oa.chat.completions.create(base).withResponse();
  assert.equal(response.headers.get('x-upstream-request-id'), 'req_openai_1');
  assert.equal(response.headers.get('x-ratelimit-remaining-tokens'), '29000');
  assert.match(r._request_id, /^req_/, 'the SDK\'s _request_id is rein\'s own X-Request-Id');
  assert.notEqual(r._request_id, 'req_openai_1');
});

check('anthropic: countTokens (and the beta path Claude Code uses) is the upstream\'s count', async () => {
  await scenario([{ match: { path: '/v1/messages/count_tokens' }, body: '{"input_tokens":17}',
    times: 2 }]);
  const r = await an.messages.countTokens({ model: 'claude-test', messages: user, tools: anTools });
  assert.equal(r.input_tokens, 17);
  const b = await an.beta.messages.countTokens({ model: 'claude-test', messages: user,
    betas: ['context-1m-2025-08-07'] });
  assert.equal(b.input_tokens, 17);
  const log = await control('/__requests');
  assert.equal(log.length, 2);
  assert.match(log[1].headers['anthropic-beta'], /context-1m-2025-08-07/);
  assert.deepEqual(log[0].json.tools, anTools);
});

// A reasoning ask crosses wires for a model that takes one (decision 0095): the openai SDK's
// reasoning_effort becomes Claude's thinking budget (claude-test is of Claude's family); the
// Anthropic SDK's thinking, bound for gpt-test (no reasoning model), is dropped and named.
check('reasoning: the openai SDK\'s reasoning_effort reaches Claude as a thinking budget', async () => {
  await scenario([{ text: 'ok' }, { text: 'ok' }]);
  const r = await oaToAn.chat.completions.create({ model: 'm', messages: user,
    reasoning_effort: 'high' });
  assert.equal(r.choices[0].message.content, 'ok');
  const { response } = await anToOa.messages.create({ model: 'm', max_tokens: 4096,
    messages: user, thinking: { type: 'enabled', budget_tokens: 2000 } }).withResponse();
  assert.equal(response.headers.get('x-rein-dropped'), '["thinking"]');
  const log = await control('/__requests');
  assert.deepEqual(log[0].json.thinking, { type: 'enabled', budget_tokens: 24576 });
  assert.equal(log[0].json.max_tokens, 24576 + 4096);
  assert.equal(log[1].json.reasoning_effort, undefined);
});

// A tool loop of a Claude that thinks, with an OpenAI client (decision 0102): the chat wire has
// no place for Claude's signed thinking block, so the SDK sends its assistant message back with
// the call alone; rein kept the block and puts it back before the tool_use, which Claude (and
// the model server, as Claude) refuses the second step without while thinking is on.
check('reasoning: the openai SDK\'s runTools with reasoning_effort loops through a Claude that thinks', async () => {
  await scenario([
    { reasoning: 'Paris: look it up.', signature: 'sig-node-1',
      tool_calls: [call('toolu_node1', '{"city":"Paris"}')] },
    { match: { tool_result_contains: '"temp":21' }, text: 'It is 21°C in Paris.' }]);
  const runner = oaToAn.chat.completions.runTools({ model: 'm', messages: user,
    reasoning_effort: 'high',
    tools: [{ type: 'function', function: { name: 'get_weather', parameters: weatherSchema,
      parse: JSON.parse, function: async () => ({ temp: 21 }) } }] });
  assert.equal(await runner.finalContent(), 'It is 21°C in Paris.');
  const log = await upstream(2);
  assert.equal(log[1].json.thinking.type, 'enabled');
  assert.deepEqual(log[1].json.messages[1].content[0],
    { type: 'thinking', thinking: 'Paris: look it up.', signature: 'sig-node-1' });
  assert.equal(log[1].json.messages[1].content[1].id, 'toolu_node1');
});

// Token counts across wires (decision 0094): each SDK's count reaches any upstream whose wire
// has a count, answered in the SDK's shape with the upstream's own number.
const countAt = {
  anthropic: ['/v1/messages/count_tokens', '{"input_tokens":23}'],
  responses: ['/v1/responses/input_tokens', '{"object":"response.input_tokens","input_tokens":23}'],
  gemini: ['/v1beta/models/gemini-test:countTokens',
    '{"totalTokens":23,"promptTokensDetails":[{"modality":"TEXT","tokenCount":23}]}'],
};
const countUpstreams = () => [['anthropic', reinAN], ['responses', reinRS], ['gemini', reinGM]];
async function countScenario(wire) {
  await scenario([{ match: { path: countAt[wire][0] }, body: countAt[wire][1] }]);
}
async function countSent(wire) {
  const log = await control('/__requests');
  assert.equal(log.length, 1, `${wire}: one count upstream`);
  assert.equal(log[0].path, countAt[wire][0]);
  // Gemini's count: a generateContentRequest (rein's), or the client's {contents} as written
  const body = log[0].json.generateContentRequest ?? log[0].json;
  assert.equal(body.max_tokens, undefined, `${wire}: no max_tokens`);
  assert.equal(body.stream, undefined, `${wire}: no stream`);
  return body;
}

check('openai: responses.inputTokens.count is the upstream\'s count, on every wire that has one', async () => {
  for (const [wire, url] of countUpstreams()) {
    const client = new OpenAI({ apiKey: KEY, baseURL: url + '/v1', maxRetries: 0 });
    await countScenario(wire);
    const r = await client.responses.inputTokens.count({ model: 'gpt-test',
      instructions: 'Be brief.', input: 'What is the weather in Paris?', tools: rsCountTools });
    assert.equal(r.object, 'response.input_tokens');
    assert.equal(r.input_tokens, 23, wire);
    const body = await countSent(wire);
    assert.match(JSON.stringify(body), /Be brief\./, `${wire}: the instructions count`);
    assert.match(JSON.stringify(body.tools), /get_weather/, `${wire}: the tools count`);
  }
  await assert.rejects(oa.responses.inputTokens.count({ model: 'gpt-test', input: 'hi' }),
    (e) => e.status === 404 && /openai wire/.test(e.message));
});

check('google genai: models.countTokens is the upstream\'s count, on every wire that has one', async () => {
  for (const [wire, url] of countUpstreams()) {
    await countScenario(wire);
    const r = await gemini(url).models.countTokens({ model: 'gemini-test',
      contents: 'What is the weather in Paris?' });
    assert.equal(r.totalTokens, 23, wire);
    const body = await countSent(wire);
    assert.match(JSON.stringify(body), /weather in Paris/, wire);
  }
  await assert.rejects(gemini(reinOA).models.countTokens({ model: 'gemini-test',
    contents: 'hi' }), (e) => e.status === 404 && /openai wire/.test(e.message));
});

check('anthropic: messages.countTokens through an upstream of another wire', async () => {
  for (const [wire, url] of countUpstreams().filter(([w]) => w !== 'anthropic')) {
    const client = new Anthropic({ apiKey: KEY, baseURL: url, maxRetries: 0 });
    await countScenario(wire);
    const r = await client.messages.countTokens({ model: 'claude-test', system: 'Be brief.',
      messages: user, tools: anTools });
    assert.equal(r.input_tokens, 23, wire);
    const body = await countSent(wire);
    assert.match(JSON.stringify(body), /Be brief\./, `${wire}: the system prompt counts`);
    assert.match(JSON.stringify(body.tools), /get_weather/, `${wire}: the tools count`);
  }
  await assert.rejects(anToOa.messages.countTokens({ model: 'claude-test', messages: user }),
    (e) => e.status === 404 && /openai wire/.test(e.message));
});

// Claude Code pointed at rein with a Bedrock upstream: its count reaches Bedrock's CountTokens
// (POST /model/MODEL/count-tokens), signed with SigV4 as Converse is, the Converse body under
// input.converse; the model server checks the signature and CountTokens' documented shape.
check('anthropic: messages.countTokens through a Bedrock upstream (CountTokens, SigV4)', async () => {
  const path = '/model/anthropic.claude-test-v1:0/count-tokens';
  const anToBd = new Anthropic({ apiKey: KEY, baseURL: reinBD, maxRetries: 0 });
  await control('/__reset', {});
  await control('/__script', { name: 'bedrock count', api_key: 'AKIDTEST:sdk-secret', replies: [
    { match: { path }, usage: { input_tokens: 29 }, times: 1 },
    { match: { path }, status: 429, headers: { 'Retry-After': '3' },
      error: { message: 'Too many tokens, please wait' } }] });
  try {
    const r = await anToBd.messages.countTokens({ model: 'claude-test', system: 'Be brief.',
      messages: user, tools: anTools });
    assert.equal(r.input_tokens, 29);
    const [req] = await upstream(1);
    assert.equal(req.path, path);
    assert.equal(req.format, 'bedrock');
    assert.match(req.headers.authorization, /^AWS4-HMAC-SHA256 Credential=AKIDTEST\//);
    assert.deepEqual(Object.keys(req.json), ['input']);
    assert.deepEqual(Object.keys(req.json.input), ['converse']);
    const c = req.json.input.converse;
    assert.equal(c.inferenceConfig, undefined, 'CountTokens takes no inferenceConfig');
    assert.equal(c.system[0].text, 'Be brief.');
    assert.equal(c.toolConfig.tools[0].toolSpec.name, 'get_weather');
    assert.equal(c.messages[0].content[0].text, 'What is the weather in Paris?');
    await assert.rejects(anToBd.messages.countTokens({ model: 'claude-test', messages: user }),
      (e) => e instanceof Anthropic.RateLimitError && /Too many tokens/.test(e.message) &&
        e.headers.get('retry-after') === '3');
  } finally {
    // the scenario's key stays until another scenario names one: the next cases use none
    await control('/__script', { name: 'no key', api_key: null, replies: [] });
  }
});

// What the SDKs write beyond text and calls reaches an upstream of their own wire unchanged
// (decision 0085); the scripted upstream takes it without its checks of the real services.
check('anthropic: cache_control, an image and web search reach Claude as the SDK wrote them', async () => {
  await control('/__reset', {});
  await control('/__script', { name: 'as sent', validate: false, replies: [{ text: 'A cat.' }] });
  const req = { model: 'claude-test', max_tokens: 256,
    system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
    tools: [{ ...anTools[0], cache_control: { type: 'ephemeral' } },
      { type: 'web_search_20250305', name: 'web_search', max_uses: 1 }],
    messages: [{ role: 'user', content: [
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBORw0KGgo=' } },
      { type: 'text', text: 'What is this?', cache_control: { type: 'ephemeral' } }] }] };
  const m = await an.messages.create(req);
  assert.equal(m.content[0].text, 'A cat.');
  const [q] = await upstream(1);
  for (const k of ['system', 'tools', 'messages']) assert.deepEqual(q.json[k], req[k], k);
});

check('openai: a developer message, an image and a strict tool reach the upstream as sent', async () => {
  await control('/__reset', {});
  await control('/__script', { name: 'as sent', validate: false, replies: [{ text: 'A cat.' }] });
  const req = { model: 'gpt-test',
    messages: [{ role: 'developer', content: 'Be brief.' }, { role: 'user', content: [
      { type: 'text', text: 'What is this?' },
      { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }],
    tools: [{ type: 'function', function: { ...oaTools[0].function, strict: true } }] };
  const r = await oa.chat.completions.create(req);
  assert.equal(r.choices[0].message.content, 'A cat.');
  const [q] = await upstream(1);
  for (const k of ['messages', 'tools']) assert.deepEqual(q.json[k], req[k], k);
});

// What the upstream's reply holds besides text and calls reaches a client of its wire:
// logprobs a client asked for, a search model's annotations, Claude's citations.
async function serveRaw(body, stream) {
  await control('/__reset', {});
  await control('/__script', { name: 'raw', validate: true, replies: [{ body, stream, times: 0 }] });
}
const lp = (token, logprob) => ({ token, logprob, bytes: null, top_logprobs: [] });
const chunk = (choice) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk',
  created: 1, model: 'm', choices: [{ index: 0, logprobs: null, finish_reason: null, ...choice }] })}\n\n`;

check('openai: the SDK gets the logprobs it asked for and a search model\'s annotations', async () => {
  const annotations = [{ type: 'url_citation', url_citation: { start_index: 0, end_index: 5,
    url: 'https://example.org/', title: 'E' } }];
  const logprobs = { content: [lp('Paris', -0.5), lp('.', -0.25)], refusal: null };
  await serveRaw(JSON.stringify({ id: 'c', object: 'chat.completion', created: 1, model: 'm',
    choices: [{ index: 0, message: { role: 'assistant', content: 'Paris.', refusal: null,
      annotations }, logprobs, finish_reason: 'stop' }] }), false);
  const r = await oa.chat.completions.create({ model: 'gpt-test', messages: user, logprobs: true });
  assert.deepEqual(r.choices[0].logprobs, logprobs);
  assert.deepEqual(r.choices[0].message.annotations, annotations);
  await serveRaw(chunk({ delta: { role: 'assistant', content: '' } }) +
    chunk({ delta: { content: 'Paris' }, logprobs: { content: [lp('Paris', -0.5)], refusal: null } }) +
    chunk({ delta: { content: '.' }, logprobs: { content: [lp('.', -0.25)], refusal: null } }) +
    chunk({ delta: { annotations } }) + chunk({ delta: {}, finish_reason: 'stop' }) +
    'data: [DONE]\n\n', true);
  const f = await oa.chat.completions.stream({ model: 'gpt-test', messages: user, logprobs: true })
    .finalChatCompletion();
  assert.equal(f.choices[0].message.content, 'Paris.');
  assert.deepEqual(f.choices[0].logprobs.content, logprobs.content);
});

check('anthropic: a web search answer reaches the SDK with its blocks and citations', async () => {
  const cite = (n) => ({ type: 'web_search_result_location', cited_text: `cited ${n}`,
    url: `https://example.org/${n}`, title: `T${n}`, encrypted_index: `e${n}` });
  const content = [{ type: 'text', text: 'I will search. ' },
    { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: 'capital' } },
    { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [] },
    { type: 'text', text: 'Paris is the capital', citations: [cite(1), cite(2)] },
    { type: 'text', text: ' and ' },
    { type: 'text', text: 'Berlin is too', citations: [cite(3)] }];
  const message = { id: 'msg_1', type: 'message', role: 'assistant', model: 'm', content,
    stop_reason: 'end_turn', stop_sequence: null, usage: { input_tokens: 5, output_tokens: 9 } };
  await serveRaw(JSON.stringify(message), false);
  const req = { model: 'claude-test', max_tokens: 256, messages: user };
  assert.deepEqual((await an.messages.create(req)).content, content);
  const ev = (type, data) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
  let sse = ev('message_start', { message: { ...message, content: [], stop_reason: null } });
  content.forEach((b, index) => {
    const start = b.type === 'text' ? { type: 'text', text: '', ...(b.citations ? { citations: [] } : {}) }
      : b.type === 'server_tool_use' ? { ...b, input: {} } : b;
    sse += ev('content_block_start', { index, content_block: start });
    for (const c of b.citations ?? [])
      sse += ev('content_block_delta', { index, delta: { type: 'citations_delta', citation: c } });
    if (b.type === 'text')
      sse += ev('content_block_delta', { index, delta: { type: 'text_delta', text: b.text } });
    if (b.type === 'server_tool_use')
      sse += ev('content_block_delta', { index, delta: { type: 'input_json_delta',
        partial_json: JSON.stringify(b.input) } });
    sse += ev('content_block_stop', { index });
  });
  sse += ev('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: 9 } }) + ev('message_stop', {});
  await serveRaw(sse, true);
  assert.deepEqual((await an.messages.stream(req).finalMessage()).content, content);
});

check('anthropic client → OpenAI upstream, JSON and stream', async () => {
  await scenario([{ text: 'On it.', tool_calls: [call('call_x', '{"city":"Paris"}')],
    usage: { input_tokens: 7, output_tokens: 2 } },
  { text: ['Warm ', 'today.'] }]);
  const r = await anToOa.messages.create(anBase);
  assert.deepEqual(r.content.map((b) => b.type), ['text', 'tool_use']);
  assert.equal(r.content[1].id, 'call_x');
  assert.deepEqual(r.content[1].input, { city: 'Paris' });
  assert.equal(r.usage.input_tokens, 7);
  const m = await anToOa.messages.stream({ ...anBase, messages: [...user,
    { role: 'assistant', content: r.content },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'call_x',
      content: 'sunny' }] }] }).finalMessage();
  assert.equal(m.content[0].text, 'Warm today.');
  const log = await upstream(2);
  assert.ok(log.every((q) => q.format === 'openai'));
  assert.equal(log[1].json.messages.at(-1).role, 'tool');
});

// ---- the Responses API (Codex CLI, the OpenAI Agents SDK) --------------------------------

const rsTools = [{ type: 'function', name: 'get_weather', description: 'weather',
  parameters: weatherSchema, strict: true }];
const rsBase = { model: 'gpt-test', input: 'What is the weather in Paris?', tools: rsTools };
// The text of a response's messages (the SDK adds output_text to what create() returns only).
const rsText = (r) => r.output.filter((o) => o.type === 'message').flatMap((o) => o.content)
  .filter((c) => c.type === 'output_text').map((c) => c.text).join('');

check('responses: a call, then the next turn with its output, JSON and stream', async () => {
  await scenario([{ text: 'On it.', tool_calls: [call('call_1', '{"city":"Paris"}')],
    usage: { input_tokens: 12, output_tokens: 5 } },
  { match: { tool_result_contains: 'sunny' }, text: ['Sunny ', 'today.'] }]);
  const r = await oa.responses.create(rsBase);
  assert.equal(r.object, 'response');
  assert.equal(r.status, 'completed');
  assert.deepEqual(r.output.map((o) => o.type), ['message', 'function_call']);
  assert.equal(r.output_text, 'On it.');
  assert.deepEqual([r.output[1].call_id, r.output[1].name, r.output[1].arguments],
    ['call_1', 'get_weather', '{"city":"Paris"}']);
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens, r.usage.total_tokens], [12, 5, 17]);
  // the next turn sends the whole conversation, the output items as they came (store false)
  const s = oa.responses.stream({ ...rsBase, store: false, input: [
    { role: 'user', content: rsBase.input }, ...r.output,
    { type: 'function_call_output', call_id: 'call_1', output: 'sunny' }] });
  const deltas = [];
  s.on('response.output_text.delta', (e) => deltas.push(e.delta));
  const f = await s.finalResponse();
  assert.equal(rsText(f), 'Sunny today.');
  assert.equal(deltas.join(''), 'Sunny today.', 'the text came in deltas');
  assert.equal(deltas.length, 2);
  const log = await upstream(2);
  assert.deepEqual(log[1].json.messages.map((m) => m.role), ['user', 'assistant', 'tool']);
  assert.equal(log[1].json.messages[1].tool_calls[0].id, 'call_1');
  assert.equal(log[1].json.tools[0].function.strict, true);
});

check('responses: a kept response is retrieved, its input listed, and deleted through the SDK', async () => {
  await scenario([{ text: 'Sunny.', times: 2 }]);
  const r = await oa.responses.create({ ...rsBase, input: [
    { role: 'developer', content: 'Be brief.' }, { role: 'user', content: rsBase.input }] });
  const got = await oa.responses.retrieve(r.id);
  assert.equal(got.id, r.id);
  assert.equal(got.output_text, 'Sunny.');
  assert.deepEqual(got.output, r.output);
  const items = [];
  for await (const item of oa.responses.inputItems.list(r.id, { limit: 1, order: 'asc' }))
    items.push(item);
  assert.deepEqual(items.map((i) => [i.type, i.role, i.content[0].type]),
    [['message', 'developer', 'input_text'], ['message', 'user', 'input_text']]);
  await oa.responses.delete(r.id);
  await assert.rejects(oa.responses.retrieve(r.id), (e) => e.status === 404);
  // another key sees nothing: the second response is kept for this client only
  const s = await oa.responses.create({ ...rsBase, input: 'hi' });
  const other = new OpenAI({ apiKey: 'rein-test-key-2', baseURL: reinOA + '/v1', maxRetries: 0 });
  await assert.rejects(other.responses.retrieve(s.id), (e) => e.status === 404);
  await other.responses.delete(s.id).then(() => assert.fail('deleted'), (e) => assert.equal(e.status, 404));
  assert.equal((await oa.responses.retrieve(s.id)).id, s.id);
  await upstream(2);
});

check('responses: background true is polled with retrieve, and cancel stops one', async () => {
  await scenario([{ delay_headers_ms: 300, text: 'Sunny.' }]);
  const r = await oa.responses.create({ ...rsBase, background: true });
  assert.equal(r.status, 'in_progress');
  assert.equal(r.background, true);
  let got = r;
  for (let i = 0; i < 500 && got.status === 'in_progress'; i++) {
    await new Promise((ok) => setTimeout(ok, 10));
    got = await oa.responses.retrieve(r.id);
  }
  assert.equal(got.status, 'completed');
  assert.equal(got.output_text, 'Sunny.');
  await scenario([{ fault: { hang: true } }]);
  const h = await oa.responses.create({ ...rsBase, background: true });
  const c = await oa.responses.cancel(h.id);
  assert.equal(c.status, 'cancelled');
  assert.equal((await oa.responses.retrieve(h.id)).status, 'cancelled');
});

check('responses: a background stream broken off is resumed with retrieve starting_after', async () => {
  await scenario([{ text: ['It ', 'is ', 'sunny ', 'in ', 'Paris ', 'today.'], delay_chunk_ms: 20 },
    { text: 'ok' }]);
  const first = [];
  const s = await oa.responses.create({ ...rsBase, background: true, stream: true });
  for await (const ev of s) {
    first.push(ev);
    if (first.length === 5) break; // the client goes away; the response runs on
  }
  assert.deepEqual(first.map((e) => e.sequence_number), [0, 1, 2, 3, 4]);
  assert.equal(first[0].type, 'response.created');
  const id = first[0].response.id;
  assert.equal(first[0].response.background, true);
  const rest = [];
  const r = await oa.responses.retrieve(id, { stream: true, starting_after: 4 });
  for await (const ev of r) rest.push(ev);
  const all = [...first, ...rest];
  // joined without a gap or a repeat, ending with the whole response
  assert.deepEqual(all.map((e) => e.sequence_number), all.map((_, i) => i));
  const last = all[all.length - 1];
  assert.equal(last.type, 'response.completed');
  assert.equal(last.response.status, 'completed');
  assert.equal(rsText(last.response), 'It is sunny in Paris today.');
  assert.equal(all.filter((e) => e.type === 'response.output_text.delta').map((e) => e.delta).join(''),
    'It is sunny in Paris today.');
  assert.equal((await oa.responses.retrieve(id)).status, 'completed');
  // a response without kept events cannot be streamed
  const fg = await oa.responses.create({ ...rsBase });
  await assert.rejects(oa.responses.retrieve(fg.id, { stream: true }).then(async (st) => {
    for await (const _ of st); // eslint-disable-line no-unused-vars
  }), (e) => e.status === 400);
});

check('responses: invalid arguments are re-asked mid-stream; the client gets the valid call', async () => {
  await scenario([
    { text: 'Let me check.', tool_calls: [call('call_1', '{"town":"Paris"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_2', '{"city":"Paris"}')] }]);
  const f = await oa.responses.stream(rsBase).finalResponse();
  const calls = f.output.filter((o) => o.type === 'function_call');
  assert.deepEqual(calls.map((c) => [c.call_id, c.arguments]), [['call_2', '{"city":"Paris"}']]);
  assert.equal(rsText(f), 'Let me check.');
  assert.equal(f.rein.reasks, 1);
  await upstream(2);
});

check('responses: x-rein-tools runs echo in rein, streamed, and the turn is recorded', async () => {
  await scenario([{ tool_calls: [call('call_e', '{"text":"hello from rein"}', 'echo')] },
    { match: { tool_result_contains: 'hello from rein' }, text: 'The echo said hello.' }]);
  const conv = `gw-rs-${Date.now()}`;
  const f = await oa.responses.stream(rsBase,
    { headers: { 'x-rein-tools': 'echo', 'x-rein-conversation': conv } }).finalResponse();
  assert.equal(rsText(f), 'The echo said hello.');
  assert.deepEqual(f.output.filter((o) => o.type === 'function_call'), []);
  const log = await upstream(2);
  assert.deepEqual(log[0].json.tools.map((t) => t.function.name), ['get_weather', 'echo']);
  const res = await fetch(`${reinOA}/agent/conversations/${conv}`,
    { headers: { authorization: `Bearer ${KEY}` } });
  const c = await res.json();
  assert.equal(res.status, 200);
  assert.equal(c.messages.at(-1).message.content, 'The echo said hello.');
});

check('responses: an OpenAI Responses client reaches an Anthropic upstream', async () => {
  await scenario([{ tool_calls: [call('toolu_1', '{"city":"Paris"}')] }]);
  const r = await oaToAn.responses.create(rsBase);
  assert.deepEqual(r.output.map((o) => [o.type, o.call_id]), [['function_call', 'toolu_1']]);
  const [q] = await upstream(1);
  assert.equal(q.format, 'anthropic');
});

// Codex on GPT-5 declares apply_patch as a custom (free-form) tool with a Lark grammar.
const patch = '*** Begin Patch\n*** Add File: hello.txt\n+Hello, "world"\n*** End Patch';
const applyPatch = { type: 'custom', name: 'apply_patch', description: 'Edit files.',
  format: { type: 'grammar', syntax: 'lark', definition: 'start: begin_patch hunk+ end_patch' } };

check('responses: a custom tool (Codex apply_patch) through a tool loop, to either upstream', async () => {
  for (const [client, format] of [[oa, 'openai'], [oaToAn, 'anthropic']]) {
    await scenario([{ tool_calls: [call('call_p', JSON.stringify({ input: patch }), 'apply_patch')] },
      { match: { tool_result_contains: 'Done!' }, text: 'Patched.' }]);
    const base = { model: 'gpt-test', input: 'Add hello.txt', tools: [applyPatch, ...rsTools],
      store: false };
    const f = await client.responses.stream(base).finalResponse();
    const item = f.output.find((o) => o.type === 'custom_tool_call');
    assert.ok(item, `a custom_tool_call item (${format})`);
    assert.deepEqual([item.call_id, item.name, item.input], ['call_p', 'apply_patch', patch]);
    const r = await client.responses.create({ ...base, input: [
      { role: 'user', content: base.input }, ...f.output,
      { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' }] });
    assert.equal(r.output_text, 'Patched.');
    const log = await upstream(2);
    assert.ok(log.every((q) => q.format === format));
    const offered = format === 'openai' ? log[0].json.tools[0].function : log[0].json.tools[0];
    assert.equal(offered.name, 'apply_patch');
    const schema = offered.parameters || offered.input_schema;
    assert.deepEqual(schema.required, ['input']);
    assert.match(schema.properties.input.description, /Lark grammar/);
  }
});

check('chat: a custom tool call comes back in the custom shape', async () => {
  await scenario([{ tool_calls: [call('call_p', JSON.stringify({ input: patch }), 'apply_patch')] }]);
  const r = await oa.chat.completions.create({ model: 'gpt-test', messages: user,
    tools: [{ type: 'custom', custom: { name: 'apply_patch', description: 'Edit files.' } }] });
  const c = r.choices[0].message.tool_calls[0];
  assert.deepEqual([c.type, c.id, c.custom.name, c.custom.input],
    ['custom', 'call_p', 'apply_patch', patch]);
  await upstream(1);
});

// Behind a Responses upstream (OpenAI's own API), hosted tools run there: web search.
const oaToRs = new OpenAI({ apiKey: KEY, baseURL: reinRS + '/v1', maxRetries: 0 });

// A Responses upstream takes the custom tool as Codex declared it (decision 0096): GPT-5
// samples apply_patch under its grammar, and the call and its output go back as custom items.
check('responses: a custom tool reaches a Responses upstream as a custom tool, both ways', async () => {
  await scenario([{ tool_calls: [{ id: 'call_p', name: 'apply_patch', input: patch }] },
    { match: { tool_result_contains: 'Done!' }, text: 'Patched.' }]);
  const base = { model: 'gpt-test', input: 'Add hello.txt', tools: [applyPatch, ...rsTools],
    store: false };
  const f = await oaToRs.responses.stream(base).finalResponse();
  const item = f.output.find((o) => o.type === 'custom_tool_call');
  assert.deepEqual([item.call_id, item.name, item.input], ['call_p', 'apply_patch', patch]);
  const r = await oaToRs.responses.create({ ...base, input: [
    { role: 'user', content: base.input }, ...f.output,
    { type: 'custom_tool_call_output', call_id: 'call_p', output: 'Done!' }] });
  assert.equal(r.output_text, 'Patched.');
  const log = await upstream(2);
  // after the function tools, as the API's own tools go
  const offered = log[0].json.tools.filter((t) => t.name === 'apply_patch');
  assert.deepEqual(offered, [applyPatch]);
  const types = log[1].json.input.map((i) => i.type || i.role);
  assert.deepEqual(types.slice(-2), ['custom_tool_call', 'custom_tool_call_output']);
  assert.equal(log[1].json.input.at(-2).input, patch);
});
const wsItem = { id: 'ws_1', type: 'web_search_call', status: 'completed',
  action: { type: 'search', query: 'paris weather' } };
const cite = { type: 'url_citation', start_index: 0, end_index: 5, url: 'https://w.example/paris',
  title: 'Paris weather' };
const wsMsg = { id: 'msg_u1', type: 'message', status: 'completed', role: 'assistant',
  content: [{ type: 'output_text', text: 'Mild.', annotations: [cite] }] };
const wsUsage = { input_tokens: 5, output_tokens: 2, total_tokens: 7 };
const wsBody = { id: 'resp_u1', object: 'response', status: 'completed', model: 'gpt-test',
  output: [wsItem, wsMsg], usage: wsUsage };
const sseOf = (events) => events.map((e, i) =>
  `event: ${e.type}\ndata: ${JSON.stringify({ ...e, sequence_number: i })}\n\n`).join('');
const wsStream = sseOf([
  { type: 'response.created', response: { ...wsBody, status: 'in_progress', output: [] } },
  { type: 'response.output_item.added', output_index: 0,
    item: { id: 'ws_1', type: 'web_search_call', status: 'in_progress' } },
  { type: 'response.web_search_call.completed', output_index: 0, item_id: 'ws_1' },
  { type: 'response.output_item.done', output_index: 0, item: wsItem },
  { type: 'response.output_text.delta', output_index: 1, item_id: 'msg_u1', content_index: 0,
    delta: 'Mild.' },
  { type: 'response.output_text.annotation.added', output_index: 1, item_id: 'msg_u1',
    content_index: 0, annotation_index: 0, annotation: cite },
  { type: 'response.output_item.done', output_index: 1, item: wsMsg },
  { type: 'response.completed', response: wsBody }]);

check('responses: web search runs at a Responses upstream; the SDK gets its item and citations',
  async () => {
    await scenario([{ body: JSON.stringify(wsBody), stream: false },
      { body: wsStream, stream: true }]);
    const req = { model: 'gpt-test', input: 'Weather in Paris?', store: false,
      tools: [{ type: 'web_search' }, ...rsTools] };
    const r = await oaToRs.responses.create(req);
    assert.deepEqual(r.output[0], wsItem);
    assert.deepEqual(r.output[1].content[0].annotations, [cite]);
    assert.equal(r.output_text, 'Mild.');
    const s = oaToRs.responses.stream(req);
    const cited = [], searched = [];
    s.on('response.output_text.annotation.added', (e) => cited.push(e.annotation));
    s.on('response.web_search_call.completed', (e) => searched.push([e.item_id, e.output_index]));
    const f = await s.finalResponse();
    assert.deepEqual(f.output.map((o) => o.type), ['web_search_call', 'message']);
    assert.deepEqual(cited, [cite]);
    assert.deepEqual(searched, [['ws_1', 0]], 'the search\'s progress reached the client');
    assert.deepEqual(f.output[1].content[0].annotations, [cite]);
    const log = await upstream(2);
    assert.ok(log.every((q) => q.path === '/v1/responses'), log.map((q) => q.path).join());
    assert.deepEqual(log[0].json.tools.map((t) => t.type), ['function', 'web_search']);
  });

check('vercel @ai-sdk/openai: a web search answer through a Responses upstream has its sources',
  async () => {
    await scenario([{ body: JSON.stringify(wsBody), stream: false }]);
    const ai = createOpenAI({ baseURL: reinRS + '/v1', apiKey: KEY });
    const r = await generateText({ model: ai('gpt-test'), prompt: 'Weather in Paris?',
      tools: { web_search: ai.tools.webSearch({}) }, maxRetries: 0 });
    assert.equal(r.text, 'Mild.');
    assert.ok(r.sources.some((x) => x.url === cite.url), JSON.stringify(r.sources));
    const [q] = await upstream(1);
    assert.ok(q.json.tools.some((t) => t.type === 'web_search'));
  });

check('responses: what rein keeps no state for is refused by name', async () => {
  await control('/__reset', {});
  await assert.rejects(oa.responses.create({ ...rsBase, previous_response_id: 'resp_1' }),
    (e) => e.status === 400 && e.param === 'previous_response_id');
  await assert.rejects(oa.responses.create({ ...rsBase, tools: [{ type: 'web_search' }] }),
    (e) => e.status === 400 && e.param === 'tools[0].type');
  await upstream(0);
});

// ---- the Vercel AI SDK ------------------------------------------------------------------

const vercel = createOpenAICompatible({ name: 'rein', baseURL: reinOA + '/v1', apiKey: KEY });
const vercelTools = (seen) => ({
  get_weather: tool({ description: 'weather', inputSchema: jsonSchema(weatherSchema),
    execute: async (args) => { seen.push(args); return { temp: 21 }; } }),
});

check('vercel: generateText with tools and stopWhen completes through the gateway', async () => {
  await scenario([
    { tool_calls: [call('call_v1', '{"town":"Paris"}', 'getWeather')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_v2', '{"city":"Paris"}', 'getWeather')] },
    { match: { tool_result_contains: '"temp":21' }, text: 'It is 21°C in Paris.' }]);
  const seen = [];
  const r = await generateText({ model: vercel('gpt-test'), prompt: 'Weather in Paris?',
    tools: vercelTools(seen), stopWhen: stepCountIs(5), maxRetries: 0 });
  assert.equal(r.text, 'It is 21°C in Paris.');
  assert.equal(r.steps.length, 2);
  assert.deepEqual(seen, [{ city: 'Paris' }]);
  await upstream(3);
});

check('vercel: streamText with tools completes through the gateway', async () => {
  await scenario([
    { text: 'Let me see. ', tool_calls: [call('call_s1', '{"city":"Paris"}')] },
    { match: { tool_result_contains: '"temp":21' }, text: ['It is ', '21°C.'] }]);
  const seen = [];
  const r = streamText({ model: vercel('gpt-test'), prompt: 'Weather in Paris?',
    tools: vercelTools(seen), stopWhen: stepCountIs(5), maxRetries: 0 });
  let text = '';
  for await (const piece of r.textStream) text += piece;
  assert.equal(text, 'Let me see. It is 21°C.');
  assert.deepEqual(seen, [{ city: 'Paris' }]);
  await upstream(2);
});

// The AI SDK's own providers: @ai-sdk/openai speaks the Responses API by default,
// @ai-sdk/anthropic the messages API; each runs its tool loop through rein with a re-ask.
const aiOpenAI = createOpenAI({ baseURL: reinOA + '/v1', apiKey: KEY });
const aiAnthropic = createAnthropic({ baseURL: reinAN + '/v1', apiKey: KEY });
for (const [name, model, format] of [['@ai-sdk/openai (Responses)', () => aiOpenAI('gpt-test'), 'openai'],
  ['@ai-sdk/anthropic', () => aiAnthropic('claude-test'), 'anthropic']]) {
  check(`vercel ${name}: generateText and streamText with tools complete through the gateway`,
    async () => {
      const loop = [
        { text: 'Checking.', tool_calls: [call('call_a1', '{"town":"Paris"}', 'getWeather')] },
        { match: { tool_result_contains: 'Invalid arguments' },
          tool_calls: [call('call_a2', '{"city":"Paris"}', 'getWeather')] },
        { match: { tool_result_contains: '"temp":21' }, text: ['It is ', '21°C in Paris.'] }];
      await scenario(loop);
      const seen = [];
      const r = await generateText({ model: model(), prompt: 'Weather in Paris?',
        tools: vercelTools(seen), stopWhen: stepCountIs(5), maxRetries: 0 });
      assert.equal(r.text, 'It is 21°C in Paris.');
      assert.equal(r.steps.length, 2);
      assert.deepEqual(seen, [{ city: 'Paris' }]);
      let log = await upstream(3);
      assert.ok(log.every((q) => q.format === format));
      await scenario(loop);
      const s = streamText({ model: model(), prompt: 'Weather in Paris?',
        tools: vercelTools(seen), stopWhen: stepCountIs(5), maxRetries: 0 });
      let text = '';
      for await (const piece of s.textStream) text += piece;
      assert.equal(text, 'Checking.It is 21°C in Paris.');
      assert.deepEqual(seen, [{ city: 'Paris' }, { city: 'Paris' }]);
      log = await upstream(3);
      assert.ok(log.every((q) => q.format === format));
    });
}

// The OpenAI Agents SDK (Responses API): its Runner's tool loop, JSON and streamed.
setTracingDisabled(true);
check('openai agents: Runner.run completes a tool loop through the gateway, JSON and stream',
  async () => {
    const seen = [];
    const weather = agentTool({ name: 'get_weather', description: 'weather',
      parameters: { type: 'object', properties: { city: { type: 'string' } },
        required: ['city'], additionalProperties: false },
      strict: true,
      execute: async ({ city }) => { seen.push(city); return '{"temp":21}'; } });
    const agent = new Agent({ name: 'weather', instructions: 'Be brief.', tools: [weather],
      model: 'gpt-test' });
    const runner = new Runner({ tracingDisabled: true, modelProvider: new OpenAIProvider({
      apiKey: KEY, baseURL: reinOA + '/v1', useResponses: true }) });
    const loop = [
      { tool_calls: [call('call_g1', '{"town":"Paris"}')] },
      { match: { tool_result_contains: 'Invalid arguments' },
        tool_calls: [call('call_g2', '{"city":"Paris"}')] },
      { match: { tool_result_contains: '"temp":21' }, text: ['It is ', '21°C.'] }];
    await scenario(loop);
    const r = await runner.run(agent, 'Weather in Paris?');
    assert.equal(r.finalOutput, 'It is 21°C.');
    assert.deepEqual(seen, ['Paris']);
    let log = await upstream(3);
    assert.equal(log[0].json.messages[0].role, 'system');
    await scenario(loop);
    const s = await runner.run(agent, 'Weather in Paris?', { stream: true });
    let text = '';
    for await (const piece of s.toTextStream()) text += piece;
    await s.completed;
    assert.equal(text, 'It is 21°C.');
    assert.equal(s.finalOutput, 'It is 21°C.');
    assert.deepEqual(seen, ['Paris', 'Paris']);
    log = await upstream(3);
  });

// LangChain's chat models with bound tools, in LangChain's own loop (invoke, run each
// tool_call, a ToolMessage back), and a stream; chat completions, Responses and Anthropic.
const lcModels = [
  ['ChatOpenAI', () => new ChatOpenAI({ model: 'gpt-test', apiKey: KEY, maxRetries: 0,
    configuration: { baseURL: reinOA + '/v1' } }), 'openai'],
  ['ChatOpenAI (Responses API)', () => new ChatOpenAI({ model: 'gpt-test', apiKey: KEY,
    maxRetries: 0, useResponsesApi: true, configuration: { baseURL: reinOA + '/v1' } }), 'openai'],
  ['ChatAnthropic', () => new ChatAnthropic({ model: 'claude-test', apiKey: KEY, maxRetries: 0,
    anthropicApiUrl: reinAN }), 'anthropic']];
for (const [name, make, format] of lcModels) {
  check(`langchain ${name}: bindTools, a re-ask, the tool loop and a stream`, async () => {
    const seen = [];
    const weather = lcTool(async ({ city }) => { seen.push(city); return '{"temp":21}'; },
      { name: 'get_weather', description: 'weather', schema: z.object({ city: z.string() }) });
    const model = make().bindTools([weather]);
    await scenario([
      { text: 'Checking.', tool_calls: [call('call_l1', '{"town":"Paris"}')] },
      { match: { tool_result_contains: 'Invalid arguments' },
        tool_calls: [call('call_l2', '{"city":"Paris"}')] },
      { match: { tool_result_contains: '"temp":21' }, text: ['It is ', '21°C.'] }]);
    const messages = [new HumanMessage('Weather in Paris?')];
    const ai = await model.invoke(messages);
    assert.deepEqual(ai.tool_calls.map((c) => [c.id, c.name, c.args]),
      [['call_l2', 'get_weather', { city: 'Paris' }]]);
    messages.push(ai);
    for (const c of ai.tool_calls)
      messages.push(new ToolMessage({ tool_call_id: c.id, content: await weather.invoke(c.args) }));
    let text = '';
    for await (const chunk of await model.stream(messages))
      text += typeof chunk.content === 'string' ? chunk.content
        : chunk.content.filter((p) => p.type === 'text').map((p) => p.text).join('');
    assert.equal(text, 'It is 21°C.');
    assert.deepEqual(seen, ['Paris']);
    const log = await upstream(3);
    assert.ok(log.every((q) => q.format === format));
  });
}

// ---- Gemini clients (decision 0092) ---------------------------------------------------------

const gemini = (url, headers) => new GoogleGenAI({ apiKey: KEY,
  httpOptions: { baseUrl: url, headers } });
const gmTools = [{ functionDeclarations: [{ name: 'get_weather', description: 'weather',
  parameters: { type: Type.OBJECT, properties: { city: { type: Type.STRING } },
    required: ['city'] } }] }];
const gmAsk = { model: 'gemini-test', contents: 'What is the weather in Paris?',
  config: { tools: gmTools } };

check('google genai: a valid call passes; a re-ask the client never sees', async () => {
  await scenario([{ tool_calls: [call('call_g1', '{"city":"Paris"}')],
    usage: { input_tokens: 12, output_tokens: 5 } }]);
  let r = await gemini(reinOA).models.generateContent(gmAsk);
  assert.deepEqual(r.functionCalls.map((c) => [c.name, c.args]),
    [['get_weather', { city: 'Paris' }]]);
  assert.equal(r.candidates[0].finishReason, 'STOP');
  assert.deepEqual([r.usageMetadata.promptTokenCount, r.usageMetadata.candidatesTokenCount,
    r.usageMetadata.totalTokenCount], [12, 5, 17]);
  let [req] = await upstream(1);
  assert.equal(req.format, 'openai');
  assert.equal(req.json.tools[0].function.parameters.properties.city.type, 'string');
  assert.notEqual(req.headers.authorization, `Bearer ${KEY}`, 'the client key never goes upstream');
  await scenario([{ tool_calls: [call('call_g2', '{"town":"Paris"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_g3', '{"city":"Paris"}')] }]);
  r = await gemini(reinAN).models.generateContent(gmAsk);
  assert.deepEqual(r.functionCalls.map((c) => [c.id, c.args]), [['call_g3', { city: 'Paris' }]]);
  const log = await upstream(2);
  assert.equal(log[0].format, 'anthropic');
});

// Gemini's thinkingConfig reaches Claude as a thinking budget (decision 0095).
check('google genai: a thinkingBudget reaches Claude as its thinking budget', async () => {
  await scenario([{ text: 'ok' }]);
  const r = await gemini(reinAN).models.generateContent({ model: 'gemini-test',
    contents: 'Think about Paris.', config: { thinkingConfig: { thinkingBudget: 5000 } } });
  assert.equal(r.text, 'ok');
  const [q] = await upstream(1);
  assert.deepEqual(q.json.thinking, { type: 'enabled', budget_tokens: 5000 });
  assert.equal(q.json.max_tokens, 5000 + 4096);
});

check('google genai: generateContentStream gives the text and the checked call', async () => {
  await scenario([{ text: ['Let me ', 'check.'], tool_calls: [call('call_s1', '{"town":"x"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_s2', '{"city":"Paris"}')] }]);
  let text = '';
  const calls = [];
  for await (const chunk of await gemini(reinOA).models.generateContentStream(gmAsk)) {
    text += chunk.text ?? '';
    calls.push(...(chunk.functionCalls ?? []));
  }
  assert.equal(text, 'Let me check.');
  assert.deepEqual(calls.map((c) => [c.name, c.args]), [['get_weather', { city: 'Paris' }]]);
  await upstream(2);
});

check('google genai: the error policy and an upstream 429 come as ApiError', async () => {
  await scenario([{ tool_calls: [call('call_e1', '{"city":7}')] }]);
  await assert.rejects(gemini(reinOA, { 'x-rein-on-invalid': 'error' }).models
    .generateContent(gmAsk), (e) => e.status === 422 && /invalid tool call/.test(e.message));
  await scenario([{ status: 429, headers: { 'Retry-After': '2' } }]);
  await assert.rejects(gemini(reinOA).models.generateContent(gmAsk),
    (e) => e.status === 429 && /RESOURCE_EXHAUSTED/.test(e.message));
});

check('google genai: automatic function calling runs the tool and gets the answer', async () => {
  const seen = [];
  const weather = {
    tool: async () => gmTools[0],
    callTool: async (fcs) => fcs.map((fc) => {
      seen.push(fc.args.city);
      return { functionResponse: { name: fc.name, id: fc.id,
        response: { output: '{"temp":21}' } } };
    }),
  };
  await scenario([{ tool_calls: [call('call_a1', '{"town":"Paris"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_a2', '{"city":"Paris"}')] },
    { match: { tool_result_contains: '"temp":21' }, text: 'It is 21°C.' }]);
  const r = await gemini(reinOA).models.generateContent({ model: 'gemini-test',
    contents: 'What is the weather in Paris?', config: { tools: [weather],
      toolConfig: { functionCallingConfig: { mode: FunctionCallingConfigMode.AUTO } } } });
  assert.equal(r.text, 'It is 21°C.');
  assert.deepEqual(seen, ['Paris']);
  const log = await upstream(3);
  const last = log[2].json.messages;
  assert.equal(last.at(-1).role, 'tool');
  assert.equal(last.at(-1).tool_call_id, last.at(-2).tool_calls[0].id);
});

check('google genai -> gemini: thoughtSignature goes back with its call', async () => {
  await scenario([{ signature: 'sig-gemini-1', tool_calls: [call('fc_1', '{"city":"Paris"}')] },
    { match: { last_role: 'tool' }, text: 'Sunny.' }]);
  const chat = gemini(reinGM).chats.create({ model: 'gemini-test', config: { tools: gmTools } });
  let r = await chat.sendMessage({ message: 'What is the weather in Paris?' });
  const part = r.candidates[0].content.parts.find((p) => p.functionCall);
  assert.equal(part.thoughtSignature, 'sig-gemini-1');
  r = await chat.sendMessage({ message: [{ functionResponse: { name: 'get_weather',
    id: part.functionCall.id, response: { output: 'Sunny' } } }] });
  assert.equal(r.text, 'Sunny.');
  const log = await upstream(2);
  assert.equal(log[1].format, 'gemini');
  const model = log[1].json.contents.find((c) => c.role === 'model');
  assert.equal(model.parts.find((p) => p.functionCall).thoughtSignature, 'sig-gemini-1');
  const names = [];
  for await (const m of await gemini(reinGM).models.list()) names.push(m.name);
  assert.deepEqual(names, ['models/gemini-test']);
});

check('ai sdk google: generateText and streamText run the tool loop through rein', async () => {
  const seen = [];
  const weather = tool({ description: 'weather', inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => { seen.push(city); return { temp: 21 }; } });
  const google = createGoogleGenerativeAI({ apiKey: KEY, baseURL: reinOA + '/v1beta' });
  await scenario([{ tool_calls: [call('call_v1', '{"town":"Paris"}')] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [call('call_v2', '{"city":"Paris"}')] },
    { match: { tool_result_contains: '21' }, text: 'It is 21°C.' }]);
  const r = await generateText({ model: google('gemini-test'), prompt: 'Weather in Paris?',
    stopWhen: stepCountIs(3), tools: { get_weather: weather } });
  assert.equal(r.text, 'It is 21°C.');
  assert.deepEqual(seen, ['Paris']);
  await upstream(3);
  const viaGemini = createGoogleGenerativeAI({ apiKey: KEY, baseURL: reinGM + '/v1beta' });
  await scenario([{ signature: 'sig-v', tool_calls: [call('fc_v', '{"city":"Paris"}')] },
    { match: { last_role: 'tool' }, text: ['Sun', 'ny.'] }]);
  const st = streamText({ model: viaGemini('gemini-test'), prompt: 'Weather in Paris?',
    stopWhen: stepCountIs(3), tools: { get_weather: weather } });
  assert.equal(await st.text, 'Sunny.');
  const log = await upstream(2);
  const model = log[1].json.contents.find((c) => c.role === 'model');
  assert.equal(model.parts.find((p) => p.functionCall).thoughtSignature, 'sig-v');
});

// ---- structured output crosses wires (decision 0100) ---------------------------------------

const Person = z.object({ name: z.string(), age: z.number().int() });
const personSchema = { type: 'object', properties: { name: { type: 'string' },
  age: { type: 'integer' } }, required: ['name', 'age'], additionalProperties: false };

check('openai chat.completions.parse (zod) → Anthropic upstream: output_config.format, the ' +
  'answer checked and re-asked', async () => {
  const { zodResponseFormat } = await import('openai/helpers/zod');
  await scenario([{ text: 'Here you go: {"name":"Ann","age":30}' },
    { text: '{"name":"Ann","age":30}' }]);
  const r = await oaToAn.chat.completions.parse({ model: 'claude-test', messages: user,
    response_format: zodResponseFormat(Person, 'person') });
  assert.deepEqual(r.choices[0].message.parsed, { name: 'Ann', age: 30 });
  assert.equal(r.rein.reasks, 1);
  assert.equal(r.rein.problems[0].code, 'invalid_output');
  const [first, second] = await upstream(2);
  assert.equal(first.format, 'anthropic');
  assert.equal(first.json.output_config.format.type, 'json_schema');
  assert.deepEqual(Object.keys(first.json.output_config.format.schema.properties), ['name', 'age']);
  assert.equal(first.json.response_format, undefined);
  const last = second.json.messages.at(-1);
  const said = typeof last.content === 'string' ? last.content : last.content.at(-1).text;
  assert.match(said, /not JSON/);
});

check('openai chat.completions.stream with a json_schema → Anthropic upstream: only the ' +
  'checked answer streams', async () => {
  await scenario([{ text: ['{"name":', '"Ann"}'] }, { text: ['{"name":"Ann",', '"age":30}'] }]);
  const stream = oaToAn.chat.completions.stream({ model: 'claude-test', messages: user,
    response_format: { type: 'json_schema', json_schema: { name: 'person', strict: true,
      schema: personSchema } } });
  let text = '';
  for await (const chunk of stream) text += chunk.choices[0]?.delta?.content ?? '';
  assert.equal(text, '{"name":"Ann","age":30}');
  await upstream(2);
});

check('vercel generateObject (openai-compatible, structured outputs) → Anthropic upstream',
  async () => {
    await scenario([{ text: '{"name":"Ann","age":30}' }]);
    const model = createOpenAICompatible({ name: 'rein', baseURL: reinAN + '/v1', apiKey: KEY,
      supportsStructuredOutputs: true })('claude-test');
    const { object } = await generateObject({ model, schema: Person, prompt: 'Who is Ann?',
      maxRetries: 0 });
    assert.deepEqual(object, { name: 'Ann', age: 30 });
    const [req] = await upstream(1);
    assert.equal(req.format, 'anthropic');
    assert.equal(req.json.output_config.format.type, 'json_schema');
    assert.deepEqual(req.json.output_config.format.schema.required, ['name', 'age']);
  });

check('langchain ChatOpenAI withStructuredOutput (jsonSchema) → Anthropic upstream: a ' +
  'responses API text.format crosses too', async () => {
  await scenario([{ text: '{"name":"Ann","age":30}' }, { text: '{"name":"Bo","age":4}' }]);
  const make = (useResponsesApi) => new ChatOpenAI({ model: 'claude-test', apiKey: KEY,
    maxRetries: 0, useResponsesApi, configuration: { baseURL: reinAN + '/v1' } })
    .withStructuredOutput(Person, { name: 'person', method: 'jsonSchema' });
  assert.deepEqual(await make(false).invoke('Who is Ann?'), { name: 'Ann', age: 30 });
  assert.deepEqual(await make(true).invoke('Who is Bo?'), { name: 'Bo', age: 4 });
  const log = await upstream(2);
  for (const req of log) {
    assert.equal(req.format, 'anthropic');
    assert.equal(req.json.output_config.format.type, 'json_schema');
    assert.deepEqual(req.json.output_config.format.schema.required, ['name', 'age']);
  }
});

check('anthropic output_config.format → OpenAI upstream: response_format json_schema',
  async () => {
    await scenario([{ text: '{"name":"Ann","age":30}' }]);
    const m = await anToOa.messages.create({ model: 'claude-test', max_tokens: 64,
      messages: user, output_config: { format: { type: 'json_schema', schema: personSchema } } });
    assert.deepEqual(JSON.parse(m.content[0].text), { name: 'Ann', age: 30 });
    const [req] = await upstream(1);
    assert.equal(req.format, 'openai');
    assert.equal(req.json.response_format.type, 'json_schema');
    assert.deepEqual(req.json.response_format.json_schema.schema, personSchema);
  });

await run(cases);
