// The store on PostgreSQL against the file store, in one run: ingest N WordNet 3.1 synsets (about
// 115 B of JSON each) in batches through openStore, read every record back in random order, cold-open
// the store, and the bytes each holds; then how soon a read-only follower learns a commit through
// LISTEN/NOTIFY. The server is a throwaway cluster (node-tests/support/postgres.ts) on this machine,
// reached over its Unix socket, with fsync on: a commit is acknowledged once its WAL is flushed, as
// the file store acknowledges after fdatasync. Last, a writer and a reader in two processes: the
// writer (node-tests/support/pg-writer.mjs, forked) commits 200 commits of 10 records, then a burst
// of 20 batches of 1,000, back to back, after a few of each size not measured (the reader's JIT
// warm-up); this process follows it with a read-only Store (openStore `follow`) and takes,
// for each commit, the time from the writer's acknowledgement to its last record read back here.
// Both processes stamp times with performance.timeOrigin + performance.now(): milliseconds since the
// epoch, from the clock the host's processes share (each process takes its time origin from the
// system clock at start, to a microsecond or so; performance.now() then counts monotonically), so
// the two stamps compare without any exchange of clocks.
//
//   node bench/postgres.mjs [--records 100000] [--batch 1000] [--out report.json]
//   (default report: bench/results/postgres-<arch>[-emulated]-<runtime>-<date>[-n].json, and .md beside it)
// Writes the JSON report and a Markdown summary beside it (same name, .md).

import { mkdtempSync, rmSync, readdirSync, statSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { fork } from 'node:child_process';
import * as esbuild from 'esbuild';
import { openStore, generateRecipient } from '../dist/node.js';
import { openPostgresPageStore } from '../dist/postgres.js';
import { hostInfo, synsets, duBytes, shuffled, reportPath } from './harness.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const BATCH = Number(arg('--batch', 1000));
const FOLLOW_COMMITS = 100;
const LAG_COMMITS = Number(arg('--lag-commits', 200));
const LAG_RECORDS = 10;
const BURST_COMMITS = Number(arg('--burst-commits', 20));
const BURST_RECORDS = 1000;
const LAG_TARGET_P99_MS = 50;

const base = mkdtempSync(join(tmpdir(), 'pqdb-bench-pg-'));
// The cluster helper is TypeScript: bundle it for this plain Node script (into build/, inside the
// repository, so that its imports of pg and vitest resolve).
const helper = join(repo, 'build', 'bench-postgres-helper.mjs');
await esbuild.build({
  entryPoints: [join(repo, 'node-tests/support/postgres.ts')],
  bundle: true,
  platform: 'node',
  format: 'esm',
  target: 'node20',
  external: ['pg', 'vitest'],
  outfile: helper,
  logLevel: 'warning',
});
const { startPostgres } = await import(pathToFileURL(helper).href);

const quantile = (xs, q) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))];
};

const now = () => performance.now();
const records = synsets(N);
const order = shuffled(records.length);
const meanJson = records.reduce((n, r) => n + JSON.stringify(r.value).length, 0) / records.length;
const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
const who = generateRecipient();
const keys = { recipients: [who.publicKey], unlock: who.secretKey, autoCheckpoint: false };
const results = [];

