// store.posture(): the CycloneDX 1.6 CBOM of a store's live state (src/engine/posture.ts). Every BOM
// a store emits is validated with ajv against the official schema (bom-1.6.schema.json with its spdx
// and jsf references, test-data/vectors/cyclonedx; node-tests/support/cyclonedx.ts), in each state a
// store goes through — fresh, written to with two suites, with a quarantined suite, during and after
// a migration, after the old generation is retired, with signer keys and signed policies — on memory
// and file stores, and reopened. Beside the schema: every reference resolves and bom-refs are unique,
// the record counts per collection and suite are those written, registry states map to key states,
// the policy version is reported, and no byte of any key used (public, secret or data key) appears.
// Copy holders: a store's own backup until retireCopy, and hand-made inventories through
// buildPosture (kinds and states a store makes rarely: restored-from, a retained copy of a retired
// generation).
import { describe, it, expect, beforeEach, afterEach } from 'vitest';
import { generateRecipient, generateSigner, openMemoryPageStore, signPolicy, type Store } from '../src/index';
import { buildPosture, type Cbom, type CbomComponent } from '../src/engine/posture';
import { KeyDirectory } from '../src/engine/directory';
import { unlockManifest, type CopyRecord, type Manifest } from '../src/engine/manifest';
import { ALGORITHMS } from '../src/crypto/algorithms';
import { validateCycloneDx, CYCLONEDX_EXAMPLES } from './support/cyclonedx';
import { loadVector } from './support/vectors';
import {
  indexedDbStoreFixture,
  memoryStoreFixture,
  nodeFsStoreFixture,
  type NodeStoreFixture,
} from './support/store-fixtures';

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Every bom-ref the BOM defines, and the references that name none (or a duplicate bom-ref). */
function refProblems(bom: Cbom): string[] {
  const all = [bom.metadata.component, ...bom.metadata.tools.components, ...bom.components];
  const refs = new Set<string>();
  const out: string[] = [];
  for (const c of all) {
    if (refs.has(c['bom-ref'])) out.push(`bom-ref ${c['bom-ref']} twice`);
    refs.add(c['bom-ref']);
  }
  const named: string[] = [];
  for (const d of bom.dependencies) named.push(d.ref, ...(d.dependsOn ?? []), ...(d.provides ?? []));
  for (const c of bom.components) {
    const cp = c.cryptoProperties;
    if (cp?.relatedCryptoMaterialProperties?.algorithmRef) named.push(cp.relatedCryptoMaterialProperties.algorithmRef);
    if (cp?.relatedCryptoMaterialProperties?.securedBy?.algorithmRef)
      named.push(cp.relatedCryptoMaterialProperties.securedBy.algorithmRef);
    for (const s of cp?.protocolProperties?.cipherSuites ?? []) named.push(...s.algorithms);
    named.push(...(cp?.protocolProperties?.cryptoRefArray ?? []));
  }
  for (const r of named) if (!refs.has(r)) out.push(`${r} names no component`);
  if (new Set(bom.dependencies.map((d) => d.ref)).size !== bom.dependencies.length) out.push('a ref listed twice');
  return out;
}

/** The spellings of a key (or of its first and last 32 bytes) that must not appear in a BOM. */
function spellings(key: Uint8Array): string[] {
  const parts = key.length > 32 ? [key, key.subarray(0, 32), key.subarray(key.length - 32)] : [key];
  return parts.flatMap((p) => [b64(p), b64(p).replace(/=+$/, ''), hexOf(p), hexOf(p).toUpperCase()]);
}

/**
 * The store's BOM, checked: valid against the CycloneDX 1.6 schema, references resolving, plain JSON,
 * and holding none of `keys` in any spelling.
 */
function checked(store: Store, keys: Uint8Array[]): Cbom {
  const bom = store.posture();
  return checkedBom(bom, keys);
}

function checkedBom(bom: Cbom, keys: Uint8Array[]): Cbom {
  expect(validateCycloneDx(bom)).toEqual([]);
  expect(refProblems(bom)).toEqual([]);
  const json = JSON.stringify(bom);
  expect(JSON.parse(json)).toEqual(bom);
  for (const k of keys)
    for (const s of spellings(k)) expect(json.includes(s), `key bytes ${s.slice(0, 12)}…`).toBe(false);
  return bom;
}

