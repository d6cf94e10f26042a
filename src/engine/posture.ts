// Posture (DESIGN §9, docs/posture.md): a CycloneDX 1.6 cryptographic bill of materials (CBOM) of one
// store, built from its live state: the installed manifest (key generations, the crypto registry,
// collections, recipients, authority keys and policy, retired generations, migrations, the managed
// copies inventory), the live record counts per collection and suite from the key directory, and
// the signer public key the store was opened with. The schema followed is bom-1.6.schema.json
// (`cryptoProperties`: algorithm, protocol and related-crypto-material assets); the tests validate
// every BOM against it.
//
// A pure function of those inputs: nothing is decrypted and no page is read, so its cost is one
// pass over the key directory's locations (counting) plus a few SHA-384 digests of public keys.
// What is never in a BOM: key bytes (public keys appear as SHA-384 key ids, secret keys and roots
// only by their state), salts, bindings, envelopes, record ids, governance states and values.
//
// Registry state → key state (NIST SP 800-57, relatedCryptoMaterialProperties.state) of a suite's
// data keys: active → active, decrypt-only → deactivated (they only process), quarantined →
// suspended (with pqdb:suspended-reason), retired → deactivated (with pqdb:key-use "none").
// pqdb:key-use says what a key still does: "seal and open", "open only" or "none".
// Root key generations: the current one active, older live ones deactivated, retired ones destroyed.

import { suites, type Suite } from '../crypto/suites';
import {
  ALGORITHMS,
  suiteAlgorithms,
  type AlgorithmName,
  type CryptoFunction,
  type Primitive,
} from '../crypto/algorithms';
import { ML_KEM1024_X25519_LENGTHS } from '../crypto/hybrid-kem';
import { KEY_ID_BYTES } from '../crypto/proofs';
import { sha384 } from '../kernels/sha2';
import { VERSION } from '../version';
import { type Manifest } from './manifest';
import { hex, unb64 } from '../_encoding';
import type { SuiteState } from './registry';
import { currentPolicy } from './authority';

export type CbomKeyState = 'pre-activation' | 'active' | 'suspended' | 'deactivated' | 'compromised' | 'destroyed';
/** A CycloneDX property: a name in pqdb's namespace (`pqdb:…`) and a string value. */
export interface CbomProperty {
  name: string;
  value: string;
}

/** `cryptoProperties` of a CycloneDX 1.6 component (the fields pqdb fills). */
export interface CbomCryptoProperties {
  assetType: 'algorithm' | 'protocol' | 'related-crypto-material';
  algorithmProperties?: {
    primitive: Primitive;
    parameterSetIdentifier?: string;
    curve?: string;
    mode?: 'gcm' | 'other';
    executionEnvironment: 'software-plain-ram';
    implementationPlatform: 'generic';
    certificationLevel: ['none'];
    cryptoFunctions: CryptoFunction[];
    classicalSecurityLevel: number;
    nistQuantumSecurityLevel: number;
  };
  protocolProperties?: {
    type: 'other';
    cipherSuites: { name: string; algorithms: string[]; identifiers: string[] }[];
    cryptoRefArray?: string[];
  };
  relatedCryptoMaterialProperties?: {
    type: 'public-key' | 'secret-key';
    id?: string;
    state: CbomKeyState;
    algorithmRef?: string;
    creationDate?: string;
    activationDate?: string;
    size?: number;
    format?: string;
    securedBy?: { mechanism: string; algorithmRef?: string };
  };
  oid?: string;
}

/** A CycloneDX 1.6 component as pqdb writes it. */
export interface CbomComponent {
  type: 'application' | 'library' | 'data' | 'cryptographic-asset';
  'bom-ref': string;
  name: string;
  version?: string;
  description?: string;
  cryptoProperties?: CbomCryptoProperties;
  properties?: CbomProperty[];
}

/** A CycloneDX dependency: `ref` depends on `dependsOn` (or, for the library, provides `provides`). */
export interface CbomDependency {
  ref: string;
  dependsOn?: string[];
  provides?: string[];
}

