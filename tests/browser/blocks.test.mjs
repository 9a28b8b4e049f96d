// An answer that is one huge block (issue 21: a single 100 KB paragraph, list or table made
// long tasks of 100–250 ms, the block drawn and laid out whole on every frame). Streamed
// through `rein serve` in 256-byte deltas, each is drawn as the same text drawn at once, and
// its long tasks are reported (measured, never asserted: bench/page.sh compares pages). The
// renderer's own contract is checked in the page, without timing: a call draws a few KB of a
// growing block and the next one goes on from there, a paragraph that grows keeps the spans
// it has, and any text fed in any pieces ends as the same text drawn at once. Its own
// `rein serve`, model server and browser (a "lane").

import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { blocks, describeLongTasks, drawnAndAtOnce, longTasks, watchLongTasks } from './answers.mjs';
import { closeLane, lastAnswer, noProblems, send, shot, startLane } from './harness.mjs';

let lane;

before(async () => {
  lane = await startLane('blocks');
});

after(() => closeLane(lane));

function waitDrawn(p, last) {
  return p.waitForFunction((l) => !document.getElementById('input').disabled &&
    document.getElementById('status').dataset.state !== 'busy' &&
    document.querySelector('.msg.assistant:last-of-type .answer')?.textContent.includes(l), last);
}

const shapes = [
  { name: 'paragraph', size: { width: 1180, height: 820 }, locale: 'en-US', count: 'p' },
  { name: 'list', size: { width: 375, height: 740 }, locale: 'zh-CN', count: 'ul > li' },
  { name: 'table', size: { width: 1180, height: 820 }, locale: 'zh-TW', count: 'tbody > tr' },
];

