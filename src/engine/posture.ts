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
import { signerKeyId } from '../crypto/proofs';
import { sha384 } from '../kernels/sha2';
import { VERSION } from '../version';
import { hex, unb64, type CopyRecord, type Manifest } from './manifest';
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
const STORE_SECRET_ALGORITHMS: AlgorithmName[] = ['AES-256-GCM-SIV', 'HKDF-SHA384', 'HMAC-SHA384'];

/** Registry state → the state of the suite's data keys, and why when they cannot protect new data. */
const DATA_KEY_STATE: Record<SuiteState, { state: CbomKeyState; use: string }> = {
  active: { state: 'active', use: 'seal and open' },
  'decrypt-only': { state: 'deactivated', use: 'open only' },
  quarantined: { state: 'suspended', use: 'open only' },
  retired: { state: 'deactivated', use: 'none' },
};

const ref = {
  store: 'store',
  library: 'library/pqdb',
  collection: (name: string) => `collection/${name}`,
  suite: (s: Suite) => `suite/${s.name}`,
  algorithm: (name: AlgorithmName) => `algorithm/${name}`,
  storeSecret: 'key/store-secret',
  generation: (g: number) => `key/generation/${g}`,
  dataKeys: (s: Suite) => `key/data/${s.name}`,
  publicKey: (role: string, id: string) => `key/${role}/${id}`,
  copy: (id: string) => `copy/${id}`,
};

const prop = (name: string, value: string | number | boolean): CbomProperty => ({
  name: `pqdb:${name}`,
  value: String(value),
});

