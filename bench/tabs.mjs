// Handovers between tabs (docs/tabs.md) in Debian Chromium on a profile on disk: `--tabs` tabs open
// one store on OPFS; each round, the other tabs put while the serving tab closes, and the next tab in
// the lock's queue serves (browser-tests/tabs-run.mjs). Reported: from the close to the next
// server's first acknowledged put (p50, p99, max), how long the puts in flight took to settle, and
// the checks: every acknowledged put there, none applied twice, none failed.
//
//   node bench/tabs.mjs [--handovers 200] [--tabs 3] [--out report.json]
// Default report: bench/results/tabs-<arch>-<date>[-n].json. Needs `npm run build`.

import { startChromium } from './chromium.mjs';
import { hostInfo, saveReport } from './harness.mjs';
import { handovers } from '../browser-tests/tabs-run.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const rounds = Number(arg('--handovers', 200));
const tabs = Number(arg('--tabs', 3));

const chrome = await startChromium();
try {
  const context = await chrome.browser.newContext();
  const started = Date.now();
  const r = await handovers(context, rounds, { tabs, base: chrome.base });
  const ok = r.missing.length === 0 && r.count === r.acked && r.appliedTwice === 0 && r.errors.length === 0;
  console.log(
    `chromium ${chrome.browser.version()}: ${r.rounds} handovers between ${r.tabs} tabs in ${((Date.now() - started) / 1000).toFixed(0)} s\n` +
      `  the next server's first put acknowledged ${r.handoverMs.p50} ms p50 / ${r.handoverMs.p99} ms p99 / ${r.handoverMs.max} ms max after the close\n` +
      `  puts in flight settled in ${r.settleMs.p50} ms p50 / ${r.settleMs.p99} ms p99 / ${r.settleMs.max} ms max\n` +
      `  ${r.acked} puts acknowledged, ${r.missing.length} missing, ${r.appliedTwice} applied twice, failed ${JSON.stringify(r.failed)}: ${ok ? 'ok' : 'FAILED'}`,
  );
  const out = saveReport('tabs', { host: hostInfo(), chromium: chrome.browser.version(), ...r, ok }, arg('--out'));
  console.log(`report: ${out}`);
  if (!ok) process.exitCode = 1;
} finally {
  await chrome.close();
}
