// What the node tests share: the scripted model server's control endpoints
// (tests/support/model_server.h: /__script, /__reset, /__requests) and the runner that prints
// one "ok" or "not ok" line per case and exits 1 when any failed.

// control(path[, body]) for the model server at base: GET without a body, POST with one;
// the JSON answer, or an error naming the path and the answer.
export function modelServer(base) {
  return async function control(path, body) {
    const res = await fetch(base + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const json = await res.json();
    if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
    return json;
  };
}

// Runs each {name, fn} in order, one after the other, and ends the process.
export async function run(cases) {
  let passed = 0, failed = 0;
  for (const c of cases) {
    try {
      await c.fn();
      passed++;
      console.log(`ok - ${c.name}`);
    } catch (e) {
      failed++;
      console.log(`not ok - ${c.name}\n  ${String(e && e.stack || e).split('\n').join('\n  ')}`);
    }
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}
