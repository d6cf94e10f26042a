// The component microbenchmark in Node: one 115-byte record sealed and opened with AES-256-GCM-SIV
// under a data key established classically (X25519 key envelope) or with the ML-KEM-1024 + X25519
// hybrid envelope, 2,000 individually timed operations per arm and direction after 16 warm-ups,
// plus the byte accounting (ciphertext, envelopes, ML-DSA-87 checkpoint signature, inclusion proof
// at 100,000 records). The method is described in bench/component-core.mjs and docs/bench/component.md.
//
//   node bench/component.mjs [--quick] [--ops N] [--batch N] [--leaves N] [--warmup N]
//        [--establish-first classical|pqc] [--out <path>]
//
// --quick: 200 ops, batches of 20, 10,000 leaves (a smoke run). Needs `npm run build` first; uses
// only dist/ and the bench harness, so it runs unchanged on Node arm64 under qemu. Writes
// bench/results/component-<arch>[-emulated]-node<N>-<date>[-n].json (or --out).

import { loadavg } from 'node:os';
import { hostInfo, writeReport } from './harness.mjs';
import { componentOptions, formatReport, hrtimeClock, loadPqdb, runComponent } from './component-core.mjs';

const args = process.argv.slice(2);
const arg = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const quick = args.includes('--quick');
const options = componentOptions(args);

// The machine may be shared: its load averages (1, 5, 15 min) before and after go into the report.
const loadBefore = loadavg();
const pq = await loadPqdb(new URL('../dist/', import.meta.url));
const host = hostInfo();
const body = runComponent(pq, hrtimeClock(), options);
const report = { host, runtime: host.runtime, quick, loadAverage: { before: loadBefore, after: loadavg() }, ...body };
const runtime = `${host.runtime} ${host.arch}${host.emulated ? ' (emulated)' : ''}`;
console.log(formatReport(report, runtime));
console.log(
  `machine load average (1/5/15 min) before ${loadBefore.map((x) => x.toFixed(2)).join(' ')}, after ${report.loadAverage.after.map((x) => x.toFixed(2)).join(' ')}`,
);
console.log(`\nreport: ${writeReport('component', report, { out: arg('--out', undefined) })}`);
