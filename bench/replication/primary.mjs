// The primary process of the replication evaluation: opens (or creates) the file store under
// cnsa2-gcm-hkdf384-commit, serves replication on the host and port its parent names, and writes
// the campaign's records on the parent's fixed schedule (record i at t0 + i·interval), one commit
// each. Restarted after a SIGKILL on the same store, it skips the records the store already holds
// (they are a prefix of the schedule: it writes one at a time, in order) and writes the ones whose
// time has passed at once, then keeps the schedule. In bulk mode it loads `records` synsets in
// batches of `batch` and signs a checkpoint before it serves (with serveFirst, when asked, while it
// serves).
//
//   PQDB_REPL_HELLO='{ mode, location, host, port, keys, t0, intervalMs, records, batch, serveFirst }' node primary.mjs
//
// Spawned with an IPC channel (under `ip netns exec` on two hosts). From the parent: { load: true }
// (bulk with serveFirst), { more: { count, gapMs } } (records after the first `records`, one commit
// each), { final: { records } } (a full typed reread), { close: true }. To the parent: { started,
// startAt, importedAt }, { ready, openStartAt, openedAt, listenAt, commit, present, buildMs? },
// { wrote: seq, due, sentAt, at, commit }, { loaded, loadStartAt, buildMs, commit, at },
// { moreDone }, { final, commit, values, size, scanned }, { closed }, { failed }.

import { wallMs, send, fail, hello, fromB64, COLLECTION, SCHEMA, SUITE } from './common.mjs';

const startAt = performance.timeOrigin;
const { openStore } = await import('../../dist/node.js');
send({ started: true, startAt, importedAt: wallMs() });

const h = hello();
const k = h.keys;
let stopping = false;
const openStartAt = wallMs();
const store = await openStore({
  location: h.location,
  create: true,
  recipients: [fromB64(k.recipientPublic)],
  unlock: fromB64(k.unlock),
  signer: fromB64(k.signerSecret),
  signerPublicKey: fromB64(k.signerPublic),
  suite: SUITE,
  ...(h.mode === 'bulk' ? { autoCheckpoint: false } : {}),
});
const words = store.collection(COLLECTION, { schema: SCHEMA });
const openedAt = wallMs();
// The WordNet source is read after the store serves (a restart is not slowed by the benchmark's own
// reading), except in bulk mode, where it is loaded first.
const { campaignRecords } = await import('./fixture.mjs');
/** Loads the first `records` synsets in batches of `batch` (one commit each), then one checkpoint. */
async function load() {
  const records = campaignRecords(h.records);
  const loadStartAt = wallMs();
  for (let i = 0; i < records.length; i += h.batch)
    await store.batch((tx) => {
      for (const { id, value } of records.slice(i, i + h.batch)) tx.put(words, id, value);
    });
  await store.checkpoint();
  return { loadStartAt, buildMs: wallMs() - loadStartAt };
}
let buildMs;
if (h.mode === 'bulk' && !h.serveFirst && words.size === 0) buildMs = (await load()).buildMs;
const server = await store.serveReplication({
  host: h.host,
  port: h.port,
  identity: { publicKey: fromB64(k.idPub), secretKey: fromB64(k.idSec) },
  trustedPeers: [fromB64(k.replicaPub)],
});
send({
  ready: true,
  openStartAt,
  openedAt,
  listenAt: wallMs(),
  commit: store.info().commit,
  present: words.size,
  ...(buildMs !== undefined ? { buildMs } : {}),
});
if (h.mode === 'schedule') write(campaignRecords(h.records)).catch(fail);

/** The schedule: record i at t0 + i·interval; a record the store holds already is not written again. */
async function write(records) {
  for (const { id, value } of records) {
    if (stopping) return;
    if (words.has(id)) continue;
    const due = h.t0 + value.seq * h.intervalMs;
    const wait = due - wallMs();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    if (stopping) return;
    const sentAt = wallMs();
    await words.put(id, value);
    send({ wrote: value.seq, due, sentAt, at: wallMs(), commit: store.info().commit });
  }
}

process.on('message', (m) => {
  if (m.load) {
    void (async () => send({ loaded: true, ...(await load()), commit: store.info().commit, at: wallMs() }))().catch(
      fail,
    );
  } else if (m.more !== undefined) {
    // Records beyond the first `records`, one commit each, `gapMs` apart: a replica following a large store.
    void (async () => {
      const { campaignRecords } = await import('./fixture.mjs');
      for (const { id, value } of campaignRecords(h.records + m.more.count).slice(h.records)) {
        await new Promise((r) => setTimeout(r, m.more.gapMs));
        const sentAt = wallMs();
        await words.put(id, value);
        send({ wrote: value.seq, sentAt, at: wallMs(), commit: store.info().commit });
      }
      send({ moreDone: true });
    })().catch(fail);
  } else if (m.final !== undefined) {
    void (async () => {
      const { campaignRecords } = await import('./fixture.mjs');
      const values = [];
      for (const { id } of campaignRecords(m.final.records)) values.push((await words.get(id)) ?? null);
      let scanned = 0;
      for await (const _ of words.scan()) scanned++;
      send({ final: true, commit: store.info().commit, values, size: words.size, scanned, at: wallMs() });
    })().catch(fail);
  } else if (m.close) {
    stopping = true;
    void (async () => {
      await server.close();
      await store.close();
      send({ closed: true });
      process.exit(0);
    })().catch(fail);
  }
});
