// Kills of a writer in Debian Chromium on a profile on disk (browser-tests/kill-run.mjs): `--rounds`
// times, a page writing puts, batches and checkpoints to a store on OPFS in its worker has its
// renderer killed, its tab closed or its worker terminated at a random moment; after each, the store
// is verified and read back in a fresh worker. Reported: kills of each kind, writes acknowledged (all
// must be kept), writes in flight that committed, and every problem found.
//
//   node bench/kill.mjs [--rounds 150] [--seed 1] [--out report.json]
// Default report: bench/results/kill-<arch>-<date>[-n].json. Needs `npm run build`.

import { startChromium } from './chromium.mjs';
import { hostInfo, saveReport } from './harness.mjs';
import { kills } from '../browser-tests/kill-run.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const rounds = Number(arg('--rounds', 150));
const seed = Number(arg('--seed', 1));

const chrome = await startChromium();
try {
  const context = await chrome.browser.newContext();
  const started = Date.now();
  const r = await kills(context, rounds, { base: chrome.base, seed });
  const ok = r.problems.length === 0;
  console.log(
    `chromium ${chrome.browser.version()}: ${r.rounds} kills in ${((Date.now() - started) / 1000).toFixed(0)} s (${Object.entries(
      r.perKind,
    )
      .map(([k, n]) => `${n} ${k}`)
      .join(', ')})\n` +
      `  ${r.acknowledged} writes acknowledged, all kept; ${r.inFlightKept} in flight committed; ${r.problems.length} problems: ${ok ? 'ok' : 'FAILED'}`,
  );
  for (const p of r.problems.slice(0, 20)) console.log(`  ${p}`);
  const out = saveReport(
    'kill',
    { host: hostInfo(), chromium: chrome.browser.version(), seed, ...r, ok },
    arg('--out'),
  );
  console.log(`report: ${out}`);
  if (!ok) process.exitCode = 1;
} finally {
  await chrome.close();
}
