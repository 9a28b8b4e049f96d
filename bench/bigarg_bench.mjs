// The Node peer of bench/bigarg.sh: the same reply read the way the JavaScript SDKs read it,
// eventsource-parser and JSON.parse on every event, the tool call's argument deltas joined and
// the arguments parsed with JSON.parse (not validated: the goal is JSON.parse alone). Feeds the
// file in 16 KiB pieces through a streaming UTF-8 decoder and prints
// "<MB/s of the reply> <MB/s of the arguments>" for the best of the runs.
import { readFileSync } from 'node:fs';
import { createParser } from 'eventsource-parser';

const [file, runsArg] = process.argv.slice(2);
const bytes = readFileSync(file);
const runs = Number(runsArg || 3);
const CHUNK = 16384;

function once() {
  const parts = [];
  const parser = createParser({
    onEvent(ev) {
      if (ev.data === '[DONE]') return;
      const chunk = JSON.parse(ev.data);
      for (const choice of chunk.choices || []) {
        for (const tc of (choice.delta && choice.delta.tool_calls) || []) {
          if (tc.function && tc.function.arguments) parts.push(tc.function.arguments);
        }
      }
    },
  });
  const decoder = new TextDecoder('utf-8');
  const t0 = process.hrtime.bigint();
  for (let off = 0; off < bytes.length; off += CHUNK) {
    parser.feed(decoder.decode(bytes.subarray(off, off + CHUNK), { stream: true }));
  }
  parser.feed(decoder.decode());
  const text = parts.join('');
  const args = JSON.parse(text);
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  if (typeof args !== 'object') throw new Error('the arguments are not an object');
  return { secs, argBytes: Buffer.byteLength(text) };
}

let best = null;
for (let i = 0; i < runs; i++) {
  const r = once();
  if (!best || r.secs < best.secs) best = r;
}
console.log(`${(bytes.length / 1e6 / best.secs).toFixed(1)} ${(best.argBytes / 1e6 / best.secs).toFixed(1)}`);