const byRef = (bom: Cbom, ref: string): CbomComponent | undefined =>
  ref === 'store' ? bom.metadata.component : bom.components.find((c) => c['bom-ref'] === ref);
const props = (c: CbomComponent | undefined): Record<string, string> =>
  Object.fromEntries((c?.properties ?? []).map((p) => [p.name, p.value]));
const dependsOn = (bom: Cbom, ref: string): string[] => bom.dependencies.find((d) => d.ref === ref)?.dependsOn ?? [];
const keyState = (bom: Cbom, ref: string) => byRef(bom, ref)?.cryptoProperties?.relatedCryptoMaterialProperties?.state;

/** Live records per collection and suite name, as the BOM's collection components say. */
function counts(bom: Cbom): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const c of bom.components.filter((x) => x['bom-ref'].startsWith('collection/'))) {
    out[c.name] = {};
    for (const [k, v] of Object.entries(props(c)))
      if (k.startsWith('pqdb:records:')) out[c.name][k.slice('pqdb:records:'.length)] = Number(v);
  }
  return out;
}

/** Collection totals from the BOM equal store.info()'s. */
function totalsMatch(bom: Cbom, store: Store): void {
  const info = store.info().collections;
  const fromBom = Object.fromEntries(
    Object.entries(counts(bom)).map(([k, v]) => [k, Object.values(v).reduce((a, b) => a + b, 0)]),
  );
  expect(fromBom).toEqual(Object.fromEntries(Object.entries(info).filter(([k]) => k in fromBom)));
  for (const c of bom.components.filter((x) => x['bom-ref'].startsWith('collection/')))
    expect(Number(props(c)['pqdb:records'])).toBe(info[c.name] ?? 0);
}

/** The manifest of a store with one generation, one hybrid recipient and nothing written. */
const MINIMAL: Manifest = {
  v: 2,
  storeId: '0'.repeat(32),
  commit: 1,
  nextPageId: 1,
  nextSequence: 1,
  keyring: [
    { generation: 0, suite: 2, salt: '', envelopes: [] },
    { generation: 1, suite: 2, salt: '', envelopes: [] },
  ],
  registry: [{ suite: 2, state: 'active', since: '2026-12-01T00:00:00.000Z' }],
  collections: {},
  defaultSuite: 2,
  recipients: [b64(generateRecipient().publicKey)],
};

const algorithmNames = (bom: Cbom) =>
  bom.components.filter((c) => c.cryptoProperties?.assetType === 'algorithm').map((c) => c.name);

describe('the checks themselves', () => {
  it('catch key bytes in any spelling, a dangling reference and a duplicate bom-ref', () => {
    const bom = buildPosture({ manifest: MINIMAL, counts: {} });
    const key = new Uint8Array(1600).map((_, i) => (i * 7 + 1) & 0xff);
    checkedBom(bom, [key]);
    for (const leak of [b64(key), hexOf(key.subarray(1568)), b64(key.subarray(0, 32)).replace(/=+$/, '')]) {
      const leaky = structuredClone(bom);
      leaky.components[0].properties = [{ name: 'pqdb:x', value: leak }];
      expect(() => checkedBom(leaky, [key])).toThrow();
    }
    const dangling = structuredClone(bom);
    dangling.dependencies.push({ ref: 'store', dependsOn: ['suite/none'] });
    expect(refProblems(dangling)).toContain('suite/none names no component');
    const twice = structuredClone(bom);
    twice.components.push({ ...twice.components[0], name: 'again' });
    expect(refProblems(twice)).toContain(`bom-ref ${bom.components[0]['bom-ref']} twice`);
  });
});

