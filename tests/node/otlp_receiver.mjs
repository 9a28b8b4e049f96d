// An OTLP/HTTP collector for tests/scripts/otlp_export.sh that decodes what rein sends with
// the official opentelemetry-proto definitions (the .proto files the build fetched, read by
// protobufjs from the same npm tree; cmake/ReinOtlpProto.cmake), independently of the
// protobuf-c code that encoded it.
//
// usage: node otlp_receiver.mjs OTLP_PROTO_BUILD_DIR OUT_FILE
//   prints "listening http://127.0.0.1:PORT" once it listens; each span of each
//   ExportTraceServiceRequest is appended to OUT_FILE as one JSON line:
//   {traceId, spanId, parentSpanId, name, kind, attrs: {key: value}, events: [{name, attrs}],
//    status: {code, message}, resource: {key: value}, contentType}
// POST /v1/traces only; a body that is not application/x-protobuf is answered 415, one that
// does not decode 400.
import { appendFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const [dir, out] = process.argv.slice(2);
const require = createRequire(join(dir, 'npm', 'package.json'));
const protobuf = require('protobufjs');
const root = new protobuf.Root();
root.resolvePath = (_origin, target) => join(dir, 'protos', target);
root.loadSync('opentelemetry/proto/collector/trace/v1/trace_service.proto');
const Request = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');

const hex = (b) => (b && b.length ? Buffer.from(b).toString('hex') : '');

function value(v) {
  if (v == null) return null;
  if (v.stringValue != null) return v.stringValue;
  if (v.intValue != null) return Number(v.intValue);
  if (v.doubleValue != null) return v.doubleValue;
  if (v.boolValue != null) return v.boolValue;
  if (v.arrayValue != null) return (v.arrayValue.values || []).map(value);
  return null;
}

function attrs(list) {
  const o = {};
  for (const kv of list || []) o[kv.key] = value(kv.value);
  return o;
}

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      res.writeHead(404).end();
      return;
    }
    const type = req.headers['content-type'] || '';
    if (type !== 'application/x-protobuf') {
      res.writeHead(415).end();
      return;
    }
    let msg;
    try {
      msg = Request.toObject(Request.decode(Buffer.concat(chunks)), { longs: String, defaults: true });
    } catch (e) {
      res.writeHead(400).end(String(e));
      return;
    }
    for (const rs of msg.resourceSpans || []) {
      const resource = attrs(rs.resource && rs.resource.attributes);
      for (const ss of rs.scopeSpans || []) {
        for (const s of ss.spans || []) {
          const line = {
            traceId: hex(s.traceId),
            spanId: hex(s.spanId),
            parentSpanId: hex(s.parentSpanId),
            traceState: s.traceState,
            name: s.name,
            kind: s.kind,
            start: s.startTimeUnixNano,
            end: s.endTimeUnixNano,
            attrs: attrs(s.attributes),
            events: (s.events || []).map((e) => ({ name: e.name, attrs: attrs(e.attributes) })),
            status: { code: s.status ? s.status.code : 0, message: s.status ? s.status.message : '' },
            scope: ss.scope ? ss.scope.name : '',
            resource,
            contentType: type,
          };
          appendFileSync(out, JSON.stringify(line) + '\n');
        }
      }
    }
    res.writeHead(200, { 'Content-Type': 'application/x-protobuf' }).end();
  });
}).listen(0, '127.0.0.1', function () {
  console.log(`listening http://127.0.0.1:${this.address().port}`);
});
