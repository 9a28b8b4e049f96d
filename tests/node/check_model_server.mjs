// Fidelity check of the scripted model server (tests/support/model_server.h): the official
// OpenAI and Anthropic SDKs must read its bodies and streams exactly as they read the real
// services (text, tool calls assembled by the SDK stream helpers, usage, finish reasons,
// typed errors, retries), and the requests the SDKs send must pass its validation.
//
// usage: node check_model_server.mjs BASE_URL   (run by tests/scripts/model_server_sdk.sh)
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { modelServer, run } from './harness.mjs';

const base = process.argv[2];
if (!base) {
  console.error('usage: node check_model_server.mjs BASE_URL');
  process.exit(2);
}

const control = modelServer(base);

// Replaces the script (and clears the log) before each case.
async function scenario(replies, extra = {}) {
  await control('/__reset', {});
  await control('/__script', { name: 'sdk-check', replies, ...extra });
}

async function requests() {
  return control('/__requests');
}

const openai = new OpenAI({ apiKey: 'sk-test', baseURL: base + '/v1', maxRetries: 0 });
const anthropic = new Anthropic({ apiKey: 'sk-ant', baseURL: base, maxRetries: 0 });
const user = [{ role: 'user', content: 'What is the weather in Paris?' }];
const oaTools = [{ type: 'function', function: { name: 'get_weather', description: 'weather',
  parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
const anTools = [{ name: 'get_weather', description: 'weather',
  input_schema: { type: 'object', properties: { city: { type: 'string' } } } }];

const cases = [];
const check = (name, fn) => cases.push({ name, fn });

// Every request of a case must have passed validation and been served a scripted reply.
async function allServed(n) {
  const log = await requests();
  assert.equal(log.length, n, 'requests seen by the server');
  for (const r of log) assert.equal(r.error, null, `request ${r.index} refused: ${r.error}`);
  return log;
}

// ---- OpenAI ----------------------------------------------------------------------------

check('openai: non-stream text, usage, finish_reason', async () => {
  await scenario([{ text: 'Sunny, 21°C.', usage: { input_tokens: 12, output_tokens: 5 } }]);
  const r = await openai.chat.completions.create({ model: 'gpt-4o', messages: user });
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices[0].message.content, 'Sunny, 21°C.');
  assert.equal(r.choices[0].finish_reason, 'stop');
  assert.deepEqual([r.usage.prompt_tokens, r.usage.completion_tokens, r.usage.total_tokens],
    [12, 5, 17]);
  const [req] = await allServed(1);
  assert.equal(req.headers.authorization, 'Bearer sk-test');
});

check('openai: streamed text with include_usage', async () => {
  await scenario([{ text: ['Sun', 'ny, ', '21°C.'], usage: { input_tokens: 3, output_tokens: 4 },
    fault: { chunk_bytes: 5 } }]);
  const stream = await openai.chat.completions.create({ model: 'gpt-4o', messages: user,
    stream: true, stream_options: { include_usage: true } });
  let text = '', finish = null, usage = null;
  for await (const chunk of stream) {
    if (chunk.choices.length) {
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
    if (chunk.usage) usage = chunk.usage;
  }
  assert.equal(text, 'Sunny, 21°C.');
  assert.equal(finish, 'stop');
  assert.equal(usage.completion_tokens, 4);
  await allServed(1);
});

check('openai: stream helper assembles parallel tool calls', async () => {
  await scenario([{ tool_calls: [
    { id: 'call_a', name: 'get_weather', arguments: ['{"ci', 'ty": "Par', 'is"}'] },
    { id: 'call_b', name: 'get_weather', arguments: '{"city": "Tokyo"}' }], delta_bytes: 4 }]);
  const stream = openai.chat.completions.stream({ model: 'gpt-4o', messages: user,
    tools: oaTools });
  const done = await stream.finalChatCompletion();
  const msg = done.choices[0].message;
  assert.equal(done.choices[0].finish_reason, 'tool_calls');
  assert.equal(msg.tool_calls.length, 2);
  assert.equal(msg.tool_calls[0].id, 'call_a');
  assert.equal(msg.tool_calls[0].function.name, 'get_weather');
  assert.equal(msg.tool_calls[0].function.arguments, '{"city": "Paris"}');
  assert.equal(msg.tool_calls[1].function.arguments, '{"city": "Tokyo"}');
  await allServed(1);
});

check('openai: a history the SDK builds passes validation; a broken one gets the 400',
  async () => {
    await scenario([{ text: 'It is sunny.' }]);
    const history = [...user,
      { role: 'assistant', content: null, tool_calls: [{ id: 'call_a', type: 'function',
        function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] },
      { role: 'tool', tool_call_id: 'call_a', content: '{"temp":21}' }];
    const ok = await openai.chat.completions.create({ model: 'gpt-4o', messages: history,
      tools: oaTools });
    assert.equal(ok.choices[0].message.content, 'It is sunny.');
    await allServed(1);
    await assert.rejects(
      openai.chat.completions.create({ model: 'gpt-4o', messages: history.slice(0, 2),
        tools: oaTools }),
      (e) => e instanceof OpenAI.BadRequestError && e.status === 400 &&
        e.error.message.includes('did not have response messages: call_a') &&
        e.error.param === 'messages.[1].role');
  });

check('openai: typed errors for 400 and 429, Retry-After is honoured on retry', async () => {
  await scenario([{ status: 400, error: { message: 'bad', param: 'messages', code: 'x' } },
    { status: 429, headers: { 'Retry-After': '0' } }]);
  await assert.rejects(openai.chat.completions.create({ model: 'gpt-4o', messages: user }),
    (e) => e instanceof OpenAI.BadRequestError && e.error.code === 'x' && e.error.param === 'messages');
  await assert.rejects(openai.chat.completions.create({ model: 'gpt-4o', messages: user }),
    (e) => e instanceof OpenAI.RateLimitError && e.headers.get('retry-after') === '0');
  await scenario([{ status: 429, headers: { 'retry-after-ms': '10' } }, { text: 'second try' }]);
  const retrying = new OpenAI({ apiKey: 'sk-test', baseURL: base + '/v1', maxRetries: 2 });
  const r = await retrying.chat.completions.create({ model: 'gpt-4o', messages: user });
  assert.equal(r.choices[0].message.content, 'second try');
  assert.equal((await requests()).length, 2);
});

check('openai: refusal, in-stream error and a dropped stream', async () => {
  await scenario([{ refusal: "I can't help with that." },
    { text: 'partial', fault: { error_after_events: 1 } },
    { text: ['a', 'b', 'c'], fault: { cut_after_events: 2 } }]);
  const done = await openai.chat.completions.stream({ model: 'gpt-4o', messages: user })
    .finalChatCompletion();
  assert.equal(done.choices[0].message.refusal, "I can't help with that.");
  await assert.rejects(async () => {
    const s = await openai.chat.completions.create({ model: 'gpt-4o', messages: user,
      stream: true });
    for await (const chunk of s) void chunk;
  }, (e) => e instanceof OpenAI.APIError && /server had an error/.test(e.message));
  await assert.rejects(async () => {
    const s = await openai.chat.completions.create({ model: 'gpt-4o', messages: user,
      stream: true });
    for await (const chunk of s) void chunk;
  });
});

// ---- Anthropic -------------------------------------------------------------------------

check('anthropic: non-stream text, usage, stop_reason', async () => {
  await scenario([{ text: 'Sunny.', usage: { input_tokens: 9, output_tokens: 2 } }]);
  const r = await anthropic.messages.create({ model: 'claude-rein-test', max_tokens: 100,
    messages: user });
  assert.equal(r.type, 'message');
  assert.equal(r.content[0].type, 'text');
  assert.equal(r.content[0].text, 'Sunny.');
  assert.equal(r.stop_reason, 'end_turn');
  assert.deepEqual([r.usage.input_tokens, r.usage.output_tokens], [9, 2]);
  const [req] = await allServed(1);
  // SDK 1.x sends the key as a bearer token; older ones as x-api-key: both are accepted.
  assert.ok(req.headers['x-api-key'] === 'sk-ant' ||
    req.headers.authorization === 'Bearer sk-ant');
  assert.ok(req.headers['anthropic-version']);
});

check('anthropic: stream helper assembles thinking, text and tool_use', async () => {
  await scenario([{ reasoning: ['Let me ', 'look.'], signature: 'EqQBsig', text: 'Checking.',
    tool_calls: [{ id: 'toolu_1', name: 'get_weather', arguments: ['{"city"', ': "Paris"}'] }],
    usage: { input_tokens: 30, output_tokens: 17 }, fault: { chunk_bytes: 11 } }]);
  const stream = anthropic.messages.stream({ model: 'claude-rein-test', max_tokens: 2048,
    thinking: { type: 'enabled', budget_tokens: 1024 }, messages: user, tools: anTools });
  const events = [];
  stream.on('streamEvent', (e) => events.push(e.type));
  const m = await stream.finalMessage();
  assert.deepEqual(m.content.map((b) => b.type), ['thinking', 'text', 'tool_use']);
  assert.equal(m.content[0].thinking, 'Let me look.');
  assert.equal(m.content[0].signature, 'EqQBsig');
  assert.equal(m.content[1].text, 'Checking.');
  assert.deepEqual(m.content[2].input, { city: 'Paris' });
  assert.equal(m.content[2].id, 'toolu_1');
  assert.equal(m.stop_reason, 'tool_use');
  assert.equal(m.usage.output_tokens, 17);
  assert.equal(events[0], 'message_start');
  assert.equal(events.at(-1), 'message_stop');
  await allServed(1);
});

check('anthropic: tool_result history passes; an unanswered tool_use gets the 400', async () => {
  await scenario([{ text: 'It is sunny.' }]);
  const history = [...user,
    { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'get_weather',
      input: { city: 'Paris' } }] },
    { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1',
      content: '{"temp":21}' }] }];
  const ok = await anthropic.messages.create({ model: 'claude-rein-test', max_tokens: 100,
    messages: history, tools: anTools });
  assert.equal(ok.content[0].text, 'It is sunny.');
  await allServed(1);
  await assert.rejects(
    anthropic.messages.create({ model: 'claude-rein-test', max_tokens: 100,
      messages: [...history.slice(0, 2), { role: 'user', content: 'well?' }], tools: anTools }),
    (e) => e instanceof Anthropic.BadRequestError &&
      e.error.error.type === 'invalid_request_error' &&
      e.error.error.message.includes('`tool_use` ids were found without `tool_result` blocks'));
});

