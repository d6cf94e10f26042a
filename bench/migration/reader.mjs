// A reader process of the migration evaluation: follows a fixed schedule (request k at
// t0 + k·interval, whatever happened to earlier requests), each a GET of a random existing id drawn
// from a seeded PRNG, and records scheduled, send and response times, the outcome and the SHA-384
// of the value returned against the expected-data manifest, and the store's own timing of its
// answer (x-accepted-at, x-arrived-at, x-handler-ms). A request's deadline runs from its
// *scheduled* time, so dispatch delay counts; a late response is still timed (up to a hard cap).
//
// Forked; IPC from the parent: { load: { port, intervalMs, deadlineMs, capMs, seed, reader,
// manifestPath } } (answered { loaded } once the manifest is read), { start: { t0 } }, then
// { stop: { at } } (no request scheduled at or after `at`); once every request it sent has
// settled it answers { requests: [...] }.

import http from 'node:http';
import { PerformanceObserver } from 'node:perf_hooks';
import { readFileSync } from 'node:fs';
import { prng, valueHash, wallMs } from './common.mjs';

let cfg;
let ids;
/** The manifest's hashes as bytes, 48 per id in `ids` order: a small heap keeps this process's own collections short. */
let expected;
let rand;
let stopAt = Infinity;
let timer;
const requests = [];
const pending = new Set();
// This process's garbage-collection pauses (wall-clock start and length): a request overlapping
// one was delayed by the reader itself, which its record shows as readerGcMs.
const gcPauses = [];
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) gcPauses.push({ at: performance.timeOrigin + e.startTime, ms: e.duration });
}).observe({ entryTypes: ['gc'] });

function get(port, path, capMs) {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
      const parts = [];
      res.on('data', (c) => parts.push(c));
      const acceptedAt = Number(res.headers['x-accepted-at'] ?? NaN);
      const arrivedAt = Number(res.headers['x-arrived-at'] ?? NaN);
      const handlerMs = Number(res.headers['x-handler-ms'] ?? NaN);
      res.on('end', () =>
        resolve({
          status: res.statusCode,
          body: Buffer.concat(parts).toString('utf8'),
          at: wallMs(),
          acceptedAt,
          arrivedAt,
          handlerMs,
        }),
      );
      res.on('error', (e) => resolve({ error: e.code ?? e.message, at: wallMs() }));
    });
    req.setTimeout(capMs, () => req.destroy(Object.assign(new Error('hard cap'), { code: 'CAP' })));
    req.on('error', (e) => resolve({ error: e.code ?? e.message, at: wallMs() }));
  });
}

async function fire(k) {
  const scheduledAt = cfg.t0 + k * cfg.intervalMs;
  const i = Math.floor(rand() * ids.length);
  const id = ids[i];
  const sentAt = wallMs();
  const r = await get(cfg.port, `/record/${encodeURIComponent(id)}`, Math.max(1, scheduledAt + cfg.capMs - sentAt));
  const rec = {
    reader: cfg.reader,
    k,
    id,
    scheduledAt,
    sentAt,
    endedAt: r.at,
    latencyMs: r.at - scheduledAt,
    status: r.status ?? null,
  };
  // The store's side, when it answered: when its handler started, and for how long it ran.
  if (Number.isFinite(r.acceptedAt)) rec.acceptedAt = r.acceptedAt;
  if (Number.isFinite(r.arrivedAt)) rec.arrivedAt = r.arrivedAt;
  if (Number.isFinite(r.handlerMs)) rec.handlerMs = r.handlerMs;
  if (r.error !== undefined) {
    rec.error = r.error;
    rec.outcome = r.at - scheduledAt > cfg.deadlineMs ? 'timeout' : 'error';
  } else {
    rec.outcome = r.at - scheduledAt > cfg.deadlineMs ? 'timeout' : 'ok';
    if (r.status === 200) {
      try {
        rec.hash = valueHash(JSON.parse(r.body));
      } catch {
        rec.hash = 'unparsable';
      }
    } else rec.hash = null;
    // Against the manifest as written before the run; the parent re-checks ids changed during it.
    rec.matchesManifest = rec.hash === expected.toString('hex', 48 * i, 48 * i + 48);
  }
  requests.push(rec);
}

let armed = false;
let nextK = 0;

function schedule(k) {
  const at = cfg.t0 + k * cfg.intervalMs;
  armed = at < stopAt;
  if (!armed) return;
  nextK = k;
  timer = setTimeout(
    () => {
      const p = fire(k).finally(() => pending.delete(p));
      pending.add(p);
      schedule(k + 1);
    },
    Math.max(0, at - wallMs()),
  );
}

/** Keeps the manifest's ids and its hashes as bytes; the parsed JSON is garbage on return. */
function loadManifest(path) {
  const manifest = JSON.parse(readFileSync(path, 'utf8'));
  ids = manifest.order;
  expected = Buffer.alloc(48 * ids.length);
  ids.forEach((id, i) => expected.write(manifest.hashes[id], 48 * i, 'hex'));
}

process.on('message', async (m) => {
  if (m.load !== undefined) {
    cfg = m.load;
    loadManifest(cfg.manifestPath);
    rand = prng(cfg.seed);
    valueHash({ warm: 'up' });
    globalThis.gc?.();
    globalThis.gc?.();
    process.send({ loaded: true });
  } else if (m.start !== undefined) {
    cfg.t0 = m.start.t0;
    schedule(0);
  } else if (m.stop !== undefined) {
    stopAt = m.stop.at;
    // A timer armed for a time at or after stopAt is cancelled; an earlier one still fires.
    if (armed && cfg.t0 + nextK * cfg.intervalMs >= stopAt) {
      clearTimeout(timer);
      armed = false;
    }
    while (armed || pending.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
    requests.sort((a, b) => a.k - b.k);
    for (const r of requests) {
      const overlap = (g) => Math.max(0, Math.min(r.endedAt, g.at + g.ms) - Math.max(r.scheduledAt, g.at));
      r.readerGcMs = gcPauses.reduce((n, g) => n + overlap(g), 0);
    }
    process.send({ requests }, () => process.disconnect());
  }
});
