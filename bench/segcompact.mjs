// node-fs segment reclaim: ~200 MiB of ~200 KB pages (the size of the engine's commit pages) in
// 64 MiB segments, 80 % of them deleted at random, then PageStore.reclaim() with its defaults
// (segments at least half dead, 4 MiB steps). Reported: bytes on disk before and after (stats and
// the directory), against the live pages' bytes; the time reclaim took (JSON keys keep their former "compact" names, for comparison with earlier reports); the latency of random
// whole-page reads issued one at a time while it runs (and, for comparison, on the same store
// before it); and the latency of small commits issued every 20 ms while it runs (each waits for at
// most the step in progress).
//
// The pages were just written, so the operating system's page cache holds most of them: reads
// measure system calls, copies and the CRC-32C check, not a cold disk. Timings are of this machine.
//
//   node bench/segcompact.mjs [--pages 1000] [--page-bytes 200000] [--delete 0.8] [--step-mib 4]
//                             [--out report.json]
//   (default report: bench/results/segcompact-<arch>[-emulated]-<runtime>-<date>[-n].json)

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomFillSync } from 'node:crypto';
import { openNodeFsPageStore } from '../dist/node.js';
import { hostInfo, duBytes, shuffled, saveReport } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const PAGES = Number(arg('--pages', 1000));
const PAGE_BYTES = Number(arg('--page-bytes', 200_000));
const DELETE = Number(arg('--delete', 0.8));
const STEP_BYTES = Number(arg('--step-mib', 4)) * 2 ** 20;
const out = arg('--out', undefined);

const MiB = 2 ** 20;
const now = () => performance.now();
const dir = mkdtempSync(join(tmpdir(), 'pqdb-bench-segcompact-'));
const pct = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
const summary = (xs) => ({ n: xs.length, p50: pct(xs, 50), p99: pct(xs, 99), max: Math.max(...xs) });
const fmt = (x) => `${x.toFixed(2)} ms`;

// Page bytes: random, with the id in the first 4 bytes so a read can be checked cheaply.
const pageOf = (id) => {
  const b = new Uint8Array(PAGE_BYTES);
  randomFillSync(b);
  new DataView(b.buffer).setUint32(0, id, true);
  return b;
};

/** Reads random live pages one at a time until `until()` is true; returns the latencies (ms). */
async function reader(store, ids, until, minReads = 0) {
  const lat = [];
  let x = 0x2545f491;
  while (!until() || lat.length < minReads) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    const id = ids[(x >>> 0) % ids.length];
    const t = now();
    const page = await store.readPage(id);
    lat.push(now() - t);
    if (page === undefined || new DataView(page.buffer, page.byteOffset).getUint32(0, true) !== id)
      throw new Error(`page ${id} read back wrong`);
  }
  return lat;
}

