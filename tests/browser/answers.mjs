// Long answers for the chat page's renderer, shared by the browser tests and bench/page.mjs,
// and what both measure and compare them with: the long tasks while one streams in, and the
// answer as drawn next to the same text drawn at once.

const SENTENCE = 'Lorem ipsum **dolor** sit amet, `code` and [a link](https://example.com). ';

// Answers of about bytes characters that are one block each: one paragraph of one line (no
// line break anywhere), one bullet list, one table. {text, last}: last is plain text the
// answer ends with (what a test waits for).
export const blocks = {
  paragraph(bytes) {
    let text = '';
    let i = 0;
    while (text.length < bytes) text += `${i++} ${SENTENCE}`;
    return { text: `${text}and the end ${i}.`, last: `and the end ${i}.` };
  },
  list(bytes) {
    let text = '';
    let i = 0;
    while (text.length < bytes) text += `- item ${i++}: ${SENTENCE}\n`;
    return { text: `${text}- the end ${i}`, last: `the end ${i}` };
  },
  table(bytes) {
    let text = '| n | name | text |\n| ---: | --- | --- |\n';
    let i = 0;
    while (text.length < bytes) text += `| ${i} | row ${i++} | ${SENTENCE}|\n`;
    return { text: `${text}| ${i} | the end ${i} | |`, last: `the end ${i}` };
  },
  // Paragraphs of several lines, headings, lists, tables and code.
  mixed(bytes) {
    let text = '';
    let last = '';
    for (let i = 0; text.length < bytes; i++) {
      if (i % 20 === 19) {
        last = `Part ${i}`;
        text += `\n\n## ${last}\n\n`;
      } else {
        text += i % 4 === 3 ? `${SENTENCE}\n` : SENTENCE;
      }
      if (i % 50 === 49) text += '\n\n```js\nconst x = 1;\n```\n\n';
      if (i % 60 === 59) text += `\n\n${Array.from({ length: 12 }, (_, k) => `- item ${k}: ${SENTENCE}`).join('\n')}\n\n`;
      if (i % 70 === 69) {
        text += `\n\n| n | text |\n| ---: | --- |\n${Array.from({ length: 10 }, (_, k) => `| ${k} | ${SENTENCE} |`).join('\n')}\n\n`;
      }
    }
    return { text, last };
  },
};

// Starts counting the page's long tasks (over 50 ms; what the browser's PerformanceObserver
// reports, wall-clock time).
export function watchLongTasks(p) {
  return p.evaluate(() => {
    window.__long = [];
    new PerformanceObserver((l) => window.__long.push(...l.getEntries().map((e) => e.duration)))
      .observe({ type: 'longtask' });
  });
}

// The long tasks since watchLongTasks, in ms, once the frame after the last one has run (the
// observer hears of a task after it ended).
export async function longTasks(p) {
  await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0))));
  return p.evaluate(() => window.__long.map((d) => Math.round(d)));
}

export function describeLongTasks(long) {
  return `${long.length} long task(s) over 50 ms${long.length ? `, the longest ${Math.max(...long)} ms` : ''}` +
    (long.length ? ` (${long.join(', ')})` : '');
}

// The last answer's markup and that of text drawn at once by the page's own renderer, both
// without the highlighter's colours (they come on their own) and without the chunks a
// streamed answer is drawn in: [streamed, atOnce].
export function drawnAndAtOnce(p, text) {
  return p.evaluate(async (t) => {
    const { renderMarkdown } = await import('/web/markdown.js');
    const drawn = (root) => {
      const c = root.cloneNode(true);
      for (const code of c.querySelectorAll('code')) {
        code.textContent = code.textContent;
        code.classList.remove('hljs');
        if (!code.classList.length) code.removeAttribute('class');
        code.removeAttribute('data-highlighted');
      }
      const chunks = c.querySelectorAll(':scope > .chunk');
      return chunks.length ? [...chunks].map((ch) => ch.innerHTML).join('') : c.innerHTML;
    };
    const root = document.querySelector('.msg.assistant:last-of-type .answer .md');
    return [drawn(root), drawn(renderMarkdown(t))];
  }, text);
}