check('anthropic: typed errors for 429 and 529, overloaded event mid-stream', async () => {
  await scenario([{ status: 429, headers: { 'retry-after': '3' } }, { status: 529 },
    { text: ['a', 'b', 'c'], fault: { error_after_events: 4 } }]);
  await assert.rejects(
    anthropic.messages.create({ model: 'c', max_tokens: 10, messages: user }),
    (e) => e instanceof Anthropic.RateLimitError && e.headers.get('retry-after') === '3' &&
      typeof e.requestID === 'string');
  await assert.rejects(
    anthropic.messages.create({ model: 'c', max_tokens: 10, messages: user }),
    (e) => e instanceof Anthropic.APIError && e.status === 529 &&
      e.error.error.type === 'overloaded_error');
  await assert.rejects(
    anthropic.messages.stream({ model: 'c', max_tokens: 10, messages: user }).finalMessage(),
    (e) => e instanceof Anthropic.APIError && /overloaded_error|Overloaded/.test(e.message));
});

check('anthropic: 401 with a wrong key', async () => {
  await scenario([{ text: 'never' }], { api_key: 'sk-other' });
  await assert.rejects(
    anthropic.messages.create({ model: 'c', max_tokens: 10, messages: user }),
    (e) => e instanceof Anthropic.AuthenticationError &&
      e.error.error.message === 'invalid x-api-key');
  await scenario([], { api_key: null });
});

await run(cases);
