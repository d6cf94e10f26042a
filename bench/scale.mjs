// Scale: the store at 100,000 and 1,000,000 records (DESIGN §6, §8) against better-sqlite3 and
// classic-level, each sealing every record with node:crypto AES-256-GCM, in the same run. Records are
// WordNet 3.1 synsets (lemma, part of speech, gloss, offset; ~115 B of JSON), repeated under new ids
// past the 117,659 synsets. Per engine and size, in this order, each part selectable with --parts:
//
//   ingest      n records in batches of 1,000, a checkpoint (pqdb), bytes on disk
//   reads       random reads (100,000 ids) on the warm store
//   open        a cold open in a new process (bench/scale/open.mjs: open plus one read, and RSS
//               after it) right after the checkpoint, then again after --changes (10,000) new
//               records written without a checkpoint: does open cost grow with the store or with
//               the changes since the checkpoint?
//   compaction  --rounds (3) full rounds of updates of every record (new values), then bytes on
//               disk, the engine's compaction (pqdb store.compact(), SQLite VACUUM, classic-level
//               compactRange) with a reader issuing random gets during it, bytes on disk after, and
//               the live sealed bytes the disk is compared with
//   migration   pqdb only: store.migrate() of every record to 'cnsa2-gcm-hkdf384-commit' with a
//               reader issuing random gets during it, and the migration's accounting
//
// Durability is equal: every engine makes each batch's commit durable before the next (pqdb:
// fdatasync per commit; SQLite: WAL with synchronous=FULL, one db.transaction() per batch —
// better-sqlite3's WAL default, NORMAL, does not fsync at commit; classic-level: batch() with
// sync: true). Reads unseal: every engine's get returns the record's value decrypted and parsed
// (SQLite a prepared, plucked SELECT; classic-level getSync(), documented as faster than get()).
//
// The ingest is the setup of every other part, so it always runs. Compaction runs before the
// migration, so the migration's old generation (kept, DESIGN §8) is not counted as dead bytes.
//
//   node bench/scale.mjs [--sizes 100000,1000000] [--parts ingest,reads,open,compaction,migration]
//        [--batch 1000] [--reads 100000] [--changes 10000] [--rounds 3] [--live-sample 1000] [--no-reader]
//        [--reader-rate R]   (the reader during compaction and migration: R reads/s on a fixed schedule)
//        [--keep-history]    (pqdb's compaction keeps every Merkle leaf: no history floor)
//        [--engines pqdb,sqlite,level]   (the engines to run, in this order)
//        [--out DIR]
//
// Writes scale.json (every figure, with the host) and scale.md (one table per part) in --out
// (default bench/results/scale-<arch>[-emulated]-<runtime>-<date>[-n]/). Targets are reported, not asserted.

import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir, loadavg } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { ClassicLevel } from 'classic-level';
import { openStore, generateRecipient, generateSigner } from '../dist/node.js';
import { hostInfo, synsets, duBytes, shuffled, reportDir, peerAead } from './harness.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const ALL_PARTS = ['ingest', 'reads', 'open', 'compaction', 'migration'];
const SIZES = String(arg('--sizes', '100000,1000000')).split(',').map(Number);
const PARTS = String(arg('--parts', ALL_PARTS.join(','))).split(',');
for (const p of PARTS)
  if (!ALL_PARTS.includes(p)) throw new RangeError(`--parts expected some of ${ALL_PARTS.join(',')}, got "${p}"`);
const part = (p) => PARTS.includes(p);
const BATCH = Number(arg('--batch', 1000));
const READS = Number(arg('--reads', 100_000));
const CHANGES = Number(arg('--changes', 10_000));
const ROUNDS = Number(arg('--rounds', 3));
const LIVE_SAMPLE = Number(arg('--live-sample', 1000));
/** No reader during compaction and migration: their time alone, to compare with the time beside one. */
const NO_READER = args.includes('--no-reader');
/**
 * Reads per second the reader during compaction and migration issues on a fixed schedule (a read's
 * latency from its scheduled time); 0: one read after another, as fast as they come back.
 */
