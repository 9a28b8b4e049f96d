// Issue 21 on the chat page: a turn outlives the page that started it (a reload or another
// device reattaches and answers its approval), a message sent while the server is down stays
// in the box, and what people expect of a chat page (Markdown tables, autolinks and heading
// levels, highlighted code with a copy button, regenerate and edit, the turn's duration and
// tokens, rename and search, the theme toggle), each step screenshotted at 1280 and 375 px.
// Its own `rein serve`, model server and browser (a "lane"), beside chat.test.mjs.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  Rein, card, closeLane, conversationId, lastAnswer, newConversation, noProblems, send, shot,
  startLane, waitCard, waitStatus,
} from './harness.mjs';
import { blocks, describeLongTasks, drawnAndAtOnce, longTasks, watchLongTasks } from './answers.mjs';

let lane;
let page;

before(async () => {
  lane = await startLane('features');
  page = await lane.page('en-US', { width: 1180, height: 820 }, '/', {
    permissions: ['clipboard-read', 'clipboard-write'],
  });
  await page.selectOption('#verification', 'off');
});

after(() => closeLane(lane));

function waitDone(p) {
  return p.waitForFunction(() => document.getElementById('status').textContent.includes('Done.') &&
    !document.getElementById('input').disabled);
}

test('a reload while an approval waits: the page reattaches and the approval lands', async () => {
  await lane.model.script([
    { tool_calls: [{ id: 'wipe_r', name: 'wipe', arguments: '{"path":"r.txt"}' }] },
    { text: 'Wiped r.txt.' },
  ]);
  await send(page, 'Wipe r.txt');
  await page.waitForSelector('.card-wrap[data-call-id="wipe_r"] button.approve');
  assert.match(await page.title(), /Approval needed: wipe/);
  const id = await conversationId(page);
  await shot(page, 'approval-before-reload');

  // Before issue 21 the reload cancelled the turn and the page only said "busy".
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector('.card-wrap[data-call-id="wipe_r"] button.approve');
  assert.equal(await conversationId(page), id);
  assert.match(await page.title(), /Approval needed: wipe/);
  await waitStatus(page, 'Waiting for your approval: wipe');
  await shot(page, 'approval-after-reload');
  await card(page, 'wipe_r').locator('button.approve').click();
  await waitDone(page);
  await waitCard(page, 'wipe_r', 'success');
  assert.match(await lastAnswer(page).textContent(), /Wiped r\.txt\./);
  assert.doesNotMatch(await page.title(), /Approval needed/);
  // The turn shows what it cost.
  const meta = await lastAnswer(page).locator('.turn-meta').textContent();
  assert.match(meta, /\d+\.\d s/);
  assert.match(meta, /tokens/);
  await shot(page, 'approval-landed-after-reload');
  noProblems(page);
});

test('another device follows the turn and answers its approval', async () => {
  await newConversation(page);
  await lane.model.script([
    { tool_calls: [{ id: 'wipe_d', name: 'wipe', arguments: '{"path":"d.txt"}' }] },
    { text: 'Wiped d.txt.' },
  ]);
  await send(page, 'Wipe d.txt');
  await page.waitForSelector('.card-wrap[data-call-id="wipe_d"] button.approve');
  const id = await conversationId(page);
  // A second browser context: nothing shared with the first page but the server.
  const other = await lane.page('en-US', { width: 1180, height: 820 }, `/#c=${encodeURIComponent(id)}`);
  await other.waitForSelector('.card-wrap[data-call-id="wipe_d"] button.approve');
  assert.equal(await other.isDisabled('#input'), true);
  await shot(other, 'other-device-asked');
  await card(other, 'wipe_d').locator('button.approve').click();
  await waitDone(other);
  await waitDone(page);
  assert.match(await lastAnswer(page).textContent(), /Wiped d\.txt\./);
  assert.match(await lastAnswer(other).textContent(), /Wiped d\.txt\./);
  assert.equal(await page.locator('.card-wrap[data-call-id="wipe_d"] button.approve').count(), 0);
  await shot(page, 'first-page-after-other-approved');
  noProblems(page);
  noProblems(other);
  await other.close();
});