describe('the CycloneDX 1.6 validator', () => {
  it("accepts upstream's example CBOMs", () => {
    for (const f of CYCLONEDX_EXAMPLES) expect(validateCycloneDx(loadVector(f)), f).toEqual([]);
  });

  it('rejects a wrong enum value, an unknown field, a bad date-time, a bad serial number, a missing name', () => {
    const good = () => JSON.parse(JSON.stringify(loadVector(CYCLONEDX_EXAMPLES[0]))) as Record<string, any>;
    const edits: ((b: Record<string, any>) => void)[] = [
      (b) => (b.components[0].cryptoProperties.algorithmProperties.primitive = 'cipher'),
      (b) => (b.components[3].cryptoProperties.relatedCryptoMaterialProperties.state = 'retired'),
      (b) => (b.components[0].cryptoProperties.algorithmProperties.keySize = 128),
      (b) => (b.components[3].cryptoProperties.relatedCryptoMaterialProperties.creationDate = '2024-01-01'),
      (b) => (b.serialNumber = 'urn:uuid:not-a-uuid'),
      (b) => delete b.components[1].name,
      (b) => (b.specVersion = 1.6),
    ];
    for (const edit of edits) {
      const b = good();
      edit(b);
      expect(validateCycloneDx(b).length, edit.toString()).toBeGreaterThan(0);
    }
  });
});

const ADAPTERS: [string, () => Promise<NodeStoreFixture>][] = [
  ['memory', memoryStoreFixture],
  ['node-fs', nodeFsStoreFixture],
  ['indexeddb (fake-indexeddb)', indexedDbStoreFixture],
];

