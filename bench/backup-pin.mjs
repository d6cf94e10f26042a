// Backups pin the page set instead of holding the commit queue (src/engine/pins.ts): what a backup
// costs the writes that run beside it, and what it costs in memory. On N WordNet 3.1 synsets
// (default 100,000, batches of 1,000; beyond the 117,659 synsets of WordNet they repeat under new
// ids) in a file store under 'gcmsiv-hkdf256', through the public API of the built dist/node.js
// (or of PQDB_DIST, e.g. another checkout's dist/, for an A/B run):
//
//   1. puts: single-record puts one after another on the idle store (each put's latency), then
//      the same loop while `store.backup(dir)` runs, over `--backup-runs` backups (p50, p99, max
//      of each series; each backup's pausedMs and tookMs);
//   2. memory (`--rss`): the store closed, reopened and left to settle (with --expose-gc, after a
//      full collection): its resident set size is the baseline; then one backup with the RSS
//      sampled every 5 ms: the peak over the baseline is what the backup holds.
//
// Writes bench/results/backup-pin-<arch>-<runtime>-<date>[-n].json and prints a summary. Exits 0
// whatever the figures: the targets (put p99 during a backup ≤ 20 ms, RSS within 100 MiB of the
// open store's) are reported, not asserted.
//
//   node --expose-gc bench/backup-pin.mjs [--records 100000] [--backup-runs 3] [--idle-puts 300]
//        [--rss] [--skip-puts] [--copy-dir /dev/shm] [--out report.json]

import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { hostInfo, synsets, reportPath } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(process.env.PQDB_DIST ?? join(here, '..', 'dist'));
const { openStore, generateRecipient, generateSigner } = await import(pathToFileURL(join(dist, 'node.js')).href);

export const TARGETS = Object.freeze({ putP99Ms: 20, rssMiB: 100 });
const SCHEMA = Object.freeze({ lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' });
const MiB = 1 << 20;

const now = () => performance.now();
const rank = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? undefined : s[Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length))) - 1];
};
const latencies = (xs) => ({ count: xs.length, p50: rank(xs, 50), p99: rank(xs, 99), max: Math.max(...xs) });
const settle = async () => {
  for (let i = 0; i < 3; i++) {
    globalThis.gc?.();
    await new Promise((r) => setTimeout(r, 50));
  }
};

