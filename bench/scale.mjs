// Scale: the store at 100,000 and 1,000,000 records (DESIGN §6) against better-sqlite3 and
// classic-level, each sealing every record with node:crypto AES-256-GCM, in the same run. Records are
// WordNet 3.1 synsets (lemma, part of speech, gloss, offset; ~115 B of JSON), repeated under new ids
// past the 117,659 synsets. Per engine and size: ingest in batches of 1,000, random reads (100,000
// ids), a checkpoint (pqdb), bytes on disk, then a cold open in a new process (bench/scale/open.mjs:
// open plus one read, and RSS after it).
//
//   node bench/scale.mjs [--sizes 100000,1000000] [--batch 1000] [--reads 100000] [--out DIR]
//
// Writes scale.json and scale.md (default bench/results/scale-<date>/).

import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { execFileSync } from 'node:child_process';
import { createCipheriv, randomBytes } from 'node:crypto';
import Database from 'better-sqlite3';
import { ClassicLevel } from 'classic-level';
import { openStore, generateRecipient, generateSigner } from '../dist/node.js';
import { hostInfo, synsets, duBytes, shuffled } from './harness.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const SIZES = String(arg('--sizes', '100000,1000000')).split(',').map(Number);
const BATCH = Number(arg('--batch', 1000));
const READS = Number(arg('--reads', 100_000));
const OUT = arg('--out', join(repo, 'bench', 'results', `scale-${new Date().toISOString().slice(0, 10)}`));
const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
const enc = new TextEncoder();
const now = () => performance.now();
const base = mkdtempSync(join(tmpdir(), 'pqdb-scale-'));
const peerKey = randomBytes(32);

