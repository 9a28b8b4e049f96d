// Syntax highlighting of code blocks with highlight.js, which the build takes from the npm
// registry at a pinned version and embeds beside the page (/web/hljs.js; decision 0018). It
// is loaded the first time a closed code block appears, and blocks are coloured one at a time
// when the browser is idle, so highlighting never holds up the streaming answer.
//
// highlight.js returns HTML; the page never assigns model text to innerHTML (decision 0009).
// Its output is parsed by DOMParser (inert: nothing runs, nothing loads) and copied node by
// node: text nodes, and <span> elements with hljs-* classes only. A block whose copy would
// not give back exactly the code's text is left plain.

const MAX_CHARS = 20000; // bigger blocks stay plain: colouring them would be a long task
let hljs = null; // the module's default export, false once it failed to load
let loading = null;
const queue = [];
let scheduled = false;

function load() {
  if (!loading) {
    loading = import('./hljs.js').then((m) => {
      hljs = m.default;
      hljs.configure({ ignoreUnescapedHTML: true, throwUnescapedHTML: false });
    }, () => {
      hljs = false;
    });
  }
  return loading;
}

// The language highlight.js knows by this name, or null.
function known(lang) {
  const l = String(lang || '').toLowerCase();
  return l && hljs && hljs.getLanguage(l) ? l : null;
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

function colour(code) {
  const lang = known(code.dataset.lang);
  const text = code.textContent;
  if (!lang || !text || text.length > MAX_CHARS || !code.isConnected) return;
  const html = hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
  const doc = new DOMParser().parseFromString(`<pre><code>${html}</code></pre>`, 'text/html');
  const frag = document.createElement('code');
  copyInto(frag, doc.querySelector('code'));
  if (frag.textContent !== text) return;
  code.replaceChildren(...frag.childNodes);
  code.classList.add('hljs');
  code.dataset.highlighted = lang;
}

function idle(fn) {
  if (window.requestIdleCallback) requestIdleCallback(fn, { timeout: 500 });
  else setTimeout(fn, 16);
}

function drain(deadline) {
  scheduled = false;
  while (queue.length) {
    const code = queue.shift();
    try {
      colour(code);
    } catch {
      // A grammar that fails leaves the block plain.
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
  if (!lang || hljs === false) return;
  queue.push(code);
  if (hljs) schedule();
  else load().then(() => hljs && schedule());
}

// Loads the highlighter when the browser is idle after the page opened, so evaluating its
// module (a long task of its own) does not land in the middle of a streaming answer.
export function preloadHighlighter() {
  idle(() => load());
}
