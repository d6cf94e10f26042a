// Known-answer, differential and Merkle suites inside Debian Chromium, on both WebAssembly builds,
// against the bundled dist/crypto.js.
import { test, expect } from '@playwright/test';

const EXPECTED_TOTALS = {
  'Wycheproof hmac_sha384_test.json': 174,
  'Wycheproof hkdf_sha256_test.json': 86,
  'Wycheproof hkdf_sha384_test.json': 83,
  'ACVP SHA2-384-1.0 AFT': 132,
  'ACVP SHA2-384-1.0 MCT': 1,
  'Wycheproof aes_gcm_test.json': 105,
  'Wycheproof aes_gcm_siv_test.json': 103,
  'Wycheproof x25519_test.json': 518,
  'X25519 vs @noble/curves (seed 25519)': 600,
};

for (const flavor of ['simd', 'scalar']) {
  for (const suite of ['vectors', 'differential', 'merkle', 'aead', 'pq']) {
    test(`${suite} (${flavor})`, async ({ page }) => {
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      await page.goto('/');
      await page.waitForFunction(() => 'pqdbSuites' in globalThis);
      const result = await page.evaluate(([f, s]) => globalThis.pqdbSuites.run(f, s), [flavor, suite]);
      expect(errors).toEqual([]);
      expect(result.flavor).toBe(flavor);
      expect(result.summaries.length).toBeGreaterThan(0);
      for (const s of result.summaries) {
        console.log(`[chromium ${flavor}] ${s.name}: ${s.passed}/${s.total} passed, ${s.skipped} skipped`);
        expect(s.failures, s.name).toEqual([]);
        if (EXPECTED_TOTALS[s.name] !== undefined) expect(s.total, s.name).toBe(EXPECTED_TOTALS[s.name]);
        if (!s.name.includes('LDT')) expect(s.total, s.name).toBeGreaterThan(0);
      }
    });
  }
}
