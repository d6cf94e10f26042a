// `pqdb migrate <location> --to SUITE`: moves every record (of one collection, or of every one) to
// SUITE on the live store (DESIGN §8) and prints the accounting; an unfinished migration resumes,
// Ctrl-C pauses it (resumable), --retire then retires the older key generations. Needs the
// recipient secret key; --signer with --signer-public signs the migration's checkpoint. Node only.
//
// Exit status: 0 migrated; 1 a record failed, the migration failed or retiring was refused;
// 2 a bad argument, a missing key or a store that cannot be opened; 130 paused by Ctrl-C.

/// <reference types="node" />
import { io } from './_io';
import { openNodeFsPageStore } from '../storage/node-fs';
import { Store } from '../engine/store';
import { suite as suiteOf, type SuiteName } from '../crypto/suites';
import { PqdbError } from '../errors';
import type { Keys } from './_keys';
import { migrationProgress } from './_progress';
import { UsageError, cannotOpen, errorText, formatAccounting } from './_report';
import { notePin, pinned } from './_store';

/** The options of `pqdb migrate` (strings as given on the command line). */
export interface MigrateOptions {
  to?: string;
  collection?: string;
  chunk?: string;
  retire?: boolean;
  json?: boolean;
  /** Draw the progress bar on stderr (index.ts: a terminal or --progress, and not --json). */
  progress?: boolean;
}

/**
 * Runs `pqdb migrate`; returns the exit status. The caller owns `keys` (and wipes them).
 * @throws UsageError without --to, without the recipient secret key, with only one of --signer and
 * --signer-public, or for an unknown suite; whatever closing the store throws.
 * @example
 * const code = await migrate('/var/lib/app/store', { to: 'cnsa2-gcm-hkdf384-commit' }, keys);
 */
export async function migrate(location: string, options: MigrateOptions, keys: Keys): Promise<number> {
  const { unlock, signer, signerPublicKey } = keys;
  if (options.to === undefined) throw new UsageError('--to SUITE is required');
  if (unlock === undefined) throw new UsageError('the recipient secret key is required (--unlock FILE or PQDB_UNLOCK)');
  if ((signer === undefined) !== (signerPublicKey === undefined))
    throw new UsageError('--signer and --signer-public go together');
  let to: SuiteName;
  try {
    to = suiteOf(options.to as SuiteName).name;
  } catch (e) {
    throw new UsageError((e as Error).message, { cause: e });
  }
  const chunk = options.chunk === undefined ? undefined : Number(options.chunk);
  let store: Store;
  try {
    const pages = await openNodeFsPageStore(location, { create: false });
    const opening = { unlock, signer, signerPublicKey, autoCheckpoint: false as const, ...pinned(keys) };
    store = await Store.open(pages, opening).catch(async (e) => {
      await pages.close();
      throw e;
    });
  } catch (e) {
    return cannotOpen('migrate', location, e);
  }
  try {
    notePin(keys, store);
  } catch (e) {
    await store.close();
    return cannotOpen('migrate', location, e);
  }
  const tty = options.progress === true && !options.json;
  const onProgress = migrationProgress(tty);
  const ac = new AbortController();
  const onSigint = () => ac.abort();
  process.once('SIGINT', onSigint);
  try {
    const result = await store.migrate({
      to,
      collection: options.collection,
      chunkRecords: chunk,
      signal: ac.signal,
      onProgress,
    });
    if (tty) io.stderr.write('\n');
    // Retiring comes after the migration's own report is settled; a refusal (a record withheld or
    // left in an older generation) is reported on its own and leaves the migration as it is.
    let retired: number[] | undefined;
    let refused: string | undefined;
    if (options.retire === true) {
      try {
        retired = await store.retireGenerations();
      } catch (e) {
        if (!(e instanceof PqdbError && e.code === 'GENERATION_IN_USE')) throw e;
        refused = e.message;
      }
    }
    if (options.json)
      io.stdout.write(
        `${JSON.stringify({ location, ...result, ...(retired && { retired }), ...(refused !== undefined && { retireRefused: refused }) }, null, 2)}\n`,
      );
    else {
      io.stdout.write(
        `pqdb migrate ${location}: ${result.collections.join(', ') || '(no collections)'} → ${result.to} (generation ${result.generation})\n`,
      );
      io.stdout.write(`  ${formatAccounting(result)}\n`);
      const phases = Object.entries(result.phaseMs)
        .map(([k, v]) => `${k} ${((v ?? 0) / 1000).toFixed(2)} s`)
        .join(', ');
      io.stdout.write(`  work ${(result.workMs / 1000).toFixed(2)} s (${phases})\n`);
      for (const f of result.failures) io.stdout.write(`  failed: ${f}\n`);
      if (retired !== undefined) io.stdout.write(`  retired generation(s): ${retired.join(', ') || 'none'}\n`);
    }
    if (refused !== undefined) io.stderr.write(`pqdb migrate: the older generations were not retired: ${refused}\n`);
    return result.failed > 0 || refused !== undefined ? 1 : 0;
  } catch (e) {
    if (tty) io.stderr.write('\n');
    if (e instanceof PqdbError && e.code === 'ABORTED') {
      const m = store.migration();
      io.stderr.write(
        `pqdb migrate: paused in phase ${m?.phase}; ${m ? formatAccounting(m) : ''}; run it again to resume\n`,
      );
      return 130;
    }
    io.stderr.write(`pqdb migrate: ${errorText(e)}\n`);
    return e instanceof RangeError || e instanceof TypeError ? 2 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    try {
      notePin(keys, store);
    } finally {
      await store.close();
    }
  }
}
