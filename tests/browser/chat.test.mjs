// The chat page end to end: headless Chromium (Debian's) driven by playwright-core against
// `rein serve` and the scripted model server, both real processes. Each scenario of issue 10
// is one test, run in order on one page and one conversation list, with a screenshot of each
// step under build-test/artifacts/browser/. The slow tool waits for a gate file the test
// creates, so nothing here depends on how fast the machine is.

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import {
  ARTIFACTS, killAll, launchBrowser, ModelServer, openPage, prepareArtifacts, Rein, shot,
  Skills, stopProcess,
} from './harness.mjs';

const YES = { match: { body_contains: 'Answer YES or NO' }, times: 0, text: 'YES, the user asked for it.' };

let model;
let skills;
let rein;
let browser;
let context;
let page;
const convs = {};

before(async () => {
  prepareArtifacts('chat');
  model = await ModelServer.start();
  skills = new Skills();
  rein = await Rein.start(model, skills);
  browser = await launchBrowser();
  context = await browser.newContext({ viewport: { width: 1180, height: 820 }, locale: 'en-US' });
  page = await openPage(context, `${rein.url}/`);
});

after(async () => {
  await browser?.close();
  const code = rein ? await rein.stop() : 0;
  if (model) await stopProcess(model.proc);
  skills?.remove();
  killAll();
  console.log(`screenshots: ${ARTIFACTS}`);
  assert.equal(code, 0, 'rein serve did not exit cleanly (see rein.log in the artifacts)');
});

/* ---- helpers ---- */

async function send(p, text) {
  await p.fill('#input', text);
  await p.press('#input', 'Enter');
}

function waitStatus(p, text) {
  return p.waitForFunction((t) => document.getElementById('status').textContent.includes(t), text);
}

function waitIdle(p) {
  return p.waitForFunction(() => document.getElementById('status').dataset.state !== 'busy' &&
    !document.getElementById('input').disabled);
}

function card(p, callId) {
  return p.locator(`.card-wrap[data-call-id="${callId}"]`);
}

function waitCard(p, callId, status) {
  return p.waitForSelector(`.card-wrap[data-call-id="${callId}"][data-status="${status}"]`);
}

function lastAnswer(p) {
  return p.locator('.msg.assistant').last();
}

