// Secondary-index queries on WordNet 3.1 synsets: pqdb (file store, indexes on `pos` and on
// (`pos`, `offset`)) against better-sqlite3 with the same two indexes (`CREATE INDEX`), in the same
// process. Both return decrypted values: pqdb's records are sealed, SQLite's value column is sealed
// with node:crypto AES-256-GCM as in bench/store.mjs, and its indexed columns are in the clear (an
// SQL index cannot be sealed; pqdb's indexes live in memory only). Queries, each run with fresh
// parameters and timed end to end (every value decrypted and parsed):
//
//   equality   100 records of one part of speech: where('pos').equals(p).limit(100)
//              / SELECT value FROM synsets WHERE pos = ? LIMIT 100
//   range      1,000 consecutive offsets of one part of speech:
//              where(['pos', 'offset']).between([p, lo], [p, hi]) / … WHERE pos = ? AND offset >= ? AND offset < ?
//
// Also: ingest with both indexes kept current (built before the first write) against ingest without
// indexes, and the first query after a cold open (which builds pqdb's indexes from the records).
//
//   node bench/query.mjs [--records 100000] [--batch 1000] [--runs 101] [--out report.json]

import { mkdtempSync, rmSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openStore, generateRecipient, generateSigner } from '../dist/node.js';
import { hostInfo, synsets, saveReport, rng, peerAead, rangeParams } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const BATCH = Number(arg('--batch', 1000));
const RUNS = Number(arg('--runs', 101));
const OUT = arg('--out', undefined);

const now = () => performance.now();
const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const records = synsets(N);
const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
const base = mkdtempSync(join(tmpdir(), 'pqdb-bench-query-'));
const random = rng(11);

// Query parameters from the data: for the range, a window of 1,000 consecutive offsets of a part of speech.
const params = rangeParams(
  records.map((r) => r.value),
  RUNS,
  random,
);

const { seal, open } = peerAead();
const enc = new TextEncoder();

async function timeQueries(run) {
  const eq = [];
  const range = [];
  for (const p of params) {
    let t = now();
    const a = await run.equality(p);
    eq.push(now() - t);
    if (a !== 100) throw new Error(`equality returned ${a}`);
    t = now();
    const b = await run.range(p);
    range.push(now() - t);
    if (b !== 1000) throw new Error(`range returned ${b}`);
  }
  return { equalityMs: median(eq), rangeMs: median(range) };
}

const results = {};
const who = generateRecipient();
const signer = generateSigner();
const signing = { signer: signer.secretKey, signerPublicKey: signer.publicKey };

async function pqdbIngest(dir, indexed) {
  const store = await openStore({
    location: dir,
    create: true,
    recipients: [who.publicKey],
    unlock: who.secretKey,
    autoCheckpoint: false,
    ...signing,
  });
  const c = store.collection('synsets', { schema, ...(indexed ? { index: { by: ['pos', ['pos', 'offset']] } } : {}) });
  if (indexed) await c.where('pos').equals('n').toArray(); // built (empty) before the first write: every write keeps it current
  const t = now();
  for (let i = 0; i < records.length; i += BATCH)
    await store.batch((tx) => {
      for (let j = i; j < Math.min(i + BATCH, records.length); j++) tx.put(c, records[j].id, records[j].value);
    });
  const ms = now() - t;
  return { store, c, recordsPerSec: records.length / (ms / 1000) };
}

