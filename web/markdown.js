// A small Markdown renderer that builds DOM nodes and never parses markup: every piece of
// model or tool text ends up in a text node (textContent), so "<script>" or "<img onerror>"
// in an answer is shown as those characters. Links are kept only for http, https and mailto
// URLs. It covers what chat answers use: paragraphs, headings (six levels, each its own size),
// fenced and indented code (with the language named and a copy button), block quotes, bullet
// and numbered lists, pipe tables, rules, and inline code, bold, italic, strikethrough, links
// and autolinks (<https://…> and bare URLs). Anything it does not understand stays as text.
//
// MarkdownView renders a streamed answer incrementally: the text is cut into top-level blocks
// at blank lines outside code fences; blocks that can no longer change are rendered once and
// kept, only the last one is drawn again, and a growing code fence only gets its new text
// appended. So each update costs the size of the last block, not of the whole answer.

import { highlightLater } from './hl.js';
import { label } from './i18n.js';

const SAFE_URL = /^(https?:|mailto:)/i;

function el(tag, cls) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  return n;
}

function link(href, text) {
  const a = el('a');
  a.href = href;
  a.rel = 'noopener noreferrer';
  a.target = '_blank';
  if (text !== undefined) a.textContent = text;
  return a;
}

// A bare URL ends before trailing punctuation that belongs to the sentence.
function trimUrl(url) {
  let u = url.replace(/[.,;:!?'"*_~]+$/, '');
  // A closing parenthesis belongs to the URL only when it opened one.
  while (u.endsWith(')') && (u.match(/\(/g) || []).length < (u.match(/\)/g) || []).length) {
    u = u.slice(0, -1);
  }
  return u;
}

// Inline spans, in order of precedence: code, links, autolinks, bold, italic, strikethrough.
const INLINE = [
  { re: /`([^`\n]+)`/, make: (m) => textIn(el('code'), m[1]) },
  {
    re: /\[([^\]\n]+)\]\(([^)\s<>]+)\)/,
    make: (m) => {
      if (!SAFE_URL.test(m[2])) return document.createTextNode(m[0]);
      const a = link(m[2]);
      inline(a, m[1]);
      return a;
    },
  },
  { re: /<((?:https?:\/\/|mailto:)[^\s<>]+)>/i, make: (m) => link(m[1], m[1]) },
  {
    re: /(?<![\w/@.])https?:\/\/[^\s<>()]+(?:\([^\s<>()]*\)[^\s<>()]*)*/i,
    make: (m) => {
      const url = trimUrl(m[0]);
      const frag = document.createDocumentFragment();
      frag.append(link(url, url));
      if (url.length < m[0].length) frag.append(document.createTextNode(m[0].slice(url.length)));
      return frag;
    },
  },
  // Underscores count only at word edges (as in CommonMark), so snake_case stays as typed.
  { re: /\*\*([^*\n]+)\*\*|(?<![\w])__([^_\n]+)__(?![\w])/, make: (m) => inlineIn(el('strong'), m[1] ?? m[2]) },
  { re: /\*([^*\n]+)\*|(?<![\w])_([^_\n]+)_(?![\w])/, make: (m) => inlineIn(el('em'), m[1] ?? m[2]) },
  { re: /~~([^~\n]+)~~/, make: (m) => inlineIn(el('del'), m[1]) },
];

function textIn(node, text) {
  node.textContent = text;
  return node;
}

function inlineIn(node, text) {
  inline(node, text);
  return node;
}

// Appends text to parent, turning the first (leftmost) inline span found into its element.
function inline(parent, text) {
  while (text) {
    let best = null;
    for (const rule of INLINE) {
      const m = rule.re.exec(text);
      if (m && (!best || m.index < best.m.index)) best = { rule, m };
    }
    if (!best) {
      appendText(parent, text);
      return;
    }
    if (best.m.index > 0) appendText(parent, text.slice(0, best.m.index));
    parent.append(best.rule.make(best.m));
    text = text.slice(best.m.index + best.m[0].length);
  }
}

// Text with its line breaks kept as <br>.
function appendText(parent, text) {
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    if (i > 0) parent.append(el('br'));
    if (line) parent.append(document.createTextNode(line));
  });
}

const FENCE = /^\s{0,3}(```+|~~~+)\s*([\w+#.-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const NUMBER = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;
const TABLE_ROW = /^\s{0,3}\|?.*\|.*$/;
const TABLE_RULE = /^\s{0,3}\|?\s*:?-+:?\s*(\|\s*:?-+:?\s*)*\|?\s*$/;

// Renders text into a new <div class="md"> and returns it.
export function renderMarkdown(text) {
  const root = el('div', 'md');
  blocks(root, String(text ?? '').replace(/\r\n?/g, '\n').split('\n'));
  return root;
}

function blocks(parent, lines) {
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) {
      i++;
    } else if ((m = FENCE.exec(line))) {
      i = fence(parent, lines, i, m);
    } else if ((m = HEADING.exec(line))) {
      // Headings inside an answer are two levels below the page's own: # is h3, ## h4, …
      const h = el(`h${Math.min(6, m[1].length + 2)}`);
      h.dataset.level = String(m[1].length);
      inline(h, m[2]);
      parent.append(h);
      i++;
    } else if (RULE.test(line)) {
      parent.append(el('hr'));
      i++;
    } else if (QUOTE.test(line)) {
      const inner = [];
      while (i < lines.length && (m = QUOTE.exec(lines[i]))) {
        inner.push(m[1]);
        i++;
      }
      const q = el('blockquote');
      blocks(q, inner);
      parent.append(q);
    } else if (isTable(lines, i)) {
      i = table(parent, lines, i);
    } else if (BULLET.test(line) || NUMBER.test(line)) {
      i = list(parent, lines, i);
    } else if (/^( {4}|\t)/.test(line)) {
      const code = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || !lines[i].trim())) {
        code.push(lines[i].replace(/^( {4}|\t)/, ''));
        i++;
      }
      while (code.length && !code[code.length - 1].trim()) code.pop();
      parent.append(codeBlock(code.join('\n'), '', true));
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() && !startsBlock(lines, i)) {
        para.push(lines[i].trim());
        i++;
      }
      const p = el('p');
      inline(p, para.join('\n'));
      parent.append(p);
    }
  }
}

