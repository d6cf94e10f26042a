// The known-answer test page in Chromium: every vector file, both WebAssembly builds, zero failures
// and the expected case counts; a screenshot of the page is kept with the test results.
import { test, expect } from '@playwright/test';

test('KAT page: every known-answer suite passes on both builds', async ({ page }, info) => {
  test.setTimeout(300_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto('/kat');
  await page.waitForFunction(() => 'katResult' in globalThis, null, { timeout: 280_000 });
  const result = await page.evaluate(() => globalThis.katResult);
  expect(errors).toEqual([]);
  expect(result.error).toBeUndefined();
  expect(result.map((r) => r.flavor)).toEqual(['simd', 'scalar']);
  for (const r of result) {
    for (const s of r.suites)
      console.log(`[kat ${r.flavor}] ${s.name}: ${s.passed} passed, ${s.failures.length} failed, ${s.skipped} skipped`);
    expect(r.problems).toEqual([]);
    expect(r.suites.length).toBeGreaterThanOrEqual(17);
  }
  await expect(page.locator('#status')).toHaveText('all known-answer tests passed');
  await page.screenshot({ path: info.outputPath('kat.png'), fullPage: true });
});
