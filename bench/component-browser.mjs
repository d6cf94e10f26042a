// The component microbenchmark in Chromium: the measuring code of bench/component-core.mjs run in a
// page of Debian's Chromium driven by Playwright, on the built dist/ served by
// browser-tests/server.mjs (the test pages' server: it serves dist/ exactly as published).
//
//   node bench/component-browser.mjs [--quick] [--ops N] [--batch N] [--leaves N] [--warmup N]
//        [--establish-first classical|pqc] [--out <path>]
//
// The page is made cross-origin isolated (COOP same-origin, COEP require-corp on its document),
// which is what lets Chromium's performance.now() tick at 5 µs instead of 100 µs; the clock of a
// page without isolation is probed too and reported beside it. The page and the core module are
// answered through page.route; dist/ comes from the server. Writes
// bench/results/component-<arch>-chromium<N>-<date>[-n].json (or --out). Needs `npm run build`
// first and Chromium at /usr/bin/chromium (or CHROMIUM_PATH).

import { readFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { hostInfo, runtimeTag, writeReport } from './harness.mjs';
import { startChromium } from './chromium.mjs';
import { componentOptions, formatReport } from './component-core.mjs';

const args = process.argv.slice(2);
const arg = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const quick = args.includes('--quick');
const options = componentOptions(args);

const core = readFileSync(fileURLToPath(new URL('./component-core.mjs', import.meta.url)));
const page = (isolated) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>pqdb component microbenchmark${isolated ? '' : ' (not isolated)'}</title></head><body><h1>pqdb component microbenchmark</h1></body></html>`;
const ISOLATION = { 'cross-origin-opener-policy': 'same-origin', 'cross-origin-embedder-policy': 'require-corp' };

// The machine may be shared: its load averages (1, 5, 15 min) before and after go into the report.
const loadBefore = loadavg();
const { browser, base, close } = await startChromium();
try {
  const context = await browser.newContext();
  await context.route(`${base}/component*`, (route) => {
    const isolated = !new URL(route.request().url()).pathname.endsWith('-plain');
    return route.fulfill({
      status: 200,
      headers: { 'content-type': 'text/html', ...(isolated ? ISOLATION : {}) },
      body: page(isolated),
    });
  });
  await context.route(`${base}/bench/component-core.mjs`, (route) =>
    route.fulfill({ status: 200, headers: { 'content-type': 'text/javascript' }, body: core }),
  );

  // The clock of an ordinary page (no cross-origin isolation), for reference.
  const plain = await context.newPage();
  await plain.goto(`${base}/component-plain`);
  const clockNotIsolated = await plain.evaluate(async () => {
    const core = await import('/bench/component-core.mjs');
    return { crossOriginIsolated: self.crossOriginIsolated, ...core.probeClock(core.performanceClock()) };
  });
  await plain.close();

  const tab = await context.newPage();
  await tab.goto(`${base}/component`);
  const result = await tab.evaluate(async (options) => {
    const core = await import('/bench/component-core.mjs');
    const pq = await core.loadPqdb(new URL('/dist/', location.href));
    const body = core.runComponent(pq, core.performanceClock(), options);
    return { body, userAgent: navigator.userAgent, crossOriginIsolated: self.crossOriginIsolated };
  }, options);
  if (!result.crossOriginIsolated) throw new Error('the benchmark page is not cross-origin isolated');

  const host = { ...hostInfo(), runtime: `chromium ${browser.version()}`, userAgent: result.userAgent };
  const report = {
    host,
    runtime: host.runtime,
    quick,
    loadAverage: { before: loadBefore, after: loadavg() },
    crossOriginIsolated: result.crossOriginIsolated,
    ...result.body,
    clockNotIsolated,
  };
  console.log(formatReport(report, `Chromium ${browser.version()} ${host.arch} (cross-origin isolated)`));
  console.log(
    `machine load average (1/5/15 min) before ${loadBefore.map((x) => x.toFixed(2)).join(' ')}, after ${report.loadAverage.after.map((x) => x.toFixed(2)).join(' ')}`,
  );
  console.log(
    `clock of a page without cross-origin isolation: resolution ${clockNotIsolated.resolutionNs.toLocaleString('en-US')} ns, median tick ${clockNotIsolated.medianTickNs.toLocaleString('en-US')} ns`,
  );
  const path = writeReport('component', report, {
    out: arg('--out', undefined),
    runtime: runtimeTag(result.userAgent),
  });
  console.log(`\nreport: ${path}`);
} finally {
  await close();
}