function startsBlock(lines, i) {
  const line = lines[i];
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    BULLET.test(line) || NUMBER.test(line) || isTable(lines, i);
}

/* ---- code ---- */

// A code block: a head with the language's name and a copy button, then the code. Closed
// blocks are coloured later by the vendored highlighter (hl.js), off the rendering path.
function codeBlock(text, lang, closed) {
  const wrap = el('div', 'codeblock');
  const head = el('div', 'code-head');
  const name = el('span', 'code-lang');
  name.textContent = lang || '';
  const copy = label(el('button', 'copy ghost'), 'copy.code');
  copy.type = 'button';
  copy.dataset.copy = 'code';
  head.append(name, copy);
  const p = el('pre');
  const c = el('code');
  if (lang) c.dataset.lang = lang;
  c.textContent = text;
  p.append(c);
  wrap.append(head, p);
  if (closed) highlightLater(c, lang);
  return wrap;
}

// A fenced block runs to a closing fence (the same character, at least as many, nothing else
// on the line) or to the end (an answer still streaming).
function fenceEnd(lines, i, marker) {
  const closing = (line) => {
    const t = line.trim();
    return t.length >= marker.length && t === marker[0].repeat(t.length) && /^\s{0,3}\S/.test(line);
  };
  let j = i + 1;
  while (j < lines.length && !closing(lines[j])) j++;
  return j; // the closing line, or lines.length when open
}

