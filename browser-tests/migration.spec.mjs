// Live migration in Chromium on real IndexedDB, through the bundled dist/browser.js: 1,000 WordNet
// synsets move from gcmsiv-hkdf256 to gcmsiv-hkdf384 while two reader loops keep a fixed schedule;
// an update, an insert and a delete land during the copy; the page is reloaded mid-copy and the
// reopened store resumes the migration; afterwards a cold, read-only check finds every record as
// the manifest says, searches equal to a brute-force scan, and verifyStore clean. The run is the
// one bench/migration-browser.mjs makes at 100,000 records, with smaller copy chunks (4) so the
// reload lands inside the copy.
import { test, expect } from '@playwright/test';
import { runBrowserMigration } from '../bench/migration-browser.mjs';

const N = 1000;

test('live migration on IndexedDB: reload mid-copy, resume, accounting and cold verification', async ({
  page,
  baseURL,
  browser,
}) => {
  const e = await runBrowserMigration({
    page,
    baseURL,
    browserVersion: browser.version(),
    records: N,
    chunkRecords: 4,
    queries: 500,
    exports: 200,
    quiet: true,
  });
  expect(e.pageErrors).toEqual([]);
  // The reload was issued while records were still being copied, and the new page found that
  // migration unfinished and resumed it (the old page runs on until it unloads, so on a loaded
  // machine its copy can reach the end first: the resumed phase is then a later one).
  expect(e.migration.reloadedAt).toMatchObject({ phase: 'copying' });
  expect(e.migration.reloadedAt.accounted).toBeLessThan(N);
  expect(e.migration.resumedAt).toMatchObject({ to: 'gcmsiv-hkdf384', running: true });
  expect(['copying', 'indexing', 'verifying', 'activating']).toContain(e.migration.resumedAt.phase);
  expect(e.writes.map((w) => [w.kind, w.ackAt !== undefined, w.error])).toEqual([
    ['update', true, undefined],
    ['insert', true, undefined],
    ['delete', true, undefined],
  ]);
  expect(e.accounting).toMatchObject({
    phase: 'done',
    copied: N - 2,
    superseded: 1,
    deleted: 1,
    inserted: 1,
    withheld: 0,
    failed: 0,
    total: N + 1,
  });
  expect(e.accountingOk).toBe(true);
  // Every read outside the down window answered correctly within its deadline.
  expect(e.stats.measured).toBeGreaterThan(0);
  expect(e.stats).toMatchObject({ missedDeadline: 0, late: 0, error: 0, wrong: 0, lost: 0 });
  expect(e.stats.withinDeadline).toBe(e.stats.measured);
  // Cold: records, sealed suites, search, verifyStore.
  const v = e.verification;
  expect(v.problems).toEqual([]);
  expect(v.records).toMatchObject({
    expected: N,
    matched: N,
    mismatched: 0,
    missing: 0,
    unexpected: 0,
    deletedAbsent: 1,
  });
  expect(v.sealed.targetSuite).toBe(v.sealed.checked);
  expect(v.sealed.proofsVerified).toBe(v.sealed.proofSample);
  expect(v.search.equalBrute).toBe(500);
  expect(v.verifyStore).toMatchObject({ ok: true, complete: true, problemCount: 0 });
  expect(v.verifyStore.counts.collections).toEqual({ synsets: N });
  expect(v.verifyStore.counts.leaves).toEqual({ 1: N, 2: N + 1 }); // generation 2 also logs the delete
  expect(v.ok).toBe(true);
});