describe.each(ADAPTERS)('store.posture() on a %s store', (_name, make) => {
  let fx: NodeStoreFixture;
  const r = generateRecipient();
  const classical = generateRecipient('classical');
  const signer = generateSigner();
  const authority = generateSigner();
  const secrets = [r.secretKey, r.publicKey, classical.secretKey, classical.publicKey];
  const signerKeys = [signer.secretKey, signer.publicKey, authority.secretKey, authority.publicKey];
  const create = { create: true, recipients: [r.publicKey], unlock: r.secretKey };
  beforeEach(async () => void (fx = await make()));
  afterEach(() => fx.dispose());

  it('of a fresh store: one active suite, generation 1 active, the recipient by key id, no collection', async () => {
    const store = await fx.open(create);
    const bom = checked(store, secrets);
    expect(bom.bomFormat).toBe('CycloneDX');
    expect(bom.specVersion).toBe('1.6');
    expect(bom.serialNumber).toMatch(/^urn:uuid:[0-9a-f-]{36}$/);
    expect(bom.metadata.tools.components[0]).toMatchObject({ name: 'pqdb', version: '0.1.0' });
    const info = store.info();
    expect(props(bom.metadata.component)['pqdb:store-id']).toBe(info.storeId);
    expect(bom.metadata.properties).toContainEqual({ name: 'pqdb:store-id', value: info.storeId });
    expect(props(bom.metadata.component)['pqdb:policy-version']).toBeUndefined();
    expect(counts(bom)).toEqual({});
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf384'))).toMatchObject({
      'pqdb:registry-state': 'active',
      'pqdb:default-suite': 'true',
    });
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf256'))['pqdb:registry-state']).toBe('decrypt-only');
    expect(keyState(bom, 'key/data/gcmsiv-hkdf384')).toBe('active');
    expect(keyState(bom, 'key/data/gcmsiv-hkdf256')).toBe('deactivated');
    expect(keyState(bom, 'key/generation/1')).toBe('active');
    expect(keyState(bom, 'key/store-secret')).toBe('active');
    const id = hexOf(
      new Uint8Array(await crypto.subtle.digest('SHA-384', r.publicKey)).subarray(0, 16), // key id: SHA-384[0, 16)
    );
    const recipient = byRef(bom, `key/recipient/${id}`)!;
    expect(recipient.cryptoProperties?.relatedCryptoMaterialProperties).toMatchObject({
      type: 'public-key',
      id,
      state: 'active',
      algorithmRef: 'algorithm/ML-KEM-1024+X25519',
      size: 1600 * 8,
    });
    // The algorithms in use, with their OIDs where one exists.
    expect(algorithmNames(bom).sort()).toEqual(Object.keys(ALGORITHMS).sort());
    const oid = (name: string) => byRef(bom, `algorithm/${name}`)?.cryptoProperties?.oid;
    expect(oid('ML-KEM-1024')).toBe('2.16.840.1.101.3.4.4.3');
    expect(oid('ML-DSA-87')).toBe('2.16.840.1.101.3.4.3.19');
    expect(oid('X25519')).toBe('1.3.101.110');
    expect(oid('AES-256-GCM')).toBe('2.16.840.1.101.3.4.1.46');
    expect(oid('SHA-384')).toBe('2.16.840.1.101.3.4.2.2');
    expect(oid('HMAC-SHA384')).toBe('1.2.840.113549.2.10');
    expect(oid('HKDF-SHA384')).toBe('1.2.840.113549.1.9.16.3.29');
    expect(oid('AES-256-GCM-SIV')).toBeUndefined();
    expect(dependsOn(bom, 'algorithm/ML-KEM-1024+X25519')).toEqual(
      expect.arrayContaining(['algorithm/ML-KEM-1024', 'algorithm/X25519']),
    );
    expect(bom.dependencies.find((d) => d.ref === 'library/pqdb')?.provides).toHaveLength(algorithmNames(bom).length);
    await store.close();
  });

  it('follows writes with two suites, a quarantine, a migration and the retirement of generation 1', async () => {
    const store = await fx.open({ ...create, recipients: [r.publicKey, classical.publicKey] });
    await store.registry.setState('cnsa2-gcm-hkdf384-commit', 'active');
    const words = store.collection('words', { schema: { lemma: 'string' } });
    const ledger = store.collection('ledger', { schema: { amount: 'integer' }, suite: 'cnsa2-gcm-hkdf384-commit' });
    await store.batch((tx) => {
      for (let i = 0; i < 5; i++) tx.put(words, `w${i}`, { lemma: `word ${i}` });
      for (let i = 0; i < 3; i++) tx.put(ledger, `l${i}`, { amount: i }, { governance: { scope: 'billing' } });
    });
    await words.delete('w4');
    const dataKeys = () => [
      store.dataKeyFor(2, 1, '{}').key.slice(),
      store.dataKeyFor(3, 1, '{"scope":"billing"}').key.slice(),
    ];
    const keys = [...secrets, ...dataKeys()];
    let bom = checked(store, keys);
    expect(counts(bom)).toEqual({ ledger: { 'cnsa2-gcm-hkdf384-commit': 3 }, words: { 'gcmsiv-hkdf384': 4 } });
    totalsMatch(bom, store);
    expect(props(byRef(bom, 'collection/ledger'))['pqdb:writes-with']).toBe('cnsa2-gcm-hkdf384-commit');
    expect(dependsOn(bom, 'collection/words')).toEqual(['suite/gcmsiv-hkdf384']);
    expect(dependsOn(bom, 'collection/ledger')).toEqual(['suite/cnsa2-gcm-hkdf384-commit']);
    expect(dependsOn(bom, 'suite/cnsa2-gcm-hkdf384-commit')).toEqual(
      expect.arrayContaining(['algorithm/AES-256-GCM', 'algorithm/HKDF-SHA384', 'key/data/cnsa2-gcm-hkdf384-commit']),
    );
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf384'))['pqdb:records']).toBe('4');
    expect(props(byRef(bom, 'suite/cnsa2-gcm-hkdf384-commit'))['pqdb:records']).toBe('3');
    // Both recipients, each with its KEM; the roots are wrapped for both.
    const recipients = bom.components.filter((c) => c['bom-ref'].startsWith('key/recipient/'));
    expect(recipients.map((c) => c.cryptoProperties?.relatedCryptoMaterialProperties?.algorithmRef).sort()).toEqual([
      'algorithm/ML-KEM-1024+X25519',
      'algorithm/X25519',
    ]);
    expect(dependsOn(bom, 'key/generation/1')).toEqual(expect.arrayContaining(recipients.map((c) => c['bom-ref'])));

    // A quarantined suite still holding records: its data keys are suspended, and the BOM says why.
    await store.registry.setState('gcmsiv-hkdf384', 'quarantined');
    bom = checked(store, keys);
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf384'))['pqdb:registry-state']).toBe('quarantined');
    expect(keyState(bom, 'key/data/gcmsiv-hkdf384')).toBe('suspended');
    expect(props(byRef(bom, 'key/data/gcmsiv-hkdf384'))['pqdb:suspended-reason']).toMatch(
      /^suite gcmsiv-hkdf384 is quarantined in the crypto registry since .+: it refuses new writes and keeps serving reads$/,
    );
    expect(counts(bom).words).toEqual({ 'gcmsiv-hkdf384': 4 }); // still counted: its records are still read

    // Migration: every record moves to cnsa2 under generation 2; generation 1 is kept, deactivated.
    const done = await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
    expect(done.phase).toBe('done');
    const keys2 = [
      ...keys,
      store.dataKeyFor(3, 2, '{}').key.slice(),
      store.dataKeyFor(3, 2, '{"scope":"billing"}').key.slice(),
    ];
    bom = checked(store, keys2);
    expect(counts(bom)).toEqual({
      ledger: { 'cnsa2-gcm-hkdf384-commit': 3 },
      words: { 'cnsa2-gcm-hkdf384-commit': 4 },
    });
    totalsMatch(bom, store);
    expect(keyState(bom, 'key/generation/2')).toBe('active');
    expect(keyState(bom, 'key/generation/1')).toBe('deactivated');
    const g2 = byRef(bom, 'key/generation/2')!;
    expect(done.generation).toBe(2);
    expect(props(g2)['pqdb:made-by-migration']).toMatch(/^[0-9a-f]+$/); // the migration's id
    expect(g2.cryptoProperties?.relatedCryptoMaterialProperties?.creationDate).toBe(
      new Date(done.startedAt).toISOString(),
    );
    expect(props(bom.metadata.component)).toMatchObject({ 'pqdb:current-generation': '2', 'pqdb:migrations': '1' });

    // Retirement: generation 1's root is destroyed; the BOM says so and lists it as retired.
    expect(await store.retireGenerations()).toEqual([1]);
    bom = checked(store, keys2);
    expect(keyState(bom, 'key/generation/1')).toBe('destroyed');
    expect(dependsOn(bom, 'key/generation/1')).toEqual([]);
    expect(props(bom.metadata.component)['pqdb:retired-generations']).toBe('1');
    expect(dependsOn(bom, 'key/data/cnsa2-gcm-hkdf384-commit')).toEqual(['algorithm/HKDF-SHA384', 'key/generation/2']);

    // A retired suite: its data keys are deactivated and used for nothing.
    await store.registry.setState('gcmsiv-hkdf256', 'retired');
    bom = checked(store, keys2);
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf256'))['pqdb:registry-state']).toBe('retired');
    expect(keyState(bom, 'key/data/gcmsiv-hkdf256')).toBe('deactivated');
    expect(props(byRef(bom, 'key/data/gcmsiv-hkdf256'))['pqdb:key-use']).toBe('none');
    await store.close();
  });

  it('names the signer and the authority keys by key id and reports the policy version in force', async () => {
    const store = await fx.open({
      ...create,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
      authorityPublicKey: authority.publicKey,
      authorityDomain: 'posture',
    });
    await store.collection('notes', { schema: { title: 'string' } }).put('a', { title: 'x' });
    await store.checkpoint();
    let bom = checked(store, [...secrets, ...signerKeys]);
    expect(props(bom.metadata.component)).toMatchObject({ 'pqdb:checkpoints': '1', 'pqdb:authority-keys': '1' });
    expect(props(bom.metadata.component)['pqdb:policy-version']).toBeUndefined();
    const keyId = (pk: Uint8Array) =>
      crypto.subtle.digest('SHA-384', pk).then((d) => hexOf(new Uint8Array(d).subarray(0, 16)));
    const signerRef = `key/signer/${await keyId(signer.publicKey)}`;
    const authorityRef = `key/authority/${await keyId(authority.publicKey)}`;
    expect(byRef(bom, signerRef)?.cryptoProperties?.relatedCryptoMaterialProperties).toMatchObject({
      type: 'public-key',
      state: 'active',
      algorithmRef: 'algorithm/ML-DSA-87',
    });
    expect(props(byRef(bom, authorityRef))['pqdb:signed-current-policy']).toBe('false');
    expect(dependsOn(bom, 'store')).toEqual(expect.arrayContaining([signerRef, authorityRef]));

    const rules = [{ scope: '*', allow: ['read', 'write', 'migrate', 'restore'] as const }];
    await store.setPolicy(
      signPolicy({ version: 1, rules, domain: 'posture' }, authority.secretKey, authority.publicKey),
    );
    bom = checked(store, [...secrets, ...signerKeys]);
    expect(props(bom.metadata.component)).toMatchObject({ 'pqdb:policy-version': '1', 'pqdb:policy-threshold': '1' });
    expect(bom.metadata.properties).toContainEqual({ name: 'pqdb:policy-version', value: '1' });
    expect(props(byRef(bom, authorityRef))['pqdb:signed-current-policy']).toBe('true');
    const expires = '2099-01-01T00:00:00.000Z';
    await store.setPolicy(
      signPolicy({ version: 2, rules, expires, domain: 'posture' }, authority.secretKey, authority.publicKey),
    );
    bom = checked(store, [...secrets, ...signerKeys]);
    expect(props(bom.metadata.component)).toMatchObject({ 'pqdb:policy-version': '2', 'pqdb:policy-expires': expires });
    await store.close();
  });

  it('lists a backup as a holder of its suites and generation until retireCopy records its retirement', async () => {
    const store = await fx.open({ ...create, signer: signer.secretKey, signerPublicKey: signer.publicKey });
    await store.collection('c', { schema: { v: 'string' } }).put('x', { v: 'y' });
    const dest = await openMemoryPageStore();
    const { copy } = await store.backup(dest);
    await dest.close();
    let bom = checked(store, [...secrets, ...signerKeys]);
    const holder = `copy/${copy.id}`;
    expect(props(byRef(bom, holder))).toMatchObject({ 'pqdb:copy-kind': 'backup', 'pqdb:copy-state': 'retained' });
    expect(dependsOn(bom, holder)).toEqual(['suite/gcmsiv-hkdf384', 'key/generation/1']);
    expect(dependsOn(bom, 'store')).toContain(holder);
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf384'))['pqdb:held-by-copies']).toBe('1');
    await store.retireCopy(copy.id);
    bom = checked(store, [...secrets, ...signerKeys]);
    expect(byRef(bom, holder)).toBeUndefined();
    expect(JSON.stringify(bom)).not.toContain(copy.id);
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf384'))['pqdb:held-by-copies']).toBe('0');
    expect(props(bom.metadata.component)['pqdb:copies-retired']).toBe('1');
    await store.close();
  });

  it('comes from persisted state: a reopened store gives the same components and dependencies', async () => {
    let store = await fx.open(create);
    await store.registry.setState('gcmsiv-hkdf256', 'quarantined');
    await store.collection('c', { schema: { v: 'string' } }).put('x', { v: 'y' });
    const before = checked(store, secrets);
    await store.close();
    store = await fx.open({ unlock: r.secretKey });
    const after = checked(store, secrets);
    expect(after.components).toEqual(before.components);
    expect(after.dependencies).toEqual(before.dependencies);
    expect(after.metadata.component).toEqual(before.metadata.component);
    expect(after.serialNumber).not.toBe(before.serialNumber);
    await store.close();
    await expect(async () => store.posture()).rejects.toMatchObject({ code: 'NOT_OPEN' });
  });
});