const READER_RATE = Number(arg('--reader-rate', 0));
/** pqdb's compaction keeps every Merkle leaf (no history floor): the price of the whole history. */
const KEEP_HISTORY = args.includes('--keep-history');
if (!(READER_RATE >= 0)) throw new RangeError(`--reader-rate expected reads per second (0: back to back)`);
const OUT = arg('--out', undefined) ?? reportDir('scale', { dir: join(repo, 'bench', 'results') });
const MIGRATE_TO = 'cnsa2-gcm-hkdf384-commit';
const READER_DOC =
  READER_RATE > 0
    ? `A reader in the benchmark's process issues random gets one at a time on a fixed schedule of ${READER_RATE} a second during it; a read's latency runs from its scheduled time to its value, so event-loop time spent on the operation counts.`
    : "A reader in the benchmark's process issues random gets one at a time during it; a read's latency runs from when it was due (the previous read's value) to its value, so event-loop time spent on the operation counts.";
const TARGETS = Object.freeze({ migrationMs: 45_000, migrationReadP99Ms: 25, diskToLive: 1.3 });
const ENGINES = arg('--engines', 'pqdb,sqlite,level').split(',');
for (const e of ENGINES)
  if (!['pqdb', 'sqlite', 'level'].includes(e)) throw new RangeError(`--engines: unknown engine ${e}`);
const NAMES = { pqdb: 'pqdb', sqlite: 'better-sqlite3', level: 'classic-level' };
const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
const enc = new TextEncoder();
const now = () => performance.now();
const base = mkdtempSync(join(tmpdir(), 'pqdb-scale-'));
const peerKey = randomBytes(32);
/** 1, 5 and 15-minute load averages at the start and the end: figures from a busy host are slower and noisier. */
const load = { atStart: loadavg() };

const source = synsets(Infinity);
/** Record i: synset i mod the source, under an id of its own; `round` > 0 gives it a new value. */
const record = (i, round = 0) => {
  const s = source[i % source.length];
  const lap = Math.floor(i / source.length);
  const id = lap === 0 ? s.id : `${s.id}.${lap}`;
  return { id, value: round === 0 ? s.value : { ...s.value, gloss: `${s.value.gloss} (revision ${round})` } };
};
/** IV ‖ AES-256-GCM ciphertext ‖ tag, the record's id as AAD; `unseal` authenticates, decrypts and parses. */
const { seal, open: unseal } = peerAead(peerKey);

/** Nearest-rank percentile of an ascending array. */
const pct = (sorted, p) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)];
function latencyStats(ms) {
  const s = Float64Array.from(ms).sort();
  return { reads: s.length, p50Ms: pct(s, 0.5), p99Ms: pct(s, 0.99), maxMs: s.length === 0 ? NaN : s[s.length - 1] };
}

/**
 * Runs `work` while a reader in this process issues random gets, one at a time, until it settles.
 * Each read's latency runs from when it became due to its value, so the time the event loop spent
 * on `work` counts against it; `getMs` times the call alone. Due: with --reader-rate R, on a fixed
 * schedule of R reads a second (a read the loop kept waiting makes the next ones late too);
 * without, when the previous read's value came back (the reader then yields to the event loop,
 * setImmediate, so `work` gets its turns).
 */
async function readDuring(work, get, ids) {
  let settled = false;
  const due = [];
  const call = [];
  const t = now();
  const op = Promise.resolve()
    .then(work)
    .finally(() => (settled = true));
  const reader = (async () => {
    let k = 0;
    let from = now();
    const start = from;
    while (!settled && !NO_READER) {
      if (READER_RATE > 0) {
        from = start + (k * 1000) / READER_RATE;
        if (from > now()) await new Promise((resolve) => setTimeout(resolve, from - now()));
        if (settled) break;
      }
      const id = ids[k++ % ids.length];
      const t0 = now();
      if ((await get(id)) === undefined) throw new Error(`a read during the operation missed ${id}`);
      const t1 = now();
      due.push(t1 - from);
      call.push(t1 - t0);
      if (READER_RATE === 0) {
        await new Promise((resolve) => setImmediate(resolve));
        from = t1; // the next read is due now
      }
    }
  })();
  const [outcome] = await Promise.allSettled([op, reader]);
  const wallMs = now() - t;
  await reader; // a failed read rejects here
  if (outcome.status === 'rejected') throw outcome.reason;
  return { result: outcome.value, wallMs, reads: latencyStats(due), getMs: latencyStats(call) };
}

