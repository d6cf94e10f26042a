// The managed-copies benchmark (bench/copies.mjs) on 1,000 WordNet synsets: every backup holds
// every record, every restore brings all of them back, the restore after a policy that revokes one
// scope withholds exactly that scope's records, the timed decisions give the policy's answers, and
// both migrations copy every record. Runs on the built dist/ (npm test builds first). Speed is not
// asserted here: the figures live in bench/results/.
import { describe, it, expect } from 'vitest';
// @ts-expect-error: a plain ES module without type declarations
import { runCopiesBench, governanceOf } from '../bench/copies.mjs';

describe('managed copies benchmark (small)', () => {
  it('accounts for every record through backup, restore, revocation and migration', async () => {
    const records = 1000;
    const e = await runCopiesBench({
      records,
      backupRuns: 2,
      loadedBackupRuns: 2,
      restoreRuns: 1,
      migrationRuns: 1,
      decisions: 20_000,
      decisionRounds: 2,
      postureRuns: 2,
      idlePuts: 10,
      quiet: true,
    });
    expect(e.records).toBe(records);
    expect(e.backup.quiet.records).toBe(records);
    expect(e.backup.quiet.pages).toBeGreaterThan(0);
    expect(e.backup.withPuts.putLatencyMs.count).toBeGreaterThan(0);
    for (const b of [...e.backup.quiet.runs, ...e.backup.withPuts.runs])
      expect(b.pausedMs).toBeLessThanOrEqual(b.tookMs);

    expect(e.restore.runs).toHaveLength(1);
    // The restore opens every live record itself: the copy's verification decrypts no version.
    expect(e.restore.runs[0]).toMatchObject({
      restored: records,
      withheld: 0,
      deleted: 0,
      recordsDecrypted: 0,
    });
    const hr = Array.from({ length: records }, (_, i) => governanceOf(i).scope).filter((s) => s === 'hr').length;
    expect(hr).toBeGreaterThan(0);
    expect(e.restore.revoked).toMatchObject({
      restored: records - hr,
      withheld: hr,
      deleted: 0,
      newStorePolicyVersion: 2,
      withheldRight: true,
    });
    expect(e.targets.restoreWithheld.met).toBe(true);

    expect(e.decision.governanceStates).toBe(8);
    expect(e.decision.migrateWithPolicy.allowed).toBe(20_000);
    expect(e.decision.migrateWithoutPolicy.allowed).toBe(20_000);
    expect(e.decision.restoreUnderRevocation.allowedRight).toBe(true);
    expect(e.decision.restoreUnderRevocation.allowed).toBeLessThan(20_000);

    for (const side of ['withPolicy', 'withoutPolicy'])
      expect(e.migration[side].runs).toMatchObject([
        { to: 'gcmsiv-hkdf384', copied: records, withheld: 0, retired: [1] },
      ]);

    // Posture is measured only where the Store has the method; otherwise the report says so.
    if (e.posture.run) expect(e.posture.runs).toHaveLength(2);
    else expect(e.posture.reason).toMatch(/absent/);
  });
});
