// The highlighter's worker (hl.js): highlight.js is evaluated and code is coloured here, off the
// page's thread, so neither is a long task while an answer streams in. It answers each
// {id, text, lang} with {id, html}: highlight.js's markup for text, or null when it does not
// know the language. The page copies that markup node by node (hl.js); nothing here touches it.

import hljs from './hljs.js';

hljs.configure({ ignoreUnescapedHTML: true, throwUnescapedHTML: false });

self.onmessage = (e) => {
  const { id, text, lang } = e.data || {};
  let html = null;
  try {
    if (typeof text === 'string' && hljs.getLanguage(lang)) {
      html = hljs.highlight(text, { language: lang, ignoreIllegals: true }).value;
    }
  } catch {
    html = null; // a grammar that fails leaves the block plain
  }
  self.postMessage({ id, html });
};

self.postMessage({ ready: true });
