// The store process of the migration evaluation: opens the file store (an unfinished migration
// resumes as it opens), serves it on 127.0.0.1 over HTTP and, when its parent asks, runs (or awaits)
// the migration to the target suite, reporting each step over IPC. Its parent SIGKILLs it part-way.
//
//   node store-server.mjs <store dir> <keys.json> <port>     (forked; speaks IPC with its parent)
//
// HTTP (no keep-alive needed, bodies are JSON):
//   GET  /record/<id>    200 the value | 404
//   POST /put/<id>       body: the value; 200 { ackAt } once the write is durable
//   POST /delete/<id>    200 { existed, ackAt } once the delete is durable
//   GET  /migration      200 store.migration()
// IPC to the parent: { ready, openMs, listenAt, migration }, { progress, at }, { stall }, { done, at },
// { failed }, { closed }. From the parent: { migrate: { to, chunkRecords } }, { close: true }.

import http from 'node:http';
import { readFileSync } from 'node:fs';
import { openStore } from '../../dist/node.js';
import { COLLECTION, SCHEMA, INDEX, wallMs, fromHex } from './common.mjs';

const [dir, keysPath, portArg] = process.argv.slice(2);
const keys = JSON.parse(readFileSync(keysPath, 'utf8'));
const send = (m) => process.send?.(m);

const openedAt = wallMs();
const store = await openStore({
  location: dir,
  unlock: fromHex(keys.unlock),
  signer: fromHex(keys.signerSecret),
  signerPublicKey: fromHex(keys.signerPublic),
  // The migration checkpoints at activation; no automatic checkpoints compete with it here.
  autoCheckpoint: false,
});
// Opened at once, so a resumed migration finds the collection (and its index) when it reindexes.
const words = store.collection(COLLECTION, { schema: SCHEMA, index: INDEX });
const openMs = wallMs() - openedAt;

function reply(res, status, body) {
  const text = body === undefined ? '' : JSON.stringify(body);
  // When the handler started and how long it took, so a reader can tell time spent in the store
  // from time spent reaching it.
  const timing =
    res.timing === undefined
      ? {}
      : {
          'x-accepted-at': String(res.timing.acceptedAt),
          'x-arrived-at': String(res.timing.arrivedAt),
          'x-handler-ms': String(performance.now() - res.timing.start),
        };
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...timing });
  res.end(text);
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(req, res) {
  const [, route, raw] = req.url.split('/');
  const id = raw === undefined ? undefined : decodeURIComponent(raw);
  if (req.method === 'GET' && route === 'record' && id) {
    const value = await words.get(id);
    return value === undefined ? reply(res, 404, { error: 'not found' }) : reply(res, 200, value);
  }
  if (req.method === 'POST' && route === 'put' && id) {
    await words.put(id, JSON.parse(await readBody(req)));
    return reply(res, 200, { ackAt: wallMs() });
  }
  if (req.method === 'POST' && route === 'delete' && id) {
    const existed = await words.delete(id);
    return reply(res, 200, { existed, ackAt: wallMs() });
  }
  if (req.method === 'GET' && route === 'migration') return reply(res, 200, store.migration() ?? null);
  return reply(res, 404, { error: 'no such route' });
}

const server = http.createServer((req, res) => {
  res.timing = { acceptedAt: req.socket.acceptedAt, arrivedAt: wallMs(), start: performance.now() };
  handle(req, res).catch((e) => reply(res, 500, { error: e instanceof Error ? `${e.name}: ${e.message}` : String(e) }));
});
// Event-loop stalls: a 2 ms tick that arrives 10 ms or more after the previous one reports the gap
// (time the loop could not run anything, reads included) to the parent.
const STALL_TICK_MS = 2;
// `cpuMs` is the process's CPU time (user + system, all threads) over the gap: about `ms` when the
// process itself was busy, much less when it was waiting for a core.
let lastTick = performance.now();
let lastCpu = process.cpuUsage();
setInterval(() => {
  const now = performance.now();
  const cpu = process.cpuUsage();
  const gap = now - lastTick;
  if (gap >= 10)
    send({
      stall: {
        at: wallMs(),
        ms: gap,
        cpuMs: (cpu.user - lastCpu.user + cpu.system - lastCpu.system) / 1000,
        sysMs: (cpu.system - lastCpu.system) / 1000,
      },
    });
  lastTick = now;
  lastCpu = cpu;
}, STALL_TICK_MS).unref();

server.on('connection', (socket) => {
  socket.acceptedAt = wallMs();
});
server.listen(Number(portArg), '127.0.0.1', () =>
  send({ ready: true, openMs, listenAt: wallMs(), pid: process.pid, migration: store.migration() ?? null }),
);

process.on('message', (m) => {
  if (m.migrate !== undefined) {
    const { to, chunkRecords } = m.migrate;
    Promise.resolve()
      .then(() => store.migrate({ to, chunkRecords, onProgress: (p) => send({ progress: p, at: wallMs() }) }))
      .then((done) => send({ done, at: wallMs() }))
      .catch((e) =>
        send({
          failed: e instanceof Error ? `${e.name}${e.code ? ` ${e.code}` : ''}: ${e.message}` : String(e),
          at: wallMs(),
        }),
      );
  } else if (m.close) {
    server.close();
    server.closeAllConnections?.();
    store.close().then(
      () => {
        send({ closed: true, at: wallMs() });
        process.disconnect?.();
      },
      (e) => {
        send({ failed: `close: ${e instanceof Error ? e.message : String(e)}` });
        process.exit(1);
      },
    );
  }
});
