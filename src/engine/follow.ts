// A read-only store following the commits another writer made to the same store (a replica and
// its primary, src/replication/replica.ts), without opening the store again for each one.
//
// Only commits that add records take this path: their sealed manifest differs from the installed
// one in the commit counter, the page and sequence counters, the log heads, new collections and
// the request ids of its writes, and nothing else (the key ring, registry, checkpoints, logs, indexes, policy, migration and copy
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
//
// The step it returns installs nothing itself: it hands the verified commit to the pipeline's
// `apply` (commit.ts, the only installer), which installs the manifest and runs the `applied`
// hooks with it, marked `foreign` — the directory, logs and cache through apply.ts, the loaded
// lexical indexes, replication shipping — as for any commit.

import { PqdbError } from '../errors';
import { concatBytes, equalBytes } from '../_bytes';
import type { MerkleAppender } from '../crypto/merkle';
import { leafBlind, type KeyRing } from './keys';
import type { MerkleLogs } from './merkle-log';
import { readManifest, MANIFEST_KEY_LABEL, type Manifest } from './manifest';
import { unb64 } from '../_encoding';
import { decodePage, pageGeneration, pageKey, pageKind, pageSalt } from './page-format';
import { opLeafHashes } from './apply';
import type { CommitPage, CommitPipeline } from './commit';

/** What following uses of a read-only store: its installed state, key ring and logs, and its pipeline's `apply`. */
export interface FollowContext {
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'sealedManifest' | 'apply'>;
  readonly keys: KeyRing;
  readonly logs: Pick<MerkleLogs, 'size' | 'root' | 'headAfter'>;
  readonly storeId: Uint8Array;
  /** True when the store was opened read-only (only such a store follows another writer). */
  readonly readOnly: boolean;
  /** Throws when the store is closed. */
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
  const { commit: _c, nextPageId: _p, nextSequence: _s, heads: _h, collections: _k, requests: _r, ...rest } = m;
  return JSON.stringify(rest);
}

const headerOf = (sealed: Uint8Array): string => JSON.stringify({ ...readManifest(sealed).header, commit: 0 });

/**
 * Verifies `next` against the installed state of read-only store `p`. Returns the step that applies
 * it through the pipeline (to run once the caller has made its pages and manifest durable below the
 * store, before any other step), or undefined when `next` changes more than records (open the store
 * anew on it).
 * @throws PqdbError AUTH_FAILED (a manifest or page that does not open), CORRUPTION (pages that do
 * not give the manifest's logs, a page outside the counters), ROLLBACK (a manifest not newer); the
 * step: INTERNAL when the installed state changed since it was verified
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

  const blind = (salt: Uint8Array) => leafBlind(p.keys, salt);
  const pages: CommitPage[] = [];
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
    const page: CommitPage = { id, generation, bytes, ops };
    page.leaves = opLeafHashes(p.storeId, generation, bytes, ops, blind(pageSalt(bytes)));
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

  // The last page of each generation takes the compact range computed above (no hashing again).
  const lastOf = new Map(pages.map((page) => [page.generation, page]));
  for (const page of pages) if (lastOf.get(page.generation) === page) page.appender = appenders.get(page.generation);
  const sealedManifest = next.manifest;
  return async () => {
    await p.pipeline.apply(() => {
      p.live();
      // Verified against `installed`: nothing else installs on a read-only store, and steps run one at a time.
      if (p.pipeline.manifest !== installed)
        throw new PqdbError('INTERNAL', `the store changed between verifying commit ${m.commit} and applying it`);
      return { manifest: m, sealedManifest, commitPages: pages };
    });
  };
}