async function measure(name, { open, bytes }) {
  let store = await open(true);
  let words = store.collection('synsets', { schema });
  const t0 = now();
  for (let i = 0; i < records.length; i += BATCH) {
    await store.batch((tx) => {
      for (let j = i; j < Math.min(i + BATCH, records.length); j++)
        tx.put(words, records[j].id, records[j].value, { governance: { scope: 'public' } });
    });
  }
  const ingestMs = now() - t0;
  const t1 = now();
  let ok = 0;
  for (const i of order) if ((await words.get(records[i].id))?.offset === records[i].value.offset) ok++;
  const readMs = now() - t1;
  if (ok !== records.length) throw new Error(`${name}: read back ${ok} of ${records.length}`);
  await store.close();
  const t2 = now();
  store = await open(false);
  words = store.collection('synsets', { schema });
  await words.get(records[0].id);
  const openMs = now() - t2;
  await store.close();
  const stored = await bytes();
  const r = {
    name,
    records: records.length,
    ingestRecordsPerSec: records.length / (ingestMs / 1000),
    readRecordsPerSec: records.length / (readMs / 1000),
    coldOpenMs: openMs,
    storedBytes: stored,
    bytesPerRecord: stored / records.length,
  };
  results.push(r);
  console.log(
    `${name.padEnd(34)} ingest ${r.ingestRecordsPerSec.toFixed(0).padStart(8)} rec/s   random read ${r.readRecordsPerSec.toFixed(0).padStart(8)} rec/s   open ${openMs.toFixed(1).padStart(7)} ms   ${r.bytesPerRecord.toFixed(1)} B/record`,
  );
}

/** Lag figures of one series (ms): p50, p90, p99, max. */
const lagOf = (xs) => ({
  commits: xs.length,
  p50Ms: quantile(xs, 0.5),
  p90Ms: quantile(xs, 0.9),
  p99Ms: quantile(xs, 0.99),
  maxMs: Math.max(...xs),
});

/**
 * A writer process and this process following it: for each commit, the time from the writer's
 * acknowledgement to its last record read back by the follower (see the head of the file).
 */
