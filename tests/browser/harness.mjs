// What the chat page's browser tests stand on: the scripted model server and `rein serve` as
// real processes on 127.0.0.1, a folder of process skills (one that waits for a gate file,
// one that hangs, one destructive), headless Chromium from Debian driven by playwright-core,
// and screenshots saved as test artifacts. Nothing here imitates rein: the page talks to the
// real server, which talks to the model server over HTTP.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.REIN_CHROMIUM || '/usr/bin/chromium';
const BUILD = process.env.REIN_BUILD_DIR || path.resolve('build-test');
// Each test file ("lane") keeps its screenshots and logs in a folder of its own, so files can
// run at once.
export let ARTIFACTS = path.join(BUILD, 'artifacts', 'browser');
const REIN = process.env.REIN_BIN;
const BIN_DIR = process.env.REIN_TEST_BIN_DIR;

const children = new Set();

// Starts a program and resolves with {proc, line} once a stdout line matches re.
function startProcess(cmd, args, re, logName, env = process.env) {
  const log = fs.openSync(path.join(ARTIFACTS, logName), 'w');
  const proc = spawn(cmd, args, { stdio: ['ignore', 'pipe', log], env });
  children.add(proc);
  proc.on('exit', () => children.delete(proc));
  return new Promise((resolve, reject) => {
    const rl = readline.createInterface({ input: proc.stdout });
    const timer = setTimeout(() => reject(new Error(`${cmd} printed no ready line`)), 20000);
    rl.on('line', (line) => {
      const m = re.exec(line);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, match: m });
      }
    });
    proc.on('exit', (code) => reject(new Error(`${cmd} exited ${code} before it was ready`)));
  });
}

// Stops a process with SIGTERM and resolves with its exit code (a sanitizer report or a
// leak makes it non-zero).
export function stopProcess(proc) {
  if (proc.exitCode !== null) return Promise.resolve(proc.exitCode);
  return new Promise((resolve) => {
    proc.once('exit', (code, signal) => resolve(code ?? signal));
    proc.kill('SIGTERM');
  });
}

export function killAll() {
  for (const p of children) p.kill('SIGKILL');
}

export class ModelServer {
  static async start() {
    const { proc, match } = await startProcess(path.join(BIN_DIR, 'rein-model-server'),
      ['--port', '0'], /^(http:\/\/127\.0\.0\.1:\d+)$/, 'model-server.log');
    const s = new ModelServer();
    s.proc = proc;
    s.url = match[1];
    return s;
  }

  // Replaces the script with these replies (tests/support/model_server.h). test-model states
  // no confidence, so the agent self-verifies every call in auto (001): a verifier that
  // approves them is always there (a scenario's own verifier reply, earlier, wins).
  async script(replies) {
    const all = [...replies, { match: { body_contains: 'Answer YES or NO' }, times: 0, text: 'YES' }];
    const r = await fetch(`${this.url}/__script`, { method: 'POST', body: JSON.stringify(all) });
    if (!r.ok) throw new Error(`script refused: ${await r.text()}`);
  }

  async requests() {
    return (await fetch(`${this.url}/__requests`)).json();
  }
}

// A folder with the skills the scenarios use; gate(callId) lets a waiting "slow" call finish.
export class Skills {
  constructor() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rein-web-skills-'));
    this.gates = path.join(this.dir, 'gates');
    fs.mkdirSync(this.gates);
    const text = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
    const pathArg = { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] };
    this.add('slow', 'Echo the text once the test lets the call finish', text,
      ['sh', '-c', `while [ ! -e "${this.gates}/$REIN_CALL_ID" ]; do sleep 0.05; done; cat`]);
    this.add('hang', 'Take a very long time', text, ['sh', '-c', 'sleep 600']);
    this.add('wipe', 'Wipe a file (destructive)', pathArg, ['cat'], { destructive: true });
  }

  add(id, description, parameters, command, extra = {}) {
    const d = path.join(this.dir, id);
    fs.mkdirSync(d);
    const manifest = { id, description, parameters, timeout_ms: 120000, ...extra,
      runner: { kind: 'process', command } };
    fs.writeFileSync(path.join(d, 'manifest.json'), JSON.stringify(manifest, null, 2));
  }

  open(callId) {
    fs.writeFileSync(path.join(this.gates, callId), '');
  }

  remove() {
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

export class Rein {
  // opts: args (more flags), name (of the log), env (more variables), dir (a store folder
  // to reuse: a restart), port (0: any), store (a store URL instead of the folder's SQLite).
  static async start(model, skills, opts = {}) {
    const dir = opts.dir || fs.mkdtempSync(path.join(os.tmpdir(), 'rein-web-store-'));
    const args = ['serve', '--port', String(opts.port || 0), '--store', opts.store || `sqlite:${dir}/rein.db`,
      '--provider', 'openai-compatible', '--base-url', `${model.url}/v1`, '--model', 'test-model',
      '--skills', skills.dir, '--grace-ms', '2000', ...(opts.args || [])];
    // No provider, store, skills or keys from whoever runs the tests.
    const env = { ...process.env, OPENAI_API_KEY: 'sk-test' };
    for (const k of ['REIN_PROVIDER', 'REIN_MODEL', 'REIN_BASE_URL', 'REIN_REPLAY', 'REIN_CONFIG',
      'REIN_STORE', 'REIN_API_KEYS', 'REIN_SKILLS_PATH', 'REIN_MCP_CONFIG']) delete env[k];
    const name = opts.name || 'rein';
    const { proc, match } = await startProcess(REIN, args, /listening on (http:\/\/\S+)/,
      `${name}.log`, { ...env, ...(opts.env || {}) });
    const r = new Rein();
    r.proc = proc;
    r.url = match[1];
    r.dir = dir;
    return r;
  }

  // SIGTERM; resolves with the exit code. keepStore leaves the store for a restart.
  async stop(keepStore = false) {
    const code = await stopProcess(this.proc);
    if (!keepStore) fs.rmSync(this.dir, { recursive: true, force: true });
    return code;
  }

  // kill -9: a crash in the middle of whatever it was doing.
  async crash() {
    await new Promise((resolve) => {
      this.proc.once('exit', resolve);
      this.proc.kill('SIGKILL');
    });
  }
}

export async function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // The flags that work as root on a closed network; playwright gives the browser a new,
    // empty profile folder of its own.
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}