for (const shape of shapes) {
  test(`a single 100 KB ${shape.name} streams in (long tasks reported), drawn as if at once`, async () => {
    const p = await lane.page(shape.locale, shape.size);
    const { text, last } = blocks[shape.name](100 * 1024);
    await lane.model.script([{ text, delta_bytes: 256 }]);
    await watchLongTasks(p);
    await send(p, `One ${shape.name}`);
    await waitDrawn(p, last);
    console.log(`100 KB ${shape.name}: ${describeLongTasks(await longTasks(p))}`);
    const [streamed, atOnce] = await drawnAndAtOnce(p, text);
    assert.ok(streamed.length > 100 * 1024, `the whole answer is shown (${streamed.length} characters of markup)`);
    assert.equal(streamed, atOnce);
    const answer = lastAnswer(p).locator('.answer .md');
    const expected = shape.name === 'paragraph' ? 1 : text.split('\n').length - (shape.name === 'table' ? 2 : 0);
    assert.equal(await answer.locator(shape.count).count(), expected);
    // What a person copies is the text, not the pieces it was drawn in.
    const copied = await answer.evaluate((md) => md.innerText);
    assert.match(copied, new RegExp(`${last}\\s*$`));
    assert.doesNotMatch(copied, /\*\*|`|\]\(/, 'Markdown shown raw');
    if (shape.name === 'table') {
      // Its columns were set from the first rows' text, not sized again for every row.
      assert.equal(await answer.locator('table.fixed > colgroup > col').count(), 3);
    }
    await shot(p, `block-${shape.name}`);
    noProblems(p);
    await p.close();
  });
}

test('a big growing block is drawn a few KB per call, each call going on from the last, and ends as drawn at once', async () => {
  const p = await lane.page();
  const out = await p.evaluate(async (texts) => {
    const { MarkdownView, renderMarkdown } = await import('/web/markdown.js');
    const inner = (root) => [...root.querySelectorAll(':scope > .chunk')].map((c) => c.innerHTML).join('');
    const res = {};
    for (const [name, text] of Object.entries(texts)) {
      const v = new MarkdownView();
      // A deadline already passed: each call draws its least.
      let calls = 0;
      let most = 0;
      let before = 0;
      for (let done = false; !done && calls < 1000; calls++) {
        done = v.set(text, false, 0);
        const now = v.root.textContent.length;
        most = Math.max(most, now - before);
        before = now;
      }
      // Told that the answer has ended, the view has nothing left to draw.
      res[name] = { calls, most, final: v.set(text, true, 0), same: inner(v.root) === renderMarkdown(text).innerHTML };
    }
    return res;
  }, Object.fromEntries(Object.keys(blocks).map((k) => [k, blocks[k](100 * 1024).text])));
  for (const [name, r] of Object.entries(out)) {
    // 100 KB at a few KB per call (the page's frames): tens of calls, none drawing much.
    assert.ok(r.calls >= 12, `${name}: drawn in ${r.calls} call(s)`);
    assert.ok(r.most < 12 * 1024, `${name}: one call drew ${r.most} characters`);
    assert.equal(r.same, true, `${name}: drawn as at once`);
    assert.equal(r.final, true, `${name}: the last call drew the rest`);
  }
  noProblems(p);
  await p.close();
});

test('a paragraph, list or table that grows keeps what it has drawn', async () => {
  const p = await lane.page();
  const kept = await p.evaluate(async (texts) => {
    const { MarkdownView } = await import('/web/markdown.js');
    const res = {};
    for (const [name, [text, sel]] of Object.entries(texts)) {
      const v = new MarkdownView();
      v.set(text.slice(0, text.length >> 1));
      const first = v.root.querySelector(sel);
      v.set(text);
      res[name] = !!first && v.root.contains(first) && v.root.querySelector(sel) === first;
    }
    return res;
  }, {
    paragraph: [blocks.paragraph(20 * 1024).text, 'p > strong'],
    list: [blocks.list(20 * 1024).text, 'li'],
    table: [blocks.table(20 * 1024).text, 'tbody > tr'],
  });
  assert.deepEqual(kept, { paragraph: true, list: true, table: true });
  noProblems(p);
  await p.close();
});

// Text whose inline spans change when more comes (a backtick closed late turns what it spans
// into code; a URL or an emphasis grows), lists with nested lines, tables with escaped pipes,
// code, Chinese: fed in pieces of every size, every step that is drawn whole is what the
// same text gives at once.
test('any text fed in pieces is drawn as at once at every step, also when a retry takes some back', async () => {
  const p = await lane.page();
  const bad = await p.evaluate(async () => {
    const { MarkdownView, renderMarkdown } = await import('/web/markdown.js');
    const inner = (root) => [...root.querySelectorAll(':scope > .chunk')].map((c) => c.innerHTML).join('');
    const texts = [
      `a \`b ${'x '.repeat(3000)}c\` d **e** _f_ snake_case https://example.com/a_(b)_c. <https://x.y/z> ~~g~~ [h](https://i.j) end`,
      `${'word **strong** '.repeat(400)}\nsecond line *em\nthird* line\n\nnext paragraph`,
      `- one \`a\`\n- two\n  more of two\n\n  still two\n- three **b**\n1. not this list\n${'- item *i*\n'.repeat(300)}`,
      `| a | b \\| c |\n| :-: | --: |\n${'| `x|y` | **z** |\n'.repeat(300)}| last |`,
      `中文段落，**粗体**和\`代码\`，还有链接 https://例子.cn/路径。${'汉字'.repeat(2000)}\n\n\`\`\`js\nconst a = 1;\n\`\`\`\n`,
    ];
    const problems = [];
    for (const [n, text] of texts.entries()) {
      const v = new MarkdownView();
      let seed = n + 1;
      const rand = (k) => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed % k;
      };
      for (let at = 0; at < text.length;) {
        at = Math.min(text.length, at + 1 + rand(at % 3 ? 300 : 5000));
        // Now and then a retry: what came since an earlier point is taken back.
        const shown = rand(10) === 0 ? text.slice(0, Math.max(0, at - rand(500))) : text.slice(0, at);
        let calls = 0;
        while (!v.set(shown, false, rand(2) ? 0 : Infinity) && calls < 1000) calls++;
        if (inner(v.root) !== renderMarkdown(shown).innerHTML) {
          problems.push(`text ${n} at ${shown.length}`);
          break;
        }
      }
      v.set(text, true);
      if (inner(v.root) !== renderMarkdown(text).innerHTML) problems.push(`text ${n} at its end`);
    }
    return problems;
  });
  assert.deepEqual(bad, []);
  noProblems(p);
  await p.close();
});