async function writerAndReader(connectionString) {
  const clock = () => performance.timeOrigin + performance.now();
  const b64 = (x) => Buffer.from(x).toString('base64');
  const name = 'two_processes';
  const child = fork(join(repo, 'node-tests/support/pg-writer.mjs'), [connectionString, name], {
    env: { ...process.env, PQDB_TEST_PUB: b64(who.publicKey), PQDB_TEST_SEC: b64(who.secretKey) },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const inbox = [];
  let wake;
  child.on('message', (m) => (inbox.push(m), wake?.()));
  child.on('exit', () => wake?.());
  const next = async () => {
    while (inbox.length === 0) {
      if (child.exitCode !== null) throw new Error(`the writer exited with ${child.exitCode}`);
      await new Promise((resolve) => (wake = resolve));
    }
    const m = inbox.shift();
    if (m.error !== undefined) throw new Error(`writer: ${m.error}`);
    return m;
  };
  try {
    let { commit: base } = await next(); // ready: the store exists
    const readable = new Map(); // commit → when its last record was read here
    let expected = []; // commit → its last record's id, for the series running
    let seen = base;
    const storage = await openPostgresPageStore({ connectionString, name, readOnly: true });
    const errors = [];
    const reader = await openStore({
      storage,
      unlock: who.secretKey,
      readOnly: true,
      follow: {
        onCommit: ({ commit }) => {
          for (let k = seen + 1; k <= commit; k++) {
            const id = expected[k];
            if (id === undefined) continue;
            words.get(id).then(
              (v) => (v === undefined ? errors.push(`commit ${k}: ${id} not readable`) : readable.set(k, clock())),
              (e) => errors.push(String(e)),
            );
          }
          seen = Math.max(seen, commit);
        },
        onError: (e) => errors.push(`${e.code}: ${e.message}`),
      },
    });
    const words = reader.collection('c', { schema: { n: 'integer', s: 'string' } });
    const series = async (prefix, count, size) => {
      for (let i = 0; i < count; i++) expected[base + 1 + i] = `${prefix}-${i}-${size - 1}`;
      const acked = new Map();
      child.send({ op: 'commits', count, size, prefix });
      for (;;) {
        const m = await next();
        if (m.done) break;
        acked.set(m.commit, m.acked);
      }
      base += count;
      const until = Date.now() + 30_000;
      while ([...acked.keys()].some((k) => !readable.has(k)) && Date.now() < until)
        await new Promise((resolve) => setTimeout(resolve, 5));
      if (errors.length > 0) throw new Error(`the reader: ${errors.join('; ')}`);
      const lags = [...acked].map(([k, t]) => {
        if (!readable.has(k)) throw new Error(`the reader never read commit ${k}`);
        return readable.get(k) - t;
      });
      expected = [];
      return lags;
    };
    // Not measured: the reader's first commits of each size pay for the JIT.
    await series('warm', 20, LAG_RECORDS);
    await series('warmburst', 3, BURST_RECORDS);
    const small = lagOf(await series('lag', LAG_COMMITS, LAG_RECORDS));
    const burst = lagOf(await series('burst', BURST_COMMITS, BURST_RECORDS));
    child.send({ op: 'close' });
    await next();
    await reader.close();
    const result = {
      clock: 'performance.timeOrigin + performance.now() in both processes (one host)',
      small: { ...small, recordsPerCommit: LAG_RECORDS },
      burst: { ...burst, recordsPerCommit: BURST_RECORDS },
      targetP99Ms: LAG_TARGET_P99_MS,
      targetMet: Math.max(small.p99Ms, burst.p99Ms) <= LAG_TARGET_P99_MS,
    };
    for (const [what, r] of [
      [`${LAG_COMMITS} commits of ${LAG_RECORDS} records`, small],
      [`${BURST_COMMITS} batches of ${BURST_RECORDS} records`, burst],
    ])
      console.log(
        `writer + reader processes, ${what}: lag p50 ${r.p50Ms.toFixed(2)} ms, p90 ${r.p90Ms.toFixed(2)} ms, p99 ${r.p99Ms.toFixed(2)} ms, max ${r.maxMs.toFixed(2)} ms`,
      );
    console.log(`reader lag p99 target ${LAG_TARGET_P99_MS} ms: ${result.targetMet ? 'met' : 'NOT met'}`);
    return result;
  } finally {
    if (child.exitCode === null) child.kill('SIGKILL');
  }
}

console.log(
  `postgres bench: ${records.length} WordNet 3.1 synsets (mean ${meanJson.toFixed(0)} B of JSON), batches of ${BATCH}\n`,
);
// Warm-up on a memory store, so the first measured page store does not pay for the JIT alone.
{
  const warm = await openStore({ ...keys, create: true, storage: 'memory' });
  const w = warm.collection('synsets', { schema });
  for (let i = 0; i < Math.min(records.length, 5000); i += BATCH)
    await warm.batch((tx) => {
      for (let j = i; j < Math.min(i + BATCH, records.length, 5000); j++) tx.put(w, records[j].id, records[j].value);
    });
  for (let i = 0; i < Math.min(records.length, 5000); i++) await w.get(records[i].id);
  await warm.close();
}
const cluster = await startPostgres({ durable: true });
// An interrupted run stops its server too.
for (const signal of ['SIGINT', 'SIGTERM'])
  process.once(signal, () => void cluster.stop().finally(() => process.exit(130)));
let follow;
let twoProcesses;
let serverVersion;
try {
  serverVersion = (await cluster.admin.query('SHOW server_version')).rows[0].server_version;
  const connectionString = cluster.connectionString;
  await measure('pqdb (postgres page store)', {
    open: async (create) =>
      openStore({ ...keys, create, storage: await openPostgresPageStore({ connectionString, name: 'bench' }) }),
    bytes: async () =>
      Number(
        (
          await cluster.admin.query(
            "SELECT pg_total_relation_size('pqdb_pages') + pg_total_relation_size('pqdb_manifest') AS n",
          )
        ).rows[0].n,
      ),
  });
  const dir = join(base, 'fs');
  await measure('pqdb (node-fs page store)', {
    open: (create) => openStore({ ...keys, create, location: dir }),
    bytes: async () => duBytes(dir),
  });

  // Follow latency: writer commit acknowledged → the follower's view refreshed to it.
  const writer = await openPostgresPageStore({ connectionString, name: 'follow' });
  const reader = await openPostgresPageStore({ connectionString, name: 'follow', readOnly: true });
  let waiting;
  reader.watch(() => waiting?.());
  await reader.ready();
  const lags = [];
  for (let i = 0; i < FOLLOW_COMMITS; i++) {
    const target = writer.version + 1;
    const seen = new Promise((resolve) => (waiting = () => reader.version >= target && resolve()));
    await writer.commit({ pages: [{ id: i, bytes: new Uint8Array(4096) }], manifest: new Uint8Array([i & 0xff]) });
    const acked = now();
    await seen;
    lags.push(now() - acked);
  }
  await reader.close();
  await writer.close();
  follow = { commits: FOLLOW_COMMITS, medianMs: quantile(lags, 0.5), p90Ms: quantile(lags, 0.9) };
  console.log(
    `follower (LISTEN/NOTIFY): view refreshed ${follow.medianMs.toFixed(2)} ms after the commit was acknowledged (median of ${FOLLOW_COMMITS}; p90 ${follow.p90Ms.toFixed(2)} ms)`,
  );

  twoProcesses = await writerAndReader(connectionString);
} finally {
  await cluster.stop();
  rmSync(base, { recursive: true, force: true });
}

const host = hostInfo();
const out = arg('--out', undefined) ?? reportPath('postgres', { host });
mkdirSync(dirname(out), { recursive: true });
const report = {
  host,
  postgres: serverVersion,
  fsync: true,
  batch: BATCH,
  meanRecordJsonBytes: meanJson,
  results,
  follow,
  twoProcesses,
};
writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
const md = [
  `# pqdb on PostgreSQL ${serverVersion} against the file store`,
  '',
  `Measured ${host.date.slice(0, 10)} on ${host.cpu} (${host.cores} cores, ${host.arch}${host.emulated ? ', emulated' : ''}), ${host.runtime}; one local cluster over its Unix socket, fsync on.`,
  `${records.length} WordNet 3.1 synsets (mean ${meanJson.toFixed(0)} B of JSON), batches of ${BATCH} through \`openStore\`; reads of every record in random order.`,
  '',
  '| page store | ingest (records/s) | random read (records/s) | cold open | stored bytes / record |',
  '|---|---:|---:|---:|---:|',
  ...results.map(
    (r) =>
      `| ${r.name} | ${r.ingestRecordsPerSec.toFixed(0)} | ${r.readRecordsPerSec.toFixed(0)} | ${r.coldOpenMs.toFixed(1)} ms | ${r.bytesPerRecord.toFixed(1)} |`,
  ),
  '',
  `A read-only follower's view reached a commit ${follow.medianMs.toFixed(2)} ms after the writer's acknowledgement (median of ${follow.commits} commits; p90 ${follow.p90Ms.toFixed(2)} ms), through LISTEN/NOTIFY.`,
  '',
  '## A writer + a reader on two processes',
  '',
  `The writer process commits back to back; the reader process follows it with a read-only \`Store\` (\`openStore({ …, readOnly: true, follow })\`). Lag: from the writer's acknowledgement to the commit's last record read back on the reader, both stamped with \`performance.timeOrigin + performance.now()\` (the host's shared clock). Target: p99 ≤ ${LAG_TARGET_P99_MS} ms (${twoProcesses.targetMet ? 'met' : 'not met'}).`,
  '',
  '| commits | records each | lag p50 | p90 | p99 | max |',
  '|---:|---:|---:|---:|---:|---:|',
  ...[twoProcesses.small, twoProcesses.burst].map(
    (r) =>
      `| ${r.commits} | ${r.recordsPerCommit} | ${r.p50Ms.toFixed(2)} ms | ${r.p90Ms.toFixed(2)} ms | ${r.p99Ms.toFixed(2)} ms | ${r.maxMs.toFixed(2)} ms |`,
  ),
  '',
].join('\n');
writeFileSync(out.replace(/\.json$/, '.md'), md);
console.log(`\nreport: ${out} (and .md)`);