export async function runBackupPinBench(o) {
  const base = mkdtempSync(join(tmpdir(), 'pqdb-backup-pin-'));
  // Where the copies go (--copy-dir): another device than the store's separates what the backup's
  // own writes cost the puts (fsyncs on one disk) from what the engine makes them wait.
  const copies = o.copyDir !== undefined ? mkdtempSync(join(o.copyDir, 'pqdb-backup-pin-copies-')) : base;
  const keys = { recipient: generateRecipient(), signer: generateSigner() };
  const options = {
    location: join(base, 'store'),
    recipients: [keys.recipient.publicKey],
    unlock: keys.recipient.secretKey,
    suite: 'gcmsiv-hkdf256',
    signer: keys.signer.secretKey,
    signerPublicKey: keys.signer.publicKey,
    autoCheckpoint: false,
  };
  const log = (s) => o.quiet || console.log(s);
  const report = { bench: 'backup-pin', host: hostInfo(), dist, records: o.records, options: o };
  try {
    let words = synsets(Math.min(o.records, 200_000));
    let store = await openStore({ ...options, create: true });
    let docs = store.collection('synsets', { schema: SCHEMA });
    const t0 = now();
    for (let i = 0; i < o.records; i += o.batch)
      await store.batch((tx) => {
        for (let j = i; j < Math.min(i + o.batch, o.records); j++) {
          const w = words[j % words.length];
          tx.put(docs, j < words.length ? w.id : `${w.id}-${Math.floor(j / words.length)}`, w.value);
        }
      });
    report.loadMs = now() - t0;
    // The load's source data is dropped: what the puts measure beside a backup is the store's work,
    // not the collector walking the bench's own 100,000 parsed synsets.
    words = undefined;
    await store.checkpoint();
    log(`loaded ${o.records} records in ${(report.loadMs / 1000).toFixed(1)} s`);
    let n = 0;
    const put = async () => {
      const t = now();
      await docs.put(`extra-${n++}`, { lemma: 'x', pos: 'n', gloss: 'a put beside a backup', offset: n });
      return now() - t;
    };

    if (!o.skipPuts) {
      const idle = [];
      for (let i = 0; i < o.idlePuts; i++) idle.push(await put());
      const during = [];
      const backups = [];
      for (let r = 0; r < o.backupRuns; r++) {
        let done = false;
        const running = store.backup(join(copies, `copy-${r}`)).finally(() => (done = true));
        const mine = [];
        while (!done) mine.push(await put());
        const b = await running;
        during.push(...mine);
        backups.push({ tookMs: b.tookMs, pausedMs: b.pausedMs, pages: b.pages, bytes: b.bytes, putMs: mine });
        log(
          `backup ${r + 1}: ${b.tookMs.toFixed(0)} ms, paused ${b.pausedMs.toFixed(1)} ms, ${b.pages} pages, ` +
            `${(b.bytes / MiB).toFixed(1)} MiB; puts beside it (ms, in order): ${mine.map((x) => x.toFixed(1)).join(' ')}`,
        );
        rmSync(join(copies, `copy-${r}`), { recursive: true, force: true });
      }
      report.idlePutMs = latencies(idle);
      report.duringBackupPutMs = latencies(during);
      report.backups = backups;
      log(
        `puts, idle: p50 ${report.idlePutMs.p50.toFixed(2)} ms, p99 ${report.idlePutMs.p99.toFixed(2)} ms; ` +
          `during a backup: p50 ${report.duringBackupPutMs.p50.toFixed(2)} ms, p99 ${report.duringBackupPutMs.p99.toFixed(2)} ms, ` +
          `max ${report.duringBackupPutMs.max.toFixed(2)} ms (${during.length} puts; target p99 ≤ ${TARGETS.putP99Ms} ms)`,
      );
    }

    if (o.rss) {
      await store.close();
      store = undefined;
      docs = undefined;
      await settle();
      const beforeOpen = process.memoryUsage().rss;
      store = await openStore({ ...options });
      await settle();
      const open = process.memoryUsage().rss;
      let peak = open;
      const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
      const b = await store.backup(join(copies, 'copy-rss'));
      clearInterval(timer);
      peak = Math.max(peak, process.memoryUsage().rss);
      report.rss = {
        processMiB: beforeOpen / MiB,
        openMiB: open / MiB,
        peakMiB: peak / MiB,
        overOpenMiB: (peak - open) / MiB,
        backupMiB: b.bytes / MiB,
        tookMs: b.tookMs,
        pausedMs: b.pausedMs,
        gc: typeof globalThis.gc === 'function',
      };
      log(
        `RSS: open store ${report.rss.openMiB.toFixed(0)} MiB, peak during a backup of ${report.rss.backupMiB.toFixed(0)} MiB ` +
          `${report.rss.peakMiB.toFixed(0)} MiB: +${report.rss.overOpenMiB.toFixed(0)} MiB (target ≤ ${TARGETS.rssMiB} MiB)` +
          ` in ${(b.tookMs / 1000).toFixed(1)} s, paused ${b.pausedMs.toFixed(1)} ms`,
      );
    }
    await store.close();
  } finally {
    rmSync(base, { recursive: true, force: true });
    if (copies !== base) rmSync(copies, { recursive: true, force: true });
  }
  return report;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const num = (flag, d) => {
    const i = args.indexOf(flag);
    return i < 0 ? d : Number(args[i + 1]);
  };
  const outAt = args.indexOf('--out');
  const o = {
    records: num('--records', 100_000),
    batch: num('--batch', 1000),
    backupRuns: num('--backup-runs', 3),
    idlePuts: num('--idle-puts', 300),
    rss: args.includes('--rss'),
    skipPuts: args.includes('--skip-puts'),
    copyDir: args.includes('--copy-dir') ? args[args.indexOf('--copy-dir') + 1] : undefined,
    quiet: args.includes('--quiet'),
  };
  const report = await runBackupPinBench(o);
  const out = outAt >= 0 ? args[outAt + 1] : reportPath('backup-pin');
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
  if (!o.quiet) console.log(`wrote ${out}`);
}