test('Markdown tables, autolinks, heading levels, highlighted code with a copy button', async () => {
  await newConversation(page);
  const code = 'def add(a, b):\n    return a + b\n';
  await lane.model.script([{
    text: '# Title\n\n## Section\n\n| name | n |\n| --- | ---: |\n| a | 1 |\n| b | 2 |\n\n' +
      'See <https://example.com/a> and https://example.com/b.\n\n```python\n' + code + '```\n',
  }]);
  await send(page, 'Show me the table');
  await waitDone(page);
  const answer = lastAnswer(page);
  assert.equal(await answer.locator('table tbody tr').count(), 2);
  assert.equal(await answer.locator('table th').first().textContent(), 'name');
  assert.equal(await answer.locator('a[href="https://example.com/a"]').count(), 1);
  assert.equal(await answer.locator('a[href="https://example.com/b"]').count(), 1);
  assert.equal(await answer.locator('[data-level="1"]').evaluate((e) => e.tagName), 'H3');
  assert.equal(await answer.locator('[data-level="2"]').evaluate((e) => e.tagName), 'H4');
  const sizes = await answer.evaluate((a) => ['[data-level="1"]', '[data-level="2"]']
    .map((s) => parseFloat(getComputedStyle(a.querySelector(s)).fontSize)));
  assert.ok(sizes[0] > sizes[1], `# (${sizes[0]}px) looks bigger than ## (${sizes[1]}px)`);
  assert.equal(await answer.locator('.code-lang').textContent(), 'python');
  // Coloured by the vendored highlighter once the block is closed; the text stays the code.
  await answer.locator('pre code span[class^="hljs-"]').first().waitFor();
  const shown = code.replace(/\n$/, ''); // a block's last line break is the fence's
  assert.equal(await answer.locator('pre code').textContent(), shown);
  await answer.locator('.code-head button.copy').click();
  await page.waitForFunction(() => document.querySelector('.msg.assistant:last-of-type .code-head button.copy')
    ?.textContent === 'Copied');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), shown);
  await shot(page, 'markdown-table-links-code');
  noProblems(page);
});

test('regenerate the last answer, then edit the last message and send it again', async () => {
  await newConversation(page);
  await lane.model.script([{ text: 'first answer' }, { text: 'second answer' }]);
  await send(page, 'Plan the trip');
  await waitDone(page);
  await lastAnswer(page).locator('button.regenerate').click();
  await page.waitForFunction(() => /second answer/.test(document.querySelector('#log').textContent));
  await waitDone(page);
  assert.equal(await page.locator('.msg.user').count(), 1);
  assert.doesNotMatch(await page.textContent('#log'), /first answer/);
  await shot(page, 'regenerated');

  await lane.model.script([{ text: 'edited answer' }]);
  await page.locator('.msg.user').last().locator('button.edit').click();
  await page.waitForSelector('#editing:not([hidden])');
  assert.equal(await page.inputValue('#input'), 'Plan the trip');
  await shot(page, 'editing');
  await send(page, 'Plan the trip to Oslo');
  await page.waitForFunction(() => /edited answer/.test(document.querySelector('#log').textContent));
  await waitDone(page);
  assert.equal(await page.locator('.msg.user').count(), 1);
  assert.equal(await page.locator('.msg.user .text').textContent(), 'Plan the trip to Oslo');
  const id = await conversationId(page);
  const conv = await (await fetch(`${lane.rein.url}/agent/conversations/${id}`)).json();
  const roles = conv.messages.map((m) => (m.message || m).role).filter((r) => r !== 'system');
  assert.deepEqual(roles, ['user', 'assistant']);
  await shot(page, 'edited');
  noProblems(page);
});

test('rename and search conversations', async () => {
  const id = await conversationId(page);
  const item = page.locator(`#conv-list li[data-id="${id}"]`);
  await item.locator('button.rename').click();
  await item.locator('.rename-input').fill('Oslo trip');
  await item.locator('.rename-input').press('Enter');
  await page.waitForFunction((i) => document.querySelector(`#conv-list li[data-id="${i}"] .open`)
    ?.textContent.includes('Oslo trip'), id);
  const conv = await (await fetch(`${lane.rein.url}/agent/conversations/${id}`)).json();
  assert.equal(conv.title, 'Oslo trip');
  await page.fill('#conv-search', 'oslo');
  await page.waitForFunction(() => document.querySelectorAll('#conv-list li:not([hidden])').length === 1);
  assert.equal(await page.locator('#conv-list li').first().getAttribute('data-id'), id);
  await shot(page, 'searched');
  await page.fill('#conv-search', '');
  await page.waitForFunction(() => document.querySelectorAll('#conv-list li').length > 1);
  noProblems(page);
});

