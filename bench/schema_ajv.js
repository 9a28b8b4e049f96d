// The ajv side of bench/schema.sh, driven by bench/schema_rounds.py over a pipe: compiles every
// tool schema of the case file once with ajv (2020-12, format as annotation, strict off for the
// BFCL schemas' extra keywords), once with allErrors and once stopping at the first error, then
// answers each "cycle all|first SECONDS [tree|text]" line on stdin with one stretch cycling
// through every argument object, each error's message and instance location read, timed in
// CPU time of this process: "RATE VALID INVALID ERRORS". tree (the default) validates objects
// parsed beforehand; text parses each argument's JSON text with JSON.parse first, every time
// (what a caller holding a model's arguments does). Usage: node schema_ajv.js CASES.json
'use strict';
const fs = require('fs');
const path = require('path');
const readline = require('readline');
const Ajv2020 = require(path.join(__dirname, 'node_modules', 'ajv', 'dist', '2020')).default;

const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));

function compileAll(allErrors) {
  const ajv = new Ajv2020({ allErrors, strict: false, validateFormats: false });
  return cases.map((c) => ({
    validate: ajv.compile(c.schema), instances: c.instances, texts: c.texts,
  }));
}
const compiled = { all: compileAll(true), first: compileAll(false) };

// CPU time of this process in microseconds: on a shared machine, waiting for a core is not ours.
function cpuUs() {
  const u = process.cpuUsage();
  return u.user + u.system;
}

let sink = 0;
function stretch(list, seconds, fromText) {
  const start = cpuUs();
  const deadline = start + seconds * 1e6;
  let count = 0, valid = 0, invalid = 0, errors = 0, rounds = 0;
  while (cpuUs() < deadline || rounds === 0) {
    for (const c of list) {
      for (const item of fromText ? c.texts : c.instances) {
        const ok = c.validate(fromText ? JSON.parse(item) : item);
        count++;
        if (!ok) {
          for (const e of c.validate.errors) sink += e.message.length + e.instancePath.length;
        }
        if (rounds === 0) {
          if (ok) valid++; else { invalid++; errors += c.validate.errors.length; }
        }
      }
    }
    rounds++;
  }
  const secs = (cpuUs() - start) / 1e6;
  return `${(count / secs).toFixed(1)} ${valid} ${invalid} ${errors}`;
}

console.log(`ready ${cases.length}`);
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = /^cycle (all|first) ([\d.]+)(?: (tree|text))?$/.exec(line.trim());
  if (!m) {
    console.error(`schema_ajv.js: bad command: ${line}`);
    process.exit(2);
  }
  console.log(stretch(compiled[m[1]], Number(m[2]), m[3] === 'text'));
});
