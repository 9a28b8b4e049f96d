// Issue 21's last items on the chat page: the server's own words said in Chinese (zh-CN and
// zh-TW: checks, summaries, what a stopped or failed turn answered, rein's error codes, a
// server that cannot be reached), and features that had no test: "jump to latest", the
// desktop notification, Retry on a failed turn, a proposal answered from another tab, a
// denial that does not show the tool's JSON schema. Its own `rein serve`, model server and
// browser (a "lane"), beside chat.test.mjs and features.test.mjs.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  Rein, card, closeLane, conversationId, lastAnswer, noProblems, openPage, send, shot, startLane,
  waitCard, waitStatus,
} from './harness.mjs';

let lane;

before(async () => {
  lane = await startLane('page');
});

after(() => closeLane(lane));

function waitIdle(p) {
  return p.waitForFunction(() => !document.getElementById('input').disabled &&
    document.getElementById('status').dataset.state !== 'busy');
}

// The words of the page a person sees (the status line and the log) that are English: runs of
// four or more Latin letters, outside what is not the page's own (code, JSON, tool names, the
// person's and the model's text, the model's name) and outside folds that are closed (the
// server's own details, the raw result).
function englishShown(p, allowed) {
  return p.evaluate((ok) => {
    const found = [];
    const skip = 'pre, code, .tool-name, .msg.user .text, .answer, .turn-meta, .sent-as, .code-lang';
    for (const root of [document.getElementById('status'), document.getElementById('log')]) {
      const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
      for (let n = walk.nextNode(); n; n = walk.nextNode()) {
        const e = n.parentElement;
        if (!e || e.closest(skip) || !e.checkVisibility()) continue;
        for (const w of n.data.match(/[A-Za-z]{4,}/g) || []) if (!ok.includes(w)) found.push(`${w} in “${n.data.trim()}”`);
      }
    }
    return found;
  }, allowed);
}

