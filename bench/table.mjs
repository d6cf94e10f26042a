// Renders a bench JSON report as the Markdown speed table used in the README.
//   node bench/table.mjs bench/results/kernels-<arch>[-emulated]-<runtime>-<date>[-n].json

import { readFileSync } from 'node:fs';
import { fmtTime } from './harness.mjs';

const report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const h = report.host;
console.log(
  `Measured ${h.date.slice(0, 10)} on ${h.cpu} (${h.cores} cores, ${h.arch}${h.emulated ? ', emulated' : ''}), ${h.runtime}.`,
);
console.log("Medians; the ratio is the peer's median over the faster pqdb build's (higher is better for pqdb).\n");
console.log('| benchmark | implementation | median | p90 | throughput | pqdb speed-up |');
console.log('|---|---|---:|---:|---:|---:|');
for (const b of report.benches) {
  for (const r of b.results) {
    const thr = r.throughputMiBs ? `${r.throughputMiBs.toFixed(0)} MiB/s` : '';
    const ratio = r.ratioVsPqdb ? `${r.ratioVsPqdb.toFixed(2)}×` : '';
    console.log(`| ${b.title} | ${r.name} | ${fmtTime(r.median)} | ${fmtTime(r.p90)} | ${thr} | ${ratio} |`);
  }
}
