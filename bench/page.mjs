// bench/page.mjs: the chat page's long tasks while a 100 KB answer streams in (run by
// bench/page.sh, which says what it needs). One `rein serve`, the scripted model server and
// headless Chromium, as in the browser tests. Each page is a folder of web/ files served in
// place of the built-in page by the browser's request routing, so all pages talk to the same
// server; each gets the same answers in 256-byte deltas, the pages taking turns in every run
// (who goes first alternates).
//
// Two figures per answer:
//  - long tasks: what the page's PerformanceObserver reports (tasks over 50 ms, wall-clock:
//    what a person feels, and what the machine's load stretches);
//  - the main thread's busiest task in CPU time (thread time, from a Chromium trace of the
//    run): what the page itself costs, much less moved by other programs on the machine.
//
// node bench/page.mjs --page NAME=DIR ... [--runs N] [--shapes paragraph,list,table,mixed]
//   [--bytes N] [--delay-ms N] [--detail]
// --delay-ms paces the model (a pause between deltas; 0: all at once, a burst the page draws
// over several frames). --detail prints where each task over 50 ms went (script, style,
// layout, paint) and how many layout objects were dirty.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const browserDir = path.join(here, '..', 'tests', 'browser');
const harness = await import(path.join(browserDir, 'harness.mjs'));
const answers = await import(path.join(browserDir, 'answers.mjs'));

function options(argv) {
  const o = { pages: [], runs: 3, shapes: ['paragraph', 'list', 'table'], bytes: 100 * 1024, delayMs: 0, detail: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => argv[++i];
    if (a === '--page') {
      const [name, dir] = value().split('=');
      o.pages.push({ name, dir: path.resolve(dir) });
    } else if (a === '--runs') {
      o.runs = Number(value());
    } else if (a === '--shapes') {
      o.shapes = value().split(',');
    } else if (a === '--bytes') {
      o.bytes = Number(value());
    } else if (a === '--delay-ms') {
      o.delayMs = Number(value());
    } else if (a === '--detail') {
      o.detail = true;
    } else {
      throw new Error(`unknown option ${a}`);
    }
  }
  if (!o.pages.length) throw new Error('name at least one --page NAME=DIR');
  for (const s of o.shapes) if (!answers.blocks[s]) throw new Error(`no answer shape ${s}`);
  return o;
}

// Serves the files of dir in place of the built-in page's (/ and /web/NAME); what dir does
// not have (the highlighter, made by the build) still comes from the server.
async function routePage(context, base, dir) {
  const types = { '.js': 'text/javascript', '.css': 'text/css', '.html': 'text/html' };
  const serve = (route, file) => {
    if (!fs.existsSync(file)) return route.continue();
    return route.fulfill({ status: 200, contentType: types[path.extname(file)] || 'application/octet-stream',
      body: fs.readFileSync(file) });
  };
  await context.route(`${base}/`, (route) => serve(route, path.join(dir, 'index.html')));
  await context.route(`${base}/web/*`,
    (route) => serve(route, path.join(dir, path.basename(new URL(route.request().url()).pathname))));
}

// What the trace's events are, for the detail.
const KINDS = {
  Layout: 'layout', UpdateLayoutTree: 'style', FunctionCall: 'script', EvaluateScript: 'script',
  FireAnimationFrame: 'script', TimerFire: 'script', EventDispatch: 'script', 'v8.compile': 'script',
  Paint: 'paint', PrePaint: 'paint', Layerize: 'paint', UpdateLayer: 'paint', MajorGC: 'gc', MinorGC: 'gc',
  'V8.GC_MARK_COMPACTOR': 'gc', 'V8.GC_SCAVENGER': 'gc',
};

// The page's main-thread tasks in a Chromium trace: {tasks: [{wall, cpu, detail}]} in ms.
function readTrace(file, detail) {
  const { traceEvents } = JSON.parse(fs.readFileSync(file, 'utf8'));
  const layout = traceEvents.find((e) => e.name === 'Layout' && e.ph === 'X');
  if (!layout) return { tasks: [] };
  const on = traceEvents.filter((e) => e.pid === layout.pid && e.tid === layout.tid && e.ph === 'X')
    .sort((x, y) => x.ts - y.ts || y.dur - x.dur);
  const tasks = on.filter((e) => e.name === 'ThreadControllerImpl::RunTask');
  return {
    tasks: tasks.map((t) => ({
      wall: t.dur / 1000,
      cpu: (t.tdur || 0) / 1000,
      detail: detail && t.dur > 50000 ? taskDetail(t, on) : null,
    })),
  };
}

// Where a task's time went: each event's own time (without the events inside it) goes to its
// kind, or to the kind of the nearest event around it that has one (a layout that script
// forced counts as layout).
function taskDetail(t, on) {
  const inside = on.filter((e) => e.ts >= t.ts && e.ts + e.dur <= t.ts + t.dur);
  const sum = {};
  const stack = [];
  const close = (upTo) => {
    while (stack.length && stack[stack.length - 1].end <= upTo) {
      const f = stack.pop();
      sum[f.kind] = (sum[f.kind] || 0) + f.self;
    }
  };
  for (const e of inside) {
    close(e.ts);
    const parent = stack[stack.length - 1];
    if (parent) parent.self -= e.tdur || 0;
    stack.push({ end: e.ts + e.dur, self: e.tdur || 0, kind: KINDS[e.name] || parent?.kind || 'other' });
  }
  close(Infinity);
  const dirty = inside.filter((e) => e.name === 'Layout').map((e) => e.args?.beginData?.dirtyObjects);
  const parts = Object.entries(sum).filter(([, v]) => v >= 500).map(([k, v]) => `${k} ${Math.round(v / 1000)}`);
  return `cpu: ${parts.join(', ')}; layouts ${dirty.length}, dirty objects ${dirty.join('/')}`;
}

