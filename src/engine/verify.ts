// The store verifier (DESIGN §7): reads a store through a PageStore opened for reading and checks,
// independently of the engine's write path, everything the store claims.
//
//   - structure: the manifest parses; every page passes its checksum and framing; log pages hold
//     what the manifest names;
//   - with the recipient secret key: the manifest MAC; each page's role comes from the manifest and
//     the persisted key directory (verify/directory.ts), never from its magic bytes, so every page
//     the directory lists as a live commit page, and every page after it the manifest does not name,
//     must open as a commit page under its generation's page key (and be the page the directory
//     kept: generation, length, commit salt); every stored record version decrypts and carries the
//     sequence its index names; each generation's Merkle leaves, recomputed from the records, equal
//     the persisted log (verify/log.ts); the directory's snapshots and partitions and the lexical
//     index pages open;
//   - with the trusted signer public key: every checkpoint's ML-DSA-87 signature;
//   - always: checkpoints belong to this store, chain by hash, grow within a generation; each
//     checkpoint's root equals the root of the leaves it covers; a consistency proof between every
//     consecutive pair of one generation verifies; an inclusion proof for every live record covered
//     by a checkpoint verifies against the root of its generation's last checkpoint.
//
// Roots and consistency proofs come from one MerkleAppender pass per generation (walkLog);
// inclusion proofs from one MerkleHashTree per generation, at its last checkpoint's size, dropped
// before the next generation's: time and memory stay linear in the log however many checkpoints
// sign it.
//
// Nothing is written: the engine's commit path is never called. Without a key, the checks needing
// it are reported as skipped (and the report is not `complete`), and pages are found by their kind
// (verify/unkeyed.ts): nothing then says what a page should be.

import { PqdbError } from '../errors';
import type { PageStore } from '../storage/page-store';
import { openStored } from './records';
import {
  recordLeafHashes,
  decodeCheckpoint,
  verifyCheckpoint,
  checkpointHash,
  signerKeyId,
  CHECKPOINT_BYTES,
  KEY_ID_BYTES,
  type Checkpoint,
} from '../crypto/proofs';
import {
  MerkleAppender,
  MerkleHashTree,
  HASH_BYTES,
  verifyInclusionOfHash,
  root as merkleRoot,
} from '../crypto/merkle';
import { KeyRing, leafBlind } from './keys';
import type { PageInfo } from './directory';
import { directoryRoles } from './verify/directory';
import { onPersisted, inOrder, walkLog, type CheckpointEntry, type LogWalk } from './verify/log';
import { viewOfPages, type View } from './verify/unkeyed';
import type { VerifyProblem, VerifyReport } from './verify/report';
import { fromHex, hex, readManifest, unb64, unlockManifest, type Manifest, type ManifestHeader } from './manifest';
import {
  decodePage,
  pageGeneration,
  pageKey,
  lexicalKey,
  decodeLogPage,
  decodeIndexPage,
  indexPageGeneration,
  pageKind,
  pageSalt,
  type IndexedOp,
} from './page-format';
import { concatBytes, equalBytes } from '../_bytes';

/** Explicit inclusion proofs are checked for every PROOF_SAMPLE-th leaf (a power of two). */
const PROOF_SAMPLE = 256;

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

export type { VerifyProblem, VerifyReport } from './verify/report';
export { formatVerifyReport } from './verify/report';

/**
 * Verifies a store on `pages` (open it read-only: see openNodeFsPageStore's `readOnly`). Never
 * throws for bad data: every failure is a problem in the report.
 * @throws TypeError for malformed options.
 * @example const report = await verifyStore(pages, { unlock: secretKey, signerPublicKey });
 */
