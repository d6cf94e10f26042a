// The notes app (examples/browser-app) under a large migration, in Debian Chromium on a profile on
// disk: `--notes` sample notes added through the app's page, then its "Re-encrypt" started while
// keystrokes go into the title field every `--every` ms until the migration reports done.
// Reported: keystroke to paint (from each keydown's timestamp to the frame after it) p50/p99/max,
// the longest Event Timing duration, the page's long tasks, the same typing with no migration (the
// baseline), and the migration's time.
//
//   node bench/demo.mjs [--notes 100000] [--every 40] [--out report.json]
// Default report: bench/results/demo-<arch>-<date>[-n].json. Needs `npm run build`.

import { startChromium } from './chromium.mjs';
import { hostInfo, saveReport } from './harness.mjs';
import { keystrokeProbe, keystrokeFigures } from '../browser-tests/keystrokes.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const notes = Number(arg('--notes', 100_000));
const every = Number(arg('--every', 40));
const fmt = (n) => n.toLocaleString('en');

const chrome = await startChromium();
try {
  const page = await chrome.browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.addInitScript(keystrokeProbe);
  await page.goto(`${chrome.base}/examples/browser-app/`);
  const ready = (text, timeout = 600_000) =>
    page.waitForFunction((t) => document.getElementById('status').textContent === t, text, { timeout });
  await ready('ready: 0 notes', 60_000);
  const addStarted = Date.now();
  await page.fill('#sample-count', String(notes));
  await page.click('#sample');
  await ready(`ready: ${fmt(notes)} notes`);
  const addMs = Date.now() - addStarted;

  /** Types into the title field every `every` ms until `until()` holds (and for `min` keys at least). */
  async function typeWhile(until, min) {
    await page.fill('#title', '');
    await page.click('#title');
    await page.evaluate(() => globalThis.__keys.start());
    const word = 'keep typing while the notes are re-encrypted ';
    let i = 0;
    while (i < min || !(await until())) {
      await page.keyboard.type(word[i++ % word.length]);
      await page.waitForTimeout(every);
    }
    return { ...keystrokeFigures(await page.evaluate(() => globalThis.__keys.stop())), typed: i };
  }

  const idle = await typeWhile(async () => true, 200);
  const started = Date.now();
  await page.click('#migrate');
  const during = await typeWhile(async () => /^done/.test(await page.textContent('#migration')), 20);
  const migrationMs = Date.now() - started;
  const done = await page.textContent('#migration');
  const value = await page.inputValue('#title');
  const ok = /^done: /.test(done) && value.length === during.typed && errors.length === 0;
  const line = (f) =>
    `keystroke to paint p50 ${f.p50} ms / p99 ${f.p99} ms / max ${f.max} ms over ${f.keys} keys; Event Timing max ${f.eventTimingMax} ms; ${f.longTasks} long tasks (longest ${f.longestTask} ms)`;
  console.log(
    `chromium ${chrome.browser.version()}: ${fmt(notes)} notes added through the app in ${(addMs / 1000).toFixed(1)} s\n` +
      `  typing, nothing else running: ${line(idle)}\n` +
      `  typing during the migration (${(migrationMs / 1000).toFixed(1)} s): ${line(during)}\n` +
      `  ${done}; ${value.length} of ${during.typed} keystrokes in the field: ${ok ? 'ok' : 'FAILED'}`,
  );
  const out = saveReport(
    'demo',
    {
      host: hostInfo(),
      chromium: chrome.browser.version(),
      notes,
      everyMs: every,
      addMs,
      migrationMs,
      idle,
      during,
      done,
      ok,
      errors,
    },
    arg('--out'),
  );
  console.log(`report: ${out}`);
  if (!ok) process.exitCode = 1;
} finally {
  await chrome.close();
}