test('the theme toggle: dark, kept across a reload, then back to the system\'s', async () => {
  const bg = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  const light = await bg();
  await page.selectOption('#theme', 'dark');
  assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  assert.notEqual(await bg(), light);
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  assert.equal(await page.getAttribute('html', 'data-theme'), 'dark');
  await shot(page, 'dark');
  await page.selectOption('#theme', 'system');
  assert.equal(await page.getAttribute('html', 'data-theme'), null);
  assert.equal(await bg(), light);
  // The system's dark, followed while the page is open.
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForFunction(() => document.documentElement.dataset.scheme === 'dark');
  assert.notEqual(await bg(), light);
  await page.emulateMedia({ colorScheme: 'light' });
  await page.waitForFunction(() => document.documentElement.dataset.scheme === 'light');
  assert.equal(await bg(), light);
  noProblems(page);
});

test('a message sent while the server is down stays in the box and goes out once it is back', async () => {
  const quick = await Rein.start(lane.model, lane.skills, { name: 'rein-down' });
  const port = new URL(quick.url).port;
  const p = await lane.page('en-US', { width: 1180, height: 820 }, '/', { base: quick.url });
  await quick.crash();
  await send(p, 'Are you there?');
  await waitStatus(p, 'was not sent');
  assert.equal(await p.inputValue('#input'), 'Are you there?');
  assert.equal(await p.isEnabled('#input'), true);
  assert.equal(await p.isVisible('#retry'), true);
  assert.equal(await p.textContent('#elapsed'), '', 'no timer runs for a message never sent');
  await shot(p, 'server-down-kept');
  const again = await Rein.start(lane.model, lane.skills, { name: 'rein-back', port, dir: quick.dir });
  await waitStatus(p, 'answers again');
  await lane.model.script([{ text: 'Yes, here.' }]);
  await p.click('#retry');
  await waitDone(p);
  assert.match(await lastAnswer(p).textContent(), /Yes, here\./);
  await shot(p, 'server-back-sent');
  await p.close();
  assert.equal(await again.stop(), 0);
});

test('a 100 KB answer streams in without long tasks (measured, reported), drawn as if at once', async () => {
  await newConversation(page);
  const { text, last } = blocks.mixed(100 * 1024);
  await lane.model.script([{ text, delta_bytes: 256 }]);
  await watchLongTasks(page);
  await send(page, 'A long answer please');
  await waitDone(page);
  // The last frames of a burst may still be drawing when the turn is done.
  await page.waitForFunction((l) => document.querySelector('.msg.assistant:last-of-type .answer')
    ?.textContent.includes(l), last);
  console.log(`100 KB answer: ${describeLongTasks(await longTasks(page))}`);
  // Drawn a frame at a time from 256-byte deltas, the answer is what the whole text gives
  // when drawn at once: no block lost, doubled or cut where a frame ended.
  const [streamed, atOnce] = await drawnAndAtOnce(page, text);
  assert.ok(streamed.length > 100 * 1024, `the whole answer is shown (${streamed.length} characters of markup)`);
  assert.equal(streamed, atOnce);
  const answer = lastAnswer(page);
  assert.ok(await answer.locator('table tbody tr').count() >= 10);
  assert.ok(await answer.locator('ul li').count() >= 12);
  noProblems(page);
});