/** The CycloneDX date-time form of a stored ISO time, or undefined when it does not parse. */
function dateTime(s: string | undefined): string | undefined {
  if (s === undefined) return undefined;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : new Date(t).toISOString();
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
  const algorithmsUsed = new Set<AlgorithmName>();
  const dependOn = (from: string, ...to: string[]) => {
    let set = deps.get(from);
    if (set === undefined) deps.set(from, (set = new Set()));
    for (const t of to) set.add(t);
  };
  const useAlgorithms = (from: string, names: readonly AlgorithmName[]) => {
    for (const n of names) algorithmsUsed.add(n);
    dependOn(from, ...names.map(ref.algorithm));
  };
  const registry = new Map(m.registry.map((r) => [r.suite, r]));
  const generations = m.keyring.map((k) => k.generation).filter((g) => g > 0);
  const current = Math.max(...generations);
  const live = new Set(generations);
  const retired = new Set(m.retired ?? []);
  const holders = (m.copies ?? []).filter((c) => c.state !== 'retired');
  const policy = currentPolicy(m)?.policy;

  // Collections: what each holds, per suite, and the suite it writes with.
  const perSuite = new Map<number, number>();
  for (const [name, meta] of Object.entries(m.collections).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const counts = input.counts[name] ?? {};
    const held = suites().filter((s) => (counts[s.id] ?? 0) > 0);
    const total = held.reduce((n, s) => n + counts[s.id], 0);
    for (const s of held) perSuite.set(s.id, (perSuite.get(s.id) ?? 0) + counts[s.id]);
    const writes = suites().find((s) => s.id === meta.suite)!;
    components.push({
      type: 'data',
      'bom-ref': ref.collection(name),
      name,
      properties: [
        prop('writes-with', writes.name),
        prop('records', total),
        ...held.map((s) => prop(`records:${s.name}`, counts[s.id])),
      ],
    });
    dependOn(ref.collection(name), ref.suite(writes), ...held.map(ref.suite));
    dependOn(ref.store, ref.collection(name));
  }

  // Suites (a protocol each: pqdb's record format with one cipher suite) and their data keys.
  for (const s of suites()) {
    const r = registry.get(s.id);
    const state: SuiteState = r?.state ?? 'decrypt-only';
    const algs = suiteAlgorithms(s);
    const keyState = DATA_KEY_STATE[state];
    const heldBy = holders.filter((c) => c.suites.includes(s.id)).length;
    components.push({
      type: 'cryptographic-asset',
      'bom-ref': ref.suite(s),
      name: s.name,
      description: s.description,
      cryptoProperties: {
        assetType: 'protocol',
        protocolProperties: {
          type: 'other',
          cipherSuites: [
            { name: s.name, algorithms: [...new Set(algs)].map(ref.algorithm), identifiers: [hexByte(s.id)] },
          ],
          cryptoRefArray: [ref.dataKeys(s)],
        },
      },
      properties: [
        prop('suite-id', s.id),
        prop('registry-state', state),
        ...(r?.since !== undefined ? [prop('registry-since', r.since)] : []),
        prop('default-suite', m.defaultSuite === s.id),
        prop('key-commitment', s.commitment),
        prop('records', perSuite.get(s.id) ?? 0),
        prop('held-by-copies', heldBy),
      ],
    });
    useAlgorithms(ref.suite(s), algs);
    dependOn(ref.suite(s), ref.dataKeys(s));
    components.push({
      type: 'cryptographic-asset',
      'bom-ref': ref.dataKeys(s),
      name: `data keys of ${s.name}`,
      cryptoProperties: {
        assetType: 'related-crypto-material',
        relatedCryptoMaterialProperties: {
          type: 'secret-key',
          state: keyState.state,
          algorithmRef: ref.algorithm(algs[0]),
          size: 256,
        },
      },
      properties: [
        prop('suite', s.name),
        prop('registry-state', state),
        prop('key-use', keyState.use),
        ...(state === 'quarantined'
          ? [
              prop(
                'suspended-reason',
                `suite ${s.name} is quarantined in the crypto registry${r?.since ? ` since ${r.since}` : ''}: it refuses new writes and keeps serving reads`,
              ),
            ]
          : []),
      ],
    });
    useAlgorithms(ref.dataKeys(s), [algs[1]]);
    dependOn(ref.dataKeys(s), ...generations.map(ref.generation));
  }

  // Recipients: the public keys every root is wrapped for (hybrid or classical, told apart by length).
  const recipients = (m.recipients ?? []).map((b) => {
    const pk = unb64(b);
    const hybrid = pk.length === ML_KEM1024_X25519_LENGTHS.publicKey;
    const kem: AlgorithmName = hybrid ? 'ML-KEM-1024+X25519' : 'X25519';
    return publicKeyComponent('recipient', pk, kem, [prop('recipient-type', hybrid ? 'hybrid' : 'classical')]);
  });
  const kems = [...new Set(recipients.map((r) => r.kem))];
  for (const r of recipients) {
    components.push(r.component);
    useAlgorithms(r.component['bom-ref'], [r.kem]);
  }
  const secured = (): { mechanism: string; algorithmRef?: string } => ({
    mechanism: `key envelopes (${recipients.length})`,
    ...(kems.length === 1 ? { algorithmRef: ref.algorithm(kems[0]) } : {}),
  });

  // The store secret (generation 0) and the root key generations.
  components.push(
    secretKey(ref.storeSecret, 'store secret (generation 0)', 'active', secured(), [prop('generation', 0)]),
  );
  useAlgorithms(ref.storeSecret, [...STORE_SECRET_ALGORITHMS, ...ENVELOPE_ALGORITHMS, ...kems]);
  dependOn(ref.storeSecret, ...recipients.map((r) => r.component['bom-ref']));
  dependOn(ref.store, ref.storeSecret);
  const migrations = [...(m.migrations ?? []), ...(m.migration !== undefined ? [m.migration] : [])];
  const named = [...new Set([...generations, ...retired])].sort((a, b) => a - b);
  for (const g of named) {
    const entry = m.keyring.find((k) => k.generation === g);
    const made = migrations.find((x) => x.generation === g);
    const state: CbomKeyState = g === current ? 'active' : live.has(g) ? 'deactivated' : 'destroyed';
    const created = dateTime(made?.startedAt);
    components.push(
      secretKey(ref.generation(g), `root key generation ${g}`, state, live.has(g) ? secured() : undefined, [
        prop('generation', g),
        ...(entry !== undefined ? [prop('suite', suites().find((s) => s.id === entry.suite)!.name)] : []),
        prop('key-use', state === 'active' ? 'seal and open' : state === 'deactivated' ? 'open only' : 'none'),
        ...(made !== undefined ? [prop('made-by-migration', made.id)] : []),
      ]),
    );
    const c = components.at(-1)!.cryptoProperties!.relatedCryptoMaterialProperties!;
    if (created !== undefined) Object.assign(c, { creationDate: created, activationDate: created });
    if (live.has(g)) {
      useAlgorithms(ref.generation(g), [...ENVELOPE_ALGORITHMS, ...kems]);
      dependOn(ref.generation(g), ...recipients.map((r) => r.component['bom-ref']));
    }
  }

  // Signer and authority: ML-DSA-87 public keys.
  if (input.signerPublicKey !== undefined) {
    const k = publicKeyComponent('signer', input.signerPublicKey, 'ML-DSA-87', [prop('role', 'checkpoint signer')]);
    components.push(k.component);
    useAlgorithms(k.component['bom-ref'], ['ML-DSA-87']);
    dependOn(ref.store, k.component['bom-ref']);
  }
  for (const b of m.authority?.keys ?? []) {
    const pk = unb64(b);
    const signed = policy?.signers.includes(hex(signerKeyId(pk))) ?? false;
    const k = publicKeyComponent('authority', pk, 'ML-DSA-87', [
      prop('role', 'authority (pinned at creation)'),
      prop('signed-current-policy', signed),
    ]);
    components.push(k.component);
    useAlgorithms(k.component['bom-ref'], ['ML-DSA-87']);
    dependOn(ref.store, k.component['bom-ref']);
  }

  // Managed copies that still exist: each holds records sealed with its suites under its generations.
  for (const c of holders) {
    components.push(copyComponent(c));
    dependOn(
      ref.copy(c.id),
      ...suites()
        .filter((s) => c.suites.includes(s.id))
        .map(ref.suite),
    );
    dependOn(ref.copy(c.id), ...c.generations.filter((g) => named.includes(g)).map(ref.generation));
    dependOn(ref.store, ref.copy(c.id));
  }

  // The algorithms in use, closed over what they are built on; the library that implements them.
  const queue = [...algorithmsUsed];
  while (queue.length > 0) {
    const a = queue.pop()!;
    for (const u of ALGORITHMS[a].uses) {
      dependOn(ref.algorithm(a), ref.algorithm(u));
      if (algorithmsUsed.has(u)) continue;
      algorithmsUsed.add(u);
      queue.push(u);
    }
  }
  const algorithms = (Object.keys(ALGORITHMS) as AlgorithmName[]).filter((a) => algorithmsUsed.has(a));
  for (const a of algorithms) components.push(algorithmComponent(a));
  components.push({
    type: 'library',
    'bom-ref': ref.library,
    name: 'pqdb',
    version: VERSION,
  });
  dependOn(ref.store, ref.library);

  const storeProps = [
    prop('store-id', m.storeId),
    prop('commit', m.commit),
    prop('current-generation', current),
    prop('default-suite', suites().find((s) => s.id === m.defaultSuite)!.name),
    prop('checkpoints', m.checkpointPages?.length ?? 0),
    prop('migrations', m.migrations?.length ?? 0),
    ...(m.migration !== undefined ? [prop('migration', `${m.migration.id} ${m.migration.phase}`)] : []),
    ...(input.storage !== undefined ? [prop('storage', input.storage)] : []),
    ...(retired.size > 0 ? [prop('retired-generations', [...retired].sort((a, b) => a - b).join(','))] : []),
    prop('copies-held', holders.length),
    prop('copies-retired', (m.copies ?? []).length - holders.length),
    prop('authority-keys', m.authority?.keys.length ?? 0),
    ...(policy !== undefined
      ? [
          prop('policy-version', policy.version),
          prop('policy-threshold', policy.threshold ?? 1),
          ...(policy.expires !== undefined ? [prop('policy-expires', policy.expires)] : []),
        ]
      : []),
  ];
  const store: CbomComponent = {
    type: 'data',
    'bom-ref': ref.store,
    name: `pqdb store ${m.storeId}`,
    properties: storeProps,
  };
  const dependencies: CbomDependency[] = [...deps].map(([r, on]) => ({ ref: r, dependsOn: [...on] }));
  dependencies.push({ ref: ref.library, provides: algorithms.map(ref.algorithm) });
  return {
    bomFormat: 'CycloneDX',
    specVersion: '1.6',
    serialNumber: input.serialNumber ?? `urn:uuid:${globalThis.crypto.randomUUID()}`,
    version: 1,
    metadata: {
      timestamp: (input.timestamp ?? new Date()).toISOString(),
      lifecycles: [{ phase: 'operations' }],
      tools: { components: [{ type: 'application', 'bom-ref': 'tool/pqdb', name: 'pqdb', version: VERSION }] },
      component: store,
      properties: storeProps.filter((p) => p.name === 'pqdb:store-id' || p.name === 'pqdb:policy-version'),
    },
    components,
    dependencies,
  };
}

