// The ajv side of bench/schema.sh: compiles every tool schema of the case file once with ajv
// (2020-12, format as annotation, strict off for the BFCL schemas' extra keywords) and
// validates every argument object in a loop, once with allErrors and once stopping at the
// first error, printing validations per second. Usage: node schema_ajv.js CASES.json SECONDS
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv2020 = require(path.join(__dirname, 'node_modules', 'ajv', 'dist', '2020')).default;

const cases = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const seconds = Number(process.argv[3] || 2);

function run(allErrors, label) {
  const ajv = new Ajv2020({ allErrors, strict: false, validateFormats: false });
  const compiled = cases.map((c) => ({ validate: ajv.compile(c.schema), instances: c.instances }));
  // The machine is shared: the best of five stretches is the least disturbed figure.
  let best = 0, valid = 0, invalid = 0, errors = 0;
  for (let i = 0; i < 5; i++) {
    const r = stretch(compiled, seconds / 5);
    if (r.rate > best) best = r.rate;
    ({ valid, invalid, errors } = r);
  }
  console.log(`ajv ${label}: ${Math.round(best)} validations/s (valid ${valid}, invalid ${invalid}, ${errors} errors reported)`);
}

function stretch(compiled, seconds) {
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  let count = 0, valid = 0, invalid = 0, errors = 0, rounds = 0;
  while (process.hrtime.bigint() < deadline || rounds === 0) {
    for (const c of compiled) {
      for (const inst of c.instances) {
        const ok = c.validate(inst);
        count++;
        if (rounds === 0) {
          if (ok) valid++; else { invalid++; errors += c.validate.errors.length; }
        }
      }
    }
    rounds++;
  }
  const secs = Number(process.hrtime.bigint() - start) / 1e9;
  return { rate: count / secs, valid, invalid, errors };
}

run(true, 'all errors ');
run(false, 'first error');
