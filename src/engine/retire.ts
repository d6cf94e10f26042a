// Retirement of old key generations (docs/migration.md): once no live record is left in a
// generation older than the current one, one commit deletes their commit pages, completes their
// Merkle logs in log pages and leaves their roots out of the key ring (installing it wipes them):
// what they sealed can no longer be opened by anyone holding the store's keys, while their logs and
// the signed checkpoints stay, so those checkpoints still verify, chain and prove consistency.

import { PqdbError } from '../errors';
import { CLOCK_STEP, pauseIfSpent, sliceSpent, yieldToEventLoop } from '../_yield';
import type { KeyRing } from './keys';
import type { KeyDirectory } from './directory';
import type { MerkleLogs } from './merkle-log';
import type { CommitPipeline } from './commit';
import type { LexicalStore } from './lexical-store';
import { retireGenerationCopies } from './copies';

export interface RetireContext {
  readonly pipeline: CommitPipeline;
  readonly keys: KeyRing;
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly lexical: LexicalStore;
}

/**
 * Retires every key generation older than the current one; resolves with those retired.
 * @throws PqdbError GENERATION_IN_USE while a migration is under way or a live record is still in
 * an older generation.
 */
export function retireGenerations(ctx: RetireContext): Promise<number[]> {
  return ctx.pipeline.run(async (draft) => {
    const m = draft.manifest;
    if (m.migration !== undefined)
      throw new PqdbError(
        'GENERATION_IN_USE',
        'a migration is under way: retire the older generations once it is done',
      );
    const current = ctx.keys.current();
    const old = ctx.keys.generations().filter((g) => g < current);
    if (old.length === 0) {
      draft.discard();
      return [];
    }
    let inUse = 0;
    let example = '';
    await ctx.directory.loadAllInSteps(pauseIfSpent);
    for (const [name, records] of ctx.directory.collections()) {
      let n = 0;
      for (const [id, loc] of records) {
        if (++n % CLOCK_STEP === 0 && sliceSpent()) await yieldToEventLoop();
        if (loc.generation === current) continue;
        if (inUse++ === 0) example = `${name}/${id} (generation ${loc.generation})`;
      }
    }
    if (inUse > 0) {
      const last = m.migrations?.at(-1)?.counts;
      const why =
        last !== undefined && last.withheld + last.failed > 0
          ? ` (the last migration left ${last.withheld} withheld by the authority check and ${last.failed} it could not read; see migration().failures)`
          : '';
      throw new PqdbError(
        'GENERATION_IN_USE',
        `${inUse} live record(s) are still in an older generation, such as ${example}${why}: migrate them (or delete them) first`,
      );
    }
    const retiring = new Set(old);
    const afterPage = m.nextPageId - 1; // every commit page so far: what an index persisted here covers
    const deletes = ctx.directory.pagesOf(retiring);
    for (const id of deletes) draft.deletePage(id);
    // Each retired log is kept whole in log pages: its commit pages, which it could be recomputed
    // from, are going.
    const logs = { ...(m.logs ?? {}) };
    for (const g of old) await ctx.logs.pushLogPage(g, logs, draft);
    m.logs = logs;
    const lastDeleted = deletes.reduce((a, b) => Math.max(a, b), 0);
    await ctx.lexical.beforeRetire(draft, current, lastDeleted, afterPage);
    m.retired = [...(m.retired ?? []), ...old];
    retireGenerationCopies(m, m.retired);
    draft.keyring.drop(retiring);
    return old;
  });
}