const hexByte = (n: number) => `0x${n.toString(16).padStart(2, '0')}`;

/** A public key by its SHA-384 key id (the 16 bytes envelopes, checkpoints and policies name it by). */
function publicKeyComponent(role: string, pk: Uint8Array, kem: AlgorithmName, extra: CbomProperty[]) {
  const id = hex(signerKeyId(pk));
  const component: CbomComponent = {
    type: 'cryptographic-asset',
    'bom-ref': ref.publicKey(role, id),
    name: `${role} public key ${id}`,
    cryptoProperties: {
      assetType: 'related-crypto-material',
      relatedCryptoMaterialProperties: {
        type: 'public-key',
        id,
        state: 'active',
        algorithmRef: ref.algorithm(kem),
        size: pk.length * 8,
        format: 'raw',
      },
    },
    properties: [prop('fingerprint-sha384', hex(sha384(pk))), ...extra],
  };
  return { component, kem };
}

function secretKey(
  bomRef: string,
  name: string,
  state: CbomKeyState,
  securedBy: { mechanism: string; algorithmRef?: string } | undefined,
  properties: CbomProperty[],
): CbomComponent {
  return {
    type: 'cryptographic-asset',
    'bom-ref': bomRef,
    name,
    cryptoProperties: {
      assetType: 'related-crypto-material',
      relatedCryptoMaterialProperties: {
        type: 'secret-key',
        state,
        size: 256,
        ...(securedBy !== undefined ? { securedBy } : {}),
      },
    },
    properties,
  };
}

