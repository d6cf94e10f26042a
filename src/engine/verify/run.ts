// One run of the store verifier (DESIGN §7): what every step shares — the page store and options,
// the store as the manifest step opened it, and where checks report (problems, skipped checks,
// notes, counts). The steps (open.ts, pages.ts, generations.ts, checkpoints.ts, inclusion.ts) run in
// that order over one run; index.ts drives them.

import { PqdbError } from '../../errors';
import type { PageStore } from '../../storage/page-store';
import type { KeyRing } from '../keys';
import type { ManifestHeader } from '../manifest';
import type { View } from './unkeyed';
import type { VerifyProblem, VerifyReport } from './report';

export interface VerifyOptions {
  /** A recipient secret key: decrypts and authenticates everything sealed. */
  unlock?: Uint8Array;
  /** The trusted ML-DSA-87 public key checkpoints must be signed with. */
  signerPublicKey?: Uint8Array;
  /**
   * A freshness pin kept outside the store: the hash (96 hex digits, as `store.info().checkpoint.hash`
   * gives it) of a checkpoint the store must still hold, or a log size its newest generation's
   * checkpoints must reach. An older copy of the whole store fails with code ROLLBACK.
   */
  expectCheckpoint?: string | number;
  /**
   * @internal False leaves the decryption of record versions to the caller, which opens every
   * record it uses itself (restoreStore): their bytes are still checked against the signed logs.
   */
  decryptRecords?: boolean;
  /** Called as work proceeds (pages read, proofs checked). */
  onProgress?: (p: { phase: 'pages' | 'proofs'; done: number; total: number }) => void;
}

/** The store as the manifest step opened it. */
export interface OpenedStore {
  readonly header: ManifestHeader;
  /** The store id's bytes. */
  readonly storeId: Uint8Array;
  /** The key ring, with a recipient secret key (closed when the run ends). */
  readonly keys?: KeyRing;
  /** The authenticated manifest with the key; without it, what the pages' kinds say (unkeyed.ts). */
  readonly manifest: View;
}

/** A verifier run: its inputs and what its checks found so far. */
export class VerifyRun {
  readonly started = performance.now();
  readonly problems: VerifyProblem[] = [];
  readonly skipped: string[] = [];
  readonly notes: string[] = [];
  readonly counts: VerifyReport['counts'] = {
    pages: 0,
    commitPages: 0,
    logPages: 0,
    indexPages: 0,
    directoryPages: 0,
    recordsDecrypted: 0,
    collections: {},
    leaves: {},
    checkpoints: 0,
    signaturesVerified: 0,
    consistencyProofs: 0,
    inclusionProofs: 0,
    uncheckpointed: 0,
  };
  /** The manifest's readable header, once it is read. */
  header?: ManifestHeader;

  constructor(
    readonly pages: PageStore,
    readonly options: VerifyOptions,
  ) {}

  /** Reports `e` at `where`: its PqdbError code, else `code`. */
  readonly fail = (where: string, e: unknown, code = 'CORRUPTION'): void => {
    this.problems.push({
      where,
      code: e instanceof PqdbError ? e.code : code,
      message: e instanceof Error ? e.message : String(e),
    });
  };

  /** Reports a failed check. */
  problem(where: string, code: string, message: string): void {
    this.problems.push({ where, code, message });
  }

  report(): VerifyReport {
    const ok = this.problems.length === 0;
    return {
      ok,
      complete: ok && this.skipped.length === 0,
      storeId: this.header?.storeId,
      storage: this.pages.kind,
      counts: this.counts,
      skipped: this.skipped,
      problems: this.problems,
      notes: [...this.pages.recovery.actions, ...this.notes],
      ms: performance.now() - this.started,
    };
  }
}
