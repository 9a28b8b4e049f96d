// The page's words in English, Traditional Chinese and Simplified Chinese. The language comes
// from the browser (navigator.languages) unless the person picked one on the page, which is
// remembered in localStorage. Static text is marked with data-i18n (text), data-i18n-title,
// data-i18n-placeholder and data-i18n-aria-label attributes; code asks t(key, params).

const STRINGS = {
  en: {
    'app.title': 'rein chat',
    'app.skip': 'Skip to the message box',
    'lang.label': 'Language',
    'conv.heading': 'Conversations',
    'conv.new': 'New conversation',
    'conv.more': 'Load more',
    'conv.empty': 'No conversations yet.',
    'conv.delete': 'Delete',
    'conv.deleteLabel': 'Delete conversation {name}',
    'conv.confirmDelete': 'Delete this conversation and its history?',
    'conv.deleted': 'Conversation deleted.',
    'conv.untitled': 'Conversation {id}',
    'conv.messages': '{n} messages',
    'conv.toggle': 'Conversations',
    'conv.loadFailed': 'Could not load the conversations: {msg}',
    'conv.openFailed': 'Could not open the conversation: {msg}',
    'mode.label': 'Mode',
    'mode.single': 'Single step',
    'mode.auto': 'Automatic',
    'mode.propose': 'Propose only',
    'verify.label': 'Verification',
    'verify.auto': 'Automatic',
    'verify.force': 'Always verify',
    'verify.off': 'Off',
    'input.label': 'Message',
    'input.placeholder': 'Ask something. Enter sends, Shift+Enter starts a new line.',
    'input.send': 'Send',
    'input.stop': 'Stop',
    'status.idle': 'Ready.',
    'status.sending': 'Sending…',
    'status.thinking': 'Thinking…',
    'status.executing': 'Running tool {tool}…',
    'status.verifying': 'Checking the call to {tool}…',
    'status.waiting_approval': 'Waiting for your approval: {tool}',
    'status.stopping': 'Stopping…',
    'status.busy': 'This conversation is busy: a turn is running elsewhere ({state}). This page waits until it ends.',
    'status.busyTool': 'This conversation is busy: a turn is running elsewhere ({state}: {tool}). This page waits until it ends.',
    'status.done': 'Done.',
    'status.failed': 'The turn ended without success ({reason}).',
    'status.cancelled': 'Stopped.',
    'status.error': 'Error: {msg}',
    'status.broken': 'The connection broke before the turn ended.',
    'status.freed': 'The conversation is free again.',
    'state.thinking': 'thinking',
    'state.executing': 'running a tool',
    'state.verifying': 'verifying',
    'state.waiting_approval': 'waiting for approval',
    'state.idle': 'idle',
    'role.user': 'You',
    'role.assistant': 'Assistant',
    'card.tool': 'Tool',
    'card.sentAs': 'the model called it “{name}”',
    'card.args': 'Arguments',
    'card.result': 'Result',
    'card.invalid': 'What the model was told',
    'card.latency': '{ms} ms',
    'card.step': 'step {n}',
    'card.verifyOk': 'Check passed: {reason}',
    'card.verifyNo': 'Check failed: {reason}',
    'card.approvalGiven': 'Approved by you',
    'card.approvalDenied': 'Not approved: {reason}',
    'card.interrupted': 'interrupted: the server stopped while it ran',
    'st.pending': 'pending',
    'st.success': 'success',
    'st.error': 'error',
    'st.invalid': 'invalid',
    'st.denied': 'denied',
    'st.cancelled': 'cancelled',
    'st.proposed': 'proposed',
    'st.discarded': 'discarded',
    'approval.question': 'Allow {tool} to run with these arguments?',
    'approval.approve': 'Approve',
    'approval.reject': 'Reject',
    'approval.left': '{s} s left',
    'approval.sentYes': 'You approved this call.',
    'approval.sentNo': 'You rejected this call.',
    'approval.timeout': 'No answer in time: the call was denied.',
    'approval.failed': 'The answer could not be sent: {msg}',
    'proposal.intro': 'Proposed call, checked but not run.',
    'proposal.run': 'Run',
    'proposal.discard': 'Discard',
    'proposal.ran': 'You ran this call.',
    'proposal.discarded': 'You discarded this call.',
    'proposal.failed': 'Could not do that: {msg}',
    'turn.problem': 'This turn did not succeed: {reason}.',
    'turn.pending': '{n} tool call(s) never got a result: {calls}.',
    'turn.denied': 'Denied, not run: {calls}.',
    'turn.cancelledCalls': 'Cancelled: {calls}.',
    'turn.cancelledNone': 'The turn was stopped before any tool ran.',
    'turn.stop.final_answer': 'answered',
    'turn.stop.max_iterations': 'too many steps',
    'turn.stop.success_cap': 'the mode’s limit of successful steps was reached',
    'turn.stop.token_budget': 'the token budget ran out',
    'turn.stop.timeout': 'it took too long',
    'turn.stop.cancelled': 'it was stopped',
    'turn.stop.provider_error': 'the model could not be reached',
    'turn.stop.stalled': 'it was going round in circles',
    'turn.stop.max_tool_calls': 'too many tool calls',
    'turn.stop.proposed': 'calls proposed',
    'turn.stop.error': 'rein could not go on',
    'turn.retry': 'The answer broke off; asking again.',
    'turn.broken': 'The connection to the server broke before this turn ended; what the server did is in the conversation once you reopen it.',
    'turn.claims.refuted': 'This answer claims {n} thing(s) that no tool call of this turn shows:',
    'turn.claims.reask': 'The answer claimed {n} thing(s) no call shows; rein asked the model to correct it.',
    'turn.warning': 'Warning: {msg}',
    'auth.title': 'This server needs an API key',
    'auth.label': 'API key',
    'auth.save': 'Use this key',
    'error.network': 'the server cannot be reached',
  },
  'zh-Hant': {
    'app.title': 'rein 對話',
    'app.skip': '跳到訊息輸入框',
    'lang.label': '語言',
    'conv.heading': '對話',
    'conv.new': '新對話',
    'conv.more': '載入更多',
    'conv.empty': '還沒有對話。',
    'conv.delete': '刪除',
    'conv.deleteLabel': '刪除對話 {name}',
    'conv.confirmDelete': '要刪除這個對話和它的紀錄嗎？',
    'conv.deleted': '對話已刪除。',
    'conv.untitled': '對話 {id}',
    'conv.messages': '{n} 則訊息',
    'conv.toggle': '對話',
    'conv.loadFailed': '無法載入對話：{msg}',
    'conv.openFailed': '無法開啟對話：{msg}',
    'mode.label': '執行模式',
    'mode.single': '單步執行',
    'mode.auto': '自動流程',
    'mode.propose': '只提議',
    'verify.label': '驗證策略',
    'verify.auto': '自動',
    'verify.force': '強制驗證',
    'verify.off': '關閉驗證',
    'input.label': '訊息',
    'input.placeholder': '輸入問題。Enter 送出，Shift+Enter 換行。',
    'input.send': '送出',
    'input.stop': '停止',
    'status.idle': '就緒。',
    'status.sending': '送出中…',
    'status.thinking': '思考中…',
    'status.executing': '執行工具 {tool} 中…',
    'status.verifying': '檢查 {tool} 的呼叫中…',
    'status.waiting_approval': '等待你核准：{tool}',
    'status.stopping': '停止中…',
    'status.busy': '這個對話忙碌中：別處有一輪正在執行（{state}）。本頁會等它結束。',
    'status.busyTool': '這個對話忙碌中：別處有一輪正在執行（{state}：{tool}）。本頁會等它結束。',
    'status.done': '完成。',
    'status.failed': '這一輪沒有成功（{reason}）。',
    'status.cancelled': '已停止。',
    'status.error': '錯誤：{msg}',
    'status.broken': '這一輪結束前連線就中斷了。',
    'status.freed': '對話已可再次使用。',
    'state.thinking': '思考中',
    'state.executing': '執行工具中',
    'state.verifying': '驗證中',
    'state.waiting_approval': '等待核准',
    'state.idle': '閒置',
    'role.user': '你',
    'role.assistant': '助理',
    'card.tool': '工具',
    'card.sentAs': '模型呼叫的名稱是「{name}」',
    'card.args': '參數',
    'card.result': '結果',
    'card.invalid': '回給模型的說明',
    'card.latency': '{ms} 毫秒',
    'card.step': '第 {n} 步',
    'card.verifyOk': '檢查通過：{reason}',
    'card.verifyNo': '檢查未通過：{reason}',
    'card.approvalGiven': '你已核准',
    'card.approvalDenied': '未核准：{reason}',
    'card.interrupted': '中斷：執行時伺服器停止了',
    'st.pending': '等待中',
    'st.success': '成功',
    'st.error': '錯誤',
    'st.invalid': '無效',
    'st.denied': '已拒絕',
    'st.cancelled': '已取消',
    'st.proposed': '已提議',
    'st.discarded': '已捨棄',
    'approval.question': '允許用這些參數執行 {tool} 嗎？',
    'approval.approve': '核准',
    'approval.reject': '拒絕',
    'approval.left': '剩 {s} 秒',
    'approval.sentYes': '你核准了這個呼叫。',
    'approval.sentNo': '你拒絕了這個呼叫。',
    'approval.timeout': '時間內沒有回覆：呼叫已被拒絕。',
    'approval.failed': '無法送出回覆：{msg}',
    'proposal.intro': '提議的呼叫，已檢查但尚未執行。',
    'proposal.run': '執行',
    'proposal.discard': '捨棄',
    'proposal.ran': '你執行了這個呼叫。',
    'proposal.discarded': '你捨棄了這個呼叫。',
    'proposal.failed': '無法完成：{msg}',
    'turn.problem': '這一輪沒有成功：{reason}。',
    'turn.pending': '有 {n} 個工具呼叫沒有結果：{calls}。',
    'turn.denied': '已拒絕，沒有執行：{calls}。',
    'turn.cancelledCalls': '已取消：{calls}。',
    'turn.cancelledNone': '在任何工具執行前就停止了。',
    'turn.stop.final_answer': '已回答',
    'turn.stop.max_iterations': '步驟太多',
    'turn.stop.success_cap': '達到模式的成功上限',
    'turn.stop.token_budget': 'token 預算用完了',
    'turn.stop.timeout': '花太久時間',
    'turn.stop.cancelled': '被停止了',
    'turn.stop.provider_error': '無法連上模型',
    'turn.stop.stalled': '陷入重複迴圈',
    'turn.stop.max_tool_calls': '工具呼叫太多',
    'turn.stop.proposed': '已提議呼叫',
    'turn.stop.error': 'rein 無法繼續',
    'turn.retry': '回答中斷了，重新請求中。',
    'turn.broken': '這一輪結束前與伺服器的連線中斷了；重新開啟對話可看到伺服器做了什麼。',
    'turn.claims.refuted': '这个回答声称了 {n} 件本轮没有任何工具调用能证明的事：',
    'turn.claims.reask': '回答中有 {n} 处声称没有调用记录支持；rein 已要求模型更正。',
    'turn.warning': '警告：{msg}',
    'auth.title': '這個伺服器需要 API 金鑰',
    'auth.label': 'API 金鑰',
    'auth.save': '使用這個金鑰',
    'error.network': '無法連上伺服器',
  },
  'zh-Hans': {
    'app.title': 'rein 对话',
    'app.skip': '跳到消息输入框',
    'lang.label': '语言',
    'conv.heading': '对话',
    'conv.new': '新对话',
    'conv.more': '加载更多',
    'conv.empty': '还没有对话。',
    'conv.delete': '删除',
    'conv.deleteLabel': '删除对话 {name}',
    'conv.confirmDelete': '要删除这个对话和它的记录吗？',
    'conv.deleted': '对话已删除。',
    'conv.untitled': '对话 {id}',
    'conv.messages': '{n} 条消息',
    'conv.toggle': '对话',
    'conv.loadFailed': '无法加载对话：{msg}',
    'conv.openFailed': '无法打开对话：{msg}',
    'mode.label': '执行模式',
    'mode.single': '单步执行',
    'mode.auto': '自动流程',
    'mode.propose': '只提议',
    'verify.label': '验证策略',
    'verify.auto': '自动',
    'verify.force': '强制验证',
    'verify.off': '关闭验证',
    'input.label': '消息',
    'input.placeholder': '输入问题。Enter 发送，Shift+Enter 换行。',
    'input.send': '发送',
    'input.stop': '停止',
    'status.idle': '就绪。',
    'status.sending': '发送中…',
    'status.thinking': '思考中…',
    'status.executing': '正在执行工具 {tool}…',
    'status.verifying': '正在检查 {tool} 的调用…',
    'status.waiting_approval': '等待你批准：{tool}',
    'status.stopping': '正在停止…',
    'status.busy': '这个对话忙碌中：别处有一轮正在运行（{state}）。本页会等它结束。',
    'status.busyTool': '这个对话忙碌中：别处有一轮正在运行（{state}：{tool}）。本页会等它结束。',
    'status.done': '完成。',
    'status.failed': '这一轮没有成功（{reason}）。',
    'status.cancelled': '已停止。',
    'status.error': '错误：{msg}',
    'status.broken': '这一轮结束前连接就断开了。',
    'status.freed': '对话已可再次使用。',
    'state.thinking': '思考中',
    'state.executing': '执行工具中',
    'state.verifying': '验证中',
    'state.waiting_approval': '等待批准',
    'state.idle': '空闲',
    'role.user': '你',
    'role.assistant': '助手',
    'card.tool': '工具',
    'card.sentAs': '模型调用的名称是“{name}”',
    'card.args': '参数',
    'card.result': '结果',
    'card.invalid': '返回给模型的说明',
    'card.latency': '{ms} 毫秒',
    'card.step': '第 {n} 步',
    'card.verifyOk': '检查通过：{reason}',
    'card.verifyNo': '检查未通过：{reason}',
    'card.approvalGiven': '你已批准',
    'card.approvalDenied': '未批准：{reason}',
    'card.interrupted': '中断：运行时服务器停止了',
    'st.pending': '等待中',
    'st.success': '成功',
    'st.error': '错误',
    'st.invalid': '无效',
    'st.denied': '已拒绝',
    'st.cancelled': '已取消',
    'st.proposed': '已提议',
    'st.discarded': '已舍弃',
    'approval.question': '允许用这些参数执行 {tool} 吗？',
    'approval.approve': '批准',
    'approval.reject': '拒绝',
    'approval.left': '剩 {s} 秒',
    'approval.sentYes': '你批准了这个调用。',
    'approval.sentNo': '你拒绝了这个调用。',
    'approval.timeout': '时间内没有回复：调用已被拒绝。',
    'approval.failed': '无法发送回复：{msg}',
    'proposal.intro': '提议的调用，已检查但尚未执行。',
    'proposal.run': '执行',
    'proposal.discard': '舍弃',
    'proposal.ran': '你执行了这个调用。',
    'proposal.discarded': '你舍弃了这个调用。',
    'proposal.failed': '无法完成：{msg}',
    'turn.problem': '这一轮没有成功：{reason}。',
    'turn.pending': '有 {n} 个工具调用没有结果：{calls}。',
    'turn.denied': '已拒绝，没有执行：{calls}。',
    'turn.cancelledCalls': '已取消：{calls}。',
    'turn.cancelledNone': '在任何工具执行前就停止了。',
    'turn.stop.final_answer': '已回答',
    'turn.stop.max_iterations': '步骤太多',
    'turn.stop.success_cap': '达到模式的成功上限',
    'turn.stop.token_budget': 'token 预算用完了',
    'turn.stop.timeout': '花了太长时间',
    'turn.stop.cancelled': '被停止了',
    'turn.stop.provider_error': '无法连接模型',
    'turn.stop.stalled': '陷入重复循环',
    'turn.stop.max_tool_calls': '工具调用太多',
    'turn.stop.proposed': '已提议调用',
    'turn.stop.error': 'rein 无法继续',
    'turn.retry': '回答中断了，正在重新请求。',
    'turn.broken': '这一轮结束前与服务器的连接断开了；重新打开对话可看到服务器做了什么。',
    'turn.claims.refuted': '這個回答聲稱了 {n} 件本輪沒有任何工具呼叫能證明的事：',
    'turn.claims.reask': '回答中有 {n} 處聲稱沒有呼叫紀錄支持；rein 已要求模型更正。',
    'turn.warning': '警告：{msg}',
    'auth.title': '这个服务器需要 API 密钥',
    'auth.label': 'API 密钥',
    'auth.save': '使用这个密钥',
    'error.network': '无法连接服务器',
  },
};

