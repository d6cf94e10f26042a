// A schema upgrade's rewrite (docs/api.md, "Schema evolution"): a collection opened with a schema
// that cannot follow its stored one as is, and an `upgrade` function, moves to that schema's next
// version with its first write; then `collection.upgradeRecords()` rewrites every record of an
// earlier version through the function, a chunk of records per commit, each chunk read and written
// in its own commit task (no other write lands between a record's read and its rewrite, so nothing
// written meanwhile is overwritten), yielding between chunks so reads and writes go on. Until the
// last chunk, a record of an earlier version reads through the function (engine.ts). A kill leaves
// the chunks done; running it again (with the same function) rewrites what is left, and its last
// commit clears the manifest's `upgrade` mark.

import { PqdbError } from '../errors';
import { pauseIfSpent, yieldToEventLoop } from '../_yield';
import { decodeValue, valueVersion, type Value } from './codec';
import { encodeOps, stageOps, type DeclaredCollection, type PendingOp } from './writes';
import type { CommitPipeline } from './commit';
import type { KeyDirectory } from './directory';
import type { KeyRing } from './keys';
import type { RecordIO } from './records';

/** Records read and rewritten per commit. */
const UPGRADE_CHUNK = 256;

/** What an upgrade's rewrite uses of the engine (engine.ts builds it). */
export interface UpgradeContext {
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'registry' | 'run'>;
  readonly keys: Pick<KeyRing, 'current'>;
  readonly records: Pick<RecordIO, 'open' | 'put'>;
  readonly directory: Pick<KeyDirectory, 'get' | 'unorderedIds' | 'loadAllInSteps'>;
  live(): void;
}

/** What a rewrite did. */
export interface UpgradeResult {
  /** Records rewritten through the upgrade function. */
  rewritten: number;
  /** Records already at the current version (written since, or by an earlier run). */
  current: number;
  /** The schema version every record is now at. */
  version: number;
}

/**
 * Rewrites every record of `c` written under an earlier schema version through `c.upgrade`.
 * @throws TypeError when `c` was not opened with an upgrade; what the function, a record's read or
 * a commit throws (the chunks done stay done: run it again)
 */
export async function upgradeRecords(
  ctx: UpgradeContext,
  c: DeclaredCollection,
  onProgress?: (p: { done: number; total: number }) => void,
): Promise<UpgradeResult> {
  const upgrade = c.upgrade;
  if (upgrade === undefined) throw new TypeError(`collection "${c.name}" was not opened with an upgrade function`);
  const target = c.schema.version;
  await ctx.directory.loadAllInSteps(pauseIfSpent);
  const ids = ctx.directory.unorderedIds(c.name);
  const result: UpgradeResult = { rewritten: 0, current: 0, version: target };
  for (let at = 0; at < ids.length; at += UPGRADE_CHUNK) {
    ctx.live();
    const chunk = ids.slice(at, at + UPGRADE_CHUNK);
    await ctx.pipeline.run(async (draft) => {
      const pending: PendingOp[] = [];
      for (const id of chunk) {
        const loc = ctx.directory.get(c.name, id);
        if (loc === undefined) continue; // deleted meanwhile
        const plaintext = await ctx.records.open('index', c.name, id, loc);
        let value: Value;
        let version: number;
        try {
          version = valueVersion(plaintext);
          if (version >= target) {
            result.current++;
            continue;
          }
          value = decodeValue(c.schema, plaintext);
        } finally {
          plaintext.fill(0);
        }
        const next = upgrade(value, version);
        pending.push({ kind: 'put', collection: c, id, value: next, governance: JSON.parse(loc.governance) });
      }
      if (pending.length === 0) return draft.discard();
      stageOps(
        draft,
        ctx.records,
        ctx.keys.current(),
        encodeOps(pending, ctx.pipeline.manifest, ctx.pipeline.registry),
      );
      result.rewritten += pending.length;
    });
    onProgress?.({ done: Math.min(ids.length, at + UPGRADE_CHUNK), total: ids.length });
    await yieldToEventLoop();
  }
  // Every record is at the current version: the mark goes (in a commit of its own).
  await ctx.pipeline.run((draft) => {
    const meta = draft.manifest.collections[c.name];
    if (meta?.upgrade === undefined) return draft.discard();
    if (meta.upgrade.to !== target)
      throw new PqdbError(
        'CONFLICT',
        `collection "${c.name}" is being upgraded to version ${meta.upgrade.to}, not ${target}`,
      );
    const { upgrade: _done, ...rest } = meta;
    draft.manifest.collections[c.name] = rest;
  });
  return result;
}
