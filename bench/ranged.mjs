// Ranged reads against whole-page reads on the node-fs page store: random 150-byte readRange calls
// (one sealed record) against readPage of ~200 KB commit pages (what a page-cache miss cost before
// PageStore.readRange), on a store of ~1,000 pages. Rounds alternate the two so drift in machine
// speed hits both alike; the median of the rounds is reported, with 1 and 8 reads in flight.
//
// The pages were just written, so the operating system's page cache holds them: this measures the
// system calls, copies and (for readPage) the CRC-32C of the page — not the disk. A cold cache adds
// one device read per call to both, and far more bytes to readPage's.
//
//   node bench/ranged.mjs [--pages 1000] [--page-bytes 200000] [--range-bytes 150] [--round-ms 500]
//                         [--rounds 7] [--out report.json]
//   (default report: bench/results/ranged-<arch>[-emulated]-<runtime>-<date>[-n].json)

import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomFillSync } from 'node:crypto';
import { openNodeFsPageStore } from '../dist/node.js';
import { hostInfo, duBytes, saveReport } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const PAGES = Number(arg('--pages', 1000));
const PAGE_BYTES = Number(arg('--page-bytes', 200_000));
const RANGE_BYTES = Number(arg('--range-bytes', 150));
const ROUND_MS = Number(arg('--round-ms', 500));
const ROUNDS = Number(arg('--rounds', 7));
const out = arg('--out', undefined);

const now = () => performance.now();
const dir = mkdtempSync(join(tmpdir(), 'pqdb-bench-ranged-'));

// Deterministic random choices (xorshift32), so both sides see the same kind of access pattern.
let x = 0x9e3779b9;
const rand = (n) => {
  x ^= x << 13;
  x ^= x >>> 17;
  x ^= x << 5;
  return (x >>> 0) % n;
};

/** Calls `op` back to back with `inFlight` calls outstanding for `ms`; returns completed ops/s. */
async function opsPerSecond(op, inFlight, ms) {
  let done = 0;
  const end = now() + ms;
  const t0 = now();
  const lane = async () => {
    while (now() < end) {
      await op();
      done++;
    }
  };
  await Promise.all(Array.from({ length: inFlight }, lane));
  return done / ((now() - t0) / 1000);
}

const median = (a) => [...a].sort((p, q) => p - q)[Math.floor(a.length / 2)];

try {
  const store = await openNodeFsPageStore(dir);
  const t0 = now();
  for (let at = 0; at < PAGES; at += 50) {
    const pages = [];
    for (let id = at; id < Math.min(PAGES, at + 50); id++)
      pages.push({ id, bytes: randomFillSync(new Uint8Array(PAGE_BYTES)) });
    await store.commit({ pages, transfer: true });
  }
  const writeMs = now() - t0;
  let sink = 0;
  const readRange = async () => {
    const r = await store.readRange(rand(PAGES), rand(PAGE_BYTES - RANGE_BYTES + 1), RANGE_BYTES);
    sink ^= r[0];
  };
  const readPage = async () => {
    const p = await store.readPage(rand(PAGES));
    sink ^= p[0];
  };
  // Warm-up: both paths through V8's optimising tier.
  await opsPerSecond(readRange, 1, 300);
  await opsPerSecond(readPage, 1, 300);
  const rows = [];
  for (const inFlight of [1, 8]) {
    const range = [];
    const page = [];
    for (let r = 0; r < ROUNDS; r++) {
      page.push(await opsPerSecond(readPage, inFlight, ROUND_MS));
      range.push(await opsPerSecond(readRange, inFlight, ROUND_MS));
    }
    rows.push({ inFlight, readPageOpsPerSec: median(page), readRangeOpsPerSec: median(range) });
  }
  globalThis.__benchSink = sink;
  await store.close();

  const report = {
    bench: 'ranged',
    host: hostInfo(),
    store: { adapter: 'node-fs', pages: PAGES, pageBytes: PAGE_BYTES, onDiskBytes: duBytes(dir), writeMs },
    rangeBytes: RANGE_BYTES,
    rounds: ROUNDS,
    roundMs: ROUND_MS,
    osPageCache: 'warm (pages just written)',
    loadAverage: loadavg(), // a shared host's other work shows in the figures

    rows: rows.map((r) => ({ ...r, ratio: r.readRangeOpsPerSec / r.readPageOpsPerSec })),
  };
  console.log(
    `node-fs, ${PAGES} pages of ${PAGE_BYTES} bytes, random ${RANGE_BYTES}-byte ranges; median of ${ROUNDS} rounds of ${ROUND_MS} ms (${report.host.cpu}, ${report.host.runtime})`,
  );
  console.log('in flight | readPage ops/s | readRange ops/s | ratio');
  for (const r of report.rows) {
    console.log(
      `${String(r.inFlight).padStart(9)} | ${Math.round(r.readPageOpsPerSec).toLocaleString('en-US').padStart(14)} | ${Math.round(r.readRangeOpsPerSec).toLocaleString('en-US').padStart(15)} | ${r.ratio.toFixed(1)}x`,
    );
  }
  console.log(`report: ${saveReport('ranged', report, out)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