const source = synsets(Infinity);
/** Record i: synset i mod the source, under an id of its own. */
const record = (i) => {
  const s = source[i % source.length];
  const round = Math.floor(i / source.length);
  return { id: round === 0 ? s.id : `${s.id}.${round}`, value: s.value };
};
function seal(obj, aad) {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', peerKey, iv);
  c.setAAD(aad);
  return Buffer.concat([iv, c.update(enc.encode(JSON.stringify(obj))), c.final(), c.getAuthTag()]);
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

async function run(engine, n) {
  const dir = join(base, `${engine}-${n}`);
  mkdirSync(dir, { recursive: true });
  const ids = shuffled(n).slice(0, Math.min(READS, n));
  const probe = record(ids[0]).id;
  let ingestMs, readMs, checkpointMs, open;
  if (engine === 'pqdb') {
    const who = generateRecipient();
    const signer = generateSigner();
    const store = await openStore({
      location: join(dir, 's'),
      create: true,
      recipients: [who.publicKey],
      unlock: who.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
    });
    const words = store.collection('synsets', { schema });
    let t = now();
    for (let i = 0; i < n; i += BATCH)
      await store.batch((tx) => {
        for (let j = i; j < Math.min(i + BATCH, n); j++) {
          const r = record(j);
          tx.put(words, r.id, r.value);
        }
      });
    ingestMs = now() - t;
    t = now();
    await store.checkpoint();
    checkpointMs = now() - t;
    t = now();
    for (const i of ids)
      if ((await words.get(record(i).id)) === undefined) throw new Error('pqdb: a record is missing');
    readMs = now() - t;
    await store.close();
    const unlock = Buffer.from(who.secretKey).toString('base64');
    open = coldOpen({ engine, dir: join(dir, 's'), id: probe, unlock, schema: JSON.stringify(schema) });
  } else if (engine === 'sqlite') {
    const db = new Database(join(dir, 'db.sqlite'));
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE synsets (id TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID');
    const ins = db.prepare('INSERT INTO synsets VALUES (?, ?)');
    const batch = db.transaction((from, to) => {
      for (let j = from; j < to; j++) {
        const r = record(j);
        ins.run(r.id, seal(r.value, enc.encode(r.id)));
      }
    });
    let t = now();
    for (let i = 0; i < n; i += BATCH) batch(i, Math.min(i + BATCH, n));
    ingestMs = now() - t;
    const get = db.prepare('SELECT value FROM synsets WHERE id = ?');
    t = now();
    for (const i of ids) if (get.get(record(i).id) === undefined) throw new Error('sqlite: a record is missing');
    readMs = now() - t;
    db.close();
    open = coldOpen({ engine, dir, id: probe });
  } else {
    const db = new ClassicLevel(join(dir, 'db'), { keyEncoding: 'utf8', valueEncoding: 'buffer' });
    await db.open();
    let t = now();
    for (let i = 0; i < n; i += BATCH) {
      const ops = [];
      for (let j = i; j < Math.min(i + BATCH, n); j++) {
        const r = record(j);
        ops.push({ type: 'put', key: r.id, value: seal(r.value, enc.encode(r.id)) });
      }
      await db.batch(ops, { sync: true });
    }
    ingestMs = now() - t;
    t = now();
    for (const i of ids) if ((await db.get(record(i).id)) === undefined) throw new Error('level: a record is missing');
    readMs = now() - t;
    await db.close();
    open = coldOpen({ engine, dir: join(dir, 'db'), id: probe });
  }
  const r = {
    engine,
    records: n,
    ingestRecordsPerSec: n / (ingestMs / 1000),
    randomReadsPerSec: ids.length / (readMs / 1000),
    ...(checkpointMs !== undefined ? { checkpointMs } : {}),
    bytesOnDisk: duBytes(dir),
    coldOpenMs: open.openMs,
    coldProcessMs: open.processMs,
    rssAfterOpenMiB: open.rssMiB,
    coldOpenRuns: open.runs,
  };
  r.bytesPerRecord = r.bytesOnDisk / n;
  console.log(
    `${engine.padEnd(7)} ${String(n).padStart(8)}  ingest ${r.ingestRecordsPerSec.toFixed(0).padStart(7)} rec/s  reads ${r.randomReadsPerSec.toFixed(0).padStart(7)} rec/s  cold open ${r.coldOpenMs.toFixed(0).padStart(6)} ms (process ${r.coldProcessMs.toFixed(0)} ms)  RSS ${r.rssAfterOpenMiB.toFixed(0)} MiB  ${r.bytesPerRecord.toFixed(0)} B/record${checkpointMs !== undefined ? `  checkpoint ${checkpointMs.toFixed(0)} ms` : ''}`,
  );
  rmSync(dir, { recursive: true, force: true });
  return r;
}

const results = [];
try {
  for (const n of SIZES) for (const engine of ['pqdb', 'sqlite', 'level']) results.push(await run(engine, n));
} finally {
  rmSync(base, { recursive: true, force: true });
}

const fmt = (x, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
const rows = results.map(
  (r) =>
    `| ${r.engine} | ${fmt(r.records)} | ${fmt(r.ingestRecordsPerSec)} | ${fmt(r.randomReadsPerSec)} | ${r.checkpointMs === undefined ? '–' : `${fmt(r.checkpointMs)} ms`} | ${fmt(r.coldOpenMs)} ms | ${fmt(r.coldProcessMs)} ms | ${fmt(r.rssAfterOpenMiB)} MiB | ${fmt(r.bytesPerRecord)} |`,
);
const ratios = SIZES.map((n) => {
  const by = Object.fromEntries(results.filter((r) => r.records === n).map((r) => [r.engine, r]));
  return `- ${fmt(n)} records: pqdb ingest ${(by.pqdb.ingestRecordsPerSec / by.sqlite.ingestRecordsPerSec).toFixed(2)}× SQLite and ${(by.pqdb.ingestRecordsPerSec / by.level.ingestRecordsPerSec).toFixed(2)}× classic-level; random reads ${(by.pqdb.randomReadsPerSec / by.sqlite.randomReadsPerSec).toFixed(2)}× SQLite; cold open ${fmt(by.pqdb.coldOpenMs)} ms against ${fmt(by.sqlite.coldOpenMs, 1)} ms for SQLite.`;
});
const host = hostInfo();
const md = [
  '# Scale: pqdb against better-sqlite3 and classic-level',
  '',
  `${new Date().toISOString()} · ${host.cpu ?? ''} · ${host.arch ?? process.arch} · node ${process.version} · batches of ${BATCH} · ${fmt(READS)} random reads`,
  '',
  "Peers seal each record with node:crypto AES-256-GCM. Cold open: a new process opens the store and reads one record (median of 3 by open time); RSS is that process's after the read.",
  '',
  '| engine | records | ingest rec/s | random reads rec/s | checkpoint | cold open | process start → read | RSS after open | bytes / record |',
  '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
  ...rows,
  '',
  ...ratios,
  '',
].join('\n');
mkdirSync(OUT, { recursive: true });
writeFileSync(
  join(OUT, 'scale.json'),
  JSON.stringify({ kind: 'scale', host, node: process.version, batch: BATCH, reads: READS, results }, null, 2),
);
writeFileSync(join(OUT, 'scale.md'), md);
console.log(`\n${ratios.join('\n')}\nresults in ${OUT}`);