function fence(parent, lines, i, m) {
  const end = fenceEnd(lines, i, m[1]);
  parent.append(codeBlock(lines.slice(i + 1, end).join('\n'), m[2], end < lines.length));
  return end + 1;
}

/* ---- tables ---- */

function cells(line) {
  let t = line.trim();
  if (t.startsWith('|')) t = t.slice(1);
  if (t.endsWith('|') && !t.endsWith('\\|')) t = t.slice(0, -1);
  // Cells split on pipes that are not escaped and not inside inline code.
  const out = [];
  let cur = '';
  let code = false;
  for (let k = 0; k < t.length; k++) {
    const ch = t[k];
    if (ch === '\\' && t[k + 1] === '|') {
      cur += '|';
      k++;
    } else if (ch === '`') {
      code = !code;
      cur += ch;
    } else if (ch === '|' && !code) {
      out.push(cur.trim());
      cur = '';
    } else {
      cur += ch;
    }
  }
  out.push(cur.trim());
  return out;
}

function isTable(lines, i) {
  return TABLE_ROW.test(lines[i]) && i + 1 < lines.length && TABLE_RULE.test(lines[i + 1]) &&
    lines[i + 1].includes('-') && cells(lines[i]).length === cells(lines[i + 1]).length;
}

function table(parent, lines, i) {
  const head = cells(lines[i]);
  const align = cells(lines[i + 1]).map((c) =>
    (c.startsWith(':') && c.endsWith(':') ? 'center' : c.endsWith(':') ? 'right' : c.startsWith(':') ? 'left' : ''));
  const wrap = el('div', 'table-wrap');
  const t = el('table');
  const thead = el('thead');
  const tr = el('tr');
  head.forEach((text, k) => {
    const th = el('th');
    if (align[k]) th.className = `align-${align[k]}`;
    inline(th, text);
    tr.append(th);
  });
  thead.append(tr);
  t.append(thead);
  const tbody = el('tbody');
  i += 2;
  while (i < lines.length && lines[i].trim() && lines[i].includes('|')) {
    const row = el('tr');
    const vals = cells(lines[i]);
    for (let k = 0; k < head.length; k++) {
      const td = el('td');
      if (align[k]) td.className = `align-${align[k]}`;
      inline(td, vals[k] ?? '');
      row.append(td);
    }
    tbody.append(row);
    i++;
  }
  t.append(tbody);
  wrap.append(t);
  parent.append(wrap);
  return i;
}

/* ---- lists ---- */

// A list of items of one kind; deeper-indented lines belong to the item above them.
function list(parent, lines, i) {
  const numbered = NUMBER.test(lines[i]) && !BULLET.test(lines[i]);
  const re = numbered ? NUMBER : BULLET;
  const listEl = el(numbered ? 'ol' : 'ul');
  const first = re.exec(lines[i]);
  const base = first[1].length;
  const items = [];
  if (numbered && first[2] !== '1') listEl.start = Number(first[2]);
  while (i < lines.length) {
    const line = lines[i];
    const m = re.exec(line);
    const indent = line.search(/\S/);
    if (m && m[1].length <= base) {
      items.push([numbered ? m[3] : m[2]]);
    } else if (items.length && line.trim() && indent > base) {
      items[items.length - 1].push(line.slice(Math.min(indent, base + 2)));
    } else if (items.length && !line.trim() && /^\s+\S/.test(lines[i + 1] ?? '')) {
      items[items.length - 1].push('');
    } else {
      break;
    }
    i++;
  }
  for (const text of items) {
    const li = el('li');
    if (text.length === 1) inline(li, text[0]);
    else blocks(li, text);
    listEl.append(li);
  }
  parent.append(listEl);
  return i;
}

/* ---- incremental rendering ---- */

