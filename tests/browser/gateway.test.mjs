// Issue 22 on the chat page: conversations the gateway recorded (x-rein-conversation) from
// clients of its OpenAI and Anthropic wires, opened on the page like any other. What the
// client never saw is there too: the call rein refused and asked again for, the name it
// repaired, the tool it ran itself (x-rein-tools) and the answer, in the order they happened.
// Its own `rein serve`, model server and browser (a "lane"), beside the other test files;
// each step screenshotted at 1280 and 375 px.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ARTIFACTS, card, lastAnswer, shot, startLane, waitCard } from './harness.mjs';

let lane;

before(async () => {
  lane = await startLane('gateway');
});

after(async () => {
  const code = lane ? await lane.close() : 0;
  console.log(`screenshots: ${ARTIFACTS}`);
  assert.equal(code, 0, 'rein serve did not exit cleanly (see rein.log in the artifacts)');
});

// A request to the gateway as an SDK sends it; resolves with [status, body text].
async function gateway(path, body, headers) {
  const r = await fetch(`${lane.rein.url}${path}`, {
    method: 'POST', headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return [r.status, await r.text()];
}

const weather = {
  type: 'function',
  function: {
    name: 'get_weather', description: 'Weather by city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'],
      additionalProperties: false },
  },
};

// The ids of the cards of the page's conversation, in the order they show.
function cardOrder(p) {
  return p.$$eval('#log .card-wrap', (cards) => cards.map((c) => c.dataset.callId));
}

test('a gateway conversation: the re-ask, the repair, the server-side tool and the answer', async () => {
  await lane.model.script([
    { tool_calls: [{ id: 'call_bad', name: 'get_weather', arguments: '{"town":"Paris"}' }] },
    { match: { tool_result_contains: 'Invalid arguments' },
      tool_calls: [{ id: 'call_ok', name: 'get_wether', arguments: '{"city":"Paris"}' }] },
    { match: { tool_result_contains: '"temp":21' },
      tool_calls: [{ id: 'call_echo', name: 'echo', arguments: '{"text":"21 degrees"}' }] },
    { match: { tool_result_contains: '21 degrees' }, text: 'It is **21 °C** in Paris.' },
  ]);
  const conv = { 'x-rein-conversation': 'gw-weather' };
  const user = [{ role: 'user', content: 'What is the weather in Paris?' }];
  // The OpenAI client's first request: the invalid call is asked again, the client gets the
  // repaired one.
  const [s1, b1] = await gateway('/v1/chat/completions',
    { model: 'test-model', messages: user, tools: [weather] }, conv);
  assert.equal(s1, 200, b1);
  const m1 = JSON.parse(b1).choices[0].message;
  assert.deepEqual(m1.tool_calls.map((c) => [c.id, c.function.name]), [['call_ok', 'get_weather']]);
  // Its second: the result of its tool, and echo run by rein on the way to the answer.
  const [s2, b2] = await gateway('/v1/chat/completions', {
    model: 'test-model', tools: [weather],
    messages: [...user, m1, { role: 'tool', tool_call_id: 'call_ok', content: '{"temp":21}' }],
  }, { ...conv, 'x-rein-tools': 'echo' });
  assert.equal(s2, 200, b2);
  assert.equal(JSON.parse(b2).choices[0].message.content, 'It is **21 °C** in Paris.');

  // The page lists it and opens it.
  const page = await lane.page('en-US', { width: 1180, height: 820 }, '/#c=gw-weather');
  await page.locator('#conv-list li', { hasText: 'What is the weather in Paris?' }).first().waitFor();
  await waitCard(page, 'call_echo', 'success');
  assert.match(await page.locator('#log .msg.user').first().textContent(), /What is the weather in Paris\?/);
  // Every call in the order it happened, the refused one first, the answer after them.
  assert.deepEqual(await cardOrder(page), ['call_bad', 'call_ok', 'call_echo']);
  await waitCard(page, 'call_bad', 'invalid');
  // The refused call says why: open its card, then what the model read.
  await card(page, 'call_bad').locator('summary').first().click();
  assert.match(await card(page, 'call_bad').innerText(), /get_weather/);
  assert.match(await card(page, 'call_bad').innerText(), /"town": "Paris"/);
  await card(page, 'call_bad').locator('details.raw summary').click();
  assert.match(await card(page, 'call_bad').innerText(), /missing required field\(s\): city/);
  assert.match(await card(page, 'call_bad').innerText(), /"town\\?" is not allowed/);
  await waitCard(page, 'call_ok', 'success');
  assert.match(await card(page, 'call_ok').textContent(), /the model called it “get_wether”/);
  assert.match(await card(page, 'call_echo').textContent(), /echo/);
  const answer = lastAnswer(page);
  assert.equal(await answer.locator('.answer strong').textContent(), '21 °C');
  const answerAfterCards = await page.evaluate(() => {
    const last = [...document.querySelectorAll('#log .card-wrap')].at(-1);
    const text = [...document.querySelectorAll('#log .answer')].at(-1);
    return !!(last.compareDocumentPosition(text) & Node.DOCUMENT_POSITION_FOLLOWING);
  });
  assert.ok(answerAfterCards, 'the answer shows after the calls that led to it');
  await shot(page, 'gateway-conversation');
  assert.deepEqual(page.problems, [], 'the page logged errors');
});

test('a streamed Anthropic-wire conversation shows its text and its call', async () => {
  await lane.model.script([
    { text: ['Let me ', 'check.'],
      tool_calls: [{ id: 'call_an', name: 'get_weather', arguments: '{"city":"Oslo"}' }] },
  ]);
  const [status, body] = await gateway('/v1/messages', {
    model: 'test-model', max_tokens: 256, stream: true,
    messages: [{ role: 'user', content: 'And in Oslo?' }],
    tools: [{ name: 'get_weather', description: 'Weather by city',
      input_schema: weather.function.parameters }],
  }, { 'x-rein-conversation': 'gw-oslo', 'anthropic-version': '2023-06-01' });
  assert.equal(status, 200, body);
  assert.match(body, /event: message_stop/);
  const page = await lane.page('en-US', { width: 1180, height: 820 }, '/#c=gw-oslo');
  await page.waitForSelector('#log .card-wrap[data-call-id="call_an"]');
  assert.match(await lastAnswer(page).textContent(), /Let me check\./);
  assert.match(await card(page, 'call_an').textContent(), /get_weather/);
  await shot(page, 'gateway-anthropic-stream');
  assert.deepEqual(page.problems, [], 'the page logged errors');
});
