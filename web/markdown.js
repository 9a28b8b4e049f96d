// A small Markdown renderer that builds DOM nodes and never parses markup: every piece of
// model or tool text ends up in a text node (textContent), so "<script>" or "<img onerror>"
// in an answer is shown as those characters. Links are kept only for http, https and mailto
// URLs. It covers what chat answers use: paragraphs, headings, fenced and indented code,
// block quotes, bullet and numbered lists, rules, and inline code, bold, italic,
// strikethrough and links. Anything it does not understand stays as text.

const SAFE_URL = /^(https?:|mailto:)/i;

function el(tag, cls) {
  const n = document.createElement(tag);
  if (cls) n.className = cls;
  return n;
}

// Inline spans, in order of precedence: code, links, bold, italic, strikethrough.
const INLINE = [
  { re: /`([^`\n]+)`/, make: (m) => textIn(el('code'), m[1]) },
  {
    re: /\[([^\]\n]+)\]\(([^)\s<>]+)\)/,
    make: (m) => {
      if (!SAFE_URL.test(m[2])) return document.createTextNode(m[0]);
      const a = el('a');
      a.href = m[2];
      a.rel = 'noopener noreferrer';
      a.target = '_blank';
      inline(a, m[1]);
      return a;
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

const FENCE = /^\s{0,3}(```+|~~~+)\s*([\w+-]*)\s*$/;
const HEADING = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^\s{0,3}([-*_])(\s*\1){2,}\s*$/;
const BULLET = /^(\s*)[-*+]\s+(.*)$/;
const NUMBER = /^(\s*)(\d{1,9})[.)]\s+(.*)$/;
const QUOTE = /^\s{0,3}>\s?(.*)$/;

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
      // Headings inside an answer are one or two levels below the page's own.
      const h = el(`h${Math.min(6, m[1].length + 2)}`);
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
    } else if (BULLET.test(line) || NUMBER.test(line)) {
      i = list(parent, lines, i);
    } else if (/^( {4}|\t)/.test(line)) {
      const code = [];
      while (i < lines.length && (/^( {4}|\t)/.test(lines[i]) || !lines[i].trim())) {
        code.push(lines[i].replace(/^( {4}|\t)/, ''));
        i++;
      }
      while (code.length && !code[code.length - 1].trim()) code.pop();
      parent.append(pre(code.join('\n')));
    } else {
      const para = [];
      while (i < lines.length && lines[i].trim() && !startsBlock(lines[i])) {
        para.push(lines[i].trim());
        i++;
      }
      const p = el('p');
      inline(p, para.join('\n'));
      parent.append(p);
    }
  }
}

function startsBlock(line) {
  return FENCE.test(line) || HEADING.test(line) || RULE.test(line) || QUOTE.test(line) ||
    BULLET.test(line) || NUMBER.test(line);
}

function pre(text, lang) {
  const p = el('pre');
  const c = el('code');
  if (lang) c.dataset.lang = lang;
  c.textContent = text;
  p.append(c);
  return p;
}

// A fenced block runs to a closing fence (the same character, at least as many, nothing else
// on the line) or to the end (an answer still streaming).
function fence(parent, lines, i, m) {
  const marker = m[1];
  const closing = (line) => {
    const t = line.trim();
    return t.length >= marker.length && t === marker[0].repeat(t.length) && /^\s{0,3}\S/.test(line);
  };
  const body = [];
  i++;
  while (i < lines.length && !closing(lines[i])) body.push(lines[i++]);
  parent.append(pre(body.join('\n'), m[2]));
  return i + 1;
}

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
