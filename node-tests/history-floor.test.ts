// History floors (src/engine/history-floor.ts): a compaction drops the leaf hashes below the first
// live commit page of the current generation once a signed checkpoint covers them. What must keep
// holding: every record, every export made before (it carries its proof) and after, inclusion
// proofs of every live record against the newest checkpoint, verifyStore with signatures and the
// chain of links from every older checkpoint, restore from a copy, the rollback pins; and a floor
// page altered, swapped or forged is caught.
import { describe, it, expect } from 'vitest';
import { openMemoryPageStore, verifyStore, verifySealed, generateRecipient, generateSigner } from '../src/index';
import { merkle } from '../src/crypto';
import { MemoryMedium } from '../src/storage/memory';
import { pageKind } from '../src/engine/page-format';
import { decodeFloorPage, encodeFloorPage } from '../src/engine/history-floor';
import { unlockManifest, encodeManifest } from '../src/engine/manifest';
import { sha384 } from '../src/kernels/sha2';
import { crc32c } from '../src/_crc32c';
import { docsOpener } from './support/memory-docs';

const r = generateRecipient('classical');
const signer = generateSigner();
const schema = { text: 'string', round: 'integer' } as const;
const N = 600;
const id = (i: number) => `r${String(i).padStart(4, '0')}`;
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');

/** Four rounds over N records, a checkpoint after each batch of 200 (12 checkpoints). */
async function churned(options: { signed?: boolean } = {}) {
  const medium = new MemoryMedium();
  const keys = options.signed === false ? { recipient: r } : { recipient: r, signer };
  const open = docsOpener(medium, keys, schema);
  const { store, docs } = await open(true);
  for (let round = 0; round < 4; round++)
    for (let i = 0; i < N; i += 200) {
      await store.batch((tx) => {
        for (let k = i; k < i + 200; k++) tx.put(docs, id(k), { text: `w${k % 13} r${round}`, round });
      });
      if (options.signed !== false) await store.checkpoint();
    }
  return { medium, open, store, docs };
}

const logBytes = (medium: MemoryMedium) =>
  [...medium.pages.values()].filter((p) => pageKind(p.bytes) === 'log').reduce((n, p) => n + p.bytes.length, 0);
const floorPage = (medium: MemoryMedium) => [...medium.pages].find(([, p]) => pageKind(p.bytes) === 'floor');

async function verify(medium: MemoryMedium, extra: { expectCheckpoint?: string } = {}) {
  const pages = await openMemoryPageStore({ medium, readOnly: true });
  try {
    return await verifyStore(pages, { unlock: r.secretKey, signerPublicKey: signer.publicKey, ...extra });
  } finally {
    await pages.close();
  }
}

/** Rewrites the manifest as a holder of the store secret can (sealed under the real manifest key). */
async function forgeManifest(medium: MemoryMedium, change: (m: ReturnType<typeof unlockManifest>['manifest']) => void) {
  const { manifest, keys } = unlockManifest(medium.manifest!.bytes, r.secretKey);
  change(manifest);
  const bytes = encodeManifest(manifest, keys.storeKey('pqdb manifest key v2'));
  medium.manifest = { bytes, crc: crc32c(bytes) };
  keys.close();
}

