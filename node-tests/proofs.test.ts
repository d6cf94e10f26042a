// Verifiable batches: the Merkle log of a generation, ML-DSA-87-signed checkpoints, consistency
// proofs between them, and self-verifying sealed exports (any flipped bit fails), across reopen;
// then the shared cases (cases/proofs.ts, also run in Chromium). All on memory, node-fs and
// IndexedDB over fake-indexeddb.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, verifySealed, openSealed, verifyStore } from '../src/index';
import { merkle, ml_dsa87, sha384 } from '../src/crypto';
import { decodeValue, compileSchema } from '../src/engine/codec';
import { proofsCases } from './cases/proofs';
import { STORE_FIXTURES, perTest, type NodeStoreFixture } from './support/store-fixtures';

const schema = { lemma: 'string', n: 'integer' } as const;
const r = generateRecipient('classical');
const signer = generateSigner();

function open(f: NodeStoreFixture, create = false) {
  return f.open({
    create,
    recipients: [r.publicKey],
    unlock: r.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
  });
}

describe.each(STORE_FIXTURES)('verifiable batches (%s)', (_name, factory) => {
  const fresh = perTest(factory);

  it('checkpoints, consistency proofs and sealed exports verify offline; every flipped bit fails', async () => {
    const f = await fresh();
    const store = await open(f, true);
    const words = store.collection('w', { schema });
    await store.batch((tx) => {
      for (let i = 0; i < 300; i++)
        tx.put(words, `w${i}`, { lemma: `word ${i}`, n: i }, { governance: { scope: i % 2 ? 'a' : 'b' } });
    });
    const c1 = await store.checkpoint();
    expect(c1.size).toBe(300);
    await words.put('w5', { lemma: 'updated', n: -5 });
    await words.delete('w6');
    await store.batch((tx) => {
      for (let i = 300; i < 413; i++) tx.put(words, `w${i}`, { lemma: `word ${i}`, n: i });
    });
    const c2 = await store.checkpoint();
    expect(c2.size).toBe(415); // 300 + the update + the delete + 113
    expect(store.checkpoints().map((c) => c.size)).toEqual([300, 415]);
    expect(merkle.verifyConsistency(300, 415, c1.root, c2.root, await store.consistencyProof(0, 1))).toBe(true);

    const exported = await words.exportSealed('w5');
    const v = verifySealed(exported, signer.publicKey);
    expect(v).toMatchObject({ valid: true, collection: 'w', id: 'w5', generation: 1 });
    expect(v.checkpoint?.size).toBe(415);
    const opened = openSealed(exported, (suite, generation, governance) =>
      store.dataKeyFor(suite.id, generation, governance),
    );
    expect(decodeValue(compileSchema(schema), opened.plaintext)).toEqual({ lemma: 'updated', n: -5 });
    expect(verifySealed(exported, generateSigner().publicKey).valid).toBe(false);
    // One flipped bit in every byte of the export (the bit position rotates through 0..7).
    for (let i = 0; i < exported.length; i++) {
      const t = exported.slice();
      t[i] ^= 1 << (i % 8);
      expect(verifySealed(t, signer.publicKey).valid, `byte ${i}`).toBe(false);
    }
    expect(verifySealed(exported.subarray(0, exported.length - 1), signer.publicKey).valid).toBe(false);
    console.log(`sealed export of a ${opened.plaintext.length}-byte value: ${exported.length} bytes`);
    await store.close();

    // After reopening, the log is rebuilt: old and new exports verify against the stored checkpoints.
    const again = await open(f);
    const w2 = again.collection('w', { schema });
    expect(again.checkpoints().map((c) => c.size)).toEqual([300, 415]);
    const e0 = await w2.exportSealed('w0');
    expect(verifySealed(e0, signer.publicKey)).toMatchObject({ valid: true, id: 'w0' });
    await w2.put('late', { lemma: 'after reopen', n: 1 });
    const e1 = await w2.exportSealed('late'); // no checkpoint covers it yet: one is made
    expect(verifySealed(e1, signer.publicKey)).toMatchObject({ valid: true, id: 'late' });
    expect(again.checkpoints().length).toBe(3);
    expect(
      merkle.verifyConsistency(
        415,
        416,
        again.checkpoints()[1].root,
        again.checkpoints()[2].root,
        await again.consistencyProof(1, 2),
      ),
    ).toBe(true);
    await again.close();
  });

  it('checkpoints need signer keys', async () => {
    const store = await (await fresh()).open({ create: true, recipients: [r.publicKey], unlock: r.secretKey });
    await expect(store.checkpoint()).rejects.toThrow(TypeError);
    await store.close();
  });
});

describe.each(STORE_FIXTURES)('verifiable batches, shared cases (%s)', (_name, factory) => {
  const api = {
    generateRecipient,
    generateSigner,
    verifySealed,
    openSealed,
    merkle,
    ml_dsa87,
    sha384,
    verifyStore,
    decodeValue: (s: Parameters<typeof compileSchema>[0], b: Uint8Array) => decodeValue(compileSchema(s), b),
  };
  for (const c of proofsCases(factory, api)) it(c.name, c.run);
});
