// The Node peer of bench/stream.sh: eventsource-parser plus JSON.parse on every event, the
// way the JavaScript SDKs read a model's stream. Reads the stream file given, feeds it in
// 16 KiB pieces through a streaming UTF-8 decoder, and prints "<MB/s> <events/s> <events>"
// for the best of the runs.
import { readFileSync } from 'node:fs';
import { createParser } from 'eventsource-parser';

const [file, runsArg] = process.argv.slice(2);
const bytes = readFileSync(file);
const runs = Number(runsArg || 5);
const CHUNK = 16384;

function once() {
  let events = 0;
  let sink = 0;
  const parser = createParser({
    onEvent(ev) {
      events++;
      if (ev.data === '[DONE]') return;
      const obj = JSON.parse(ev.data);
      sink += obj ? 1 : 0;
    },
  });
  const decoder = new TextDecoder('utf-8');
  const t0 = process.hrtime.bigint();
  for (let off = 0; off < bytes.length; off += CHUNK) {
    parser.feed(decoder.decode(bytes.subarray(off, off + CHUNK), { stream: true }));
  }
  parser.feed(decoder.decode());
  const secs = Number(process.hrtime.bigint() - t0) / 1e9;
  if (sink < 0) console.log(sink);
  return { secs, events };
}

let best = null;
for (let i = 0; i < runs; i++) {
  const r = once();
  if (!best || r.secs < best.secs) best = r;
}
const mb = bytes.length / 1e6;
console.log(`${(mb / best.secs).toFixed(1)} ${(best.events / best.secs).toFixed(0)} ${best.events}`);