export async function verifyStore(pages: PageStore, options: VerifyOptions = {}): Promise<VerifyReport> {
  const started = performance.now();
  const problems: VerifyProblem[] = [];
  const skipped: string[] = [];
  const notes: string[] = [];
  const fail = (where: string, e: unknown, code = 'CORRUPTION') =>
    problems.push({
      where,
      code: e instanceof PqdbError ? e.code : code,
      message: e instanceof Error ? e.message : String(e),
    });
  const counts: VerifyReport['counts'] = {
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
  const report = (): VerifyReport => {
    const ok = problems.length === 0;
    return {
      ok,
      complete: ok && skipped.length === 0,
      storeId: header?.storeId,
      storage: pages.kind,
      counts,
      skipped,
      problems,
      notes: [...pages.recovery.actions, ...notes],
      ms: performance.now() - started,
    };
  };
  if (options.unlock !== undefined && !(options.unlock instanceof Uint8Array))
    throw new TypeError('"unlock" expected a Uint8Array');
  if (options.signerPublicKey !== undefined && !(options.signerPublicKey instanceof Uint8Array))
    throw new TypeError('"signerPublicKey" expected a Uint8Array');

  // ---- manifest and keys ----
  let header: ManifestHeader | undefined;
  let raw: Uint8Array | undefined;
  try {
    raw = await pages.readManifest();
    if (raw === undefined)
      throw new PqdbError('NOT_FOUND', `no pqdb store here: the ${pages.kind} page store holds no manifest`);
    header = readManifest(raw).header;
  } catch (e) {
    fail('manifest', e);
    return report();
  }
  const storeId = fromHex(header.storeId);
  let keys: KeyRing | undefined;
  let manifest: View;
  if (options.decryptRecords === false && options.unlock !== undefined)
    skipped.push('decryption of record versions (left to the caller, which opens every record it uses)');
  if (options.unlock === undefined) {
    skipped.push('decryption and the manifest body (no recipient secret key): pages are found by their kind');
    manifest = await viewOfPages(pages);
  } else {
    try {
      const opened = unlockManifest(raw, options.unlock, { keyCacheSize: 64 });
      keys = opened.keys;
      manifest = opened.manifest;
    } catch (e) {
      // Nothing the manifest says is used once it does not authenticate.
      fail('manifest', e, 'AUTH_FAILED');
      return report();
    }
  }

  try {
    // ---- pages ----
    const special = new Map<number, string>();
    const persisted = new Map<number, Uint8Array>();
    const logParts = new Map<number, (Uint8Array | undefined)[]>();
    for (const [g, refs] of Object.entries(manifest.logs ?? {})) {
      logParts.set(
        Number(g),
        refs.map(() => undefined),
      );
      refs.forEach(({ pageId, from, to }, i) => special.set(pageId, `log:${g}:${i}:${from}:${to}`));
    }
    for (const [name, { pageId }] of Object.entries(manifest.indexes ?? {})) special.set(pageId, `index:${name}`);
    const checkpointPages = manifest.checkpointPages ?? [];
    checkpointPages.forEach((pageId, i) => special.set(pageId, `checkpoint:${i}`));
    // The persisted key directory first: it gives the roles of the pages it covers.
    const directory = keys !== undefined ? (manifest as Manifest).directory : undefined;
    directory?.snapshots.forEach((s, i) => s.pages.forEach((pageId, k) => special.set(pageId, `directory:${i}:${k}`)));
    const roles = keys !== undefined ? await directoryRoles(pages, directory, keys, fail) : undefined;
    for (const pageId of roles?.parts ?? []) if (!special.has(pageId)) special.set(pageId, 'part');
    const partPages = new Map<number, Uint8Array>();
    let unnamed = 0;
    const signedCheckpoints: (Uint8Array | undefined)[] = checkpointPages.map(() => undefined);
    let ids: number[] = [];
    try {
      ids = await pages.listPages();
    } catch (e) {
      fail('pages', e);
    }
    const listed = new Set(ids);
    // Deleted by a commit while a backup pinned them (pins.ts): not part of the store.
    const held = new Set(keys !== undefined ? ((manifest as Manifest).heldPages ?? []) : []);
    for (const pageId of special.keys())
      if (!listed.has(pageId))
        fail(`page ${pageId}`, new PqdbError('CORRUPTION', `page ${pageId} named by the manifest is missing`));
    const leaves = new Map<number, Uint8Array[]>();
    const live = new Map<string, Map<string, { generation: number; leafIndex: number }>>();
    const pageOps: { g: number; part: number; ops: (readonly ['put' | 'delete', string, string])[] }[] = [];
    let done = 0;
    for (const pageId of ids) {
      options.onProgress?.({ phase: 'pages', done: done++, total: ids.length });
      if (pageId >= manifest.nextPageId) {
        counts.pages++;
        continue; // written by a commit that never completed: never acknowledged, not part of the store
      }
      if (held.has(pageId)) {
        unnamed++;
        continue;
      }
      const role = special.get(pageId);
      let page: Uint8Array | undefined;
      if (roles?.heads.has(pageId) === true) {
        page = roles.heads.get(pageId); // read by the directory step (and reported there when it failed)
        if (page === undefined) continue;
      } else
        try {
          page = await pages.readPage(pageId);
          if (page === undefined) throw new PqdbError('CORRUPTION', `page ${pageId} is listed but unreadable`);
        } catch (e) {
          fail(`page ${pageId}`, e);
          continue;
        }
      counts.pages++;
      // A page below the directory's end that neither the manifest nor the directory names is not
      // part of the store (open ignores it too): a superseded log, index or checkpoint page, or a
      // deleted page put back. It is never taken for a commit page.
      const info = roles?.covered.get(pageId);
      if (role === undefined && roles !== undefined && info === undefined && pageId <= roles.afterPage) {
        unnamed++;
        continue;
      }
      try {
        if (role?.startsWith('log:')) {
          const [, g, i, from, to] = role.split(':').map(Number);
          logParts.get(g)![i] = decodeLogPage(page, g, from, to);
          counts.logPages++;
        } else if (role?.startsWith('checkpoint:')) {
          signedCheckpoints[Number(role.slice(11))] = page;
        } else if (role?.startsWith('directory:')) {
          counts.directoryPages++; // opened by the directory step
        } else if (role === 'part' || (keys === undefined && pageKind(page) === 'directory')) {
          // A base's partition (checked below); without the key, found by its kind (unauthenticated).
          counts.directoryPages++;
          partPages.set(pageId, page);
        } else if (role?.startsWith('index:')) {
          const name = role.slice(6);
          counts.indexPages++;
          if (keys !== undefined)
            decodeIndexPage(
              pageId,
              keys.generationKey(indexPageGeneration(page), 'lexical', lexicalKey),
              name,
              page,
            ).fill(0);
        } else {
          // A live commit page (the directory lists it, or it was written after the directory): it
          // must open as one under its generation's page key, and be what the directory kept.
          counts.commitPages++;
          if (keys === undefined) continue;
          const g = info?.generation ?? pageGeneration(page);
          const ops = decodePage(pageId, keys.generationKey(g, 'page', pageKey), page);
          if (info !== undefined) checkListed(pageId, page, info);
          if (options.decryptRecords !== false) checkRecords(pageId, g, page, ops, keys);
          // Every operation is a leaf, a delete too (its leaf has no record).
          const salt = pageSalt(page);
          const blind = leafBlind(keys, salt);
          const hashes = recordLeafHashes(
            storeId,
            ops.map((op) => {
              const record = op.kind === 'put' ? page!.subarray(op.offset, op.offset + op.length) : undefined;
              const governance = op.kind === 'put' ? op.governance : '';
              const { collection, id, sequence } = op;
              return {
                collection,
                id,
                sequence,
                suite: record?.[1] ?? 0,
                generation: g,
                record,
                governance,
                salt,
                blind,
              };
            }),
          );
          let list = leaves.get(g);
          if (list === undefined) leaves.set(g, (list = []));
          list.push(hashes);
          // Where its leaves sit is known once the log is placed (compacted pages leave gaps).
          pageOps.push({ g, part: list.length - 1, ops: ops.map((op) => [op.kind, op.collection, op.id] as const) });
        }
      } catch (e) {
        fail(`page ${pageId}`, e);
      }
    }
    options.onProgress?.({ phase: 'pages', done: ids.length, total: ids.length });
    // Each base's partitions, and every commit page the directory lists is there but for those the
    // manifest lists as dropped since.
    roles?.checkParts((id) => partPages.get(id));
    partPages.clear();
    for (const id of roles?.covered.keys() ?? [])
      if (!listed.has(id))
        fail(`page ${id}`, new PqdbError('CORRUPTION', `commit page ${id} the key directory names is missing`));
    if (unnamed > 0)
      notes.push(`${unnamed} page(s) the manifest and the key directory do not name are not part of the store`);
    for (const [g, parts] of logParts) {
      const refs = manifest.logs![g];
      const contiguous = refs.every((r, i) => r.from === (i === 0 ? 0 : refs[i - 1].to));
      if (!contiguous)
        problems.push({
          where: `generation ${g}`,
          code: 'CORRUPTION',
          message: `the log pages of generation ${g} are not contiguous`,
        });
      else if (parts.every((p) => p !== undefined)) persisted.set(g, concatBytes(parts as Uint8Array[]));
    }

    // ---- the Merkle log of each generation ----
    const logOf = new Map<number, Uint8Array>();
    const starts = new Map<number, number[]>();
    if (keys !== undefined) {
      for (const [g, parts] of leaves) {
        const kept = persisted.get(g);
        // Compaction deletes commit pages whose leaves the log pages keep: the pages left must give
        // their leaves at increasing places of the persisted log, and the pages past it its tail.
        const placed = (kept !== undefined ? onPersisted(kept, parts) : undefined) ?? inOrder(parts);
        const all = placed.all;
        starts.set(g, placed.starts);
        logOf.set(g, all);
        if (kept !== undefined && (kept.length > all.length || !equalBytes(kept, all.subarray(0, kept.length)))) {
          problems.push({
            where: `generation ${g}`,
            code: 'MISMATCH',
            message: `the persisted log of generation ${g} differs from the leaves recomputed from its records`,
          });
        }
      }
      const retired = new Set(manifest.retired ?? []);
      for (const [g, kept] of persisted) {
        if (leaves.has(g)) continue;
        // A retired generation's records are gone with its keys: its log stands on its log pages.
        if (retired.has(g)) logOf.set(g, kept);
        else
          problems.push({
            where: `generation ${g}`,
            code: 'MISMATCH',
            message: `generation ${g} has a persisted log but no records`,
          });
      }
      for (const g of retired)
        if (leaves.has(g))
          problems.push({
            where: `generation ${g}`,
            code: 'MISMATCH',
            message: `generation ${g} is retired but still has commit pages`,
          });
      // The live records, in page order, at the places their pages' leaves hold.
      for (const { g, part, ops } of pageOps) {
        let n = starts.get(g)![part];
        for (const [kind, collection, id] of ops) {
          let m = live.get(collection);
          if (m === undefined) live.set(collection, (m = new Map()));
          if (kind === 'delete') m.delete(id);
          else m.set(id, { generation: g, leafIndex: n });
          n++;
        }
      }
      for (const [name, m] of live) if (m.size > 0) counts.collections[name] = m.size;
      // The logs the records give must be those the manifest names (no commit page missing, older
      // or foreign: a dropped delete-only commit, for one, shows here).
      const heads = (manifest as Manifest).heads ?? {};
      for (const g of new Set([...Object.keys(heads).map(Number), ...logOf.keys()])) {
        const log = logOf.get(g) ?? new Uint8Array(0);
        const head = heads[g];
        const same =
          (head?.size ?? 0) === log.length / HASH_BYTES &&
          (head === undefined || equalBytes(new MerkleAppender().appendHashes(log).root(), unb64(head.root)));
        if (!same)
          problems.push({
            where: `generation ${g}`,
            code: 'MISMATCH',
            message: `the records of generation ${g} do not give the log the manifest names (${log.length / HASH_BYTES} of ${head?.size ?? 0} leaves, or another root)`,
          });
      }
    } else {
      for (const [g, kept] of persisted) logOf.set(g, kept);
    }
    for (const [g, log] of logOf) counts.leaves[g] = log.length / HASH_BYTES;

    // ---- checkpoints ----
    const list = signedCheckpoints;
    if (options.expectCheckpoint !== undefined) {
      const pin = options.expectCheckpoint;
      const decodedPins = list.map((b) => (b === undefined ? undefined : { b, c: decodeCheckpoint(b) }));
      const held =
        typeof pin === 'string'
          ? decodedPins.some((x) => x !== undefined && hex(checkpointHash(x.b)) === pin.toLowerCase())
          : (() => {
              const cs = decodedPins.flatMap((x) => (x?.c !== undefined ? [x.c] : []));
              const newest = cs.reduce((g, c) => Math.max(g, c.generation), 0);
              return cs.some((c) => c.generation === newest && c.size >= pin);
            })();
      if (!held)
        problems.push({
          where: 'checkpoints',
          code: 'ROLLBACK',
          message:
            typeof pin === 'string'
              ? `the store holds no checkpoint ${pin}: it is an older copy, or another store`
              : `the store's checkpoints do not reach log size ${pin}: it is an older copy`,
        });
    }
    if (list.length > 0 && options.signerPublicKey === undefined)
      skipped.push('checkpoint signatures (no trusted signer public key)');
    // Decoded in signing order, each with the one signed before it in its generation.
    const decoded: (CheckpointEntry | undefined)[] = [];
    const byGeneration = new Map<number, CheckpointEntry[]>();
    const lastOf = new Map<number, Checkpoint>();
    list.forEach((signed, index) => {
      const c = signed === undefined ? undefined : decodeCheckpoint(signed);
      if (c === undefined) {
        decoded.push(undefined);
        return;
      }
      const entry = { index, c, before: lastOf.get(c.generation) };
      decoded.push(entry);
      let same = byGeneration.get(c.generation);
      if (same === undefined) byGeneration.set(c.generation, (same = []));
      same.push(entry);
      lastOf.set(c.generation, c);
    });
    // One pass over each generation's log: its roots at the signed sizes and its consistency proofs.
    const walks = new Map<number, LogWalk>();
    for (const [g, same] of byGeneration) {
      const log = logOf.get(g);
      if (log !== undefined) walks.set(g, walkLog(log, same));
    }
    let previous: Uint8Array = new Uint8Array(48);
    list.forEach((signed, i) => {
      const where = `checkpoint ${i + 1}`;
      counts.checkpoints++;
      if (signed === undefined) return; // its page failed above
      const entry = decoded[i];
      if (entry === undefined) {
        problems.push({ where, code: 'CORRUPTION', message: 'the checkpoint does not decode' });
        return;
      }
      const { c, before } = entry;
      if (options.signerPublicKey !== undefined) {
        if (verifyCheckpoint(signed, options.signerPublicKey) === undefined) {
          const named = equalBytes(
            signed.subarray(CHECKPOINT_BYTES, CHECKPOINT_BYTES + KEY_ID_BYTES),
            signerKeyId(options.signerPublicKey),
          )
            ? 'its signature does not verify'
            : 'it names another signer key';
          problems.push({
            where,
            code: 'AUTH_FAILED',
            message: `the checkpoint is not signed by the trusted signer key: ${named}`,
          });
        } else counts.signaturesVerified++;
      }
      if (!equalBytes(c.storeId, storeId))
        problems.push({ where, code: 'MISMATCH', message: 'the checkpoint names another store' });
      if (!equalBytes(c.previous, previous))
        problems.push({ where, code: 'MISMATCH', message: 'the checkpoint does not chain to the one before it' });
      previous = checkpointHash(signed);
      if (before !== undefined && c.size < before.size)
        problems.push({ where, code: 'MISMATCH', message: `the log shrank from ${before.size} to ${c.size} leaves` });
      const log = logOf.get(c.generation);
      if (c.size === 0) {
        // A checkpoint of an empty log (a store checkpointed or backed up before its first write).
        if (!equalBytes(c.root, merkleRoot([])))
          problems.push({ where, code: 'MISMATCH', message: 'the checkpoint of an empty log signs another root' });
      } else if (log === undefined || log.length < c.size * HASH_BYTES) {
        if (keys !== undefined || c.size > 0)
          problems.push({
            where,
            code: 'MISMATCH',
            message: `generation ${c.generation} holds fewer than the ${c.size} leaves the checkpoint signs`,
          });
      } else if (!equalBytes(walks.get(c.generation)!.roots.get(c.size)!, c.root)) {
        problems.push({
          where,
          code: 'MISMATCH',
          message: `the root of the first ${c.size} leaves of generation ${c.generation} is not the signed root`,
        });
      } else if (before !== undefined && before.size <= c.size) {
        if (walks.get(c.generation)!.consistent.get(i) === true) counts.consistencyProofs++;
        else
          problems.push({
            where,
            code: 'MISMATCH',
            message: `the consistency proof from size ${before.size} does not verify`,
          });
      }
    });

    // ---- inclusion of every live record ----
    if (keys !== undefined) {
      const total = [...live.values()].reduce((n, m) => n + m.size, 0);
      const generations = new Set<number>();
      for (const m of live.values()) for (const { generation } of m.values()) generations.add(generation);
      let k = 0;
      // A generation at a time, so that one tree is held at once: the tree of the generation's last
      // checkpoint, built on its first record and dropped before the next generation.
      for (const g of [...generations].sort((x, y) => x - y)) {
        const c = lastOf.get(g);
        const log = logOf.get(g);
        let tree: MerkleHashTree | undefined;
        // The root of the log's first c.size leaves, recomputed from the records, is the signed
        // root: that proves every leaf below c.size included. Explicit proofs are checked for a
        // sample of leaves (and for all of them when the root does not match).
        const root = c !== undefined ? walks.get(g)?.roots.get(c.size) : undefined;
        const rootHolds = root !== undefined && equalBytes(root, c!.root);
        for (const [name, m] of live) {
          for (const [id, { generation, leafIndex }] of m) {
            if (generation !== g) continue;
            if ((k++ & 4095) === 0) options.onProgress?.({ phase: 'proofs', done: k, total });
            if (c === undefined || leafIndex >= c.size) {
              counts.uncheckpointed++;
              continue;
            }
            if (log === undefined || log.length < c.size * HASH_BYTES) continue; // reported above
            if (rootHolds && (leafIndex & (PROOF_SAMPLE - 1)) !== 0 && leafIndex !== c.size - 1) {
              counts.inclusionProofs++;
              continue;
            }
            tree ??= new MerkleHashTree(log.subarray(0, c.size * HASH_BYTES));
            const leaf = log.subarray(leafIndex * HASH_BYTES, (leafIndex + 1) * HASH_BYTES);
            if (verifyInclusionOfHash(leaf, leafIndex, c.size, tree.inclusionProof(leafIndex), c.root))
              counts.inclusionProofs++;
            else
              problems.push({
                where: `record ${name}/${id}`,
                code: 'MISMATCH',
                message: 'the inclusion proof does not verify against the checkpoint root',
              });
          }
        }
      }
      options.onProgress?.({ phase: 'proofs', done: total, total });
    } else if (list.length > 0) {
      skipped.push('inclusion proofs of live records (their leaves are known only with the secret key)');
    }
  } finally {
    keys?.close();
  }
  return report();

  /** A listed commit page is the one the directory kept: its generation, length and commit salt. */
  function checkListed(pageId: number, page: Uint8Array, info: PageInfo): void {
    if (
      pageGeneration(page) !== info.generation ||
      page.length !== info.bytes ||
      !equalBytes(pageSalt(page), info.salt)
    )
      throw new PqdbError('CORRUPTION', `commit page ${pageId} is not the page the key directory lists`);
  }

  function checkRecords(pageId: number, g: number, page: Uint8Array, ops: IndexedOp[], ring: KeyRing): void {
    for (const op of ops) {
      if (op.kind !== 'put') continue;
      try {
        const blob = page.subarray(op.offset, op.offset + op.length);
        openStored('verify', blob, { ...op, generation: g, salt: pageSalt(page) }, ring).fill(0);
        counts.recordsDecrypted++;
      } catch (e) {
        fail(`record ${op.collection}/${op.id} (page ${pageId})`, e);
      }
    }
  }
}
