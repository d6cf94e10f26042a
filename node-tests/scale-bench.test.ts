// The scale benchmark (bench/scale.mjs) at 3,000 records, every part, against both peers: each
// engine ingests and reads back every record, a cold open in a new process finds a record at the
// checkpoint and after 1,000 later changes (pqdb's from its partitioned key directory), compaction
// shrinks pqdb's disk, and the migration accounts for every record. Runs on the built dist/ (npm
// test builds first). Speed is not asserted here: the figures live in bench/results/.
import { describe, it, expect } from 'vitest';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

type Open = { runs: { found: boolean }[] };
type Result = {
  engine: string;
  records: number;
  ingest: { recordsPerSec: number; bytesOnDisk: number };
  reads: { reads: number; recordsPerSec: number };
  open: { atCheckpoint: Open; afterChanges: Open };
  compaction: { diskToLiveBefore: number; diskToLiveAfter: number; liveRecords?: number };
  migration?: { phase: string; accounting: Record<string, number> };
};

describe('scale benchmark (small)', () => {
  it('runs every part on every engine and accounts for every record', () => {
    const out = mkdtempSync(join(tmpdir(), 'pqdb-scale-test-'));
    try {
      execFileSync(
        process.execPath,
        [
          'bench/scale.mjs',
          '--sizes',
          '3000',
          '--reads',
          '3000',
          '--changes',
          '1000',
          '--live-sample',
          '200',
          '--out',
          out,
        ],
        { stdio: 'pipe', timeout: 240_000 },
      );
      const report = JSON.parse(readFileSync(join(out, 'scale.json'), 'utf8')) as { results: Result[] };
      expect(report.results.map((r) => r.engine).sort()).toEqual(['level', 'pqdb', 'sqlite']);
      for (const r of report.results) {
        expect(r.records, r.engine).toBe(3000);
        expect(r.ingest.recordsPerSec, r.engine).toBeGreaterThan(0);
        expect(r.reads.reads, r.engine).toBe(3000);
        expect(
          [...r.open.atCheckpoint.runs, ...r.open.afterChanges.runs].every((x) => x.found),
          r.engine,
        ).toBe(true);
      }
      const pqdb = report.results.find((r) => r.engine === 'pqdb')!;
      expect(pqdb.compaction.diskToLiveAfter).toBeLessThan(pqdb.compaction.diskToLiveBefore);
      const a = pqdb.migration!.accounting;
      expect(pqdb.migration!.phase).toBe('done');
      expect(a.copied + a.superseded + a.deleted + a.withheld + a.failed + a.inserted).toBe(a.total);
      expect(a.total).toBe(4000); // the 3,000 records and the open part's 1,000
      expect(readFileSync(join(out, 'scale.md'), 'utf8')).toMatch(/## Live migration/);
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  }, 300_000);
});
