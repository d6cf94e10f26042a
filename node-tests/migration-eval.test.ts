// The live-migration evaluation (bench/migration-eval.mjs) on a small fixture: 2,000 WordNet
// synsets move to 'gcmsiv-hkdf384' while two reader processes keep their schedule; an update, an
// insert and a delete land during the copy; the store process is SIGKILLed half-way and resumes
// after a short outage; a separate process then verifies the store cold and read-only. Runs on the
// built dist/ (npm test builds first). Speed is not asserted here: the deadline is 1 s.
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: a plain ES module without type declarations
import { runEvaluation } from '../bench/migration-eval.mjs';

const out = mkdtempSync(join(tmpdir(), 'pqdb-migration-eval-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('live migration evaluation (small)', () => {
  it('accounts for every record across a kill and a resume, and verifies cold', async () => {
    const e = await runEvaluation({ records: 2000, outageMs: 500, queries: 300, wordSample: 10, out, quiet: true });
    // Accounting: 1,998 copied + 1 superseded + 1 deleted + 1 inserted = total, nothing failed.
    expect(e.accounting).toMatchObject({
      phase: 'done',
      copied: 1998,
      superseded: 1,
      deleted: 1,
      inserted: 1,
      withheld: 0,
      failed: 0,
      total: 2001,
    });
    expect(e.accounting.copied + e.accounting.superseded + e.accounting.deleted + e.accounting.inserted).toBe(
      e.accounting.total,
    );
    // The kill came part-way through the copy, and the restarted process resumed from there.
    expect(e.migration.killedAt.phase).toBe('copying');
    expect(e.migration.killedAt.accounted).toBeGreaterThanOrEqual(1000);
    expect(e.migration.killedAt.accounted).toBeLessThan(2000);
    expect(e.migration.resumedAt).toMatchObject({ phase: 'copying' });
    expect(e.processes).toHaveLength(2);
    expect(e.writes.map((w: { kind: string; ackAt: number }) => [w.kind, typeof w.ackAt])).toEqual([
      ['update', 'number'],
      ['insert', 'number'],
      ['delete', 'number'],
    ]);
    // Cold, read-only verification: every record, the deleted one absent, the index, verifyStore.
    const v = e.verification;
    expect(v.problems).toEqual([]);
    expect(v.ok).toBe(true);
    expect(v.records).toMatchObject({
      expected: 2000,
      matched: 2000,
      missing: 0,
      mismatched: 0,
      unexpected: 0,
      deletedAbsent: 1,
      targetSuite: 2000,
      otherSuite: 0,
    });
    expect(v.search.queries).toBeGreaterThanOrEqual(300);
    expect(v.search.setEqualBrute).toBe(v.search.queries);
    expect(v.search.orderedEqualMemory).toBe(v.search.queries);
    expect(v.verifyStore).toMatchObject({ ok: true, complete: true, problems: 0 });
    expect(v.verifyStore.counts.collections).toEqual({ synsets: 2000 });
    expect(v.verifyStore.counts.leaves).toEqual({ 1: 2000, 2: 2001 }); // generation 2 also logs the delete
    // Reads: none scheduled outside the down window missed the 1 s deadline or returned a wrong value.
    expect(e.stats.scheduled).toBeGreaterThan(0);
    expect(e.stats.measured).toBeGreaterThan(0);
    expect(e.stats.missedDeadline).toBe(0);
    expect(e.stats.wrong).toBe(0);
    expect(e.stats.withinDeadline).toBe(e.stats.measured);
    expect(e.stats.excluded).toBeGreaterThan(0); // the outage was seen by the readers
    expect(existsSync(join(out, 'evidence.json')) && existsSync(join(out, 'summary.md'))).toBe(true);
  });
});
