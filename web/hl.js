// Syntax highlighting of code blocks with highlight.js, which the build takes from the npm
// registry at a pinned version and embeds beside the page (/web/hljs.js; decision 0018). It
// runs in a worker (hl-worker.js), started when the page is idle after it opened: evaluating
// it and colouring a block are no long tasks on the page's thread. The worker's markup is put
// in place one block at a time when the browser is idle, so it never holds up a streaming
// answer. A build without the highlighter (-DREIN_WEB_VENDOR=OFF) has no /web/hljs.js: the
// worker fails to start and code blocks stay plain.
//
// highlight.js returns HTML; the page never assigns model text to innerHTML (decision 0009).
// Its output is parsed by DOMParser (inert: nothing runs, nothing loads) and copied node by
// node: text nodes, and <span> elements with hljs-* classes only. A block whose copy would
// not give back exactly the code's text is left plain.

const MAX_CHARS = 20000; // bigger blocks stay plain: copying their markup would be a long task
let worker = null; // the worker, once it said it is ready; false when it could not start
let starting = null;
const waiting = new Map(); // id -> {code, text}: the block the worker colours, and its text then
let nextId = 1;
const queue = []; // replies to copy into their blocks, when the page is idle
let scheduled = false;

// Starts the worker (once); resolves when it is ready or could not start (no highlighter in
// this build, or the browser has no module workers).
function start() {
  if (!starting) {
    starting = new Promise((resolve) => {
      let w;
      try {
        w = new Worker(new URL('./hl-worker.js', import.meta.url), { type: 'module' });
      } catch {
        worker = false;
        resolve();
        return;
      }
      w.onmessage = (e) => {
        const data = e.data || {};
        if (data.ready) {
          worker = w;
          resolve();
          return;
        }
        const job = waiting.get(data.id);
        waiting.delete(data.id);
        if (job && typeof data.html === 'string') {
          queue.push({ ...job, html: data.html });
          schedule();
        }
      };
      w.onerror = () => {
        worker = false;
        waiting.clear();
        w.terminate();
        resolve();
      };
    });
  }
  return starting;
}

function copyInto(target, source) {
  for (const n of source.childNodes) {
    if (n.nodeType === Node.TEXT_NODE) {
      target.append(document.createTextNode(n.data));
    } else if (n.nodeType === Node.ELEMENT_NODE && n.tagName === 'SPAN') {
      const span = document.createElement('span');
      const cls = [...n.classList].filter((c) => /^hljs-[\w-]+$/.test(c) || /^[\w-]+_$/.test(c));
      if (cls.length) span.className = cls.join(' ');
      copyInto(span, n);
      target.append(span);
    }
  }
}

// Puts the worker's markup for code in place, if the block still shows the text it coloured.
function colour({ code, html, text }) {
  if (!code.isConnected || code.textContent !== text) return;
  const doc = new DOMParser().parseFromString(`<pre><code>${html}</code></pre>`, 'text/html');
  const frag = document.createElement('code');
  copyInto(frag, doc.querySelector('code'));
  if (frag.textContent !== text) return;
  code.replaceChildren(...frag.childNodes);
  code.classList.add('hljs');
  code.dataset.highlighted = code.dataset.lang;
}

function idle(fn) {
  if (window.requestIdleCallback) requestIdleCallback(fn, { timeout: 500 });
  else setTimeout(fn, 16);
}

function drain(deadline) {
  scheduled = false;
  while (queue.length) {
    try {
      colour(queue.shift());
    } catch {
      // Markup that cannot be copied leaves the block plain.
    }
    if (deadline && deadline.timeRemaining && deadline.timeRemaining() < 4 && queue.length) break;
  }
  if (queue.length) schedule();
}

function schedule() {
  if (scheduled) return;
  scheduled = true;
  idle(drain);
}

// Colours code (a <code> element with data-lang) soon, if its language is one highlight.js has.
export function highlightLater(code, lang) {
  if (!lang || worker === false) return;
  const send = () => {
    const text = code.textContent;
    if (!worker || !text || text.length > MAX_CHARS) return;
    const id = nextId++;
    waiting.set(id, { code, text });
    worker.postMessage({ id, text, lang: String(lang).toLowerCase() });
  };
  if (worker) send();
  else start().then(send);
}

// Starts the worker when the browser is idle after the page opened, so the first code block
// of an answer is coloured without waiting for highlight.js to load.
export function preloadHighlighter() {
  idle(() => start());
}
