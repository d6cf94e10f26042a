// Known-answer tests in Node, on both WebAssembly builds: ACVP SHA2-384 and Wycheproof HMAC/HKDF.
import { describe, it, expect } from 'vitest';
import * as api from '../src/crypto';
import { allVectorSuites, EXPECTED_TOTALS } from './cases/vectors';
import { FLAVORS, loadVector } from './support/vectors';

describe.each(FLAVORS)('known-answer vectors (%s)', (flavor) => {
  it('runs every case of every file', async () => {
    // Loaded inside the test, so a missing or damaged vector file fails this test.
    api.setWasmFlavor(flavor);
    const suites = await allVectorSuites(async (p) => loadVector(p), api, process.env.SLOW === '1');
    for (const s of suites) {
      console.log(
        `[${flavor}] ${s.name}: ${s.passed}/${s.total} passed, ${s.skipped} skipped${s.note ? ` (${s.note})` : ''}`,
      );
      expect(s.failures, s.name).toEqual([]);
      if (EXPECTED_TOTALS[s.name] !== undefined) expect(s.total, s.name).toBe(EXPECTED_TOTALS[s.name]);
    }
    const aft = suites.find((s) => s.name.endsWith('AFT'))!;
    expect(aft.total).toBeGreaterThanOrEqual(128);
    expect(
      suites.find((s) => s.name.endsWith('LDT'))!.total + suites.find((s) => s.name.endsWith('LDT'))!.skipped,
    ).toBe(4);
  });
});