function conversationId(p) {
  return p.evaluate(() => decodeURIComponent(location.hash.replace(/^#c=/, '')));
}

function noProblems(p) {
  assert.deepEqual(p.problems, [], 'the page logged errors');
}

async function newConversation() {
  await page.click('#new-conv');
  await page.waitForFunction(() => location.hash === '' && !document.querySelector('#log .msg'));
}

/* ---- scenarios ---- */

test('a message with a tool call: locked input, status, card, then the answer', async () => {
  await model.script([
    { tool_calls: [{ id: 'slow_1', name: 'slow', arguments: '{"text":"hi"}' }] },
    { text: ['The tool ', 'said **hi**.'] },
  ]);
  await send(page, 'Say hi through the slow tool');
  await waitStatus(page, 'Running tool slow');
  assert.equal(await page.isDisabled('#input'), true, 'the input is locked while the turn runs');
  assert.equal(await page.isDisabled('#send'), true);
  assert.equal(await page.isEnabled('#stop'), true);
  assert.equal(await card(page, 'slow_1').getAttribute('data-status'), 'pending');
  assert.match(await card(page, 'slow_1').locator('.tool-name').textContent(), /^slow$/);
  await shot(page, 'tool-running');

  skills.open('slow_1');
  await waitCard(page, 'slow_1', 'success');
  await waitStatus(page, 'Done.');
  assert.equal(await page.isEnabled('#input'), true, 'the input is free after the turn');
  assert.equal(await lastAnswer(page).locator('.answer strong').textContent(), 'hi');
  assert.match(await lastAnswer(page).locator('.answer').textContent(), /The tool said hi\./);
  assert.match(await card(page, 'slow_1').locator('.latency').textContent(), /^\d+ ms$/);
  await shot(page, 'tool-done');
  // Folded by default; opening it shows the arguments and the tool's output, not the envelope.
  assert.equal(await card(page, 'slow_1').locator('details.card').getAttribute('open'), null);
  await card(page, 'slow_1').locator('details.card > summary').click();
  assert.match(await card(page, 'slow_1').locator('pre.json').first().textContent(), /"text": "hi"/);
  // (the slow skill echoes what it was given, which names the call)
  assert.doesNotMatch(await card(page, 'slow_1').locator('pre.json').nth(1).textContent(), /"ok":|"meta":/);
  assert.match(await card(page, 'slow_1').locator('details.raw pre').textContent(), /"call_id": "slow_1"/);
  convs.first = await conversationId(page);
  assert.match(convs.first, /^[A-Za-z0-9_.-]+$/);
  await shot(page, 'tool-card-open');
  await card(page, 'slow_1').locator('details.card > summary').click();
  noProblems(page);
});

test('Stop cancels a slow tool and the page says what was cancelled', async () => {
  await model.script([{ tool_calls: [{ id: 'hang_1', name: 'hang', arguments: '{"text":"x"}' }] }]);
  await send(page, 'Run the tool that never ends');
  await waitStatus(page, 'Running tool hang');
  await shot(page, 'stop-before');
  await page.click('#stop');
  await waitCard(page, 'hang_1', 'cancelled');
  await waitStatus(page, 'Stopped.');
  await waitIdle(page);
  const notices = await lastAnswer(page).locator('.notices').textContent();
  assert.match(notices, /Cancelled: hang \(hang_1\)/);
  assert.equal(await page.isEnabled('#input'), true);
  assert.equal(await page.isDisabled('#stop'), true);
  await shot(page, 'stopped');
  noProblems(page);
});

test('a second page on the same conversation follows the running turn instead of sending', async () => {
  const id = await conversationId(page);
  const page2 = await openPage(context, `${rein.url}/#c=${id}`);
  await waitStatus(page2, 'Ready.');
  // An idle page looks every 2 s whether a turn started elsewhere (and follows it: its input
  // is then disabled). This test is about the page that did not look yet, so the second page
  // passes for hidden, which that watch skips, until its message went: on a busy machine the
  // steps below took longer than one watch and the message could not be typed.
  await page2.evaluate(() =>
    Object.defineProperty(document, 'hidden', { value: true, configurable: true }));
  await model.script([
    { tool_calls: [{ id: 'slow_2', name: 'slow', arguments: '{"text":"busy"}' }] },
    { text: 'Finished the busy turn.' },
  ]);
  await send(page, 'Keep the conversation busy');
  await waitStatus(page, 'Running tool slow');

  // The second page did not know: its message gets the server's 409, is kept, and the page
  // follows the running turn instead.
  await send(page2, 'Are you there?');
  await page2.evaluate(() => delete document.hidden); // Document.prototype's getter again
  await page2.waitForSelector('.card-wrap[data-call-id="slow_2"]');
  assert.equal(await page2.inputValue('#input'), 'Are you there?');
  assert.equal(await page2.isDisabled('#input'), true);
  assert.equal(await page2.isEnabled('#stop'), true, 'a following page can stop the turn');
  await shot(page2, 'second-page-follows');

  // A page opened now follows it at once.
  const page3 = await openPage(context, `${rein.url}/#c=${id}`);
  await page3.waitForSelector('.card-wrap[data-call-id="slow_2"][data-status="pending"]');
  assert.equal(await page3.isDisabled('#input'), true);
  await page3.close();

  skills.open('slow_2');
  await waitStatus(page, 'Done.');
  await waitStatus(page2, 'Done.');
  assert.equal(await page2.isEnabled('#input'), true);
  assert.match(await page2.textContent('#log'), /Finished the busy turn\./);
  const sent = (await model.requests()).some((r) => r.body.includes('Are you there?'));
  assert.equal(sent, false, 'the busy page must not have sent its message');
  noProblems(page2);
  await page2.close();
});

test('a destructive call is approved, and another rejected', async () => {
  await newConversation();
  await model.script([
    YES,
    { tool_calls: [{ id: 'wipe_1', name: 'wipe', arguments: '{"path":"a.txt"}' }] },
    { text: 'Wiped a.txt.' },
  ]);
  await send(page, 'Wipe a.txt');
  await page.waitForSelector('.card-wrap[data-call-id="wipe_1"] .question button.approve');
  await waitStatus(page, 'Waiting for your approval: wipe');
  assert.match(await card(page, 'wipe_1').locator('.question pre').textContent(), /"path": "a.txt"/);
  // The question takes the focus, so a keyboard user answers with Enter.
  assert.equal(await page.evaluate(() => document.activeElement.className), 'approve');
  await shot(page, 'approval-asked');
  await page.keyboard.press('Enter');
  await waitCard(page, 'wipe_1', 'success');
  await waitStatus(page, 'Done.');
  const notes1 = await card(page, 'wipe_1').locator('.card-notes').textContent();
  assert.match(notes1, /Check passed: /);
  assert.match(notes1, /Approved by a person/);
  assert.match(await lastAnswer(page).textContent(), /Wiped a\.txt\./);
  await shot(page, 'approval-approved');

  await model.script([
    YES,
    { tool_calls: [{ id: 'wipe_2', name: 'wipe', arguments: '{"path":"b.txt"}' }] },
    { text: 'b.txt was kept.' },
  ]);
  await send(page, 'Wipe b.txt');
  await page.waitForSelector('.card-wrap[data-call-id="wipe_2"] .question button.reject');
  await card(page, 'wipe_2').locator('button.reject').click();
  await waitCard(page, 'wipe_2', 'denied');
  // Every call of the turn was denied: it did not succeed, whatever the model answered.
  await waitStatus(page, 'without success');
  assert.match(await lastAnswer(page).textContent(), /every tool call was denied/);
  assert.match(await card(page, 'wipe_2').locator('.card-notes').textContent(),
    /Not approved: a person denied this call/);
  assert.match(await lastAnswer(page).locator('.notices').textContent(), /Denied, not run: wipe \(wipe_2\)/);
  convs.approvals = await conversationId(page);
  await shot(page, 'approval-rejected');
  noProblems(page);
});

test('an approval nobody answers in time is denied', async () => {
  const quick = await Rein.start(model, skills, { args: ['--approval-timeout-ms', '1000'], name: 'rein-quick' });
  const p = await openPage(context, `${quick.url}/`);
  await model.script([
    YES,
    { tool_calls: [{ id: 'wipe_3', name: 'wipe', arguments: '{"path":"c.txt"}' }] },
    { text: 'Nothing was wiped.' },
  ]);
  await send(p, 'Wipe c.txt');
  await p.waitForSelector('.card-wrap[data-call-id="wipe_3"] .question');
  await waitCard(p, 'wipe_3', 'denied');
  await waitStatus(p, 'without success');
  assert.match(await card(p, 'wipe_3').locator('.card-notes').textContent(),
    /nobody approved this call within 1 seconds|No answer in time/);
  assert.equal(await card(p, 'wipe_3').locator('.question').count(), 0);
  await shot(p, 'approval-timeout');
  noProblems(p);
  await p.close();
  assert.equal(await quick.stop(), 0);
});

test('markup in a model answer or a tool result is shown as text', async () => {
  await newConversation();
  const markup = '<img src=x onerror="window.__pwned=3">';
  await model.script([
    { tool_calls: [{ id: 'echo_1', name: 'Echo', arguments: JSON.stringify({ text: markup }) }] },
    {
      text: ['Look: <script>window.__pwned = 1</script>', '<img src=x onerror="window.__pwned=2"> ',
        '[click](javascript:window.__pwned=4) and **bold** and `<b>code</b>`'],
    },
  ]);
  await send(page, 'Show me some markup');
  await waitStatus(page, 'Done.');
  const answer = lastAnswer(page).locator('.answer');
  assert.match(await answer.textContent(), /<script>window\.__pwned = 1<\/script><img src=x onerror=/);
  assert.match(await answer.textContent(), /\[click\]\(javascript:window\.__pwned=4\)/);
  assert.equal(await answer.locator('strong').textContent(), 'bold');
  assert.equal(await answer.locator('code').textContent(), '<b>code</b>');
  assert.equal(await page.locator('#log script, #log img, #log iframe, #log b').count(), 0);
  assert.equal(await page.locator('#log a[href^="javascript"]').count(), 0);
  // The model said "Echo"; rein repaired it to echo, and the card says both.
  assert.equal(await card(page, 'echo_1').locator('.tool-name').textContent(), 'echo');
  assert.match(await card(page, 'echo_1').locator('.sent-as').textContent(), /the model called it “Echo”/);
  await card(page, 'echo_1').locator('details.card > summary').click();
  assert.match(await card(page, 'echo_1').textContent(), /<img src=x onerror=\\"window.__pwned=3\\">/);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  convs.markup = await conversationId(page);
  await shot(page, 'markup-as-text');
  noProblems(page);
});

test('claims no call backs are shown on the answer; force mode sends them back once', async () => {
  await newConversation();
  await model.script([
    { text: 'I used the calculator: 2 + 2 = 4, and I saved the result to result.txt.' },
  ]);
  await send(page, 'What is 2 + 2? Save it too.');
  await waitStatus(page, 'Done.');
  const claims = lastAnswer(page).locator('.notice.claims');
  await claims.waitFor();
  assert.match(await claims.locator('.claims-title').textContent(), /claims 2 thing\(s\) that no tool call/);
  assert.equal(await claims.locator('li').count(), 2);
  assert.match(await claims.locator('li').first().textContent(), /I used the calculator.*no call shows it/);
  await shot(page, 'claims-refuted');

  await page.selectOption('#verification', 'force');
  await model.script([
    { text: 'The calculator returned 6.' },
    { match: { body_contains: 'no call shows it' }, text: 'Correction: I did not run the calculator; 3 + 3 is 6.' },
  ]);
  await send(page, 'And 3 + 3?');
  await waitStatus(page, 'Done.');
  const last = lastAnswer(page);
  await last.locator('.notice.muted', { hasText: 'asked the model to correct it' }).waitFor();
  assert.match(await last.locator('.answer').last().textContent(), /Correction: I did not run/);
  assert.equal(await last.locator('.notice.claims').count(), 0, 'the corrected answer claims nothing');
  await shot(page, 'claims-force');
  await page.selectOption('#verification', 'auto');
  noProblems(page);
});

test('propose mode shows the checked calls and runs or discards each', async () => {
  await newConversation();
  await page.selectOption('#mode', 'propose');
  await model.script([{
    tool_calls: [
      { id: 'prop_1', name: 'calculator', arguments: '{"expression":"2+3"}' },
      { id: 'prop_2', name: 'echo', arguments: '{"text":"not wanted"}' },
    ],
  }]);
  await send(page, 'Add 2 and 3');
  await waitCard(page, 'prop_1', 'proposed');
  await waitCard(page, 'prop_2', 'proposed');
  await waitStatus(page, 'Proposed calls wait for you.');
  const body = (await model.requests()).at(-1).json;
  assert.ok(body.messages.some((m) => m.role === 'user' && m.content === 'Add 2 and 3'));
  await shot(page, 'proposed');
  await card(page, 'prop_1').locator('button.run').click();
  await waitCard(page, 'prop_1', 'success');
  await card(page, 'prop_1').locator('details.card > summary').click();
  assert.match(await card(page, 'prop_1').locator('pre.json').nth(1).textContent(), /5/);
  await card(page, 'prop_2').locator('button.discard').click();
  await waitCard(page, 'prop_2', 'discarded');
  await shot(page, 'proposals-resolved');
  await page.selectOption('#mode', 'auto');

  // Reopened from the store: the ledger says what became of each proposal.
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await waitCard(page, 'prop_1', 'success');
  await waitCard(page, 'prop_2', 'discarded');
  assert.equal(await page.locator('button.run').count(), 0);
  noProblems(page);
});

test('conversations are listed, paged, reopened and deleted', async () => {
  // 20 more conversations through the API itself, so the list needs a second page.
  await model.script([{ text: 'ok', times: 0 }]);
  for (let i = 0; i < 20; i++) {
    const r = await fetch(`${rein.url}/agent/chat`, {
      method: 'POST', headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ message: `filler ${i}` }),
    });
    assert.equal(r.status, 200, await r.text());
  }
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  await page.waitForSelector('#conv-more:not([hidden])');
  assert.equal(await page.locator('#conv-list li').count(), 20);
  await page.click('#conv-more');
  await page.waitForSelector('#conv-more', { state: 'hidden' });
  assert.ok(await page.locator('#conv-list li').count() >= 24);

  await page.locator(`#conv-list li[data-id="${convs.first}"] button.open`).click();
  await waitCard(page, 'slow_1', 'success');
  await waitCard(page, 'hang_1', 'cancelled');
  assert.match(await page.textContent('#log'), /The tool said hi\./);
  assert.equal(await page.locator(`#conv-list li[data-id="${convs.first}"] button.open`)
    .getAttribute('aria-current'), 'page');
  await shot(page, 'reopened');

  // Deleting hides it at once with an Undo; Undo brings it back and nothing was deleted.
  await page.locator(`#conv-list li[data-id="${convs.markup}"] button.delete`).click();
  await page.waitForSelector(`#conv-list li[data-id="${convs.markup}"]`, { state: 'hidden' });
  await page.waitForSelector('#toast:not([hidden])');
  await shot(page, 'deleted-undo-offered');
  await page.locator('#toast button').click();
  await page.waitForSelector(`#conv-list li[data-id="${convs.markup}"]`, { state: 'visible' });
  assert.equal((await fetch(`${rein.url}/agent/conversations/${convs.markup}`)).status, 200);
  // Deleted again and the page closed before the Undo time is up: the delete still goes out.
  await page.locator(`#conv-list li[data-id="${convs.markup}"] button.delete`).click();
  await page.reload();
  await page.waitForSelector('body[data-ready="true"]');
  for (let i = 0; i < 50; i++) {
    if ((await fetch(`${rein.url}/agent/conversations/${convs.markup}`)).status === 404) break;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.equal((await fetch(`${rein.url}/agent/conversations/${convs.markup}`)).status, 404);
  noProblems(page);
});

test('after a crash the page reconnects and shows the call left pending', async () => {
  const first = await Rein.start(model, skills, { args: ['--lease-ms', '1000'], name: 'rein-crash' });
  const port = new URL(first.url).port;
  const p = await openPage(context, `${first.url}/`);
  await model.script([{ tool_calls: [{ id: 'slow_9', name: 'slow', arguments: '{"text":"lost"}' }] }]);
  await send(p, 'Start something and crash');
  await waitStatus(p, 'Running tool slow');
  const id = await conversationId(p);
  await first.crash();
  // The page says the connection broke and keeps trying; nothing is lost from the box.
  await waitStatus(p, 'reconnecting');
  await shot(p, 'crash-reconnecting');

  // The same store and port after a restart: the page reconnects by itself, finds the turn
  // dead, and shows its call as never answered, flagged once the lease has run out.
  const again = await Rein.start(model, skills, {
    args: ['--lease-ms', '1000'], port, name: 'rein-restarted', dir: first.dir,
  });
  await waitCard(p, 'slow_9', 'pending');
  await p.waitForFunction(() => /never got a result: slow \(slow_9\)/.test(document.getElementById('log').textContent));
  await p.waitForFunction(() => !document.getElementById('input').disabled, null, { timeout: 20000 });
  await p.waitForFunction(() => /interrupted/.test(document.querySelector('.card-wrap[data-call-id="slow_9"]').textContent),
    null, { timeout: 20000 });
  await shot(p, 'crash-reopened');
  await p.close();
  assert.equal(await again.stop(), 0);
});

test('a server with API keys gets the key from the person once', async () => {
  const keyed = await Rein.start(model, skills, { name: 'rein-keyed', env: { REIN_API_KEYS: 'k-browser' } });
  const p = await openPage(context, `${keyed.url}/`);
  await p.waitForSelector('#auth:not([hidden])');
  await shot(p, 'api-key-asked');
  // A wrong key is refused, and the page says so instead of closing the form.
  await p.fill('#auth-key', 'k-wrong');
  await p.press('#auth-key', 'Enter');
  await p.waitForSelector('#auth-error:not([hidden])');
  assert.match(await p.textContent('#auth-error'), /not accepted/);
  assert.equal(await p.isVisible('#auth'), true);
  await shot(p, 'api-key-refused');
  await p.fill('#auth-key', 'k-browser');
  await p.press('#auth-key', 'Enter');
  await p.waitForSelector('#auth', { state: 'hidden' });
  await model.script([{ text: 'Hello with a key.' }]);
  await send(p, 'Hello');
  await waitStatus(p, 'Done.');
  assert.match(await lastAnswer(p).textContent(), /Hello with a key\./);
  noProblems(p);
  await p.close();
  assert.equal(await keyed.stop(), 0);
});

test('English, Traditional and Simplified Chinese, from the browser or the selector', async () => {
  await page.selectOption('#lang', 'zh-Hant');
  assert.equal(await page.textContent('#send'), '送出');
  assert.equal(await page.getAttribute('html', 'lang'), 'zh-Hant');
  assert.match(await card(page, 'slow_1').locator('.badge').textContent(), /成功/);
  await shot(page, 'zh-hant');
  await page.selectOption('#lang', 'en');
  assert.equal(await page.textContent('#send'), 'Send');

  const zh = await browser.newContext({ viewport: { width: 1000, height: 700 }, locale: 'zh-CN' });
  const p = await openPage(zh, `${rein.url}/#c=${convs.approvals}`);
  await waitCard(p, 'wipe_1', 'success');
  assert.equal(await p.textContent('#send'), '发送');
  assert.equal(await p.inputValue('#lang'), 'zh-Hans');
  await shot(p, 'zh-hans-from-browser');
  noProblems(p);
  await zh.close();
});

test('the page\'s SSE reader and Markdown renderer hold up against random input', async () => {
  // Run in the page, on the modules it loaded; a fixed seed keeps failures reproducible.
  const problems = await page.evaluate(async () => {
    const { sseEvents } = await import('/web/api.js');
    const { renderMarkdown } = await import('/web/markdown.js');
    let seed = 20261122;
    const rnd = (n) => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return (seed >>> 8) % n;
    };
    const found = [];

    // SSE: events written with one kind of line end, cut into chunks of 1..7 bytes (splitting
    // CRLF pairs and UTF-8 characters), with comments between them, must come back the same.
    for (let round = 0; round < 300; round++) {
      const eol = ['\n', '\r\n', '\r'][rnd(3)];
      const want = [];
      let text = '';
      for (let i = 0; i <= rnd(5); i++) {
        const e = { event: ['status', 'text_delta', 'result'][rnd(3)],
          data: JSON.stringify({ text: '€中'.repeat(rnd(3)) + 'x'.repeat(rnd(4)), i }) };
        want.push(e);
        if (rnd(2)) text += `: heartbeat${eol}`;
        text += `event: ${e.event}${eol}data: ${e.data}${eol}${eol}`;
      }
      const bytes = new TextEncoder().encode(text);
      const stream = new ReadableStream({
        start(c) {
          for (let p = 0; p < bytes.length;) {
            const n = 1 + rnd(7);
            c.enqueue(bytes.slice(p, p + n));
            p += n;
          }
          c.close();
        },
      });
      const got = [];
      for await (const ev of sseEvents(stream)) got.push({ event: ev.event, data: ev.data });
      if (JSON.stringify(got) !== JSON.stringify(want)) found.push(`sse round ${round}: ${JSON.stringify(got)}`);
    }

    // Markdown: whatever the text, only these elements and attributes come out, links only to
    // http(s) or mailto, and every '<' of the input is still there as text.
    const pieces = ['*', '**', '_', '__', '`', '```', '~~', '[', ']', '(', ')', '#', '## ', '> ', '- ',
      '1. ', '    ', ' ', '\n', '\n\n', '<script>alert(1)</script>', '<img src=x onerror=alert(2)>',
      'javascript:alert(3)', 'http://example.com/x', 'mailto:a@b.c', '&lt;', '中文', 'a', 'word_with_'];
    const tags = new Set(['DIV', 'P', 'BR', 'STRONG', 'EM', 'DEL', 'CODE', 'PRE', 'A', 'UL', 'OL', 'LI',
      'BLOCKQUOTE', 'HR', 'H3', 'H4', 'H5', 'H6', 'TABLE', 'THEAD', 'TBODY', 'TR', 'TH', 'TD', 'SPAN',
      'BUTTON']);
    const attrs = new Set(['class', 'href', 'rel', 'target', 'start', 'data-lang', 'data-level',
      'data-copy', 'data-i18n', 'type', 'data-highlighted']);
    for (let round = 0; round < 3000; round++) {
      let text = '';
      for (let i = rnd(30); i > 0; i--) text += pieces[rnd(pieces.length)];
      let root;
      try {
        root = renderMarkdown(text);
      } catch (e) {
        found.push(`markdown threw on ${JSON.stringify(text)}: ${e.message}`);
        continue;
      }
      for (const n of root.querySelectorAll('*')) {
        if (!tags.has(n.tagName)) found.push(`<${n.tagName}> from ${JSON.stringify(text)}`);
        for (const a of n.attributes) {
          if (!attrs.has(a.name)) found.push(`attribute ${a.name} from ${JSON.stringify(text)}`);
        }
        if (n.tagName === 'A' && !/^(https?:|mailto:)/.test(n.getAttribute('href'))) {
          found.push(`link ${n.getAttribute('href')} from ${JSON.stringify(text)}`);
        }
      }
      const lt = (x) => x.split('<').length - 1;
      for (const b of root.querySelectorAll('button')) b.remove(); // copy buttons: not text
      // An autolink <https://…> shows its URL without the brackets.
      const links = (text.match(/<(https?:|mailto:)[^\s<>]+>/gi) || []).length;
      if (lt(root.textContent) + links !== lt(text)) found.push(`lost a '<' in ${JSON.stringify(text)}`);
    }
    return found.slice(0, 10);
  });
  assert.deepEqual(problems, []);
  noProblems(page);
});

test('readable on a narrow screen', async () => {
  await page.setViewportSize({ width: 375, height: 740 });
  await page.locator('#toggle-list').waitFor({ state: 'visible' });
  assert.equal(await page.isVisible('#sidebar'), false);
  assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= 375), 'no sideways scrolling');
  await shot(page, 'narrow');
  await page.click('#toggle-list');
  assert.equal(await page.isVisible('#sidebar'), true);
  assert.equal(await page.getAttribute('#toggle-list', 'aria-expanded'), 'true');
  await shot(page, 'narrow-list');
  await page.locator('#conv-list li button.open').first().click();
  await page.waitForFunction(() => /ok/.test(document.getElementById('log').textContent));
  assert.equal(await page.isVisible('#sidebar'), false, 'opening a conversation folds the list');
  await page.evaluate((id) => { location.hash = `#c=${id}`; }, convs.approvals);
  await waitCard(page, 'wipe_2', 'denied');
  await shot(page, 'narrow-conversation');
  noProblems(page);
});