// One of each thing the server says in its own words: a check, a denied call, a stopped
// tool, arguments that do not fit, a model that fails, a server that cannot be reached.
async function serverWords(locale, words) {
  const quick = await Rein.start(lane.model, lane.skills, { name: `rein-${locale}` });
  const p = await lane.page(locale, { width: 1180, height: 820 }, '/', { base: quick.url });
  await p.selectOption('#verification', 'force');
  await lane.model.script([
    { tool_calls: [{ id: 'e1', name: 'echo', arguments: '{"text":"hi"}' }] },
    { text: 'ok' },
  ]);
  await send(p, '一');
  await waitIdle(p);
  assert.match(await card(p, 'e1').locator('.card-notes').textContent(), words.checked);

  await p.selectOption('#verification', 'off');
  await lane.model.script([
    { tool_calls: [{ id: 'w1', name: 'wipe', arguments: '{"path":"a"}' }] },
    { text: 'no' },
  ]);
  await send(p, '二');
  await card(p, 'w1').locator('button.reject').click();
  await waitCard(p, 'w1', 'denied');
  await waitIdle(p);
  assert.match(await lastAnswer(p).locator('.notices').textContent(), words.allDenied);

  await lane.model.script([{ tool_calls: [{ id: 'h1', name: 'hang', arguments: '{"text":"x"}' }] }]);
  await send(p, '三');
  await p.waitForSelector('.card-wrap[data-call-id="h1"]');
  await p.click('#stop');
  await waitCard(p, 'h1', 'cancelled');
  await waitIdle(p);
  await card(p, 'h1').locator('details.card > summary').click();
  assert.match(await card(p, 'h1').locator('pre.json').nth(1).textContent(), words.callCancelled);
  // rein answered for the model ("The turn was cancelled (cancelled by a client)…"): said in
  // the page's language, rein's text folded under it.
  assert.match(await lastAnswer(p).locator('.notices').textContent(), words.stoppedBeforeAnswer);

  await lane.model.script([
    { tool_calls: [{ id: 'i1', name: 'echo', arguments: '{"nope":1}' }] },
    { text: 'no' },
  ]);
  await send(p, '四');
  await waitIdle(p);
  await card(p, 'i1').locator('details.card > summary').click();

  await lane.model.script([{ status: 500, times: 0, error: { message: 'upstream exploded' } }]);
  await send(p, '五');
  await waitIdle(p);
  await lane.model.script([{ text: 'ok' }]);
  await shot(p, `server-words-${locale}`);
  const allowed = ['echo', 'wipe', 'hang', 'rein', 'token', 'JSON'];
  assert.deepEqual(await englishShown(p, allowed), [], 'English in the Chinese page');
  const id = await conversationId(p);

  // Reopened from the store: the same, in the same words.
  await p.reload();
  await p.waitForSelector('body[data-ready="true"]');
  await waitCard(p, 'h1', 'cancelled');
  assert.match(await card(p, 'e1').locator('.card-notes').textContent(), words.checked);
  for (const c of ['h1', 'i1']) await card(p, c).locator('details.card > summary').click();
  assert.deepEqual(await englishShown(p, allowed), [], 'English in the reopened Chinese page');
  await shot(p, `server-words-reopened-${locale}`);

  // The server cannot be reached ("Failed to fetch" in the browser): said in Chinese.
  assert.deepEqual(p.problems, [], 'the page logged errors');
  const beforeCrash = p.problems.length;
  await quick.crash();
  const item = p.locator(`#conv-list li[data-id="${id}"]`);
  await item.locator('button.rename').click();
  await item.locator('.rename-input').fill('改名');
  await item.locator('.rename-input').press('Enter');
  await p.waitForFunction(() => document.getElementById('status').dataset.state === 'error');
  const status = await p.textContent('#status');
  assert.match(status, words.unreachable);
  assert.doesNotMatch(status, /[A-Za-z]{4,}/, `English in the status line: ${status}`);
  // (the browser logs the failed connections itself: refused, or reset when the crash caught
  // a connection of the page's open)
  const afterCrash = p.problems.slice(beforeCrash);
  assert.deepEqual(afterCrash.filter((x) => !/ERR_CONNECTION_(REFUSED|RESET)/.test(x)), [],
    'the page logged errors');
  await p.close();
}

test('Simplified Chinese: the server\'s own words are said in Chinese, live and reopened', async () => {
  await serverWords('zh-CN', {
    checked: /检查通过：验证者认可了这个调用。/,
    allDenied: /所有工具调用都被拒绝了/,
    callCancelled: /这个调用随这一轮一起停止了。/,
    stoppedBeforeAnswer: /模型回答前这一轮就被停止了。/,
    unreachable: /无法连接服务器/,
  });
});

test('Traditional Chinese: the server\'s own words are said in Chinese, live and reopened', async () => {
  await serverWords('zh-TW', {
    checked: /檢查通過：驗證者核可了這個呼叫。/,
    allDenied: /所有工具呼叫都被拒絕了/,
    callCancelled: /這個呼叫隨這一輪一起停止了。/,
    stoppedBeforeAnswer: /模型回答前這一輪就被停止了。/,
    unreachable: /無法連上伺服器/,
  });
});

test('"Jump to latest" shows when the log is scrolled up, and brings the newest message back', async () => {
  const p = await lane.page('en-US', { width: 1180, height: 700 });
  await lane.model.script([{ text: 'A long answer line.\n\n'.repeat(80) }]);
  await send(p, 'Say a lot');
  await waitIdle(p);
  // An answer that came in one piece is followed to its end (the log stayed at the top).
  await p.waitForFunction(() => {
    const log = document.getElementById('log');
    return log.scrollHeight - log.scrollTop - log.clientHeight < 80 && document.getElementById('jump').hidden;
  });
  await p.evaluate(() => { document.getElementById('log').scrollTop = 0; });
  await p.waitForSelector('#jump:not([hidden])');
  await shot(p, 'jump-offered');
  await p.click('#jump');
  await p.waitForSelector('#jump', { state: 'hidden' });
  assert.ok(await p.evaluate(() => {
    const log = document.getElementById('log');
    return log.scrollHeight - log.scrollTop - log.clientHeight < 80;
  }), 'the log is at its newest message');
  assert.equal(await p.evaluate(() => document.activeElement.id), 'input');
  noProblems(p);
  await p.close();
});

