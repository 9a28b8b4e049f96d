// What the chat page's browser tests stand on: the scripted model server and `rein serve` as
// real processes on 127.0.0.1, a folder of process skills (one that waits for a gate file,
// one that hangs, one destructive), headless Chromium from Debian driven by playwright-core,
// and screenshots saved as test artifacts. Nothing here imitates rein: the page talks to the
// real server, which talks to the model server over HTTP.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.REIN_CHROMIUM || '/usr/bin/chromium';
const BUILD = process.env.REIN_BUILD_DIR || path.resolve('build-test');
export const ARTIFACTS = path.join(BUILD, 'artifacts', 'browser');
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
  // to reuse: a restart).
  static async start(model, skills, opts = {}) {
    const dir = opts.dir || fs.mkdtempSync(path.join(os.tmpdir(), 'rein-web-store-'));
    const args = ['serve', '--port', '0', '--store', `sqlite:${dir}/rein.db`,
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

let shots = 0;
export async function shot(page, name) {
  shots += 1;
  const file = path.join(ARTIFACTS, `${String(shots).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  return file;
}

export function prepareArtifacts() {
  fs.rmSync(ARTIFACTS, { recursive: true, force: true });
  fs.mkdirSync(ARTIFACTS, { recursive: true });
}