async function measure(lane, page, text, o) {
  const context = await lane.browser.newContext({ viewport: { width: 1180, height: 820 }, locale: 'en-US' });
  await routePage(context, lane.rein.url, page.dir);
  const p = await harness.openPage(context, `${lane.rein.url}/`);
  await lane.model.script([{ text, delta_bytes: 256, delay_chunk_ms: o.delayMs }]);
  await answers.watchLongTasks(p);
  const traceFile = path.join(o.tmp, 'trace.json');
  await lane.browser.startTracing(p, { path: traceFile,
    categories: ['devtools.timeline', 'disabled-by-default-devtools.timeline', 'toplevel'] });
  const t0 = Date.now();
  await harness.send(p, 'The long answer');
  // Drawn: the turn ended and the answer's text stopped changing for a few frames (a burst is
  // drawn over several frames).
  await p.waitForFunction(() => !document.getElementById('input').disabled &&
    document.getElementById('status').dataset.state !== 'busy', null, { timeout: 120000, polling: 100 });
  await p.evaluate(() => new Promise((resolve) => {
    let last = -1;
    let same = 0;
    const look = () => {
      const n = document.querySelector('.msg.assistant:last-of-type .answer')?.textContent.length ?? 0;
      same = n === last ? same + 1 : 0;
      last = n;
      if (same >= 5) resolve();
      else requestAnimationFrame(look);
    };
    look();
  }));
  const ms = Date.now() - t0 - 5 * 16;
  const long = await answers.longTasks(p);
  await lane.browser.stopTracing();
  const trace = readTrace(traceFile, o.detail);
  fs.rmSync(traceFile, { force: true });
  // Drawn as at once: a page that draws less must not look fast.
  const [streamed, atOnce] = await answers.drawnAndAtOnce(p, text);
  if (streamed !== atOnce) p.problems.push('the streamed answer differs from the same text drawn at once');
  const problems = p.problems.slice();
  await context.close();
  return { long, ms, trace, problems };
}

const range = (xs) => (xs.length ? `${Math.min(...xs)}–${Math.max(...xs)}` : '-');

async function main() {
  const o = options(process.argv.slice(2));
  o.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'rein-bench-page-'));
  const lane = await harness.startLane('bench-page');
  const results = [];
  try {
    for (let run = 1; run <= o.runs; run++) {
      for (const shape of o.shapes) {
        const { text } = answers.blocks[shape](o.bytes);
        const order = run % 2 ? o.pages : [...o.pages].reverse();
        for (const page of order) {
          const r = await measure(lane, page, text, o);
          const cpu = r.trace.tasks.map((t) => t.cpu);
          const res = {
            run, shape, page: page.name, n: r.long.length, longest: r.long.length ? Math.max(...r.long) : 0,
            cpuMax: Math.round(Math.max(0, ...cpu)), cpuOver: cpu.filter((c) => c > 50).length, ms: r.ms,
          };
          results.push(res);
          console.log(`run ${run} ${shape.padEnd(9)} ${page.name.padEnd(6)} long tasks ${String(res.n).padStart(3)},` +
            ` longest ${String(res.longest).padStart(4)} ms | busiest task ${String(res.cpuMax).padStart(3)} ms cpu,` +
            ` ${res.cpuOver} over 50 ms cpu | drawn in ${r.ms} ms` +
            `${r.problems.length ? ` | PROBLEMS: ${r.problems.join('; ')}` : ''}`);
          for (const t of r.trace.tasks) {
            if (t.detail) console.log(`    task ${Math.round(t.wall)} ms (${Math.round(t.cpu)} ms cpu): ${t.detail}`);
          }
        }
      }
    }
  } finally {
    await lane.close();
    fs.rmSync(o.tmp, { recursive: true, force: true });
  }
  console.log(`\n${o.runs} run(s), ${Math.round(o.bytes / 1024)} KB answers in 256-byte deltas` +
    `${o.delayMs ? `, ${o.delayMs} ms apart` : ', all at once'}: ranges over runs`);
  console.log(`  ${'answer'.padEnd(9)} ${'page'.padEnd(6)} ${'long tasks'.padStart(10)} ${'longest ms'.padStart(11)}` +
    ` ${'busiest cpu ms'.padStart(15)} ${'over 50 cpu'.padStart(12)}`);
  for (const shape of o.shapes) {
    for (const page of o.pages) {
      const rs = results.filter((r) => r.shape === shape && r.page === page.name);
      const col = (k) => range(rs.map((r) => r[k]));
      console.log(`  ${shape.padEnd(9)} ${page.name.padEnd(6)} ${col('n').padStart(10)} ${col('longest').padStart(11)}` +
        ` ${col('cpuMax').padStart(15)} ${col('cpuOver').padStart(12)}`);
    }
  }
}

await main();