{
  const plain = await pqdbIngest(join(base, 'pqdb-plain'), false);
  await plain.store.checkpoint();
  await plain.store.close();
  let t = now();
  const plainAgain = await openStore({
    location: join(base, 'pqdb-plain'),
    unlock: who.secretKey,
    autoCheckpoint: false,
  });
  const openPlainMs = now() - t;
  await plainAgain.close();
  const { store, c, recordsPerSec } = await pqdbIngest(join(base, 'pqdb'), true);
  const warm = await timeQueries({
    equality: async ({ pos }) => (await c.where('pos').equals(pos).limit(100).toArray()).length,
    range: async ({ pos, lo, hi }) => (await c.where(['pos', 'offset']).between([pos, lo], [pos, hi]).toArray()).length,
  });
  // The checkpoint seals both indexes: a cold open, then the first query loads them.
  await store.checkpoint();
  await store.close();
  t = now();
  const again = await openStore({ location: join(base, 'pqdb'), unlock: who.secretKey, autoCheckpoint: false });
  const openMs = now() - t;
  const d = again.collection('synsets');
  t = now();
  const first = (await d.where('pos').equals(params[0].pos).limit(100).toArray()).length;
  const firstQueryMs = now() - t;
  if (first !== 100) throw new Error('first query');
  await again.close();
  results.pqdb = {
    ingestPlainRecordsPerSec: plain.recordsPerSec,
    ingestIndexedRecordsPerSec: recordsPerSec,
    ...warm,
    openPlainMs,
    openMs,
    firstQueryMs,
  };
}

{
  const dir = join(base, 'sqlite');
  mkdirSync(dir);
  const db = new Database(join(dir, 'db.sqlite'));
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec('CREATE TABLE synsets (id TEXT PRIMARY KEY, pos TEXT, offset INTEGER, value BLOB) WITHOUT ROWID');
  db.exec('CREATE INDEX by_pos ON synsets (pos)');
  db.exec('CREATE INDEX by_pos_offset ON synsets (pos, offset)');
  const ins = db.prepare('INSERT INTO synsets VALUES (?, ?, ?, ?)');
  const batch = db.transaction((from, to) => {
    for (let j = from; j < to; j++) {
      const r = records[j];
      ins.run(r.id, r.value.pos, r.value.offset, seal(r.value, enc.encode(r.id)));
    }
  });
  const t = now();
  for (let i = 0; i < records.length; i += BATCH) batch(i, Math.min(i + BATCH, records.length));
  const ingestMs = now() - t;
  const eq = db.prepare('SELECT id, value FROM synsets WHERE pos = ? LIMIT 100');
  const range = db.prepare(
    'SELECT id, value FROM synsets WHERE pos = ? AND offset >= ? AND offset < ? ORDER BY offset',
  );
  const warm = await timeQueries({
    equality: ({ pos }) => eq.all(pos).map((r) => open(r.value, enc.encode(r.id))).length,
    range: ({ pos, lo, hi }) => range.all(pos, lo, hi).map((r) => open(r.value, enc.encode(r.id))).length,
  });
  db.close();
  results.sqlite = { ingestIndexedRecordsPerSec: records.length / (ingestMs / 1000), ...warm };
}
rmSync(base, { recursive: true, force: true });

const ratio = (peer, ours) => peer / ours;
const report = {
  bench: 'query',
  host: hostInfo(),
  records: N,
  batch: BATCH,
  runs: RUNS,
  results,
  ratios: {
    equalityVsSqlite: ratio(results.sqlite.equalityMs, results.pqdb.equalityMs),
    rangeVsSqlite: ratio(results.sqlite.rangeMs, results.pqdb.rangeMs),
    ingestIndexedVsPlain: results.pqdb.ingestIndexedRecordsPerSec / results.pqdb.ingestPlainRecordsPerSec,
  },
};
console.log(JSON.stringify(report.results, null, 1));
console.log(
  `equality (100 records): pqdb ${results.pqdb.equalityMs.toFixed(3)} ms, SQLite ${results.sqlite.equalityMs.toFixed(3)} ms (${report.ratios.equalityVsSqlite.toFixed(2)}×); range (1,000): pqdb ${results.pqdb.rangeMs.toFixed(2)} ms, SQLite ${results.sqlite.rangeMs.toFixed(2)} ms (${report.ratios.rangeVsSqlite.toFixed(2)}×); ingest with two indexes ${report.ratios.ingestIndexedVsPlain.toFixed(2)}× without; cold open ${results.pqdb.openMs.toFixed(0)} ms (${results.pqdb.openPlainMs.toFixed(0)} ms without indexes), first query (loads the sealed indexes) ${results.pqdb.firstQueryMs.toFixed(0)} ms`,
);
saveReport('query', report, OUT);
