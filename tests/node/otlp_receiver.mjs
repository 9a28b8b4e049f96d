// An OTLP/HTTP collector for tests/scripts/otlp_export.sh that decodes what rein sends with
// the official opentelemetry-proto definitions (the .proto files the build fetched, read by
// protobufjs from the same npm tree; cmake/ReinOtlpProto.cmake), independently of the
// protobuf-c code that encoded it.
//
// usage: node otlp_receiver.mjs OTLP_PROTO_BUILD_DIR OUT_FILE
//   prints "listening http://127.0.0.1:PORT" once it listens; each span of each
//   ExportTraceServiceRequest is appended to OUT_FILE as one JSON line:
//   {traceId, spanId, parentSpanId, traceState, flags, name, kind, attrs: {key: value},
//    events: [{name, attrs}],
//    status: {code, message}, resource: {key: value}, contentType}
// POST /v1/traces takes application/x-protobuf only (anything else is answered 415).
//
// POST /v1/metrics takes an ExportMetricsServiceRequest as application/x-protobuf, decoded
// with the official metrics_service.proto, or as application/json, checked against the OTLP
// JSON mapping's rules (64-bit integers as decimal strings, enums as numbers, lowerCamelCase
// names: an unknown field is refused) and then read with the same .proto by protobufjs'
// fromObject. Each data point is appended to OUT_FILE.metrics as one JSON line:
//   {name, description, unit, type, temporality, monotonic, attrs, start, time, value,
//    count, sum, hasSum, min, max, bucketCounts, bounds, resource, contentType}
// A body that does not decode (or breaks the JSON rules) is answered 400.
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
root.loadSync('opentelemetry/proto/collector/metrics/v1/metrics_service.proto');
const Request = root.lookupType('opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest');
root.resolveAll();
const MetricsRequest = root.lookupType(
  'opentelemetry.proto.collector.metrics.v1.ExportMetricsServiceRequest',
);

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

// The OTLP JSON mapping's rules for what rein sends: fields the .proto names (in
// lowerCamelCase), fixed64/uint64 values as decimal strings, enums as numbers.
const U64 = new Set(['startTimeUnixNano', 'timeUnixNano', 'count']);
function checkJson(type, obj, path) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw new Error(`${path}: not an object`);
  for (const [k, v] of Object.entries(obj)) {
    const field = type.fields[k];
    if (!field) throw new Error(`${path}.${k}: no such field in ${type.name}`);
    const values = field.repeated ? v : [v];
    if (field.repeated && !Array.isArray(v)) throw new Error(`${path}.${k}: not an array`);
    for (const x of values) {
      const at = `${path}.${k}`;
      if (['fixed64', 'uint64', 'int64', 'sfixed64'].includes(field.type)) {
        if (typeof x !== 'string' || !/^-?[0-9]+$/.test(x)) throw new Error(`${at}: 64-bit integer not a decimal string: ${JSON.stringify(x)}`);
      } else if (field.resolvedType instanceof protobuf.Enum) {
        if (!Number.isInteger(x)) throw new Error(`${at}: enum not a number: ${JSON.stringify(x)}`);
      } else if (field.resolvedType instanceof protobuf.Type) {
        checkJson(field.resolvedType, x, at);
      } else if (field.type === 'double' && typeof x !== 'number') {
        throw new Error(`${at}: not a number`);
      } else if (field.type === 'string' && typeof x !== 'string') {
        throw new Error(`${at}: not a string`);
      } else if (field.type === 'bool' && typeof x !== 'boolean') {
        throw new Error(`${at}: not a boolean`);
      }
    }
  }
}

function metricPoints(msg, type) {
  const lines = [];
  for (const rm of msg.resourceMetrics || []) {
    const resource = attrs(rm.resource && rm.resource.attributes);
    for (const sm of rm.scopeMetrics || []) {
      for (const m of sm.metrics || []) {
        const kind = m.histogram ? 'histogram' : m.sum ? 'sum' : m.gauge ? 'gauge' : 'other';
        const data = m[kind] || {};
        for (const p of data.dataPoints || []) {
          lines.push({
            name: m.name,
            description: m.description,
            unit: m.unit,
            type: kind,
            temporality: data.aggregationTemporality,
            monotonic: data.isMonotonic,
            attrs: attrs(p.attributes),
            start: p.startTimeUnixNano,
            time: p.timeUnixNano,
            value: p.asDouble != null ? p.asDouble : p.asInt != null ? Number(p.asInt) : null,
            count: p.count != null ? Number(p.count) : null,
            sum: p.sum,
            hasSum: p._sum === 'sum',
            min: p._min === 'min' ? p.min : null,
            max: p._max === 'max' ? p.max : null,
            bucketCounts: (p.bucketCounts || []).map(Number),
            bounds: p.explicitBounds || [],
            scope: sm.scope ? sm.scope.name : '',
            resource,
            contentType: type,
          });
        }
      }
    }
  }
  return lines;
}

function metrics(req, res, body) {
  const type = req.headers['content-type'] || '';
  let msg;
  try {
    let decoded;
    if (type === 'application/x-protobuf') {
      decoded = MetricsRequest.decode(body);
    } else if (type === 'application/json') {
      const obj = JSON.parse(body.toString('utf8'));
      checkJson(MetricsRequest, obj, '$');
      decoded = MetricsRequest.fromObject(obj);
      const err = MetricsRequest.verify(decoded);
      if (err) throw new Error(err);
    } else {
      res.writeHead(415).end();
      return;
    }
    msg = MetricsRequest.toObject(decoded, { longs: String, defaults: true, oneofs: true });
  } catch (e) {
    process.stderr.write(`metrics: ${e}\n`);
    res.writeHead(400).end(String(e));
    return;
  }
  for (const line of metricPoints(msg, type)) appendFileSync(`${out}.metrics`, JSON.stringify(line) + '\n');
  res.writeHead(200, { 'Content-Type': type }).end(type === 'application/json' ? '{}' : '');
}

createServer((req, res) => {
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    if (req.method === 'POST' && req.url === '/v1/metrics') {
      metrics(req, res, Buffer.concat(chunks));
      return;
    }
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
            flags: s.flags,
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
