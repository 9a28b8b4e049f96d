// Writes samples of the JSON lines of pino, bunyan and winston with the real libraries (npm).
// usage: (cd DIR && npm install pino bunyan winston) && NODE_PATH=DIR/node_modules \
//        node node_logs.js OUTDIR
'use strict';
const fs = require('fs');
const path = require('path');
const out = process.argv[2];

function file(name) {
  fs.mkdirSync(path.join(out, name), { recursive: true });
  return path.join(out, name, 'input');
}

const pino = require('pino');
const p = pino({ level: 'trace' }, pino.destination({ dest: file('json_pino'), sync: true }));
p.trace('entering handler');
p.info({ port: 3000 }, 'server listening');
p.warn('memory usage high');
p.error(new Error('ECONNRESET'), 'upstream failed');
p.fatal('cannot bind port');

const bunyan = require('bunyan');
const b = bunyan.createLogger({ name: 'api', streams: [{ path: file('json_bunyan'), level: 'debug' }] });
b.debug('config loaded');
b.info({ user: 'alice' }, 'login');
b.warn('token expiring');
b.error({ err: new Error('boom') }, 'request failed');

const winston = require('winston');
const w = winston.createLogger({
  level: 'debug',
  format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
  transports: [new winston.transports.File({ filename: file('json_winston') })],
});
w.debug('cache warmed');
w.info('server started', { port: 8080 });
w.warn('deprecated option used');
w.error('database unreachable');
w.on('finish', () => {});
w.end();