describe('history floor', () => {
  it('drops the dead history after a compaction; records, exports, proofs and verifyStore hold', async () => {
    const { medium, open, store, docs } = await churned();
    const before = store.checkpoints();
    const early = await docs.exportSealed(id(5)); // round 3's version, checkpointed
    const logBefore = logBytes(medium);
    const result = await store.compact();
    expect(result.pagesRewritten).toBe(9);
    expect(result.historyFloor).toEqual({ generation: 1, from: 0, to: 3 * N, logPagesDeleted: 9 });
    // 48 bytes per dropped leaf: 1,800 of the 2,400 leaves' hashes are gone from the medium.
    expect(logBefore - logBytes(medium)).toBeGreaterThanOrEqual(3 * N * 48);
    const floor = decodeFloorPage(floorPage(medium)![1].bytes, 1, 3 * N);
    // A link for every checkpoint below the floor (9 of them), none needing an earlier floor.
    expect(floor.links.map((l) => l.size)).toEqual(before.filter((c) => c.size < 3 * N).map((c) => c.size));
    expect(floor.hops).toEqual([]);
    // Exports from before and after verify on their own; the newest checkpoint covers every record.
    expect(verifySealed(early, signer.publicKey).valid).toBe(true);
    for (let k = 0; k < N; k += 41)
      expect(verifySealed(await docs.exportSealed(id(k)), signer.publicKey).valid).toBe(true);
    const list = store.checkpoints();
    expect(list.slice(0, before.length)).toEqual(before); // nothing signed is dropped
    const last = list.length - 1;
    for (let i = 0; i < last; i++) {
      if (list[i].size < 3 * N) continue;
      const proof = await store.consistencyProof(i, last);
      expect(merkle.verifyConsistency(list[i].size, list[last].size, list[i].root, list[last].root, proof)).toBe(true);
    }
    await expect(store.consistencyProof(0, last)).rejects.toMatchObject({ code: 'HISTORY_PRUNED' });
    await store.close();

    const report = await verify(medium);
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    expect(report.counts.leaves).toEqual({ 1: 4 * N });
    expect(report.counts.signaturesVerified).toBe(list.length);
    expect(report.counts.consistencyProofs).toBe(list.length - 1);
    expect(report.counts.inclusionProofs).toBe(N);

    const again = await open();
    expect(again.store.recovery.clean).toBe(true);
    for (let k = 0; k < N; k += 7) expect(await again.docs.get(id(k))).toEqual({ text: `w${k % 13} r3`, round: 3 });
    expect(verifySealed(await again.docs.exportSealed(id(8)), signer.publicKey).valid).toBe(true);
    // Writes and checkpoints go on from the floor; a second compaction raises it with a hop.
    await again.store.batch((tx) => {
      for (let k = 0; k < N; k++) tx.put(again.docs, id(k), { text: `again ${k}`, round: 5 });
    });
    await again.store.checkpoint();
    const second = await again.store.compact();
    expect(second.historyFloor).toMatchObject({ from: 3 * N, to: 4 * N });
    const raised = decodeFloorPage(floorPage(medium)![1].bytes, 1, 4 * N);
    expect(raised.hops.map((h) => h.size)).toEqual([3 * N]);
    expect([...medium.pages.values()].filter((p) => pageKind(p.bytes) === 'floor')).toHaveLength(1);
    await again.store.close();
    const third = await open();
    expect(await third.docs.get(id(9))).toEqual({ text: 'again 9', round: 5 });
    expect(verifySealed(await third.docs.exportSealed(id(9)), signer.publicKey).valid).toBe(true);
    await third.store.close();
    const final = await verify(medium);
    expect(final.problems).toEqual([]);
    expect(final.counts.consistencyProofs).toBe(third.store.checkpoints().length - 1);
  });

  it('a retired generation keeps no leaf hashes: its floor goes to its end, and everything verifies', async () => {
    const { medium, open, store, docs } = await churned();
    const early = await docs.exportSealed(id(3));
    await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
    expect(await store.retireGenerations()).toEqual([1]);
    const logBefore = logBytes(medium);
    const result = await store.compact();
    // Generation 1 has no records left: its whole log (4 rounds) goes; generation 2's has no dead history.
    expect(result.historyFloors).toEqual([{ generation: 1, from: 0, to: 4 * N, logPagesDeleted: 12 }]);
    expect(result.historyFloor).toBeUndefined();
    expect(logBefore - logBytes(medium)).toBeGreaterThanOrEqual(4 * N * 48);
    expect(verifySealed(early, signer.publicKey).valid).toBe(true);
    const checkpoints = store.checkpoints().length;
    await store.close();
    const report = await verify(medium);
    expect(report.problems).toEqual([]);
    expect(report.counts.leaves).toEqual({ 1: 4 * N, 2: N });
    expect(report.counts.consistencyProofs).toBe(checkpoints - 2); // the first of each generation has none before it
    const again = await open();
    expect(await again.docs.get(id(4))).toEqual({ text: 'w4 r3', round: 3 });
    expect(verifySealed(await again.docs.exportSealed(id(4)), signer.publicKey).valid).toBe(true);
    await again.store.close();
  });

  it('a store without signer keys raises its floor too, and reopens and verifies', async () => {
    const { medium, open, store } = await churned({ signed: false });
    const result = await store.compact();
    expect(result.historyFloor?.to).toBe(3 * N);
    await store.close();
    const again = await open();
    expect(again.docs.size).toBe(N);
    expect(await again.docs.get(id(3))).toEqual({ text: 'w3 r3', round: 3 });
    await again.store.close();
    const pages = await openMemoryPageStore({ medium, readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey });
    await pages.close();
    expect(report.problems).toEqual([]);
  });

  it('a floor page altered on the medium, or an older one put back, fails the open and the verifier', async () => {
    const { medium, open, store } = await churned();
    await store.compact();
    await store.close();
    const [pageId, stored] = floorPage(medium)!;
    const bytes = stored.bytes.slice();
    bytes[20] ^= 1; // a byte of its compact range
    medium.pages.set(pageId, { bytes, crc: crc32c(bytes) });
    const report = await verify(medium);
    expect(report.ok).toBe(false);
    expect(report.problems.some((p) => /floor/.test(p.message))).toBe(true);
    await expect(open()).rejects.toMatchObject({ code: 'CORRUPTION', message: expect.stringMatching(/floor page/) });
  });

  it('a forged floor (manifest resealed with the store secret) cannot pass the signed checkpoints', async () => {
    const { medium, open, store } = await churned();
    await store.compact();
    await store.close();
    const [pageId, stored] = floorPage(medium)!;
    // A link proof changed: its hash named in a resealed manifest, as a removed recipient could.
    const floor = decodeFloorPage(stored.bytes, 1, 3 * N);
    floor.links[2].proof[0] = new Uint8Array(48).fill(7);
    const forged = encodeFloorPage(floor);
    medium.pages.set(pageId, { bytes: forged, crc: crc32c(forged) });
    await forgeManifest(medium, (m) => (m.floors![1].hash = b64(sha384(forged))));
    const report = await verify(medium);
    expect(report.problems).toEqual([
      expect.objectContaining({
        where: 'generation 1',
        code: 'MISMATCH',
        message: expect.stringMatching(/link of the checkpoint of size 600/),
      }),
    ]);
    // A floor whose compact range is changed gives another root: the open catches it on first load.
    floor.links[2].proof[0] = decodeFloorPage(stored.bytes, 1, 3 * N).links[2].proof[0];
    floor.frontier[0] = new Uint8Array(48).fill(9);
    const other = encodeFloorPage(floor);
    medium.pages.set(pageId, { bytes: other, crc: crc32c(other) });
    await forgeManifest(medium, (m) => (m.floors![1].hash = b64(sha384(other))));
    const bad = await verify(medium);
    expect(bad.ok).toBe(false);
    const { store: reopened, docs } = await open();
    await expect(docs.exportSealed(id(1))).rejects.toMatchObject({ code: 'CORRUPTION' });
    await reopened.close().catch(() => undefined);
  });

  it('a copy from before the compaction is an older store: the pins catch the rollback', async () => {
    const { medium, open, store } = await churned();
    const old = new MemoryMedium();
    for (const [k, v] of medium.pages) old.pages.set(k, v);
    old.manifest = medium.manifest;
    await store.compact();
    await store.checkpoint();
    const { commit, checkpoint } = store.info();
    await store.close();
    // The old copy is whole and consistent on its own, but older.
    const stale = await verify(old, { expectCheckpoint: checkpoint!.hash });
    expect(stale.problems).toEqual([expect.objectContaining({ code: 'ROLLBACK' })]);
    expect((await verify(medium, { expectCheckpoint: checkpoint!.hash })).problems).toEqual([]);
    const again = await open();
    expect(again.docs.size).toBe(N);
    await again.store.close();
    await expect(docsOpener(old, { recipient: r, signer }, schema, { minCommit: commit })()).rejects.toMatchObject({
      code: 'ROLLBACK',
    });
  });
});
