// A read-only store following the commits another writer made to the same store (a replica and
// its primary, src/replication/replica.ts), without opening the store again for each one.
//
// Only commits that add records take this path: their sealed manifest differs from the installed
// one in the commit counter, the page and sequence counters, the log heads and new collections,
// and nothing else (the key ring, registry, checkpoints, logs, indexes, policy, migration and copy
// inventory are the same, byte for byte in their JSON form), and their pages are new commit pages
// only, between the two page counters, with no page deleted. Any other commit (a checkpoint, a
// migration step, a key or policy change, a compaction) returns undefined, and the caller opens
// the store anew on it, which checks everything opening checks.
//
// What is verified before anything changes: the manifest authenticates under the manifest key of
// the installed store secret (its header, envelopes included, equal to the installed one but for
// the commit counter, so the store secret is the same); every page opens under its generation's
// page key (decodePage: AES-GCM-SIV over the page's index) and lies between the counters; and the
// pages' operations, as leaves appended to each generation's log, give exactly the heads the new
// manifest names (the same rule replay checks on open: a page dropped, reordered, replayed or
// foreign gives another size or root). Untouched generations keep their heads.

import { PqdbError } from '../errors';
import { concatBytes, equalBytes } from '../_bytes';
import type { MerkleAppender } from '../crypto/merkle';
import { leafBlind } from './keys';
import { readManifest, unb64, MANIFEST_KEY_LABEL, type Manifest } from './manifest';
import { decodePage, pageGeneration, pageKey, pageKind, pageSalt } from './page-format';
import { applyCommitPage, opLeafHashes, type ReplayPage, type ReplayTarget } from './replay';
import type { KeyRing } from './keys';
import type { KeyDirectory } from './directory';
import type { MerkleLogs } from './merkle-log';
import type { CommitPipeline } from './commit';
import type { LexicalStore } from './lexical-store';
import type { PageCache } from './page-cache';

/** What following uses of a read-only engine (engine.ts builds it). */
export interface FollowContext {
  readonly readOnly: boolean;
  readonly pipeline: CommitPipeline;
  readonly keys: KeyRing;
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly storeId: Uint8Array;
  readonly lexical: LexicalStore;
  readonly cache: PageCache;
  /** Throws NOT_OPEN once the store is closed. */
  live(): void;
}

/** Commits another writer made, as shipped: their new pages, deleted page ids and last sealed manifest. */
export interface FollowedCommits {
  pages: readonly { id: number; bytes: Uint8Array }[];
  deletes: readonly number[];
  manifest: Uint8Array;
}

/**
 * Everything of a manifest a records-only commit leaves as it is, in a comparable form. The fields
 * it may change are left out, not overwritten: a field the first records of a store add (`heads`)
 * would otherwise land at another place in the JSON and make two equal manifests differ.
 */
function unchanged(m: Manifest): string {
  const { commit: _c, nextPageId: _p, nextSequence: _s, heads: _h, collections: _k, ...rest } = m;
  return JSON.stringify(rest);
}

const headerOf = (sealed: Uint8Array): string => JSON.stringify({ ...readManifest(sealed).header, commit: 0 });

/**
 * Verifies `next` against the installed state of read-only store `p`. Returns the step that applies
 * it (to run once the caller has made its pages and manifest durable below the store), or undefined
 * when `next` changes more than records (open the store anew on it).
 * @throws PqdbError AUTH_FAILED (a manifest or page that does not open), CORRUPTION (pages that do
 * not give the manifest's logs, a page outside the counters), ROLLBACK (a manifest not newer)
 */
export function prepareFollow(p: FollowContext, next: FollowedCommits): (() => Promise<void>) | undefined {
  p.live();
  if (!p.readOnly) throw new PqdbError('READ_ONLY', 'only a read-only store follows another writer');
  const installed = p.pipeline.manifest;
  const sealed = p.pipeline.sealedManifest;
  if (sealed === undefined || next.deletes.length > 0) return undefined;
  const header = readManifest(next.manifest);
  if (JSON.stringify({ ...header.header, commit: 0 }) !== headerOf(sealed)) return undefined;
  const m = header.open(p.keys.storeKey(MANIFEST_KEY_LABEL)); // AUTH_FAILED for a forged manifest
  if (m.commit <= installed.commit)
    throw new PqdbError('ROLLBACK', `commit ${m.commit} is not newer than the installed ${installed.commit}`);
  if (unchanged(m) !== unchanged(installed)) return undefined;
  for (const [name, meta] of Object.entries(installed.collections))
    if (JSON.stringify(m.collections[name]) !== JSON.stringify(meta)) return undefined;
  if (m.nextSequence < installed.nextSequence) return undefined;

  const target: ReplayTarget = {
    directory: p.directory,
    logs: p.logs,
    storeId: p.storeId,
    blind: (salt) => leafBlind(p.keys, salt),
    onPage: (page) => p.lexical.notePage(page),
  };
  const pages: ReplayPage[] = [];
  const leaves = new Map<number, Uint8Array[]>();
  let last = installed.nextPageId - 1;
  for (const { id, bytes } of [...next.pages].sort((a, b) => a.id - b.id)) {
    if (pageKind(bytes) !== 'commit') return undefined; // a checkpoint's or an index's page
    if (id <= last || id >= m.nextPageId)
      throw new PqdbError('CORRUPTION', `page ${id} lies outside the pages commit ${m.commit} may add`);
    last = id;
    const generation = pageGeneration(bytes);
    if (!p.keys.generations().includes(generation)) return undefined;
    const ops = decodePage(id, p.keys.generationKey(generation, 'page', pageKey), bytes);
    const page: ReplayPage = { id, generation, bytes, ops };
    page.leaves = opLeafHashes(p.storeId, generation, bytes, ops, target.blind(pageSalt(bytes)));
    pages.push(page);
    leaves.set(generation, [...(leaves.get(generation) ?? []), page.leaves]);
  }
  const appenders = new Map<number, MerkleAppender>();
  const heads = m.heads ?? {};
  const before = installed.heads ?? {};
  for (const g of new Set([...Object.keys(heads), ...Object.keys(before), ...leaves.keys()].map(Number))) {
    const added = leaves.get(g);
    let size = p.logs.size(g);
    let root = p.logs.root(g);
    if (added !== undefined) {
      const after = p.logs.headAfter(g, concatBytes(added));
      appenders.set(g, after.appender);
      ({ size, root } = after);
    }
    const head = heads[g];
    if ((head?.size ?? 0) !== size || (head !== undefined && !equalBytes(root, unb64(head.root))))
      throw new PqdbError(
        'CORRUPTION',
        `the pages of commit ${m.commit} do not give the log of generation ${g} its manifest names: a page is missing, older or foreign`,
      );
  }

  return async () => {
    // The last page of each generation takes the compact range computed above (no hashing again).
    const lastOf = new Map(pages.map((page) => [page.generation, page]));
    for (const page of pages) {
      if (lastOf.get(page.generation) === page) page.appender = appenders.get(page.generation);
      applyCommitPage(target, page);
      p.cache.put(page.id, page.bytes);
    }
    p.pipeline.adopt(m, next.manifest);
    for (const page of pages) await p.lexical.followed(page);
  };
}
