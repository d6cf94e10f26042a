// The store verifier (DESIGN §7): reads a store through a PageStore opened for reading and checks,
// independently of the engine's write path, everything the store claims. It runs as steps over one
// run (run.ts), in order:
//
//   1. open.ts — the manifest parses; with the recipient secret key, its MAC and every key
//      generation (without it, pages are found by their kind: unkeyed.ts, and nothing then says
//      what a page should be);
//   2. pages.ts — every page passes its checksum and framing and is what the manifest and the
//      persisted key directory (directory.ts) say it is, never what its magic bytes say; every
//      stored record version decrypts; each commit page's Merkle leaves are recomputed;
//   3. generations.ts — each generation's leaves equal the persisted log and give the log head the
//      manifest names;
//   4. checkpoints.ts — the freshness pin; each checkpoint's signature, store, hash chain, growth,
//      root and consistency proof;
//   5. inclusion.ts — every live record covered by a checkpoint is included in its generation's
//      last signed root.
//
// Nothing is written: the engine's commit path is never called. Without a key, the checks needing
// it are reported as skipped (and the report is not `complete`). The steps import run.ts and one
// another's types, never this file.

import type { PageStore } from '../../storage/page-store';
import { openStore } from './open';
import { readPages } from './pages';
import { checkGenerations } from './generations';
import { checkCheckpoints } from './checkpoints';
import { checkInclusion } from './inclusion';
import { VerifyRun, type VerifyOptions } from './run';
import type { VerifyReport } from './report';

export type { VerifyOptions } from './run';
export type { VerifyProblem, VerifyReport } from './report';
export { formatVerifyReport } from './report';

/**
 * Verifies a store on `pages` (open it read-only: see openNodeFsPageStore's `readOnly`). Never
 * throws for bad data: every failure is a problem in the report.
 * @throws TypeError for malformed options.
 * @example const report = await verifyStore(pages, { unlock: secretKey, signerPublicKey });
 */
export async function verifyStore(pages: PageStore, options: VerifyOptions = {}): Promise<VerifyReport> {
  const run = new VerifyRun(pages, options);
  if (options.unlock !== undefined && !(options.unlock instanceof Uint8Array))
    throw new TypeError('"unlock" expected a Uint8Array');
  if (options.signerPublicKey !== undefined && !(options.signerPublicKey instanceof Uint8Array))
    throw new TypeError('"signerPublicKey" expected a Uint8Array');
  const store = await openStore(run);
  if (store === undefined) return run.report();
  try {
    const read = await readPages(run, store);
    const generations = checkGenerations(run, store, read);
    const checkpoints = checkCheckpoints(run, store, read.signedCheckpoints, generations.logOf, generations.floorOf);
    if (store.keys !== undefined) checkInclusion(run, generations, checkpoints);
    else if (read.signedCheckpoints.length > 0)
      run.skipped.push('inclusion proofs of live records (their leaves are known only with the secret key)');
  } finally {
    store.keys?.close();
  }
  return run.report();
}