test('a conversation is listed while its first turn runs, another opens meanwhile, and a reload during its slow tool still gets the answer', async () => {
  await newConversation(page);
  await lane.model.script([
    { tool_calls: [{ id: 'slow_l', name: 'slow', arguments: '{"text":"later"}' }] },
    { text: 'Finished later.' },
  ]);
  await send(page, 'A slow first turn');
  await page.waitForSelector('.card-wrap[data-call-id="slow_l"]');
  const id = await conversationId(page);
  await page.waitForSelector(`#conv-list li[data-id="${id}"]`);
  // Another conversation opens at once; the turn goes on without this page.
  const other = await page.locator('#conv-list li:not([hidden])').nth(1).getAttribute('data-id');
  await page.locator(`#conv-list li[data-id="${other}"] button.open`).click();
  await page.waitForFunction((o) => decodeURIComponent(location.hash) === `#c=${o}`, other);
  assert.equal(await page.isEnabled('#input'), true);
  await shot(page, 'switched-during-turn');
  // Back to the running one: the page follows it to its end.
  await page.locator(`#conv-list li[data-id="${id}"] button.open`).click();
  await page.waitForSelector('.card-wrap[data-call-id="slow_l"]');
  // A reload during the slow tool: the tool finishes and the answer still arrives.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector('.card-wrap[data-call-id="slow_l"][data-status="pending"]');
  lane.skills.open('slow_l');
  await waitDone(page);
  assert.match(await lastAnswer(page).textContent(), /Finished later\./);
  noProblems(page);
});

test('a model failure (HTTP 500) is said once', async () => {
  await newConversation(page);
  await lane.model.script([{ status: 500, times: 0, error: { message: 'upstream exploded' } }]);
  await send(page, 'This will fail');
  await page.waitForFunction(() => !document.getElementById('input').disabled &&
    document.getElementById('status').dataset.state !== 'busy');
  const notices = await lastAnswer(page).locator('.notices').textContent();
  // The provider's own retries are one quiet line, not "the answer broke off" for each.
  assert.doesNotMatch(notices, /broke off/);
  assert.ok(!/×/.test(notices), `no notice repeated: ${notices}`);
  assert.equal(await lastAnswer(page).locator('.notice.error, .notice.warn').count(), 1, notices);
  assert.match(notices, /upstream exploded/);
  await lane.model.script([{ text: 'Now it works.' }]);
  await shot(page, 'model-failed-once');
  noProblems(page);
});

test('phone: the list and the settings sheet close on New conversation, Escape and a tap outside', async () => {
  const p = await lane.page('zh-CN', { width: 375, height: 740 });
  assert.equal(await p.getAttribute('html', 'lang'), 'zh-Hans');
  await p.click('#toggle-list');
  assert.equal(await p.isVisible('#sidebar'), true);
  await p.click('#new-conv');
  assert.equal(await p.isVisible('#sidebar'), false, 'New conversation folds the list');
  await p.click('#toggle-list');
  await p.keyboard.press('Escape');
  assert.equal(await p.isVisible('#sidebar'), false, 'Escape folds the list');
  await p.click('#toggle-list');
  await p.mouse.click(187, 720); // on the scrim, below the list
  assert.equal(await p.isVisible('#sidebar'), false, 'a tap outside folds the list');
  await p.click('#settings-toggle');
  assert.equal(await p.isVisible('#theme'), true);
  await shot(p, 'phone-settings-sheet');
  await p.keyboard.press('Escape');
  assert.equal(await p.isVisible('#theme'), false, 'Escape folds the settings sheet');
  // Landscape: the log keeps most of the height.
  await p.setViewportSize({ width: 740, height: 375 });
  const logHeight = await p.evaluate(() => document.getElementById('log').getBoundingClientRect().height);
  console.log(`phone landscape: ${Math.round(logHeight)} px of 375 for messages`);
  await shot(p, 'phone-landscape');
  noProblems(p);
  await p.close();
});

test('Chinese page: the server being down is said in Chinese, with nothing in English', async () => {
  const quick = await Rein.start(lane.model, lane.skills, { name: 'rein-down-zh' });
  const p = await lane.page('zh-TW', { width: 1180, height: 820 }, '/', { base: quick.url });
  await quick.crash();
  await send(p, '你好');
  await p.waitForFunction(() => !document.getElementById('retry').hidden);
  const status = await p.textContent('#status');
  assert.match(status, /無法連上伺服器/);
  assert.doesNotMatch(status, /[A-Za-z]{4,}/, `English in the Chinese page: ${status}`);
  assert.equal(await p.inputValue('#input'), '你好');
  await shot(p, 'server-down-zh');
  await p.close();
});