test('the desktop notification: allowed once, then sent when an approval waits and the page has no focus', async () => {
  const p = await lane.page('en-US', { width: 1180, height: 820 }, '/', { permissions: ['notifications'] });
  // What the page asks the browser to show, recorded on the way to the real Notification.
  await p.evaluate(() => {
    const Real = window.Notification;
    window.__notes = [];
    window.Notification = class extends Real {
      constructor(title, options) {
        super(title, options);
        window.__notes.push({ title, body: options && options.body });
      }
    };
  });
  await p.check('#notify');
  await p.waitForFunction(() => localStorage.getItem('rein.notify') === 'on');
  assert.equal(await p.isChecked('#notify'), true);
  // Another tab comes to the front and the page loses the focus (playwright keeps every page
  // focused unless told not to): the person is somewhere else.
  const front = await p.context().newPage();
  await front.bringToFront();
  const cdp = await p.context().newCDPSession(p);
  await cdp.send('Emulation.setFocusEmulationEnabled', { enabled: false });
  await p.waitForFunction(() => document.hidden || !document.hasFocus());
  await lane.model.script([
    { tool_calls: [{ id: 'wipe_n', name: 'wipe', arguments: '{"path":"n.txt"}' }] },
    { text: 'Wiped n.txt.' },
  ]);
  // Sent from the page itself: playwright's fill would give it the focus back.
  await p.evaluate(() => {
    document.getElementById('input').value = 'Wipe n.txt';
    document.getElementById('composer').requestSubmit();
  });
  await p.waitForSelector('.card-wrap[data-call-id="wipe_n"] button.approve');
  await p.waitForFunction(() => window.__notes.length > 0);
  const notes = await p.evaluate(() => window.__notes);
  assert.equal(notes.length, 1, JSON.stringify(notes));
  assert.match(notes[0].title, /Approval needed: wipe/);
  assert.match(notes[0].body, /wipe waits for your approval/);
  assert.match(await p.title(), /Approval needed: wipe/);
  await front.close();
  await card(p, 'wipe_n').locator('button.approve').click();
  await waitStatus(p, 'Done.');
  noProblems(p);
  await p.close();
});

test('Retry on a failed turn asks again and replaces the failed answer', async () => {
  const p = await lane.page('en-US', { width: 1180, height: 820 });
  await lane.model.script([{ status: 500, times: 0, error: { message: 'upstream exploded' } }]);
  await send(p, 'Try this');
  await waitIdle(p);
  const retry = lastAnswer(p).locator('button.regenerate');
  await retry.waitFor();
  assert.equal(await retry.textContent(), 'Retry');
  await shot(p, 'retry-offered');
  await lane.model.script([{ text: 'It worked this time.' }]);
  await retry.click();
  await p.waitForFunction(() => /It worked this time\./.test(document.getElementById('log').textContent));
  await waitStatus(p, 'Done.');
  assert.equal(await p.locator('.msg.user').count(), 1, 'the message is sent once more, not twice');
  assert.doesNotMatch(await p.textContent('#log'), /upstream exploded/);
  assert.equal(await lastAnswer(p).locator('button.regenerate').textContent(), 'Regenerate');
  const conv = await (await fetch(`${lane.rein.url}/agent/conversations/${await conversationId(p)}`)).json();
  const roles = conv.messages.map((m) => (m.message || m).role).filter((r) => r !== 'system');
  assert.deepEqual(roles, ['user', 'assistant']);
  noProblems(p);
  await p.close();
});