/** Byte length of the sealed record inside a sealed export ("PQDX" ‖ 2 ‖ be16(|leaf|) ‖ leaf ‖ be32(|record|) ‖ …; docs/format.md). */
function exportedRecordBytes(x) {
  const leaf = (x[5] << 8) | x[6];
  const at = 7 + leaf;
  return ((x[at] << 24) | (x[at + 1] << 16) | (x[at + 2] << 8) | x[at + 3]) >>> 0;
}

function coldOpen(h) {
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const t = now();
    const out = execFileSync(process.execPath, [join(repo, 'bench', 'scale', 'open.mjs'), JSON.stringify(h)], {
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    });
    runs.push({ ...JSON.parse(out), spawnToExitMs: now() - t });
  }
  runs.sort((a, b) => a.openMs - b.openMs);
  const m = runs[1];
  if (!m.found) throw new Error(`${h.engine}: the cold open did not find ${h.id}`);
  return { openMs: m.openMs, processMs: m.totalMs, rssMiB: m.rssBytes / 2 ** 20, runs };
}

// ---- engines: one small adapter each ------------------------------------------------------------

/** pqdb's file store; `at(i, round)` is record i's value in that round. */
function pqdbEngine(dir) {
  const who = generateRecipient();
  const signer = generateSigner();
  const location = join(dir, 's');
  const unlock = Uint8Array.from(who.secretKey);
  let store;
  let words;
  return {
    name: 'pqdb',
    get store() {
      return store;
    },
    get words() {
      return words;
    },
    async open(create = false) {
      const t = now();
      store = await openStore({
        location,
        create,
        recipients: [who.publicKey],
        unlock: Uint8Array.from(unlock),
        signer: Uint8Array.from(signer.secretKey),
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
        autoCompact: false, // the compaction part measures one explicit compaction, before and after
      });
      words = store.collection('synsets', { schema });
      return now() - t;
    },
    async write(from, to, round) {
      for (let i = from; i < to; i += BATCH)
        await store.batch((tx) => {
          for (let j = i; j < Math.min(i + BATCH, to); j++) {
            const r = record(j, round);
            tx.put(words, r.id, r.value);
          }
        });
    },
    get: (id) => words.get(id),
    close: () => store.close(),
    handle: (id) => ({
      engine: 'pqdb',
      dir: location,
      id,
      unlock: Buffer.from(unlock).toString('base64'),
      schema: JSON.stringify(schema),
    }),
  };
}

function sqliteEngine(dir) {
  const file = join(dir, 'db.sqlite');
  let db;
  let put;
  let get;
  let batch;
  let sealedBytes = 0;
  return {
    name: 'sqlite',
    file,
    /** IV + ciphertext + tag of the records the last write() wrote. */
    get sealedBytes() {
      return sealedBytes;
    },
    async open() {
      const t = now();
      db = new Database(file);
      db.pragma('journal_mode = WAL');
      db.pragma('synchronous = FULL'); // each COMMIT fsyncs the WAL, as pqdb's commit is durable
      db.exec('CREATE TABLE IF NOT EXISTS synsets (id TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID');
      put = db.prepare('INSERT OR REPLACE INTO synsets VALUES (?, ?)');
      get = db.prepare('SELECT value FROM synsets WHERE id = ?').pluck();
      batch = db.transaction((from, to, round) => {
        for (let j = from; j < to; j++) {
          const r = record(j, round);
          const v = seal(r.value, enc.encode(r.id));
          sealedBytes += v.length;
          put.run(r.id, v);
        }
      });
      return now() - t;
    },
    async write(from, to, round) {
      sealedBytes = 0;
      for (let i = from; i < to; i += BATCH) batch(i, Math.min(i + BATCH, to), round);
    },
    get: (id) => unseal(get.get(id), enc.encode(id)),
    /** Folds the WAL into the database file, so bytes on disk are the database's. */
    settle: () => db.pragma('wal_checkpoint(TRUNCATE)'),
    close: async () => db.close(),
    handle: (id) => ({ engine: 'sqlite', dir, id }),
  };
}