export const LANGUAGES = [
  ['en', 'English'],
  ['zh-Hant', '繁體中文'],
  ['zh-Hans', '简体中文'],
];

let current = 'en';

// Maps a BCP 47 tag to one of ours: zh-TW, zh-HK, zh-MO and zh-Hant-* are Traditional; other
// Chinese is Simplified; anything else falls through to the next preference.
export function matchLanguage(tag) {
  const t = String(tag || '').toLowerCase();
  if (!t.startsWith('zh')) return t.startsWith('en') ? 'en' : null;
  if (/hant|-tw|-hk|-mo/.test(t)) return 'zh-Hant';
  return 'zh-Hans';
}

export function pickLanguage() {
  const saved = localStorage.getItem('rein.lang');
  if (saved && STRINGS[saved]) return saved;
  for (const tag of navigator.languages || [navigator.language]) {
    const m = matchLanguage(tag);
    if (m) return m;
  }
  return 'en';
}

export function remember(lang) {
  localStorage.setItem('rein.lang', lang);
}

export function language() {
  return current;
}

// t('status.executing', {tool: 'echo'}): the text with {name} placeholders filled. A value
// {key: 'state.thinking'} is itself translated (so it follows a language switch); any other
// value is used as text. Callers put the result into textContent, never into markup.
export function t(key, params = {}) {
  const text = STRINGS[current][key] ?? STRINGS.en[key] ?? key;
  return text.replace(/\{(\w+)\}/g, (m, name) => {
    if (!(name in params)) return m;
    const v = params[name];
    return v && typeof v === 'object' && typeof v.key === 'string' ? t(v.key) : String(v);
  });
}