test('a proposal is answered from another tab, and the first tab shows what became of it', async () => {
  const p = await lane.page('en-US', { width: 1180, height: 820 });
  await p.selectOption('#mode', 'propose');
  await lane.model.script([{ tool_calls: [{ id: 'prop_t', name: 'echo', arguments: '{"text":"from the other tab"}' }] }]);
  await send(p, 'Echo something');
  await waitCard(p, 'prop_t', 'proposed');
  await waitIdle(p);
  const id = await conversationId(p);
  const other = await lane.page('en-US', { width: 1180, height: 820 }, `/#c=${encodeURIComponent(id)}`);
  await waitCard(other, 'prop_t', 'proposed');
  await shot(other, 'proposal-other-tab');
  await card(other, 'prop_t').locator('button.run').click();
  await waitCard(other, 'prop_t', 'success');
  // The first tab learns it from the store (it looks every few seconds while idle).
  await waitCard(p, 'prop_t', 'success');
  assert.equal(await card(p, 'prop_t').locator('button.run').count(), 0);
  await card(p, 'prop_t').locator('details.card > summary').click();
  assert.match(await card(p, 'prop_t').locator('pre.json').nth(1).textContent(), /from the other tab/);
  await p.selectOption('#mode', 'auto');
  noProblems(p);
  noProblems(other);
  await other.close();
  await p.close();
});

test('a denied call shows why, not the tool\'s JSON schema', async () => {
  const p = await lane.page('en-US', { width: 1180, height: 820 });
  await p.selectOption('#verification', 'off');
  await lane.model.script([
    { tool_calls: [{ id: 'wipe_s', name: 'wipe', arguments: '{"path":"s.txt"}' }] },
    { text: 'Kept s.txt.' },
  ]);
  await send(p, 'Wipe s.txt');
  await card(p, 'wipe_s').locator('button.reject').click();
  await waitCard(p, 'wipe_s', 'denied');
  await waitIdle(p);
  await card(p, 'wipe_s').locator('details.card > summary').click();
  const shown = await card(p, 'wipe_s').evaluate((c) => c.innerText);
  assert.match(shown, /a person denied this call/);
  // What the model read holds the schema ("expected"): one click further, folded.
  assert.doesNotMatch(shown, /"expected"|"properties"|"required"/, shown);
  assert.equal(await card(p, 'wipe_s').locator('details.raw').getAttribute('open'), null);
  assert.match(await card(p, 'wipe_s').locator('details.raw pre').textContent(), /"expected"/);
  await shot(p, 'denial-without-schema');
  noProblems(p);
  await p.close();
});

test('without the highlighter (a build with -DREIN_WEB_VENDOR=OFF has no /web/hljs.js) code is shown plain and nothing breaks', async () => {
  const context = await lane.browser.newContext({ viewport: { width: 1180, height: 820 }, locale: 'en-US' });
  let asked = 0;
  await context.route('**/web/hljs.js', (route) => {
    asked++;
    return route.fulfill({ status: 404, contentType: 'application/json', body: '{"error":{"code":"not_found"}}' });
  });
  const p = await openPage(context, `${lane.rein.url}/`);
  await lane.model.script([{ text: 'Code:\n\n```python\nprint("hi")\n```\n\nAnd more:\n\n```js\nlet x = 1;\n```\n' }]);
  await send(p, 'Some code');
  await waitStatus(p, 'Done.');
  const answer = lastAnswer(p);
  assert.equal(await answer.locator('.codeblock').count(), 2);
  assert.equal(await answer.locator('.code-lang').first().textContent(), 'python');
  assert.equal(await answer.locator('pre code').first().textContent(), 'print("hi")');
  // The page asked for the highlighter and got none: no block can be coloured after that.
  for (let i = 0; i < 100 && !asked; i++) await p.evaluate(() => new Promise(requestAnimationFrame));
  assert.ok(asked > 0, 'the page asked for the highlighter');
  assert.equal(await answer.locator('pre code span[class^="hljs-"]').count(), 0);
  await answer.locator('.code-head button.copy').first().click();
  await p.waitForFunction(() => document.querySelector('.code-head button.copy').textContent !== 'Copy');
  await shot(p, 'no-highlighter');
  assert.deepEqual(p.problems.filter((x) => !/404/.test(x)), [], 'the page logged errors');
  await context.close();
});