/** The CBOM of a store: a CycloneDX 1.6 JSON document (docs/posture.md). */
export interface Cbom {
  bomFormat: 'CycloneDX';
  specVersion: '1.6';
  serialNumber: string;
  version: 1;
  metadata: {
    timestamp: string;
    lifecycles: { phase: 'operations' }[];
    tools: { components: CbomComponent[] };
    component: CbomComponent;
    properties: CbomProperty[];
  };
  components: CbomComponent[];
  dependencies: CbomDependency[];
}

/** What the BOM is built from (Store.posture passes the live state). */
export interface PostureInput {
  /** The installed manifest (read, never edited). */
  manifest: Manifest;
  /** Live records per collection and suite id (KeyDirectory.suiteCounts). */
  counts: Record<string, Record<number, number>>;
  /** The checkpoint signer public key the store was opened with. */
  signerPublicKey?: Uint8Array;
  /** The page store kind ("memory", "node-fs", …). */
  storage?: string;
  /** The BOM's time (default now) and serial number (default a random urn:uuid). */
  timestamp?: Date;
  serialNumber?: string;
}

/** What a key generation's root, the store secret and the envelopes use, besides the KEM. */
const ENVELOPE_ALGORITHMS: AlgorithmName[] = ['HKDF-SHA384', 'AES-256-GCM-SIV', 'SHA-384'];
const STORE_SECRET_ALGORITHMS: AlgorithmName[] = [...ENVELOPE_ALGORITHMS, 'HMAC-SHA384'];

/** Registry state → the state of the suite's data keys. */
const DATA_KEY_STATE: Record<SuiteState, CbomKeyState> = {
  active: 'active',
  'decrypt-only': 'deactivated',
  quarantined: 'suspended',
  retired: 'deactivated',
};
/** What a key in each state still does (pqdb:key-use); a retired suite's keys do nothing. */
const KEY_USE: Partial<Record<CbomKeyState, string>> = {
  active: 'seal and open',
  deactivated: 'open only',
  suspended: 'open only',
  destroyed: 'none',
};

const algorithmRef = (name: AlgorithmName) => `algorithm/${name}`;

/** Properties from `pqdb:<key>: value` pairs, leaving out undefined values. */
function props(o: Record<string, string | number | boolean | undefined>): CbomProperty[] {
  const out: CbomProperty[] = [];
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out.push({ name: `pqdb:${k}`, value: String(v) });
  return out;
}

/** A related-crypto-material asset: a key of `type` in `state`, with `more` of its fields. */
function key(
  bomRef: string,
  name: string,
  type: 'public-key' | 'secret-key',
  state: CbomKeyState,
  more: Omit<NonNullable<CbomCryptoProperties['relatedCryptoMaterialProperties']>, 'type' | 'state'>,
  properties: CbomProperty[],
): CbomComponent {
  const material = { type, state, ...more };
  const cryptoProperties: CbomCryptoProperties = {
    assetType: 'related-crypto-material',
    relatedCryptoMaterialProperties: material,
  };
  return { type: 'cryptographic-asset', 'bom-ref': bomRef, name, cryptoProperties, properties };
}

/**
 * Builds the CBOM of a store from its live state (see the file header). Pure: it reads `input` and
 * edits nothing.
 * @throws PqdbError CORRUPTION when the manifest names a policy or key that does not decode.
 * @example const cbom = buildPosture({ manifest, counts: directory.suiteCounts() });
 */
