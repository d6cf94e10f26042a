// A consumer of the published package, type-checked (never run) by node-tests/types.test.ts under
// moduleResolution node16 and bundler: every API line of the README, typed collections, and
// `@ts-expect-error` lines that fail to compile if a name were `any`.

import {
  openStore,
  generateRecipient,
  generateSigner,
  verifySealed,
  openSealed,
  verifyStore,
  formatVerifyReport,
  openMemoryPageStore,
  PqdbError,
  ERROR_CODES,
  VERSION,
  Store,
  Collection,
  type InferValue,
  type MigrationStatus,
  type PageStore,
  type Value,
} from 'pqdb';
import {
  sha256,
  sha384,
  sha512,
  hmac,
  hkdf,
  extract,
  expand,
  merkle,
  MerkleAppender,
  ml_kem1024,
  ml_kem1024_x25519,
  ml_dsa87,
  kemProvider,
  gcm,
  gcmsiv,
  sha3_256,
  sha3_512,
  shake128,
  shake256,
  setWasmFlavor,
  wasmFlavor,
  simdSupported,
  wasmBuilds,
  verifyCheckpoint,
} from 'pqdb/crypto';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends <T>() => T extends B ? 1 : 2 ? true : false;
const same = <A, B>(ok: Equal<A, B>): Equal<A, B> => ok;

export async function storeApi(): Promise<void> {
  const recipient = generateRecipient();
  const signer = generateSigner();
  const pk: Uint8Array = recipient.publicKey;
  const pages: PageStore = await openMemoryPageStore();
  const store: Store = await openStore({
    storage: pages,
    create: true,
    recipients: [pk],
    unlock: recipient.secretKey,
    suite: 'gcmsiv-hkdf384',
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: { records: 1000, ms: 5000 },
    authority: (request) => request.operation !== 'copy' || request.collection !== 'secret',
  });
  // @ts-expect-error an option that does not exist
  await openStore({ storage: 'memory', unlock: recipient.secretKey, unlok: recipient.secretKey });
  // @ts-expect-error a suite that does not exist
  await openStore({ storage: 'memory', unlock: recipient.secretKey, suite: 'aes-ecb' });
  // @ts-expect-error unlock must be bytes
  await openStore({ storage: 'memory', unlock: 'secret' });
  // @ts-expect-error storage is 'memory' | 'fs' | 'indexeddb' | a PageStore
  await openStore({ storage: 'sqlite', unlock: recipient.secretKey });

  // Typed collections: the value type comes from the schema literal.
  const words = store.collection('synsets', {
    schema: { lemma: 'string', pos: 'string', gloss: 'string?', offset: 'integer', tag: 'bytes?', live: 'boolean' },
    index: { text: ['lemma', 'gloss'] },
  });
  type Synset = { lemma: string; pos: string; gloss?: string; offset: number; tag?: Uint8Array; live: boolean };
  same<typeof words, Collection<Synset>>(true);
  await words.put('n1', { lemma: 'entity', pos: 'n', offset: 1740, live: true }, { governance: { scope: 'public' } });
  // @ts-expect-error a misspelled field
  await words.put('n1', { lemma: 'entity', pos: 'n', ofset: 1740, live: true });
  // @ts-expect-error a required field missing
  await words.put('n1', { lemma: 'entity', pos: 'n', live: true });
  // @ts-expect-error an integer field given a string
  await words.put('n1', { lemma: 'entity', pos: 'n', offset: '1740', live: true });
  // @ts-expect-error a lexical index over a field that is not a string field
  store.collection('x', { schema: { n: 'integer', s: 'string' }, index: { text: ['n'] } });
  // @ts-expect-error an unknown field type
  store.collection('x', { schema: { n: 'int' } });
  const got = await words.get('n1');
  same<typeof got, Synset | undefined>(true);
  if (got !== undefined) {
    const offset: number = got.offset;
    const gloss: string | undefined = got.gloss;
    // @ts-expect-error gloss is optional: not a plain string
    const glossText: string = got.gloss;
    // @ts-expect-error a field the schema does not have
    void got.glos;
    void [offset, gloss, glossText];
  }
  const existed: boolean = await words.delete('n1');
  const present: boolean = words.has('n1');
  const size: number = words.size;
  for await (const { id, value } of words.scan({ prefix: 'n0000', limit: 100 })) {
    const lemma: string = value.lemma;
    // @ts-expect-error scan yields the typed value
    const wrong: number = value.lemma;
    void [id, lemma, wrong];
  }
  // @ts-expect-error scan options are prefix and limit
  words.scan({ prefx: 'n' });
  const hits = await words.search('large feline', { mode: 'all', prefix: false, limit: 10 });
  same<typeof hits, { id: string; value: Synset }[] & { withheld: number }>(true);
  // @ts-expect-error mode is 'all' or 'any'
  await words.search('cat', { mode: 'some' });

  // An explicit value type works too (an interface included).
  interface Note {
    title: string;
    body?: string;
  }
  const notes = store.collection<Note>('notes', { schema: { title: 'string', body: 'string?' } });
  same<Awaited<ReturnType<typeof notes.get>>, Note | undefined>(true);
  // @ts-expect-error Note has no field "tittle"
  await notes.put('a', { tittle: 'x' });
  // @ts-expect-error a value type with a field no schema type can hold
  store.collection<{ when: Date }>('dates', { schema: { when: 'string' } });
  // Without a literal schema the value is the untyped record.
  const schema: { [field: string]: 'string' } = { a: 'string' };
  same<typeof store.collection<never, typeof schema>, unknown>(false);
  const loose = store.collection('loose', { schema });
  same<Awaited<ReturnType<typeof loose.get>>, InferValue<typeof schema> | undefined>(true);
  const anyValue: Collection<Value> = store.collection('v', { schema: { s: 'string' } });
  void anyValue;

  const exported: Uint8Array = await words.exportSealed('n00001740');
  const verdict = verifySealed(exported, signer.publicKey);
  const valid: boolean = verdict.valid;
  // @ts-expect-error verifySealed needs the signer public key
  verifySealed(exported);
  const opened = openSealed(exported, (suite, generation, governance) =>
    store.dataKeyFor(suite.id, generation, governance),
  );
  const plaintext: Uint8Array = opened.plaintext;
  const cp = await store.checkpoint();
  const signed: Uint8Array = cp.signed;
  const cps = store.checkpoints();
  const proof: Uint8Array[] = await store.consistencyProof(0, 1);
  await store.batch((tx) => {
    tx.put(words, 'n2', { lemma: 'cat', pos: 'n', offset: 2, live: false });
    // @ts-expect-error tx.put checks the value against the collection's type
    tx.put(words, 'n3', { lemma: 'cat' });
    tx.delete(words, 'n1');
  });
  const entries = store.registry.list();
  await store.registry.setState('gcmsiv-hkdf256', 'quarantined');
  // @ts-expect-error not a suite state
  await store.registry.setState('gcmsiv-hkdf256', 'disabled');
  const status: MigrationStatus = await store.migrate({ to: 'gcmsiv-hkdf384', onProgress: (p) => void p.copied });
  // @ts-expect-error migrate needs a target suite
  await store.migrate({});
  const now: MigrationStatus | undefined = store.migration();
  const retired: number[] = await store.retireGenerations();
  await store.addRecipient(pk);
  await store.removeRecipient(pk);
  const { storeId, commit } = store.info();
  await openStore({ storage: pages, unlock: recipient.secretKey, storeId, minCommit: commit });
  const report = await verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
  const text: string = formatVerifyReport(report);
  await store.close();
  try {
    await store.checkpoint();
  } catch (e) {
    if (e instanceof PqdbError) {
      const code: (typeof ERROR_CODES)[number] = e.code;
      // @ts-expect-error codes are a closed union
      const bad: typeof code = 'NOT_A_CODE';
      void bad;
    }
  }
  const version: string = VERSION;
  void [existed, present, size, valid, plaintext, signed, cps, proof, entries, status, now, retired, text, version];
}

