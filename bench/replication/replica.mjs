// The replica process of the replication evaluation: opens a replica on its own directory
// (resuming from the watermark it persisted when it was SIGKILLed) and follows the primary its
// parent names over the post-quantum channel on TCP, reporting when it opened, which campaign
// records it could read at once, every applied commit, every change of connection, and the first
// record it reads that it did not hold at the open. It reads no WordNet data: a restart costs the
// process, pqdb and the replica, nothing of the benchmark's own.
//
//   PQDB_REPL_HELLO='{ location, host, port, keys, ids, backoffMs? }' node replica.mjs
//
// Spawned with an IPC channel (under `ip netns exec` on two hosts). From the parent:
// { retained: true } (a read of the records held at the open), { final: { ids, hashes } } (a full
// reread), { close: true }. To the parent: { started, startAt, importedAt }, { open, openStartAt,
// openedAt, status, present }, { applied, at, status, records }, { connection, connected, at,
// lastError }, { firstNew, seq, id, value, appliedAt, at }, { retained, values, readErrors }, { final,
// status, values | hashes, size, scanned, readMs, readErrors }, { closed }, { failed }.

import { wallMs, send, fail, hello, fromB64, typedHash, COLLECTION, SCHEMA } from './common.mjs';

const startAt = performance.timeOrigin;
const { openReplica } = await import('../../dist/node.js');
send({ started: true, startAt, importedAt: wallMs() });

const h = hello();
const k = h.keys;
const ids = h.ids ?? [];
const openStartAt = wallMs();
const replica = await openReplica({
  location: h.location,
  unlock: fromB64(k.unlock),
  identity: { publicKey: fromB64(k.idPub), secretKey: fromB64(k.idSec) },
  primary: { host: h.host, port: h.port, publicKey: fromB64(k.primaryPub) },
  ...(h.backoffMs !== undefined ? { backoffMs: h.backoffMs } : {}),
});
const openedAt = wallMs();
const words = replica.collection(COLLECTION, { schema: SCHEMA });
// Read in the same turn as the open resolved: the follow loop has applied nothing yet.
const present = [];
ids.forEach((id, seq) => void (words.has(id) && present.push(seq)));
send({ open: true, openStartAt, openedAt, status: replica.status(), present });

/**
 * A typed read; a read that fails is kept (with its code) and tried again, at most three times: a
 * read under which a commit is applied can fail with NOT_OPEN (the replica closes the store the read
 * began on), and the evaluation counts those apart instead of calling the record unreadable.
 */
const readErrors = [];
async function read(id) {
  for (let attempt = 1; ; attempt++) {
    try {
      return (await words.get(id)) ?? null;
    } catch (e) {
      readErrors.push({ id, code: e?.code, message: String(e?.message ?? e), at: wallMs() });
      if (attempt > 3) throw e;
    }
  }
}

/** The records a full scan yields (a scan that fails is counted as a read error and run again). */
async function scanCount() {
  for (let attempt = 1; ; attempt++) {
    try {
      let n = 0;
      for await (const _ of words.scan()) n++;
      return n;
    } catch (e) {
      readErrors.push({ scan: true, code: e?.code, message: String(e?.message ?? e), at: wallMs() });
      if (attempt > 3) throw e;
    }
  }
}

let connected = false;
setInterval(() => {
  const s = replica.status();
  if (s.connected !== connected) {
    connected = s.connected;
    send({ connection: true, connected, at: wallMs(), lastError: s.lastError });
  }
}, 10).unref();

process.on('message', (m) => {
  if (m.retained) {
    void (async () => {
      const values = [];
      for (const seq of present) values.push({ seq, value: await read(ids[seq]) });
      send({ retained: true, values, readErrors });
    })().catch(fail);
  } else if (m.final !== undefined) {
    void (async () => {
      const t = wallMs();
      const out = [];
      for (const id of m.final.ids ?? ids) {
        const v = await read(id);
        out.push(m.final.hashes ? v && typedHash(v) : v);
      }
      const scanned = await scanCount();
      const status = replica.status();
      send({
        final: true,
        status,
        [m.final.hashes ? 'hashes' : 'values']: out,
        size: words.size,
        scanned,
        readMs: wallMs() - t,
        readErrors,
      });
    })().catch(fail);
  } else if (m.close) {
    void (async () => {
      await replica.close();
      send({ closed: true });
      process.exit(0);
    })().catch(fail);
  }
});

const held = new Set(present);
let firstNew = false;
let seen = replica.status().appliedWatermark;
for (;;) {
  await replica.applied(seen + 1);
  const at = wallMs();
  const status = replica.status();
  seen = status.appliedWatermark;
  send({ applied: seen, at, status, records: words.size });
  if (!firstNew) {
    const seq = ids.findIndex((id, i) => !held.has(i) && words.has(id));
    if (seq >= 0) {
      firstNew = true;
      const value = await read(ids[seq]);
      send({ firstNew: true, seq, id: ids[seq], value, appliedAt: at, at: wallMs() });
    }
  }
}