export function has(key) {
  return key in STRINGS.en;
}

// Gives el the text of key (with params) and marks it, so a later language switch rewrites
// it too. Returns el.
export function label(el, key, params) {
  el.dataset.i18n = key;
  if (params) el.dataset.i18nArgs = JSON.stringify(params);
  else delete el.dataset.i18nArgs;
  el.textContent = t(key, params);
  return el;
}

function argsOf(el) {
  try {
    return el.dataset.i18nArgs ? JSON.parse(el.dataset.i18nArgs) : {};
  } catch {
    return {};
  }
}

// Switches the language and rewrites every marked element under root. remember() keeps a
// person's choice over the browser's languages.
export function setLanguage(lang, root = document) {
  current = STRINGS[lang] ? lang : 'en';
  document.documentElement.lang = current;
  document.title = t('app.title');
  for (const el of root.querySelectorAll('[data-i18n]')) el.textContent = t(el.dataset.i18n, argsOf(el));
  for (const [attr, key] of [
    ['title', 'i18nTitle'],
    ['placeholder', 'i18nPlaceholder'],
    ['aria-label', 'i18nAriaLabel'],
  ]) {
    for (const el of root.querySelectorAll(`[data-i18n-${attr}]`)) {
      el.setAttribute(attr, t(el.dataset[key], argsOf(el)));
    }
  }
}