// A page that records what would show a broken page: script errors and console errors
// (a CSP violation is one). Failed API answers the test asked for are not errors here.
export async function openPage(context, url) {
  const page = await context.newPage();
  page.problems = [];
  page.on('pageerror', (e) => page.problems.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error' && !/status of (409|401|404)/.test(m.text())) {
      page.problems.push(`console: ${m.text()}`);
    }
  });
  await page.goto(url);
  await page.waitForSelector('body[data-ready="true"]');
  return page;
}

// A screenshot of the step at 1280 px and at 375 px wide, in the page's language (the file
// name says which); the page goes back to its size after.
let shots = 0;
export async function shot(page, name) {
  shots += 1;
  const lang = await page.evaluate(() => document.documentElement.lang);
  const size = page.viewportSize();
  const files = [];
  for (const [w, h] of [[1280, 800], [375, 740]]) {
    if (size.width !== w || size.height !== h) await page.setViewportSize({ width: w, height: h });
    const file = path.join(ARTIFACTS, `${String(shots).padStart(2, '0')}-${name}-${lang}-${w}.png`);
    await page.screenshot({ path: file, fullPage: false });
    files.push(file);
  }
  await page.setViewportSize(size);
  return files;
}

export function prepareArtifacts(lane = '') {
  ARTIFACTS = path.join(BUILD, 'artifacts', 'browser', lane);
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
}

// Everything one test file needs: the model server, the skills, `rein serve`, a browser.
// page(locale, size) opens the chat page in a new context of its own.
export async function startLane(lane, reinOpts = {}) {
  prepareArtifacts(lane);
  const l = { lane };
  l.model = await ModelServer.start();
  l.skills = new Skills();
  l.rein = await Rein.start(l.model, l.skills, reinOpts);
  l.browser = await launchBrowser();
  l.contexts = [];
  l.page = async (locale = 'en-US', size = { width: 1280, height: 800 }, url = '/', extra = {}) => {
    const { base: other, ...options } = extra;
    const context = await l.browser.newContext({ viewport: size, locale, ...options });
    l.contexts.push(context);
    const base = other || l.rein.url;
    return openPage(context, `${base}${url}`);
  };
  l.close = async () => {
    await l.browser?.close();
    const code = l.rein ? await l.rein.stop() : 0;
    if (l.model) await stopProcess(l.model.proc);
    l.skills?.remove();
    killAll();
    return code;
  };
  return l;
}

// Sends a message from the page's box (Enter).
export async function send(p, text) {
  await p.fill('#input', text);
  await p.press('#input', 'Enter');
}

export function waitStatus(p, text) {
  return p.waitForFunction((t) => document.getElementById('status').textContent.includes(t), text);
}

export function waitIdle(p) {
  return p.waitForFunction(() => !document.getElementById('input').disabled);
}

export function card(p, callId) {
  return p.locator(`.card-wrap[data-call-id="${callId}"]`);
}

export function waitCard(p, callId, status) {
  return p.waitForSelector(`.card-wrap[data-call-id="${callId}"][data-status="${status}"]`);
}

export function lastAnswer(p) {
  return p.locator('.msg.assistant').last();
}

export function conversationId(p) {
  return p.evaluate(() => decodeURIComponent(location.hash.replace(/^#c=/, '')));
}

export async function chat(base, body) {
  const r = await fetch(`${base}/agent/chat`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

// What a test file's after() does: closes its lane and checks rein serve exited cleanly.
export async function closeLane(lane) {
  const code = lane ? await lane.close() : 0;
  console.log(`screenshots: ${ARTIFACTS}`);
  assert.equal(code, 0, 'rein serve did not exit cleanly (see rein.log in the artifacts)');
}

// Nothing the page logged shows it broken (see openPage).
export function noProblems(p) {
  assert.deepEqual(p.problems, [], 'the page logged errors');
}

export async function newConversation(p) {
  await p.click('#new-conv');
  await p.waitForFunction(() => location.hash === '' && !document.querySelector('#log .msg'));
}