function levelEngine(dir) {
  const location = join(dir, 'db');
  let db;
  let sealedBytes = 0;
  return {
    name: 'level',
    get db() {
      return db;
    },
    get sealedBytes() {
      return sealedBytes;
    },
    async open() {
      const t = now();
      db = new ClassicLevel(location, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
      await db.open();
      return now() - t;
    },
    async write(from, to, round) {
      sealedBytes = 0;
      for (let i = from; i < to; i += BATCH) {
        const ops = [];
        for (let j = i; j < Math.min(i + BATCH, to); j++) {
          const r = record(j, round);
          const v = seal(r.value, enc.encode(r.id));
          sealedBytes += v.length;
          ops.push({ type: 'put', key: r.id, value: v });
        }
        await db.batch(ops, { sync: true });
      }
    },
    get: (id) => unseal(db.getSync(id), enc.encode(id)),
    close: () => db.close(),
    handle: (id) => ({ engine: 'level', dir: location, id }),
  };
}

const ENGINE = { pqdb: pqdbEngine, sqlite: sqliteEngine, level: levelEngine };

// ---- the parts -----------------------------------------------------------------------------------

/** --rounds full rounds of updates, the engine's compaction with a reader during it, bytes before and after. */
async function compaction(e, dir, live, readIds) {
  await e.open();
  const rounds = [];
  for (let round = 1; round <= ROUNDS; round++) {
    const t = now();
    await e.write(0, live, round);
    rounds.push({ round, ms: now() - t, recordsPerSec: live / ((now() - t) / 1000) });
  }
  const c = { rounds, records: live };
  if (e.name === 'pqdb') {
    const t = now();
    await e.store.checkpoint();
    c.checkpointMs = now() - t;
    // Live sealed bytes: the mean sealed-record size of a sample of live records (read from their
    // sealed exports) × the live records. Ids and index entries are not counted.
    const sample = shuffled(live, 11).slice(0, Math.min(LIVE_SAMPLE, live));
    let sum = 0;
    for (const i of sample) sum += exportedRecordBytes(await e.words.exportSealed(record(i).id));
    c.sealedBytesPerRecord = sum / sample.length;
    c.liveSample = sample.length;
    c.liveSealedBytes = Math.round(c.sealedBytesPerRecord * e.words.size);
    c.liveRecords = e.words.size;
  } else {
    // The last round wrote every live record once: its sealed bytes are the live ones, exactly.
    c.liveSealedBytes = e.sealedBytes;
    c.sealedBytesPerRecord = e.sealedBytes / live;
    c.liveRecords = live;
    e.settle?.();
  }
  c.bytesBefore = duBytes(dir);
  if (e.name === 'pqdb') {
    if (typeof e.store.compact !== 'function') c.skipped = 'store.compact is not available in this build';
    else {
      let progressEvents = 0;
      let lastProgress;
      const r = await readDuring(
        () =>
          e.store.compact({
            keepHistory: KEEP_HISTORY,
            onProgress: (p) => {
              progressEvents++;
              lastProgress = p;
            },
          }),
        e.get,
        readIds,
      );
      Object.assign(c, { compactionMs: r.wallMs, during: r.reads, getMs: r.getMs, result: r.result ?? {} });
      c.progressEvents = progressEvents;
      if (lastProgress !== undefined) c.lastProgress = lastProgress;
    }
  } else if (e.name === 'sqlite') {
    const worker = new Worker(join(repo, 'bench', 'scale', 'vacuum.mjs'), { workerData: { file: e.file } });
    const r = await readDuring(
      () =>
        new Promise((resolve, reject) => {
          worker.once('message', resolve);
          worker.once('error', reject);
        }),
      e.get,
      readIds,
    );
    Object.assign(c, { compactionMs: r.wallMs, vacuumMs: r.result.vacuumMs, during: r.reads, getMs: r.getMs });
    e.settle();
  } else {
    // Every key sorts after '' and before U+FFFF.
    const r = await readDuring(() => e.db.compactRange('', '\uffff'), e.get, readIds);
    Object.assign(c, { compactionMs: r.wallMs, during: r.reads, getMs: r.getMs });
  }
  if (c.skipped === undefined) c.bytesAfter = duBytes(dir);
  await e.close();
  c.diskToLiveBefore = c.bytesBefore / c.liveSealedBytes;
  c.bytesPerRecordBefore = c.bytesBefore / c.liveRecords;
  if (c.bytesAfter !== undefined) {
    c.diskToLiveAfter = c.bytesAfter / c.liveSealedBytes;
    c.bytesPerRecordAfter = c.bytesAfter / c.liveRecords;
  }
  return c;
}

/** pqdb: the whole store to MIGRATE_TO, a reader in the same process during it, and the accounting. */
async function migration(e, readIds) {
  const reopenMs = await e.open();
  let progressEvents = 0;
  const r = await readDuring(
    () => e.store.migrate({ to: MIGRATE_TO, onProgress: () => progressEvents++ }),
    e.get,
    readIds,
  );
  const s = r.result;
  const accounting = {
    copied: s.copied,
    superseded: s.superseded,
    deleted: s.deleted,
    withheld: s.withheld,
    failed: s.failed,
    inserted: s.inserted,
    total: s.total,
  };
  const m = {
    to: MIGRATE_TO,
    reopenMs,
    migrationMs: r.wallMs,
    workMs: s.workMs,
    phaseMs: s.phaseMs,
    phase: s.phase,
    accounting,
    balanced: s.copied + s.superseded + s.deleted + s.withheld + s.failed + s.inserted === s.total,
    failures: s.failures,
    progressEvents,
    during: r.reads,
    getMs: r.getMs,
  };
  await e.close();
  return m;
}

async function run(engine, n) {
  const dir = join(base, `${engine}-${n}`);
  mkdirSync(dir, { recursive: true });
  const e = ENGINE[engine](dir);
  const readIds = shuffled(n)
    .slice(0, Math.min(READS, n))
    .map((i) => record(i).id);
  const probe = readIds[0];
  const r = { engine, records: n };
  const say = (s) => console.log(`${engine.padEnd(6)} ${String(n).padStart(8)}  ${s}`);

  await e.open(true);
  let t = now();
  await e.write(0, n, 0);
  const ingestMs = now() - t;
  r.ingest = { ms: ingestMs, recordsPerSec: n / (ingestMs / 1000) };
  if (engine === 'pqdb') {
    t = now();
    await e.store.checkpoint();
    r.ingest.checkpointMs = now() - t;
  }
  e.settle?.();
  r.ingest.bytesOnDisk = duBytes(dir);
  r.ingest.bytesPerRecord = r.ingest.bytesOnDisk / n;
  say(
    `ingest ${r.ingest.recordsPerSec.toFixed(0)} rec/s, ${r.ingest.bytesPerRecord.toFixed(0)} B/record${r.ingest.checkpointMs !== undefined ? `, checkpoint ${r.ingest.checkpointMs.toFixed(0)} ms` : ''}`,
  );

  if (part('reads')) {
    t = now();
    for (const id of readIds) {
      let v = e.get(id);
      if (v instanceof Promise) v = await v; // pqdb's get is asynchronous, the peers' are not
      if (v === undefined) throw new Error(`${engine}: ${id} is missing`);
    }
    const ms = now() - t;
    r.reads = { reads: readIds.length, ms, recordsPerSec: readIds.length / (ms / 1000) };
    say(`random reads ${r.reads.recordsPerSec.toFixed(0)} rec/s`);
  }
  await e.close();

  let live = n;
  if (part('open')) {
    const atCheckpoint = coldOpen(e.handle(probe));
    await e.open();
    t = now();
    await e.write(n, n + CHANGES, 0);
    const writeMs = now() - t;
    await e.close();
    live = n + CHANGES;
    const afterChanges = coldOpen(e.handle(record(n + CHANGES - 1).id));
    r.open = { changes: CHANGES, changesWriteMs: writeMs, atCheckpoint, afterChanges };
    say(
      `cold open ${atCheckpoint.openMs.toFixed(0)} ms (RSS ${atCheckpoint.rssMiB.toFixed(0)} MiB) at the checkpoint, ${afterChanges.openMs.toFixed(0)} ms (RSS ${afterChanges.rssMiB.toFixed(0)} MiB) ${CHANGES} changes later`,
    );
  }

  if (part('compaction')) {
    r.compaction = await compaction(e, dir, live, readIds);
    const c = r.compaction;
    say(
      `${ROUNDS} update rounds ${c.rounds.map((x) => x.recordsPerSec.toFixed(0)).join('/')} rec/s; disk ${(c.bytesBefore / 2 ** 20).toFixed(1)} MiB (${c.diskToLiveBefore.toFixed(2)}× live) → ${c.skipped ?? `${(c.bytesAfter / 2 ** 20).toFixed(1)} MiB (${c.diskToLiveAfter.toFixed(2)}× live) in ${c.compactionMs.toFixed(0)} ms, reads p99 ${c.during.p99Ms.toFixed(1)} ms`}`,
    );
  }

  if (part('migration') && engine === 'pqdb') {
    r.migration = await migration(e, readIds);
    const m = r.migration;
    say(
      `migration to ${MIGRATE_TO} ${(m.migrationMs / 1000).toFixed(1)} s; ${m.during.reads} reads during it, p50 ${m.during.p50Ms.toFixed(2)} / p99 ${m.during.p99Ms.toFixed(1)} / max ${m.during.maxMs.toFixed(1)} ms; ${JSON.stringify(m.accounting)}`,
    );
  }
  rmSync(dir, { recursive: true, force: true });
  return r;
}

const results = [];
try {
  for (const n of SIZES)
    for (const engine of ENGINES) {
      // Peers have no migration: a run of that part alone skips them.
      if (engine !== 'pqdb' && PARTS.every((p) => p === 'migration')) continue;
      results.push(await run(engine, n));
    }
} finally {
  rmSync(base, { recursive: true, force: true });
}

// ---- report --------------------------------------------------------------------------------------

const fmt = (x, d = 0) =>
  x === undefined || Number.isNaN(x)
    ? '—'
    : x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const mib = (b) => (b === undefined ? '—' : `${fmt(b / 2 ** 20, 1)} MiB`);
const ms = (x, d = 0) => (x === undefined || Number.isNaN(x) ? '—' : `${fmt(x, d)} ms`);
const ratio = (a, b) => (a === undefined || b === undefined || b === 0 ? '—' : `${(a / b).toFixed(2)}×`);
const by = (n) => Object.fromEntries(results.filter((r) => r.records === n).map((r) => [r.engine, r]));
const host = hostInfo();
load.atEnd = loadavg();
const md = [
  '# Scale: pqdb against better-sqlite3 and classic-level',
  '',
  `${host.date} · ${host.cpu} (${host.cores} cores) · ${host.arch} · ${host.runtime} · batches of ${BATCH} · load ${load.atStart[0].toFixed(1)} → ${load.atEnd[0].toFixed(1)} · parts: ${PARTS.join(', ')}${NO_READER ? ' · no reader during compaction and migration' : ''}`,
  '',
  'Peers seal each record with node:crypto AES-256-GCM (IV ‖ ciphertext ‖ tag, the id as AAD) and unseal it on every read. Every commit (one per batch) is durable: pqdb fdatasync, SQLite WAL with synchronous=FULL, classic-level batch() with sync: true.',
  '',
];

if (part('ingest')) {
  md.push(
    '## Ingest',
    '',
    '| engine | records | ingest rec/s | checkpoint | bytes / record |',
    '|---|---:|---:|---:|---:|',
    ...results.map(
      (r) =>
        `| ${NAMES[r.engine]} | ${fmt(r.records)} | ${fmt(r.ingest.recordsPerSec)} | ${ms(r.ingest.checkpointMs)} | ${fmt(r.ingest.bytesPerRecord)} |`,
    ),
    '',
    ...SIZES.filter((n) => by(n).sqlite).map((n) => {
      const b = by(n);
      return `- ${fmt(n)} records: pqdb ingests ${ratio(b.pqdb.ingest.recordsPerSec, b.sqlite.ingest.recordsPerSec)} SQLite's rate and ${ratio(b.pqdb.ingest.recordsPerSec, b.level.ingest.recordsPerSec)} classic-level's.`;
    }),
    '',
  );
}

if (part('reads')) {
  md.push(
    '## Random reads',
    '',
    `${fmt(READS)} random ids (fewer when the store is smaller), one at a time, on the warm store right after the ingest.`,
    '',
    '| engine | records | random reads rec/s |',
    '|---|---:|---:|',
    ...results.map((r) => `| ${NAMES[r.engine]} | ${fmt(r.records)} | ${fmt(r.reads.recordsPerSec)} |`),
    '',
    ...SIZES.filter((n) => by(n).sqlite).map((n) => {
      const b = by(n);
      return `- ${fmt(n)} records: pqdb reads at ${ratio(b.pqdb.reads.recordsPerSec, b.sqlite.reads.recordsPerSec)} SQLite's rate and ${ratio(b.pqdb.reads.recordsPerSec, b.level.reads.recordsPerSec)} classic-level's.`;
    }),
    '',
  );
}

if (part('open')) {
  md.push(
    '## Cold open against changes since the last checkpoint',
    '',
    `A new process opens the store read-only and reads one record (median of 3 by open time; RSS is that process's after the read): right after the checkpoint ("0 changes"), then after ${fmt(CHANGES)} new records written without a checkpoint. Peers have no checkpoint; they get the same ${fmt(CHANGES)} records.`,
    '',
    `| engine | records | open, 0 changes | process start → read | RSS | open, ${fmt(CHANGES)} changes | process start → read | RSS |`,
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map((r) => {
      const a = r.open.atCheckpoint;
      const b = r.open.afterChanges;
      return `| ${NAMES[r.engine]} | ${fmt(r.records)} | ${ms(a.openMs, 1)} | ${ms(a.processMs)} | ${fmt(a.rssMiB)} MiB | ${ms(b.openMs, 1)} | ${ms(b.processMs)} | ${fmt(b.rssMiB)} MiB |`;
    }),
    '',
    ...SIZES.filter((n) => by(n).sqlite).map((n) => {
      const b = by(n);
      return `- ${fmt(n)} records: pqdb opens in ${ratio(b.pqdb.open.atCheckpoint.openMs, b.sqlite.open.atCheckpoint.openMs)} SQLite's time and ${ratio(b.pqdb.open.atCheckpoint.openMs, b.level.open.atCheckpoint.openMs)} classic-level's at the checkpoint; ${fmt(CHANGES)} changes later, ${ratio(b.pqdb.open.afterChanges.openMs, b.pqdb.open.atCheckpoint.openMs)} its own open at the checkpoint.`;
    }),
  );
  const p = results.filter((r) => r.engine === 'pqdb');
  if (p.length > 1)
    md.push(
      `- pqdb from ${fmt(p[0].records)} to ${fmt(p.at(-1).records)} records (${ratio(p.at(-1).records, p[0].records)} the store, the same ${fmt(CHANGES)} changes): open ${ratio(p.at(-1).open.atCheckpoint.openMs, p[0].open.atCheckpoint.openMs)} at the checkpoint, ${ratio(p.at(-1).open.afterChanges.openMs, p[0].open.afterChanges.openMs)} after the changes. Open cost that tracks the store's size rather than the changes means open still replays the whole store.`,
    );
  md.push('');
}

if (part('compaction')) {
  md.push(
    '## Compaction',
    '',
    `${ROUNDS} full rounds of updates of every record (new values), then the engine's compaction: pqdb \`store.compact()\`, SQLite \`VACUUM\` (on a second connection in a worker thread: it is synchronous and would hold the reading thread), classic-level \`compactRange\` over every key. ${READER_DOC} Live sealed bytes: live records × their sealed size (pqdb: the mean sealed-record size of ${fmt(LIVE_SAMPLE)} live records read from their sealed exports; peers: IV + ciphertext + tag of the last round, exactly); ids and index entries are not counted. Target: disk ≤ ${TARGETS.diskToLive}× live after compaction.`,
    '',
    '| engine | records | update rec/s (rounds) | disk before | B/record before | disk / live before | compaction | disk after | B/record after | disk / live after | live sealed bytes | reads during | read p50 | read p99 | read max |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...results.map((r) => {
      const c = r.compaction;
      const rounds = c.rounds.map((x) => fmt(x.recordsPerSec)).join(' / ');
      return `| ${NAMES[r.engine]} | ${fmt(c.records)} | ${rounds} | ${mib(c.bytesBefore)} | ${fmt(c.bytesPerRecordBefore)} | ${fmt(c.diskToLiveBefore, 2)}× | ${ms(c.compactionMs)} | ${mib(c.bytesAfter)} | ${fmt(c.bytesPerRecordAfter)} | ${c.diskToLiveAfter === undefined ? '—' : `${fmt(c.diskToLiveAfter, 2)}×`} | ${mib(c.liveSealedBytes)} | ${fmt(c.during?.reads)} | ${ms(c.during?.p50Ms, 2)} | ${ms(c.during?.p99Ms, 1)} | ${ms(c.during?.maxMs, 1)} |`;
    }),
    '',
  );
  for (const n of SIZES) {
    const b = by(n);
    if (b.pqdb?.compaction === undefined) continue;
    const c = b.pqdb.compaction;
    if (c.skipped !== undefined) md.push(`- ${fmt(n)} records, pqdb: ${c.skipped}.`);
    else
      md.push(
        `- ${fmt(n)} records, pqdb: compaction ${ratio(c.compactionMs, b.sqlite?.compaction?.compactionMs)} SQLite's VACUUM time and ${ratio(c.compactionMs, b.level?.compaction?.compactionMs)} classic-level's; disk ${fmt(c.diskToLiveAfter, 2)}× live after it (target ≤ ${TARGETS.diskToLive}×, SQLite ${fmt(b.sqlite?.compaction?.diskToLiveAfter, 2)}×, classic-level ${fmt(b.level?.compaction?.diskToLiveAfter, 2)}×); ${JSON.stringify(c.result)}.`,
      );
  }
  md.push('');
}