export function buildPosture(input: PostureInput): Cbom {
  const m = input.manifest;
  const components: CbomComponent[] = [];
  const deps = new Map<string, Set<string>>();
  const used = new Set<AlgorithmName>();
  const dependOn = (from: string, ...to: string[]) => {
    let set = deps.get(from);
    if (set === undefined) deps.set(from, (set = new Set()));
    for (const t of to) set.add(t);
  };
  const useAlgorithms = (from: string, names: readonly AlgorithmName[]) => {
    for (const n of names) used.add(n);
    dependOn(from, ...names.map(algorithmRef));
  };
  const suiteName = (id: number) => suites().find((s) => s.id === id)!.name;
  const generations = m.keyring.map((k) => k.generation).filter((g) => g > 0);
  const current = Math.max(...generations);
  const retired = m.retired ?? [];
  const holders = (m.copies ?? []).filter((c) => c.state !== 'retired');
  const policy = currentPolicy(m)?.policy;
  const STORE = 'store';

  // Collections: what each holds, per suite, and the suite it writes with.
  const perSuite = new Map<number, number>();
  for (const name of Object.keys(m.collections).sort()) {
    const counts = input.counts[name] ?? {};
    const held = suites().filter((s) => counts[s.id] > 0);
    const perHeld = Object.fromEntries(held.map((s) => [`records:${s.name}`, counts[s.id]]));
    for (const s of held) perSuite.set(s.id, (perSuite.get(s.id) ?? 0) + counts[s.id]);
    const writes = suiteName(m.collections[name].suite);
    const total = held.reduce((n, s) => n + counts[s.id], 0);
    const bomRef = `collection/${name}`;
    components.push({
      type: 'data',
      'bom-ref': bomRef,
      name,
      properties: props({ 'writes-with': writes, records: total, ...perHeld }),
    });
    dependOn(bomRef, `suite/${writes}`, ...held.map((s) => `suite/${s.name}`));
    dependOn(STORE, bomRef);
  }

  // Suites (a protocol each: pqdb's record format with one cipher suite) and their data keys.
  for (const s of suites()) {
    const r = m.registry.find((x) => x.suite === s.id);
    const state: SuiteState = r?.state ?? 'decrypt-only';
    const algs = suiteAlgorithms(s);
    const bomRef = `suite/${s.name}`;
    const dataKeys = `key/data/${s.name}`;
    const cipherSuite = {
      name: s.name,
      algorithms: algs.map(algorithmRef),
      identifiers: [`0x${s.id.toString(16).padStart(2, '0')}`],
    };
    components.push({
      type: 'cryptographic-asset',
      'bom-ref': bomRef,
      name: s.name,
      description: s.description,
      cryptoProperties: {
        assetType: 'protocol',
        protocolProperties: { type: 'other', cipherSuites: [cipherSuite], cryptoRefArray: [dataKeys] },
      },
      properties: props({
        'suite-id': s.id,
        'registry-state': state,
        'registry-since': r?.since,
        'default-suite': m.defaultSuite === s.id,
        'key-commitment': s.commitment,
        records: perSuite.get(s.id) ?? 0,
        'held-by-copies': holders.filter((c) => c.suites.includes(s.id)).length,
      }),
    });
    useAlgorithms(bomRef, algs);
    dependOn(bomRef, dataKeys);
    const keyState = DATA_KEY_STATE[state];
    const reason =
      state === 'quarantined'
        ? `suite ${s.name} is quarantined in the crypto registry${r?.since ? ` since ${r.since}` : ''}: it refuses new writes and keeps serving reads`
        : undefined;
    components.push(
      key(
        dataKeys,
        `data keys of ${s.name}`,
        'secret-key',
        keyState,
        { algorithmRef: algorithmRef(algs[0]), size: 256 },
        props({
          'registry-state': state,
          'key-use': state === 'retired' ? 'none' : KEY_USE[keyState],
          'suspended-reason': reason,
        }),
      ),
    );
    useAlgorithms(dataKeys, [algs[1]]);
    dependOn(dataKeys, ...generations.map((g) => `key/generation/${g}`));
  }

  /** A public key by its SHA-384 key id (the 16 bytes envelopes, checkpoints and policies name it by). */
  const publicKey = (role: string, pk: Uint8Array, alg: AlgorithmName, more: (id: string) => CbomProperty[]) => {
    const digest = sha384(pk); // the fingerprint, whose first 16 bytes are the key id
    const id = hex(digest.subarray(0, KEY_ID_BYTES));
    const bomRef = `key/${role}/${id}`;
    const fingerprint = props({ 'fingerprint-sha384': hex(digest) });
    const more2 = { id, algorithmRef: algorithmRef(alg), size: pk.length * 8, format: 'raw' };
    components.push(
      key(bomRef, `${role} public key ${id}`, 'public-key', 'active', more2, [...fingerprint, ...more(id)]),
    );
    useAlgorithms(bomRef, [alg]);
    return bomRef;
  };

  // Recipients: the public keys every root is wrapped for (hybrid or classical, told apart by length).
  const kems = new Set<AlgorithmName>();
  const recipients = (m.recipients ?? []).map((b) => {
    const pk = unb64(b);
    const hybrid = pk.length === ML_KEM1024_X25519_LENGTHS.publicKey;
    const kem: AlgorithmName = hybrid ? 'ML-KEM-1024+X25519' : 'X25519';
    kems.add(kem);
    return publicKey('recipient', pk, kem, () => props({ 'recipient-type': hybrid ? 'hybrid' : 'classical' }));
  });
  const securedBy = {
    mechanism: `key envelopes (${recipients.length})`,
    ...(kems.size === 1 ? { algorithmRef: algorithmRef([...kems][0]) } : {}),
  };
  const wrapped = (bomRef: string, algs: AlgorithmName[]) => {
    useAlgorithms(bomRef, [...algs, ...kems]);
    dependOn(bomRef, ...recipients);
  };

  // The store secret (generation 0) and the root key generations.
  const SECRET = 'key/store-secret';
  components.push(key(SECRET, 'store secret (generation 0)', 'secret-key', 'active', { size: 256, securedBy }, []));
  wrapped(SECRET, STORE_SECRET_ALGORITHMS);
  dependOn(STORE, SECRET);
  const migrations = [...(m.migrations ?? []), ...(m.migration !== undefined ? [m.migration] : [])];
  const named = [...new Set([...generations, ...retired])].sort((a, b) => a - b);
  for (const g of named) {
    const entry = m.keyring.find((k) => k.generation === g);
    const made = migrations.find((x) => x.generation === g);
    const live = entry !== undefined;
    const state: CbomKeyState = g === current ? 'active' : live ? 'deactivated' : 'destroyed';
    const bomRef = `key/generation/${g}`;
    const dates = made !== undefined ? { creationDate: made.startedAt, activationDate: made.startedAt } : {};
    const more = { ...dates, size: 256, ...(live ? { securedBy } : {}) };
    components.push(
      key(
        bomRef,
        `root key generation ${g}`,
        'secret-key',
        state,
        more,
        props({
          generation: g,
          suite: live ? suiteName(entry.suite) : undefined,
          'key-use': KEY_USE[state],
          'made-by-migration': made?.id,
        }),
      ),
    );
    if (live) wrapped(bomRef, ENVELOPE_ALGORITHMS);
  }

  // Signer and authority: ML-DSA-87 public keys.
  if (input.signerPublicKey !== undefined)
    dependOn(
      STORE,
      publicKey('signer', input.signerPublicKey, 'ML-DSA-87', () => props({ role: 'checkpoint signer' })),
    );
  for (const b of m.authority?.keys ?? []) {
    const more = (id: string) =>
      props({ role: 'authority (pinned at creation)', 'signed-current-policy': policy?.signers.includes(id) ?? false });
    dependOn(STORE, publicKey('authority', unb64(b), 'ML-DSA-87', more));
  }

  // Managed copies that still exist: each holds records sealed with its suites under its generations.
  for (const c of holders) {
    const bomRef = `copy/${c.id}`;
    const held = suites().filter((s) => c.suites.includes(s.id));
    components.push({
      type: 'data',
      'bom-ref': bomRef,
      name: `${c.kind} copy ${c.id}`,
      properties: props({
        'copy-id': c.id,
        'copy-kind': c.kind,
        'copy-state': c.state,
        'copy-time': c.time,
        'copy-destination': c.destination,
        'copy-records': c.records,
        'copy-commit': c.commit,
        'copy-generations': c.generations.join(','),
        'copy-suites': held.map((s) => s.name).join(','),
        'copy-checkpoint': c.checkpoint,
        'copy-restores': c.restores?.length,
        'copy-source-store': c.sourceStoreId,
      }),
    });
    dependOn(bomRef, ...held.map((s) => `suite/${s.name}`));
    dependOn(bomRef, ...c.generations.filter((g) => named.includes(g)).map((g) => `key/generation/${g}`));
    dependOn(STORE, bomRef);
  }

  // The algorithms in use, closed over what they are built on; the library that implements them.
  const queue = [...used];
  while (queue.length > 0) {
    const a = queue.pop()!;
    for (const u of ALGORITHMS[a].uses) {
      dependOn(algorithmRef(a), algorithmRef(u));
      if (!used.has(u)) queue.push(u);
      used.add(u);
    }
  }
  const algorithms = (Object.keys(ALGORITHMS) as AlgorithmName[]).filter((a) => used.has(a));
  for (const a of algorithms) {
    const x = ALGORITHMS[a];
    const algorithmProperties: NonNullable<CbomCryptoProperties['algorithmProperties']> = {
      primitive: x.primitive,
      parameterSetIdentifier: x.parameterSetIdentifier,
      curve: x.curve,
      mode: x.mode,
      executionEnvironment: 'software-plain-ram',
      implementationPlatform: 'generic',
      certificationLevel: ['none'],
      cryptoFunctions: [...x.functions],
      classicalSecurityLevel: x.classicalSecurityLevel,
      nistQuantumSecurityLevel: x.nistQuantumSecurityLevel,
    };
    components.push({
      type: 'cryptographic-asset',
      'bom-ref': algorithmRef(a),
      name: a,
      cryptoProperties: { assetType: 'algorithm', algorithmProperties, oid: x.oid },
      properties: props({ implementation: x.implementation }),
    });
  }
  const LIBRARY = 'library/pqdb';
  components.push({ type: 'library', 'bom-ref': LIBRARY, name: 'pqdb', version: VERSION });
  dependOn(STORE, LIBRARY);

  const storeProps = props({
    'store-id': m.storeId,
    commit: m.commit,
    'current-generation': current,
    'default-suite': suiteName(m.defaultSuite),
    checkpoints: m.checkpointPages?.length ?? 0,
    migrations: m.migrations?.length ?? 0,
    migration: m.migration && `${m.migration.id} ${m.migration.phase}`,
    storage: input.storage,
    'retired-generations': retired.length > 0 ? [...retired].sort((a, b) => a - b).join(',') : undefined,
    'copies-held': holders.length,
    'copies-retired': (m.copies ?? []).length - holders.length,
    'authority-keys': m.authority?.keys.length ?? 0,
    'policy-version': policy?.version,
    'policy-threshold': policy && (policy.threshold ?? 1),
    'policy-expires': policy?.expires,
  });
  const dependencies: CbomDependency[] = [...deps].map(([r, on]) => ({ ref: r, dependsOn: [...on] }));
  dependencies.push({ ref: LIBRARY, provides: algorithms.map(algorithmRef) });
  // Drops the fields left undefined above (the BOM is plain JSON, and the schema has no undefined).
  return JSON.parse(
    JSON.stringify({
      bomFormat: 'CycloneDX',
      specVersion: '1.6',
      serialNumber: input.serialNumber ?? `urn:uuid:${globalThis.crypto.randomUUID()}`,
      version: 1,
      metadata: {
        timestamp: (input.timestamp ?? new Date()).toISOString(),
        lifecycles: [{ phase: 'operations' }],
        tools: { components: [{ type: 'application', 'bom-ref': 'tool/pqdb', name: 'pqdb', version: VERSION }] },
        component: { type: 'data', 'bom-ref': STORE, name: `pqdb store ${m.storeId}`, properties: storeProps },
        properties: storeProps.filter((p) => p.name === 'pqdb:store-id' || p.name === 'pqdb:policy-version'),
      },
      components,
      dependencies,
    }),
  ) as Cbom;
}

/** The parts of a store the BOM is read from (Store passes its own). */
export interface PostureContext {
  readonly pipeline: { readonly manifest: Manifest };
  readonly directory: { suiteCounts(): Record<string, Record<number, number>> };
  readonly checkpoints: { readonly signerPublicKey?: Uint8Array };
  readonly pages: { readonly kind: string };
}

/** The CBOM of an open store's live state (Store.posture). */
export function storePosture(ctx: PostureContext): Cbom {
  return buildPosture({
    manifest: ctx.pipeline.manifest,
    counts: ctx.directory.suiteCounts(),
    signerPublicKey: ctx.checkpoints.signerPublicKey,
    storage: ctx.pages.kind,
  });
}