describe('copies in the BOM (hand-made inventories through buildPosture)', () => {
  const r = generateRecipient();

  /** A store's installed manifest and directory counts after a migration and a retirement. */
  async function migratedManifest(): Promise<{ manifest: Manifest; counts: Record<string, Record<number, number>> }> {
    const fx = await memoryStoreFixture();
    try {
      const store = await fx.open({ create: true, recipients: [r.publicKey], unlock: r.secretKey });
      await store.collection('c', { schema: { v: 'string' } }).put('x', { v: 'y' });
      await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
      await store.retireGenerations();
      await store.close();
      const pages = await fx.pages();
      const opened = unlockManifest((await pages.readManifest())!, r.secretKey);
      opened.keys.close();
      return { manifest: opened.manifest, counts: { c: { 3: 1 } } };
    } finally {
      await fx.dispose();
    }
  }

  const copy = (id: string, state: CopyRecord['state'], over: Partial<CopyRecord> = {}): CopyRecord => ({
    id: id.repeat(32).slice(0, 32),
    kind: 'backup',
    time: '2026-11-30T12:00:00.000Z',
    destination: '/backups/app',
    generations: [1],
    suites: [2],
    records: 1,
    commit: 3,
    state,
    ...over,
  });

  it('a retained or restored-from copy holds its suites and generations; a retired copy is among no holders', async () => {
    const { manifest, counts } = await migratedManifest();
    const retained = copy('a', 'retained', { checkpoint: 'ab'.repeat(48) });
    const restoredFrom = copy('b', 'restored-from', {
      kind: 'backup',
      generations: [2],
      suites: [3],
      restores: [{ time: '2026-12-01T00:00:00.000Z', storeId: 'c'.repeat(32) }],
    });
    const retired = copy('d', 'retired', { retiredAt: '2026-12-01T00:00:00.000Z' });
    const bom = checkedBom(
      buildPosture({ manifest: { ...manifest, copies: [retained, restoredFrom, retired] }, counts }),
      [r.secretKey, r.publicKey],
    );
    // Holders: a data component each, depending on the suites (and generations) it holds.
    const held = byRef(bom, `copy/${retained.id}`)!;
    expect(held.type).toBe('data');
    expect(props(held)).toMatchObject({
      'pqdb:copy-state': 'retained',
      'pqdb:copy-kind': 'backup',
      'pqdb:copy-suites': 'gcmsiv-hkdf384',
      'pqdb:copy-checkpoint': retained.checkpoint,
    });
    expect(dependsOn(bom, held['bom-ref'])).toEqual(['suite/gcmsiv-hkdf384', 'key/generation/1']);
    // Generation 1 is destroyed in the store, yet the retained backup still holds records under it.
    expect(keyState(bom, 'key/generation/1')).toBe('destroyed');
    expect(dependsOn(bom, `copy/${restoredFrom.id}`)).toEqual(['suite/cnsa2-gcm-hkdf384-commit', 'key/generation/2']);
    expect(props(byRef(bom, 'suite/gcmsiv-hkdf384'))['pqdb:held-by-copies']).toBe('1');
    // The retired copy is nowhere: no component, no dependency names it.
    const json = JSON.stringify(bom);
    expect(byRef(bom, `copy/${retired.id}`)).toBeUndefined();
    expect(json).not.toContain(retired.id);
    expect(dependsOn(bom, 'store')).toEqual(expect.arrayContaining([`copy/${retained.id}`, `copy/${restoredFrom.id}`]));
    expect(props(bom.metadata.component)).toMatchObject({ 'pqdb:copies-held': '2', 'pqdb:copies-retired': '1' });
    // Retiring the last holder of a suite leaves it held by none.
    const after = buildPosture({ manifest: { ...manifest, copies: [{ ...retained, state: 'retired' }] }, counts });
    expect(props(byRef(after, 'suite/gcmsiv-hkdf384'))['pqdb:held-by-copies']).toBe('0');
    expect(after.components.some((c) => c.type === 'data' && c['bom-ref'].startsWith('copy/'))).toBe(false);
  });

  it('reads its input and edits nothing; the time and serial number may be given', async () => {
    const { manifest, counts } = await migratedManifest();
    const input = { manifest: { ...manifest, copies: [copy('e', 'retained')] }, counts };
    const frozen = JSON.stringify(input);
    const at = new Date('2026-12-01T10:00:00Z');
    const serialNumber = 'urn:uuid:00000000-0000-4000-8000-000000000000';
    const one = buildPosture({ ...input, timestamp: at, serialNumber });
    const two = buildPosture({ ...input, timestamp: at, serialNumber });
    expect(JSON.stringify(input)).toBe(frozen);
    expect(one).toEqual(two);
    expect(one.metadata.timestamp).toBe('2026-12-01T10:00:00.000Z');
    expect(one.serialNumber).toBe(serialNumber);
    checkedBom(one, []);
  });
});

describe('KeyDirectory.suiteCounts', () => {
  it('counts live locations per collection and suite, and forgets what is deleted', () => {
    const d = new KeyDirectory();
    const at = (suite: number) => ({
      leafIndex: 0,
      generation: 1,
      pageId: 1,
      offset: 0,
      length: 1,
      sequence: 1,
      suite,
      governance: '{}',
    });
    d.set('a', 'x', at(2));
    d.set('a', 'y', at(2));
    d.set('a', 'z', at(3));
    d.set('b', 'x', at(1));
    d.set('a', 'y', at(3)); // rewritten under another suite
    d.delete('b', 'x');
    expect(d.suiteCounts()).toEqual({ a: { 2: 1, 3: 2 }, b: {} });
  });
});