if (part('migration')) {
  md.push(
    '## Live migration (pqdb only)',
    '',
    `\`store.migrate({ to: '${MIGRATE_TO}' })\` of every record (chunks of the default size) while a reader in the same process issues random gets (as for compaction: ${READER_RATE > 0 ? `${READER_RATE} a second on a fixed schedule, latency from the scheduled time` : 'one after another, latency from when the read was due'}). better-sqlite3 and classic-level have no equivalent: moving their records to another cipher is the application's own rewrite. The store migrated holds what the parts before it wrote: the open part's new records (in the accounting's total) and, after the compaction part, the dead older versions of every record it left. Targets at 1,000,000 records: ≤ ${TARGETS.migrationMs / 1000} s, read p99 ≤ ${TARGETS.migrationReadP99Ms} ms.`,
    '',
    '| engine | records | migration | work (copy / index / verify / activate) | reads during | read p50 | read p99 | read max | get alone p99 | accounting |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---|',
  );
  for (const r of results) {
    const m = r.migration;
    if (m === undefined) {
      if (r.engine !== 'pqdb')
        md.push(`| ${NAMES[r.engine]} | ${fmt(r.records)} | no equivalent | — | — | — | — | — | — | — |`);
      continue;
    }
    const ph = m.phaseMs ?? {};
    const a = m.accounting;
    md.push(
      `| pqdb | ${fmt(r.records)} | ${fmt(m.migrationMs / 1000, 1)} s | ${[ph.copying, ph.indexing, ph.verifying, ph.activating].map((x) => fmt(x)).join(' / ')} ms | ${fmt(m.during.reads)} | ${ms(m.during.p50Ms, 2)} | ${ms(m.during.p99Ms, 1)} | ${ms(m.during.maxMs, 1)} | ${ms(m.getMs.p99Ms, 1)} | ${fmt(a.copied)} copied + ${fmt(a.superseded)} superseded + ${fmt(a.deleted)} deleted + ${fmt(a.withheld)} withheld + ${fmt(a.failed)} failed + ${fmt(a.inserted)} inserted = ${fmt(a.total)}${m.balanced ? '' : ' (does not balance)'} |`,
    );
  }
  md.push('');
}

mkdirSync(OUT, { recursive: true });
writeFileSync(
  join(OUT, 'scale.json'),
  JSON.stringify(
    {
      kind: 'scale',
      host,
      node: process.version,
      load,
      sizes: SIZES,
      parts: PARTS,
      batch: BATCH,
      reads: READS,
      changes: CHANGES,
      rounds: ROUNDS,
      liveSample: LIVE_SAMPLE,
      reader: !NO_READER,
      readerRate: READER_RATE,
      keepHistory: KEEP_HISTORY,
      migrateTo: MIGRATE_TO,
      targets: TARGETS,
      results,
    },
    null,
    2,
  ),
);
writeFileSync(join(OUT, 'scale.md'), md.join('\n'));
console.log(`\nresults in ${OUT}`);