export function cryptoApi(bytes: Uint8Array, key: Uint8Array, nonce: Uint8Array): void {
  const digest: Uint8Array = sha384(bytes);
  const streamed: Uint8Array = sha384.create().update(bytes).update(bytes).digest();
  const len: number = sha256.outputLen + sha512.blockLen;
  const tag: Uint8Array = hmac(sha384, key, bytes);
  const dataKey: Uint8Array = hkdf(sha384, key, bytes, bytes, 32);
  const prk: Uint8Array = extract(sha256, key, bytes);
  const okm: Uint8Array = expand(sha256, prk, bytes, 32);
  // @ts-expect-error hkdf needs a length
  hkdf(sha384, key, bytes, bytes);
  const records = [bytes, bytes, bytes];
  const root: Uint8Array = merkle.root(records);
  const proof = merkle.inclusionProof(records, 1);
  const included: boolean = merkle.verifyInclusion(records[1], 1, records.length, proof, root);
  const cproof = merkle.consistencyProof(records, 2);
  const consistent: boolean = merkle.verifyConsistency(2, records.length, root, root, cproof);
  const tree = new MerkleAppender();
  tree.appendMany(records);
  tree.append(bytes);
  const treeRoot: Uint8Array = tree.root();
  const { publicKey, secretKey } = ml_kem1024_x25519.keygen();
  const { cipherText, sharedSecret } = ml_kem1024_x25519.encapsulate(publicKey);
  const again: Uint8Array = ml_kem1024_x25519.decapsulate(cipherText, secretKey);
  const kem = ml_kem1024.keygen();
  const noble = kemProvider('noble');
  // @ts-expect-error not a provider
  kemProvider('openssl');
  const signer = ml_dsa87.keygen();
  const sig: Uint8Array = ml_dsa87.sign(root, signer.secretKey, { context: bytes });
  const ok: boolean = ml_dsa87.verify(sig, root, signer.publicKey, { context: bytes });
  const sealed: Uint8Array = gcmsiv(key, nonce, bytes).encrypt(bytes);
  const opened: Uint8Array = gcmsiv(key, nonce, bytes).decrypt(sealed);
  const gcmSealed: Uint8Array = gcm(key, nonce).encrypt(bytes);
  const k = gcmsiv.withKey(key);
  k.encrypt(nonce, bytes, bytes);
  k.encryptBatch([{ nonce, data: bytes, aad: bytes }]);
  k.destroy();
  const h3: Uint8Array = sha3_256(bytes);
  const h5: Uint8Array = sha3_512(bytes);
  const x1: Uint8Array = shake128(bytes, { dkLen: 32 });
  const x2: Uint8Array = shake256(bytes, { dkLen: 64 });
  setWasmFlavor('scalar');
  // @ts-expect-error not a flavour
  setWasmFlavor('avx');
  const flavor: 'simd' | 'scalar' = wasmFlavor();
  const simd: boolean = simdSupported();
  const builds = wasmBuilds();
  void verifyCheckpoint;
  void [digest, streamed, len, tag, dataKey, okm, included, consistent, treeRoot, sharedSecret, again, kem, noble];
  void [ok, opened, gcmSealed, h3, h5, x1, x2, flavor, simd, builds];
}

// @ts-expect-error a misspelled export
import { openStor } from 'pqdb';
// @ts-expect-error pqdb/crypto has no store
import { openStore as noStore } from 'pqdb/crypto';
void [openStor, noStore];
