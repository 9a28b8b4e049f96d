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
  { re: /`([^`\n]+)`/g, make: (m) => textIn(el('code'), m[1]) },
  {
    re: /\[([^\]\n]+)\]\(([^)\s<>]+)\)/g,
    make: (m) => {
      if (!SAFE_URL.test(m[2])) return document.createTextNode(m[0]);
      const a = link(m[2]);
      inline(a, m[1]);
      return a;
    },
  },
  { re: /<((?:https?:\/\/|mailto:)[^\s<>]+)>/gi, make: (m) => link(m[1], m[1]) },
  {
    re: /(?<![\w/@.])https?:\/\/[^\s<>()]+(?:\([^\s<>()]*\)[^\s<>()]*)*/gi,
    make: (m) => {
      const url = trimUrl(m[0]);
      const frag = document.createDocumentFragment();
      frag.append(link(url, url));
      if (url.length < m[0].length) frag.append(document.createTextNode(m[0].slice(url.length)));
      return frag;
    },
  },
  // Underscores count only at word edges (as in CommonMark), so snake_case stays as typed.
  { re: /\*\*([^*\n]+)\*\*|(?<![\w])__([^_\n]+)__(?![\w])/g, make: (m) => inlineIn(el('strong'), m[1] ?? m[2]) },
  { re: /\*([^*\n]+)\*|(?<![\w])_([^_\n]+)_(?![\w])/g, make: (m) => inlineIn(el('em'), m[1] ?? m[2]) },
  { re: /~~([^~\n]+)~~/g, make: (m) => inlineIn(el('del'), m[1]) },
];

function textIn(node, text) {
  node.textContent = text;
  return node;
}

function inlineIn(node, text) {
  inline(node, text);
  return node;
}

// The inline spans of text, found without drawing them: the first (leftmost) span of any
// rule, then the next after it, with plain text between them: [{rule, text, m}] (rule -1:
// plain text). Each rule's next match is kept until the text before it is used up, so a long
// line costs each rule one pass over it, not one per span found (a 100 KB paragraph took
// seconds).
function spans(text) {
  const out = [];
  const next = INLINE.map(() => undefined);
  let pos = 0;
  while (pos < text.length) {
    let best = -1;
    for (let k = 0; k < INLINE.length; k++) {
      if (next[k] === undefined || (next[k] && next[k].index < pos)) {
        INLINE[k].re.lastIndex = pos;
        next[k] = INLINE[k].re.exec(text);
      }
      if (next[k] && (best < 0 || next[k].index < next[best].index)) best = k;
    }
    if (best < 0) {
      out.push({ rule: -1, text: text.slice(pos) });
      break;
    }
    const m = next[best];
    if (m.index > pos) out.push({ rule: -1, text: text.slice(pos, m.index) });
    out.push({ rule: best, text: m[0], m });
    pos = m.index + m[0].length;
  }
  return out;
}

// A span drawn: what it looks like depends on its rule and its text only (so a span found
// again in a grown line can keep its nodes).
function drawSpan(parent, span) {
  if (span.rule < 0) appendText(parent, span.text);
  else parent.append(INLINE[span.rule].make(span.m));
}

// Appends text to parent with its inline spans turned into their elements.
function inline(parent, text) {
  for (const span of spans(text)) drawSpan(parent, span);
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

// How much text (characters) a view draws at least on every call, whatever its deadline, and
// at most: what the browser then does with new text (style, layout, paint) costs several
// times the script that made its nodes, so the deadline alone let one frame take in 50 KB.
const STEP_CHARS = 2048;
const MAX_CHARS = 4096;

// A drawing's budget: {deadline (performance.now()), work (characters drawn)}. Without one
// (renderMarkdown) everything is drawn at once.
function late(budget) {
  return !!budget && budget.work >= STEP_CHARS && (budget.work >= MAX_CHARS || performance.now() > budget.deadline);
}

// Renders text into a new <div class="md"> and returns it.
export function renderMarkdown(text) {
  const root = el('div', 'md');
  blocks(root, String(text ?? '').replace(/\r\n?/g, '\n').split('\n'));
  return root;
}

function blocks(parent, lines) {
  for (let i = 0; i < lines.length;) {
    if (!lines[i].trim()) {
      i++;
      continue;
    }
    const b = scanBlock(lines, i);
    parent.append(drawBlock(lines, b).node);
    i = b.end;
  }
}

// The block that starts at line i (not blank), found without drawing it: {kind, start, end}
// and what drawing it needs. Finding and drawing are apart so that a streamed answer can
// redraw only the block that grew (MarkdownView).
function scanBlock(lines, i) {
  const line = lines[i];
  let m;
  let j = i + 1;
  if ((m = FENCE.exec(line))) {
    const close = fenceEnd(lines, i, m[1]);
    return { kind: 'fence', start: i, end: Math.min(close + 1, lines.length), close, lang: m[2] };
  }
  if ((m = HEADING.exec(line))) return { kind: 'heading', start: i, end: j, m };
  if (RULE.test(line)) return { kind: 'rule', start: i, end: j };
  if (QUOTE.test(line)) {
    while (j < lines.length && QUOTE.test(lines[j])) j++;
    return { kind: 'quote', start: i, end: j };
  }
  if (isTable(lines, i)) {
    j = i + 2;
    while (j < lines.length && lines[j].trim() && lines[j].includes('|')) j++;
    return { kind: 'table', start: i, end: j, head: `${lines[i]}\n${lines[i + 1]}` };
  }
  if (BULLET.test(line) || NUMBER.test(line)) return listScan(lines, i);
  if (/^( {4}|\t)/.test(line)) {
    while (j < lines.length && (/^( {4}|\t)/.test(lines[j]) || !lines[j].trim())) j++;
    return { kind: 'indented', start: i, end: j };
  }
  while (j < lines.length && lines[j].trim() && !startsBlock(lines, j)) j++;
  return { kind: 'para', start: i, end: j };
}

// Draws block b of lines: {node, complete, parts}. A paragraph, a list and a table are drawn
// in parts (an inline span or line break, an item, a row: {key, nodes}) that render the same
// apart as together, so one that grows keeps the parts that did not change, and a big one is
// drawn over several calls: with a budget, drawing stops when it is spent (complete false)
// and grow() goes on from there.
function drawBlock(lines, b, budget) {
  const src = lines.slice(b.start, b.end);
  switch (b.kind) {
    case 'fence': {
      const code = fenceCode(lines, b);
      const open = b.close >= lines.length;
      const node = codeBlock(code, b.lang, !open);
      return { node, code, open, codeEl: node.querySelector('code'), complete: true };
    }
    case 'heading': {
      // Headings inside an answer are two levels below the page's own: # is h3, ## h4, …
      const h = el(`h${Math.min(6, b.m[1].length + 2)}`);
      h.dataset.level = String(b.m[1].length);
      inline(h, b.m[2]);
      return { node: h, complete: true };
    }
    case 'rule':
      return { node: el('hr'), complete: true };
    case 'quote': {
      const q = el('blockquote');
      blocks(q, src.map((l) => QUOTE.exec(l)[1]));
      return { node: q, complete: true };
    }
    case 'indented': {
      const code = src.map((l) => l.replace(/^( {4}|\t)/, ''));
      while (code.length && !code[code.length - 1].trim()) code.pop();
      return { node: codeBlock(code.join('\n'), '', true), complete: true };
    }
    case 'table': {
      const d = tableBlock(src);
      d.complete = addParts(d, partsOf(b, lines, d), budget);
      return d;
    }
    case 'list': {
      const d = listBlock(b);
      d.complete = addParts(d, partsOf(b, lines, d), budget);
      return d;
    }
    default: {
      const p = el('p');
      const d = { node: p, box: p, parts: [], draw: paraPart, lineSpans: [] };
      d.complete = addParts(d, partsOf(b, lines, d), budget);
      return d;
    }
  }
}

// The parts block b (a list, a table or a paragraph) is drawn in, in order: {key, ...} where
// equal keys draw the same. d: the block's drawing (a paragraph keeps its lines' spans there,
// so only a line that changed is looked at again).
function partsOf(b, lines, d) {
  if (b.kind === 'list') return b.items.map((key) => ({ key }));
  if (b.kind === 'table') return lines.slice(b.start + 2, b.end).map((key) => ({ key }));
  const out = [];
  const kept = d.lineSpans;
  d.lineSpans = [];
  for (let k = b.start; k < b.end; k++) {
    // A line break before every line but the first, then the line's spans (none crosses a line).
    const text = lines[k].trim();
    const i = k - b.start;
    const had = kept[i] && kept[i].text === text ? kept[i] : null;
    const line = had || { text, parts: spans(text).map((span) => ({ key: `${span.rule}:${span.text}`, span })) };
    d.lineSpans.push(line);
    if (i > 0) out.push(LINE_BREAK);
    for (const part of line.parts) out.push(part);
  }
  return out;
}

const LINE_BREAK = { key: 'br' };

function paraPart(part, box) {
  if (part === LINE_BREAK) box.append(el('br'));
  else drawSpan(box, part.span);
}

// Draws parts (the ones after d.parts) into d.box, recording each one's nodes, until the
// budget is spent. True: all are drawn.
function addParts(d, parts, budget) {
  for (const part of parts) {
    if (late(budget)) return false;
    const before = d.box.lastChild;
    d.draw(part, d.box);
    const nodes = [];
    for (let n = before ? before.nextSibling : d.box.firstChild; n; n = n.nextSibling) nodes.push(n);
    d.parts.push({ key: part.key, nodes });
    if (budget) budget.work += part.key.length;
  }
  return true;
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

// The code of fenced block b: the lines between its fences (or to the end while it is open).
function fenceCode(lines, b) {
  return lines.slice(b.start + 1, b.close).join('\n');
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

// A table's lines: the head, the alignment rule, then one row per line.
function tableBlock(src) {
  const head = cells(src[0]);
  const align = cells(src[1]).map((c) =>
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
  const tbody = el('tbody');
  t.append(thead, tbody);
  wrap.append(t);
  const d = { node: wrap, box: tbody, parts: [], table: t, head, fixed: null };
  d.draw = (part, box) => {
    if (d.parts.length === FIXED_ROWS && !d.fixed) fixColumns(d);
    const row = el('tr');
    const vals = cells(part.key);
    for (let c = 0; c < head.length; c++) {
      const td = el('td');
      if (align[c]) td.className = `align-${align[c]}`;
      inline(td, vals[c] ?? '');
      row.append(td);
    }
    box.append(row);
  };
  return d;
}

// A big table gets fixed column widths (table-layout: fixed): with automatic widths every new
// row of a streaming table made the browser size the columns again from every cell and lay out
// and paint the whole table (about 45 ms of CPU a frame at 100 KB), and a table of 100 KB laid
// out once costs about that too. The widths come from the text of the head and the first
// FIXED_ROWS rows, so the table drawn at once and the one drawn row by row get the same: a
// table that streams in is fixed when its row after those starts.
const FIXED_ROWS = 40;
const SHORT_COLUMN = 16; // characters

function fixColumns(d) {
  const rows = [d.head, ...d.parts.slice(0, FIXED_ROWS).map((p) => cells(p.key))];
  const cols = el('colgroup');
  for (let c = 0; c < d.head.length; c++) {
    // A column of short texts is as wide as its longest (and its padding); the others share
    // what is left alike, their texts wrapping in their cells.
    const longest = Math.max(1, ...rows.map((r) => shownLength(r[c] ?? '')));
    const col = el('col');
    if (longest <= SHORT_COLUMN) col.style.width = `${longest + 2}ch`;
    cols.append(col);
  }
  d.table.prepend(cols);
  d.table.classList.add('fixed');
  d.fixed = cols;
}

// About how wide a cell's text shows, in characters: without the Markdown around it and
// the targets of links; wide (CJK) characters count twice.
function shownLength(text) {
  const shown = text.replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[*_`~]/g, '');
  return shown.length + (shown.match(/[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60]/g) || []).length;
}