test('proposals: brought into view with focus, a destructive one marked and confirmed, the notice counts down', async () => {
  await newConversation(page);
  // A conversation long enough that the proposals land below the fold.
  await lane.model.script([{ text: `${'A long answer line.\n\n'.repeat(60)}` }]);
  await send(page, 'Say a lot first');
  await waitDone(page);
  await page.selectOption('#mode', 'propose');
  await lane.model.script([{ tool_calls: [
    { id: 'prop_w', name: 'wipe', arguments: '{"path":"p.txt"}' },
    { id: 'prop_s', name: 'slow', arguments: '{"text":"kept"}' },
  ] }]);
  await send(page, 'Wipe p.txt and echo kept');
  await waitCard(page, 'prop_w', 'proposed');
  await waitStatus(page, 'Proposed calls wait for you.');
  const run = card(page, 'prop_w').locator('button.run');
  await page.waitForFunction(() => document.activeElement?.matches('.card-wrap[data-call-id="prop_w"] button.run'));
  assert.ok(await run.evaluate((b) => {
    const r = b.getBoundingClientRect();
    return r.top >= 0 && r.bottom <= window.innerHeight;
  }), 'the first proposal is in view');
  assert.equal(await card(page, 'prop_w').locator('.badge.st-destructive').count(), 1);
  await shot(page, 'proposals-in-view');
  // A destructive proposal asks once more before it runs.
  await run.click();
  assert.equal(await card(page, 'prop_w').getAttribute('data-status'), 'proposed');
  await shot(page, 'proposal-confirm');
  await run.click();
  await waitCard(page, 'prop_w', 'success');
  // Focus moves on to the next proposal, and the notice says one is left.
  await page.waitForFunction(() => document.activeElement?.matches('.card-wrap[data-call-id="prop_s"] button.run'));
  assert.match(await lastAnswer(page).locator('.notices').textContent(), /1/);
  await card(page, 'prop_s').locator('button.discard').click();
  await waitCard(page, 'prop_s', 'discarded');
  await page.waitForFunction(() => document.activeElement === document.getElementById('input'));
  const notices = await lastAnswer(page).locator('.notices').textContent();
  assert.doesNotMatch(notices, /wait/i, `no proposal is said to wait any more: ${notices}`);
  await page.selectOption('#mode', 'auto');
  await shot(page, 'proposals-done');
  noProblems(page);
});

test('the input grows with its text; a message has a copy button; the turn names its model', async () => {
  const before = await page.evaluate(() => document.getElementById('input').offsetHeight);
  await page.fill('#input', 'one\ntwo\nthree\nfour');
  await page.waitForFunction((h) => document.getElementById('input').offsetHeight > h, before);
  await page.fill('#input', '');
  await lane.model.script([{ text: 'Copy me.' }]);
  await send(page, 'Something to copy');
  await waitDone(page);
  await lastAnswer(page).locator('.msg-actions button.copy').click();
  await page.waitForFunction(() => navigator.clipboard.readText().then((t) => t === 'Copy me.'));
  assert.match(await lastAnswer(page).locator('.turn-meta').textContent(), /test-model/);
  noProblems(page);
});

test('a reopened conversation keeps its approval notes, and a stopped turn says it stopped', async () => {
  await newConversation(page);
  await lane.model.script([
    { tool_calls: [{ id: 'wipe_o', name: 'wipe', arguments: '{"path":"o.txt"}' }] },
    { text: 'Wiped o.txt.' },
  ]);
  await send(page, 'Wipe o.txt');
  await card(page, 'wipe_o').locator('button.approve').click();
  await waitDone(page);
  const id = await conversationId(page);
  // A turn stopped before anything streamed.
  await lane.model.script([{ delay_headers_ms: 20000, text: 'too late' }]);
  await send(page, 'Say something slowly');
  await waitStatus(page, 'Thinking');
  await page.click('#stop');
  await waitStatus(page, 'Stopped.');
  await newConversation(page);
  await page.locator(`#conv-list li[data-id="${id}"] button.open`).click();
  await waitCard(page, 'wipe_o', 'success');
  assert.match(await card(page, 'wipe_o').locator('.card-notes').textContent(), /Approved by a person/);
  const last = lastAnswer(page);
  assert.match(await last.textContent(), /Stopped\./);
  assert.doesNotMatch(await page.textContent('#log'), /\{"|"code"/, 'no raw JSON in the notes');
  await shot(page, 'reopened-notes-and-stopped');
  noProblems(page);
});