// Where the text can be cut into top-level blocks that render the same apart as together: at a
// blank line outside a code fence, when the next line starts at the margin (so it does not
// continue a list item or an indented block). Returns the offsets where chunks start, after
// from; fenceOpen says whether the text ends inside a fence.
function cutPoints(text, from) {
  const cuts = [];
  let pos = from;
  let marker = null;
  let blank = false;
  while (pos < text.length) {
    let nl = text.indexOf('\n', pos);
    if (nl < 0) nl = text.length;
    const line = text.slice(pos, nl);
    if (marker) {
      const t = line.trim();
      if (t.length >= marker.length && t === marker[0].repeat(t.length)) marker = null;
    } else if (!line.trim()) {
      blank = true;
    } else {
      if (blank && !/^\s/.test(line) && pos > from) cuts.push(pos);
      blank = false;
      const m = FENCE.exec(line);
      if (m) marker = m[1];
    }
    pos = nl + 1;
  }
  return { cuts, fenceOpen: marker !== null };
}

export class MarkdownView {
  constructor() {
    this.root = el('div', 'md');
    this.text = '';
    this.doneEnd = 0; // text before this offset is in finished chunks
    this.last = null; // {start, src, node} of the chunk still growing
  }

  // Shows text (which usually extends the previous one); final: nothing more will come.
  set(text, final = false) {
    text = String(text ?? '').replace(/\r\n?/g, '\n');
    if (!text.startsWith(this.text.slice(0, this.doneEnd))) this.reset();
    this.text = text;
    const { cuts } = cutPoints(text, this.doneEnd);
    let start = this.doneEnd;
    for (const cut of cuts) {
      this.finishChunk(start, text.slice(start, cut));
      start = cut;
      this.doneEnd = cut;
    }
    const tail = text.slice(start);
    if (final) {
      this.finishChunk(start, tail);
      this.doneEnd = text.length;
    } else {
      this.drawLast(start, tail);
    }
  }

  reset() {
    this.root.replaceChildren();
    this.text = '';
    this.doneEnd = 0;
    this.last = null;
  }

  // A chunk that will not change: drawn once (or kept, when the growing one was the same).
  finishChunk(start, src) {
    if (this.last && this.last.start === start) {
      if (this.last.src !== src || this.last.open) this.replaceLast(render(src));
      this.last = null;
      return;
    }
    if (this.last) {
      this.last.node.remove();
      this.last = null;
    }
    if (src.trim()) this.root.append(render(src));
  }

  replaceLast(node) {
    this.last.node.replaceWith(node);
    this.last.node = node;
  }

  drawLast(start, src) {
    const prev = this.last && this.last.start === start ? this.last : null;
    if (prev && prev.src === src) return;
    // A code fence still open that only grew: append the new text to its code.
    if (prev && prev.open && src.startsWith(prev.src) && !src.slice(prev.src.length).includes('\n```') &&
        !src.slice(prev.src.length).includes('\n~~~')) {
      const code = prev.node.querySelector('code');
      const body = fenceBody(src);
      if (code && body !== null && body.startsWith(code.textContent)) {
        code.append(document.createTextNode(body.slice(code.textContent.length)));
        prev.src = src;
        return;
      }
    }
    const node = render(src);
    const open = cutPoints(src, 0).fenceOpen && /^\s{0,3}(```|~~~)/.test(src) &&
      node.childElementCount === 1;
    if (prev) {
      prev.node.replaceWith(node);
      Object.assign(prev, { src, node, open });
    } else {
      if (this.last) this.last.node.remove();
      this.root.append(node);
      this.last = { start, src, node, open };
    }
  }
}

// The code of a chunk that is one open fence, or null.
function fenceBody(src) {
  const nl = src.indexOf('\n');
  return nl < 0 ? '' : src.slice(nl + 1);
}

// A chunk's nodes in one wrapper, so a chunk is one node in the view.
function render(src) {
  const d = el('div', 'chunk');
  blocks(d, src.split('\n'));
  return d;
}
