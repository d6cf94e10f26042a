// A PageStore wrapper that injects faults for tests: failing commits (as a failed fsync or a full
// disk would), torn commits (pages without their manifest), and bytes altered after the storage
// checksum (as only a deliberate change could).
import { PqdbError } from '../../src/errors';
import type { PageStore, CommitBatch } from '../../src/storage/page-store';

export interface Faults {
  /** The next commit fails: 'io' = IO_ERROR (a failed fsync), 'quota' = QUOTA_EXCEEDED. */
  failNextCommit?: 'io' | 'quota';
  /** The next commit writes its pages but not its manifest, then fails (a torn commit). */
  tearNextCommit?: boolean;
  /** Pages whose bytes come back with one bit flipped (after the medium's checksum). */
  alterPages?: Set<number>;
  /** The manifest comes back with one bit flipped at this offset. */
  alterManifestAt?: number;
}

export function faulty(inner: PageStore, faults: Faults): PageStore {
  return {
    get kind() {
      return `faulty(${inner.kind})`;
    },
    get isOpen() {
      return inner.isOpen;
    },
    get recovery() {
      return inner.recovery;
    },
    async readPage(id) {
      const p = await inner.readPage(id);
      if (p !== undefined && faults.alterPages?.has(id)) p[p.length >> 1] ^= 0x10;
      return p;
    },
    async readManifest() {
      const m = await inner.readManifest();
      if (m !== undefined && faults.alterManifestAt !== undefined) m[faults.alterManifestAt] ^= 1;
      return m;
    },
    listPages: () => inner.listPages(),
    async commit(batch: CommitBatch) {
      if (faults.failNextCommit) {
        const kind = faults.failNextCommit;
        faults.failNextCommit = undefined;
        throw kind === 'io'
          ? new PqdbError('IO_ERROR', 'fdatasync failed', { cause: new Error('EIO') })
          : new PqdbError('QUOTA_EXCEEDED', 'no space left on device');
      }
      if (faults.tearNextCommit) {
        faults.tearNextCommit = false;
        if (batch.pages && batch.pages.length > 0) await inner.commit({ pages: batch.pages });
        throw new PqdbError('IO_ERROR', 'power lost during the commit');
      }
      return inner.commit(batch);
    },
    deletePages: (ids) => inner.deletePages(ids),
    stats: () => inner.stats(),
    close: () => inner.close(),
  };
}