try {
  const store = await openNodeFsPageStore(dir, { autoReclaim: false, reclaimStepBytes: STEP_BYTES });
  const t0 = now();
  for (let id = 1; id <= PAGES; id += 10) {
    const pages = [];
    for (let k = id; k < id + 10 && k <= PAGES; k++) pages.push({ id: k, bytes: pageOf(k) });
    await store.commit({ pages, manifest: new Uint8Array([id & 0xff]), transfer: true });
  }
  const writeMs = now() - t0;
  const order = shuffled(PAGES, 11).map((i) => i + 1);
  const doomed = order.slice(0, Math.round(PAGES * DELETE));
  for (let i = 0; i < doomed.length; i += 50) await store.deletePages(doomed.slice(i, i + 50));
  const liveIds = order.slice(doomed.length).sort((a, b) => a - b);
  const before = await store.stats();
  const liveSealed = before.pageBytes;
  const diskBefore = duBytes(dir);

  // Baseline: the same reads with nothing else running.
  const baseEnd = now() + 1500;
  const baseline = await reader(store, liveIds, () => now() > baseEnd);

  let done = false;
  const commitLat = [];
  const committer = (async () => {
    for (let id = PAGES + 1; !done; id++) {
      const t = now();
      await store.commit({ pages: [{ id, bytes: new Uint8Array(4096).fill(id & 0xff) }] });
      commitLat.push(now() - t);
      await new Promise((r) => setTimeout(r, 20));
    }
  })();
  const steps = [];
  let last = now();
  const tc = now();
  const compaction = store
    .reclaim({
      onProgress: () => {
        steps.push(now() - last);
        last = now();
      },
    })
    .finally(() => (done = true));
  const during = await reader(store, liveIds, () => done, 1);
  const result = await compaction;
  const compactMs = now() - tc;
  await committer;
  const after = await store.stats();
  const diskAfter = duBytes(dir);
  // Every live page still reads back.
  const all = await store.readPages(liveIds);
  all.forEach((p, i) => {
    if (p === undefined || new DataView(p.buffer, p.byteOffset).getUint32(0, true) !== liveIds[i])
      throw new Error(`page ${liveIds[i]} lost`);
  });
  await store.close();

  const report = {
    bench: 'node-fs segment reclaim',
    host: hostInfo(),
    params: {
      pages: PAGES,
      pageBytes: PAGE_BYTES,
      deleteFraction: DELETE,
      stepBytes: STEP_BYTES,
      segmentBytes: 64 * MiB,
    },
    writeMs: Math.round(writeMs),
    liveSealedBytes: liveSealed,
    storedBytesBefore: before.storedBytes,
    storedBytesAfter: after.storedBytes,
    diskBytesBefore: diskBefore,
    diskBytesAfter: diskAfter,
    ratioBefore: before.storedBytes / liveSealed,
    ratioAfter: after.storedBytes / liveSealed,
    compact: { ...result, ms: Math.round(compactMs), steps: steps.length, stepMs: summary(steps) },
    readMsBaseline: summary(baseline),
    readMsDuringCompaction: summary(during),
    commitMsDuringCompaction: summary(commitLat),
  };
  console.log(
    [
      `node-fs segment reclaim: ${PAGES} pages of ${PAGE_BYTES} B (${((PAGES * PAGE_BYTES) / MiB).toFixed(0)} MiB), ${Math.round(DELETE * 100)} % deleted`,
      `  live sealed bytes           ${(liveSealed / MiB).toFixed(1)} MiB`,
      `  stored before / after       ${(before.storedBytes / MiB).toFixed(1)} MiB (${report.ratioBefore.toFixed(2)}x live) -> ${(after.storedBytes / MiB).toFixed(1)} MiB (${report.ratioAfter.toFixed(2)}x live)`,
      `  directory before / after    ${(diskBefore / MiB).toFixed(1)} MiB -> ${(diskAfter / MiB).toFixed(1)} MiB`,
      `  reclaim()                   ${Math.round(compactMs)} ms, ${result.segmentsRewritten} segments rewritten, ${(result.bytesCopied / MiB).toFixed(1)} MiB copied in ${steps.length} steps (step p50 ${fmt(report.compact.stepMs.p50)}, max ${fmt(report.compact.stepMs.max)})`,
      `  readPage p50/p99/max        before ${fmt(report.readMsBaseline.p50)} / ${fmt(report.readMsBaseline.p99)} / ${fmt(report.readMsBaseline.max)} (${baseline.length} reads); during ${fmt(report.readMsDuringCompaction.p50)} / ${fmt(report.readMsDuringCompaction.p99)} / ${fmt(report.readMsDuringCompaction.max)} (${during.length} reads)`,
      `  4 KB commit p50/p99/max     during ${fmt(report.commitMsDuringCompaction.p50)} / ${fmt(report.commitMsDuringCompaction.p99)} / ${fmt(report.commitMsDuringCompaction.max)} (${commitLat.length} commits)`,
      `  (write of the pages took ${Math.round(writeMs)} ms; ${report.host.cpu}, ${report.host.cores} cores, ${report.host.runtime})`,
    ].join('\n'),
  );
  console.log(`report: ${saveReport('segcompact', report, out || undefined)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