function algorithmComponent(a: AlgorithmName): CbomComponent {
  const x = ALGORITHMS[a];
  return {
    type: 'cryptographic-asset',
    'bom-ref': ref.algorithm(a),
    name: a,
    cryptoProperties: {
      assetType: 'algorithm',
      algorithmProperties: {
        primitive: x.primitive,
        ...(x.parameterSetIdentifier !== undefined ? { parameterSetIdentifier: x.parameterSetIdentifier } : {}),
        ...(x.curve !== undefined ? { curve: x.curve } : {}),
        ...(x.mode !== undefined ? { mode: x.mode } : {}),
        executionEnvironment: 'software-plain-ram',
        implementationPlatform: 'generic',
        certificationLevel: ['none'],
        cryptoFunctions: [...x.functions],
        classicalSecurityLevel: x.classicalSecurityLevel,
        nistQuantumSecurityLevel: x.nistQuantumSecurityLevel,
      },
      ...(x.oid !== undefined ? { oid: x.oid } : {}),
    },
    properties: [prop('implementation', x.implementation)],
  };
}

function copyComponent(c: CopyRecord): CbomComponent {
  const names = suites()
    .filter((s) => c.suites.includes(s.id))
    .map((s) => s.name);
  return {
    type: 'data',
    'bom-ref': ref.copy(c.id),
    name: `${c.kind} copy ${c.id}`,
    properties: [
      prop('copy-id', c.id),
      prop('copy-kind', c.kind),
      prop('copy-state', c.state),
      prop('copy-time', c.time),
      prop('copy-destination', c.destination),
      prop('copy-records', c.records),
      prop('copy-commit', c.commit),
      prop('copy-generations', c.generations.join(',')),
      prop('copy-suites', names.join(',')),
      ...(c.checkpoint !== undefined ? [prop('copy-checkpoint', c.checkpoint)] : []),
      ...(c.restores !== undefined ? [prop('copy-restores', c.restores.length)] : []),
      ...(c.sourceStoreId !== undefined ? [prop('copy-source-store', c.sourceStoreId)] : []),
    ],
  };
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