function unfixColumns(d) {
  d.fixed.remove();
  d.table.removeAttribute('class');
  d.fixed = null;
}

/* ---- lists ---- */

// A list of items of one kind; deeper-indented lines belong to the item above them.
function listScan(lines, i) {
  const numbered = NUMBER.test(lines[i]) && !BULLET.test(lines[i]);
  const re = numbered ? NUMBER : BULLET;
  const first = re.exec(lines[i]);
  const base = first[1].length;
  const items = [];
  const start = i;
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
  // An item's lines joined: what identifies it when the list is drawn again.
  return { kind: 'list', start, end: i, head: numbered ? `ol ${first[2]}` : 'ul',
    numbered, number: first[2], items: items.map((t) => t.join('\n')) };
}

function listItem(part, box) {
  const text = part.key.split('\n');
  const li = el('li');
  if (text.length === 1) inline(li, text[0]);
  else blocks(li, text);
  box.append(li);
}

function listBlock(b) {
  const listEl = el(b.numbered ? 'ol' : 'ul');
  if (b.numbered && b.number !== '1') listEl.start = Number(b.number);
  return { node: listEl, box: listEl, parts: [], draw: listItem };
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

// A chunk: {start, src, node, blocks, complete}; reconcile draws src into node, keeping the
// blocks of the last drawing that did not change and growing in place the one that did, when
// it can, until the budget is spent. True: src is drawn whole.
function reconcile(rec, src, budget) {
  const lines = src.split('\n');
  const found = [];
  for (let i = 0; i < lines.length;) {
    if (!lines[i].trim()) {
      i++;
      continue;
    }
    const b = scanBlock(lines, i);
    b.src = lines.slice(b.start, b.end).join('\n');
    found.push(b);
    i = b.end;
  }
  const old = rec.blocks;
  let k = 0;
  while (k < found.length && k < old.length && old[k].kind === found[k].kind &&
      old[k].start === found[k].start && old[k].src === found[k].src && old[k].d.complete) {
    found[k] = old[k];
    k++;
  }
  let complete = true;
  if (k < found.length && k < old.length && grow(old[k], found[k], lines, budget)) {
    found[k] = old[k];
    k++;
    complete = found[k - 1].d.complete;
  }
  for (let r = k; r < old.length; r++) old[r].d.node.remove();
  // Blocks are drawn in order: after one left unfinished, none.
  for (let r = k; complete && r < found.length; r++) {
    if (late(budget)) {
      complete = false;
      k = r;
      break;
    }
    found[r].d = drawBlock(lines, found[r], budget);
    if (budget && !found[r].d.parts) budget.work += found[r].src.length; // parts count themselves
    rec.node.append(found[r].d.node);
    complete = found[r].d.complete;
    k = r + 1;
  }
  if (!complete) found.length = k;
  rec.blocks = found;
  rec.src = src;
  rec.complete = complete;
  return complete;
}

// Grows drawn block o into n (the same block with more text, or one drawn in part), keeping
// the parts (spans, items, rows) that did not change and drawing the rest as the budget
// allows, or appending to an open code fence. False: draw n anew.
function grow(o, n, lines, budget) {
  if (o.kind !== n.kind || o.start !== n.start || o.head !== n.head) return false;
  const d = o.d;
  if (n.kind === 'fence') {
    if (!d.open || lines[n.start] !== o.src.split('\n', 1)[0]) return false;
    const code = fenceCode(lines, n);
    if (!code.startsWith(d.code)) return false;
    d.codeEl.append(document.createTextNode(code.slice(d.code.length)));
    if (budget) budget.work += code.length - d.code.length;
    d.code = code;
    d.open = n.close >= lines.length;
    if (!d.open) highlightLater(d.codeEl, n.lang);
  } else if (d.parts) {
    const parts = partsOf(n, lines, d);
    let same = 0;
    while (same < parts.length && same < d.parts.length && d.parts[same].key === parts[same].key) same++;
    for (const part of d.parts.splice(same)) for (const node of part.nodes) node.remove();
    if (d.fixed && d.parts.length <= FIXED_ROWS) unfixColumns(d); // rows it was fixed from changed
    d.complete = addParts(d, parts.slice(same), budget);
  } else {
    return false;
  }
  Object.assign(o, { end: n.end, src: n.src, close: n.close, items: n.items });
  return true;
}

function newChunk(start) {
  return { start, src: null, node: el('div', 'chunk'), blocks: [], complete: false };
}

export class MarkdownView {
  constructor() {
    this.root = el('div', 'md');
    this.reset();
  }

  // Shows text (which usually extends the previous one); final: nothing more will come.
  // With a deadline (performance.now()), draws at least STEP_CHARS and at most MAX_CHARS, and
  // stops between them when the deadline has passed, in finished chunks and in the growing
  // block alike (one answer may be a single 100 KB paragraph, list or table); false means
  // work is left for the next call. Without one, draws everything.
  set(text, final = false, deadline = Infinity) {
    if (text === this.raw && this.drawn && (this.final || !final)) return true;
    const norm = String(text ?? '').replace(/\r\n?/g, '\n');
    if (!norm.startsWith(this.text.slice(0, this.doneEnd))) this.reset();
    this.text = norm;
    this.raw = text;
    this.final = final;
    this.drawn = false;
    const budget = deadline === Infinity ? null : { deadline, work: 0 };
    const { cuts } = cutPoints(norm, this.doneEnd);
    let start = this.doneEnd;
    for (const cut of cuts) {
      if (late(budget) || !this.finishChunk(start, norm.slice(start, cut), budget)) return false;
      start = cut;
      this.doneEnd = cut;
    }
    if (late(budget)) return false;
    const tail = norm.slice(start);
    if (final) {
      if (!this.finishChunk(start, tail, budget)) return false;
      this.doneEnd = norm.length;
    } else if (!this.drawLast(start, tail, budget)) {
      return false;
    }
    this.drawn = true;
    return true;
  }

  reset() {
    this.root.replaceChildren();
    this.text = '';
    this.raw = null;
    this.final = false;
    this.drawn = false;
    this.doneEnd = 0;
    this.last = null; // the chunk still growing, or still being drawn
  }

  // A chunk that will not change: drawn (or kept, when the growing one was the same). False:
  // the budget ran out first; it stays the last chunk and the next call goes on with it.
  finishChunk(start, src, budget) {
    let rec = this.last && this.last.start === start ? this.last : null;
    if (this.last && !rec) this.last.node.remove();
    this.last = null;
    if (!src.trim()) {
      if (rec) rec.node.remove();
      return true;
    }
    if (!rec) {
      rec = newChunk(start);
      this.root.append(rec.node);
    }
    if ((rec.src !== src || !rec.complete) && !reconcile(rec, src, budget)) {
      this.last = rec;
      return false;
    }
    return true;
  }

  drawLast(start, src, budget) {
    if (!this.last || this.last.start !== start) {
      if (this.last) this.last.node.remove();
      this.last = newChunk(start);
      this.root.append(this.last.node);
    }
    if (this.last.src !== src || !this.last.complete) return reconcile(this.last, src, budget);
    return true;
  }
}
