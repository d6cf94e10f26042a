// pqdb benchmarks: SHA-384 (131 B and 1 MiB), HKDF-SHA384 (32 B out) and the Merkle root of
// 100,000 × 131-B leaves, on both WebAssembly builds, against node:crypto, @noble/hashes and
// hash-wasm measured in the same process; AES-256-GCM-SIV and AES-256-GCM record sealing/opening and
// 1 MiB throughput against @noble/ciphers, node:crypto and WebCrypto; ML-KEM-1024, ML-DSA-87 and
// X25519 against their JavaScript and WebAssembly peers. Prints a table and writes a JSON report.
//
//   npm run bench                 all benches
//   node bench/run.mjs --quick    shorter samples (a smoke run)
//   node bench/run.mjs --only aead   one group: sha2, aead or pq
//   node bench/run.mjs --out f    JSON report path (default
//                                 bench/results/kernels-<arch>[-emulated]-<runtime>-<date>[-n].json)

import {
  createHash,
  createCipheriv,
  createDecipheriv,
  createPrivateKey,
  createPublicKey,
  diffieHellman,
  hash as nodeHash,
  hkdfSync,
  webcrypto,
} from 'node:crypto';
import { gcm as nobleGcm, gcmsiv as nobleGcmsiv } from '@noble/ciphers/aes.js';
import { ml_kem1024 as nobleKem } from '@noble/post-quantum/ml-kem.js';
import { x25519 as nobleX25519 } from '@noble/curves/ed25519.js';
import { shake256 as nobleShake256, sha3_256 as nobleSha3_256 } from '@noble/hashes/sha3.js';
import { createMLKEM1024, createMLDSA87 } from '@oqs/liboqs-js';
import { ml_dsa87 as nobleDsa } from '@noble/post-quantum/ml-dsa.js';
import { createMlKem1024 } from 'mlkem';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { sha384 as nobleSha384 } from '@noble/hashes/sha2.js';
import { hkdf as nobleHkdf } from '@noble/hashes/hkdf.js';
import { createSHA384 } from 'hash-wasm';
import * as pqdb from '../dist/crypto.js';
import { bytes, measureInterleaved, fmtTime, hostInfo, writeReport } from './harness.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const outIdx = args.indexOf('--out');
const onlyIdx = args.indexOf('--only');
const only = onlyIdx >= 0 ? args[onlyIdx + 1] : undefined;
const opts = quick ? { warmupMs: 150, samples: 7, sampleMs: 10 } : { warmupMs: 500, samples: 21, sampleMs: 25 };

const hw = await createSHA384();
const hashWasm384 = (m) => {
  hw.init();
  hw.update(m);
  return hw.digest('binary');
};

/**
 * The fastest plain-JavaScript way to build an RFC 9162 root with a one-shot hash `h`: hash each
 * leaf behind its 0x00 prefix, then pair up level by level behind 0x01, every input written into one
 * scratch buffer that is reused (no allocation per leaf or node; the form measured fastest of fresh
 * `Uint8Array`s, `Buffer.concat` and incremental `update` calls, bench/merkle-forms.mjs).
 */
function peerMerkleRoot(leaves, h) {
  let scratch = new Uint8Array(256);
  let level = leaves.map((leaf) => {
    if (leaf.length + 1 > scratch.length) scratch = new Uint8Array(leaf.length + 1);
    scratch[0] = 0;
    scratch.set(leaf, 1);
    return h(scratch.subarray(0, leaf.length + 1));
  });
  const node = new Uint8Array(97);
  node[0] = 1;
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i + 1 < level.length; i += 2) {
      node.set(level[i], 1);
      node.set(level[i + 1], 49);
      next.push(h(node));
    }
    if (level.length % 2 === 1) next.push(level[level.length - 1]);
    level = next;
  }
  return level[0];
}

const msg131 = bytes(131, 7);
const mib = bytes(1 << 20, 9);
const ikm = bytes(32, 11);
const salt = bytes(32, 12);
const info = bytes(64, 13);
const leaves = Array.from({ length: 100_000 }, (_, i) => bytes(131, i + 100));
const nodeSha384 = (m) => nodeHash('sha384', m, 'buffer');

const FLAVORS = ['simd', 'scalar'];
const pq = (fn, what = 'pqdb') => FLAVORS.map((f) => ({ name: `${what} (${f})`, flavor: f, fn }));

const benches = [
  {
    id: 'sha384-131B',
    group: 'sha2',
    title: 'SHA-384 of 131 B',
    unit: 'op',
    impls: [
      ...pq(() => pqdb.sha384(msg131)),
      { name: 'node:crypto hash()', fn: () => nodeSha384(msg131) },
      { name: 'node:crypto createHash', fn: () => createHash('sha384').update(msg131).digest() },
      { name: '@noble/hashes', fn: () => nobleSha384(msg131) },
      { name: 'hash-wasm', fn: () => hashWasm384(msg131) },
    ],
  },
  {
    id: 'sha384-1MiB',
    group: 'sha2',
    title: 'SHA-384 of 1 MiB',
    bytes: mib.length,
    impls: [
      ...pq(() => pqdb.sha384(mib)),
      { name: 'node:crypto hash()', fn: () => nodeSha384(mib) },
      { name: '@noble/hashes', fn: () => nobleSha384(mib) },
      { name: 'hash-wasm', fn: () => hashWasm384(mib) },
    ],
  },
  {
    id: 'hkdf-sha384-32B',
    group: 'sha2',
    title: 'HKDF-SHA384, 32 B out',
    impls: [
      ...pq(() => pqdb.hkdf(pqdb.sha384, ikm, salt, info, 32)),
      { name: 'node:crypto hkdfSync', fn: () => new Uint8Array(hkdfSync('sha384', ikm, salt, info, 32)) },
      { name: '@noble/hashes', fn: () => nobleHkdf(nobleSha384, ikm, salt, info, 32) },
    ],
  },
  {
    id: 'merkle-100k',
    group: 'sha2',
    title: 'Merkle root, 100,000 × 131-B leaves',
    heavy: true,
    impls: [
      ...pq(() => pqdb.merkle.root(leaves)),
      { name: 'node:crypto hash() loop, one scratch buffer', fn: () => peerMerkleRoot(leaves, nodeSha384) },
      { name: 'hash-wasm loop, one scratch buffer', fn: () => peerMerkleRoot(leaves, hashWasm384) },
      { name: '@noble/hashes loop, one scratch buffer', fn: () => peerMerkleRoot(leaves, nobleSha384) },
    ],
  },
];

// ---- AEAD -------------------------------------------------------------------------------------
const aesKey = bytes(32, 21);
const nonce12 = bytes(12, 22);
const aad16 = bytes(16, 23);
const record115 = bytes(115, 24);
const gcmsivKeyed = pqdb.gcmsiv.withKey(aesKey);
const gcmKeyed = pqdb.gcm.withKey(aesKey);
const sivSealed = nobleGcmsiv(aesKey, nonce12, aad16).encrypt(record115);
const gcmSealed = nobleGcm(aesKey, nonce12, aad16).encrypt(record115);
const nodeGcmSeal = (pt, aad = aad16) => {
  const c = createCipheriv('aes-256-gcm', aesKey, nonce12);
  c.setAAD(aad);
  return Buffer.concat([c.update(pt), c.final(), c.getAuthTag()]);
};
const nodeGcmOpen = (ct, aad = aad16) => {
  const d = createDecipheriv('aes-256-gcm', aesKey, nonce12);
  d.setAAD(aad);
  d.setAuthTag(ct.subarray(ct.length - 16));
  return Buffer.concat([d.update(ct.subarray(0, ct.length - 16)), d.final()]);
};
const sealOut = new Uint8Array(115 + 16);
const openOut = new Uint8Array(115);
const batchRecords = Array.from({ length: 1000 }, (_, i) => ({
  nonce: bytes(12, 1000 + i),
  data: bytes(115, 5000 + i),
  aad: aad16,
}));
const mibSiv = nobleGcmsiv(aesKey, nonce12, aad16).encrypt(mib);

benches.push(
  {
    id: 'gcmsiv-seal-115B',
    group: 'aead',
    title: 'AES-256-GCM-SIV seal, 115-B record + 16-B AAD',
    ref: 'pqdb one-shot',
    impls: [
      ...pq(() => pqdb.gcmsiv(aesKey, nonce12, aad16).encrypt(record115), 'pqdb one-shot'),
      ...pq(() => pqdb.gcmsiv(aesKey, nonce12, aad16).encrypt(record115, sealOut), 'pqdb one-shot, into a buffer'),
      ...pq(() => gcmsivKeyed.encrypt(nonce12, record115, aad16), 'pqdb keyed'),
      ...pq(() => gcmsivKeyed.encrypt(nonce12, record115, aad16, sealOut), 'pqdb keyed, into a buffer'),
      { name: '@noble/ciphers gcmsiv', fn: () => nobleGcmsiv(aesKey, nonce12, aad16).encrypt(record115) },
    ],
  },
  {
    id: 'gcmsiv-open-115B',
    group: 'aead',
    title: 'AES-256-GCM-SIV open, 115-B record + 16-B AAD',
    ref: 'pqdb one-shot',
    impls: [
      ...pq(() => pqdb.gcmsiv(aesKey, nonce12, aad16).decrypt(sivSealed), 'pqdb one-shot'),
      ...pq(() => pqdb.gcmsiv(aesKey, nonce12, aad16).decrypt(sivSealed, openOut), 'pqdb one-shot, into a buffer'),
      ...pq(() => gcmsivKeyed.decrypt(nonce12, sivSealed, aad16), 'pqdb keyed'),
      ...pq(() => gcmsivKeyed.decrypt(nonce12, sivSealed, aad16, openOut), 'pqdb keyed, into a buffer'),
      { name: '@noble/ciphers gcmsiv', fn: () => nobleGcmsiv(aesKey, nonce12, aad16).decrypt(sivSealed) },
    ],
  },
  {
    id: 'gcm-seal-115B',
    group: 'aead',
    title: 'AES-256-GCM seal, 115-B record + 16-B AAD',
    ref: 'pqdb one-shot',
    impls: [
      ...pq(() => pqdb.gcm(aesKey, nonce12, aad16).encrypt(record115), 'pqdb one-shot'),
      ...pq(() => pqdb.gcm(aesKey, nonce12, aad16).encrypt(record115, sealOut), 'pqdb one-shot, into a buffer'),
      ...pq(() => gcmKeyed.encrypt(nonce12, record115, aad16), 'pqdb keyed'),
      ...pq(() => gcmKeyed.encrypt(nonce12, record115, aad16, sealOut), 'pqdb keyed, into a buffer'),
      { name: 'node:crypto createCipheriv', fn: () => nodeGcmSeal(record115) },
      { name: '@noble/ciphers gcm', fn: () => nobleGcm(aesKey, nonce12, aad16).encrypt(record115) },
    ],
  },
  {
    id: 'gcm-open-115B',
    group: 'aead',
    title: 'AES-256-GCM open, 115-B record + 16-B AAD',
    ref: 'pqdb one-shot',
    impls: [
      ...pq(() => pqdb.gcm(aesKey, nonce12, aad16).decrypt(gcmSealed), 'pqdb one-shot'),
      ...pq(() => pqdb.gcm(aesKey, nonce12, aad16).decrypt(gcmSealed, openOut), 'pqdb one-shot, into a buffer'),
      ...pq(() => gcmKeyed.decrypt(nonce12, gcmSealed, aad16), 'pqdb keyed'),
      ...pq(() => gcmKeyed.decrypt(nonce12, gcmSealed, aad16, openOut), 'pqdb keyed, into a buffer'),
      { name: 'node:crypto createDecipheriv', fn: () => nodeGcmOpen(gcmSealed) },
      { name: '@noble/ciphers gcm', fn: () => nobleGcm(aesKey, nonce12, aad16).decrypt(gcmSealed) },
    ],
  },
  {
    id: 'gcmsiv-seal-batch-1000',
    group: 'aead',
    title: 'AES-256-GCM-SIV encryptBatch, 1,000 × 115-B records (per call)',
    impls: [...pq(() => gcmsivKeyed.encryptBatch(batchRecords)[999])],
  },
  {
    id: 'gcmsiv-1MiB',
    group: 'aead',
    title: 'AES-256-GCM-SIV seal, 1 MiB',
    bytes: mib.length,
    impls: [
      ...pq(() => gcmsivKeyed.encrypt(nonce12, mib, aad16)),
      { name: '@noble/ciphers gcmsiv', fn: () => nobleGcmsiv(aesKey, nonce12, aad16).encrypt(mib) },
    ],
  },
  {
    id: 'gcmsiv-open-1MiB',
    group: 'aead',
    title: 'AES-256-GCM-SIV open, 1 MiB',
    bytes: mib.length,
    impls: [
      ...pq(() => gcmsivKeyed.decrypt(nonce12, mibSiv, aad16)),
      { name: '@noble/ciphers gcmsiv', fn: () => nobleGcmsiv(aesKey, nonce12, aad16).decrypt(mibSiv) },
    ],
  },
  {
    id: 'gcm-1MiB',
    group: 'aead',
    title: 'AES-256-GCM seal, 1 MiB',
    bytes: mib.length,
    impls: [
      ...pq(() => gcmKeyed.encrypt(nonce12, mib, aad16)),
      { name: 'node:crypto createCipheriv', fn: () => nodeGcmSeal(mib) },
      { name: '@noble/ciphers gcm', fn: () => nobleGcm(aesKey, nonce12, aad16).encrypt(mib) },
    ],
  },
);
// ---- Keccak, ML-KEM-1024, hybrid -------------------------------------------------------------
const kemSeed = bytes(64, 31);
const kemMsg = bytes(32, 32);
const kp = pqdb.ml_kem1024.keygen(kemSeed);
const enc = pqdb.ml_kem1024.encapsulate(kp.publicKey, kemMsg);
const oqs = await createMLKEM1024();
const oqsKp = oqs.generateKeyPair();
const oqsEnc = oqs.encapsulate(oqsKp.publicKey);
const dajiaji = await createMlKem1024();
const [djPk, djSk] = dajiaji.deriveKeyPair(kemSeed);
const [djCt] = dajiaji.encap(djPk);
const hybrid = pqdb.ml_kem1024_x25519;
const hybridNoble = pqdb.kemProvider('noble').ml_kem1024_x25519;
const hSeed = bytes(32, 33);
const hRnd = bytes(64, 34);
const hKp = hybrid.keygen(hSeed);
const hEnc = hybrid.encapsulate(hKp.publicKey, hRnd);
const random = (name, fn) => ({ name, fn, random: true });
// X25519: node:crypto works on KeyObjects (RFC 8410 DER), made once outside the timed calls.
const xSk = bytes(32, 35);
const xPeer = pqdb.x25519.getPublicKey(bytes(32, 36));
const xNodeSk = createPrivateKey({
  key: Buffer.concat([Buffer.from('302e020100300506032b656e04220420', 'hex'), xSk]),
  format: 'der',
  type: 'pkcs8',
});
const xNodePeer = createPublicKey({
  key: Buffer.concat([Buffer.from('302a300506032b656e032100', 'hex'), xPeer]),
  format: 'der',
  type: 'spki',
});

benches.push(
  {
    id: 'shake256-1MiB',
    group: 'pq',
    title: 'SHAKE256 of 1 MiB (32 B out)',
    bytes: mib.length,
    impls: [
      ...pq(() => pqdb.shake256(mib)),
      { name: 'node:crypto createHash', fn: () => createHash('shake256', { outputLength: 32 }).update(mib).digest() },
      { name: '@noble/hashes', fn: () => nobleShake256(mib) },
    ],
  },
  {
    id: 'sha3-256-32B',
    group: 'pq',
    title: 'SHA3-256 of 32 B',
    impls: [
      ...pq(() => pqdb.sha3_256(kemMsg)),
      { name: 'node:crypto hash()', fn: () => nodeHash('sha3-256', kemMsg, 'buffer') },
      { name: '@noble/hashes', fn: () => nobleSha3_256(kemMsg) },
    ],
  },
  {
    id: 'mlkem1024-keygen',
    group: 'pq',
    title: 'ML-KEM-1024 keygen',
    impls: [
      ...pq(() => pqdb.ml_kem1024.keygen(kemSeed).publicKey),
      { name: '@noble/post-quantum', fn: () => nobleKem.keygen(kemSeed).publicKey },
      { name: 'mlkem (dajiaji)', fn: () => dajiaji.deriveKeyPair(kemSeed)[0] },
      random('@oqs/liboqs-js (random seed)', () => oqs.generateKeyPair().publicKey),
    ],
  },
  {
    id: 'mlkem1024-encapsulate',
    group: 'pq',
    title: 'ML-KEM-1024 encapsulate',
    impls: [
      ...pq(() => pqdb.ml_kem1024.encapsulate(kp.publicKey, kemMsg).cipherText),
      { name: '@noble/post-quantum', fn: () => nobleKem.encapsulate(kp.publicKey, kemMsg).cipherText },
      random('mlkem (dajiaji) (random m)', () => dajiaji.encap(kp.publicKey)[0]),
      random('@oqs/liboqs-js (random m)', () => oqs.encapsulate(kp.publicKey).ciphertext),
    ],
  },
  {
    id: 'mlkem1024-decapsulate',
    group: 'pq',
    title: 'ML-KEM-1024 decapsulate',
    impls: [
      ...pq(() => pqdb.ml_kem1024.decapsulate(enc.cipherText, kp.secretKey)),
      { name: '@noble/post-quantum', fn: () => nobleKem.decapsulate(enc.cipherText, kp.secretKey) },
      { name: 'mlkem (dajiaji)', fn: () => dajiaji.decap(enc.cipherText, djSk) },
      { name: '@oqs/liboqs-js', fn: () => oqs.decapsulate(enc.cipherText, kp.secretKey) },
    ],
  },
  {
    id: 'hybrid-keygen',
    group: 'pq',
    title: 'ML-KEM-1024 + X25519 hybrid keygen',
    impls: [
      ...pq(() => hybrid.keygen(hSeed).publicKey),
      { name: 'pqdb over @noble/post-quantum', fn: () => hybridNoble.keygen(hSeed).publicKey },
    ],
  },
  {
    id: 'hybrid-encapsulate',
    group: 'pq',
    title: 'ML-KEM-1024 + X25519 hybrid encapsulate',
    impls: [
      ...pq(() => hybrid.encapsulate(hKp.publicKey, hRnd).sharedSecret),
      { name: 'pqdb over @noble/post-quantum', fn: () => hybridNoble.encapsulate(hKp.publicKey, hRnd).sharedSecret },
    ],
  },
  {
    id: 'hybrid-decapsulate',
    group: 'pq',
    title: 'ML-KEM-1024 + X25519 hybrid decapsulate',
    impls: [
      ...pq(() => hybrid.decapsulate(hEnc.cipherText, hKp.secretKey)),
      { name: 'pqdb over @noble/post-quantum', fn: () => hybridNoble.decapsulate(hEnc.cipherText, hKp.secretKey) },
    ],
  },
  {
    id: 'x25519-shared',
    group: 'pq',
    title: 'X25519 getSharedSecret',
    impls: [
      ...pq(() => pqdb.x25519.getSharedSecret(xSk, xPeer)),
      { name: '@noble/curves', fn: () => nobleX25519.getSharedSecret(xSk, xPeer) },
      { name: 'node:crypto diffieHellman', fn: () => diffieHellman({ privateKey: xNodeSk, publicKey: xNodePeer }) },
    ],
  },
  {
    id: 'x25519-public',
    group: 'pq',
    title: 'X25519 getPublicKey',
    impls: [
      ...pq(() => pqdb.x25519.getPublicKey(xSk)),
      { name: '@noble/curves', fn: () => nobleX25519.getPublicKey(xSk) },
      {
        name: 'node:crypto createPublicKey',
        fn: () => createPublicKey(xNodeSk).export({ format: 'der', type: 'spki' }).subarray(12),
      },
    ],
  },
);
void oqsEnc;
void djCt;

// ---- ML-DSA-87 ---------------------------------------------------------------------------------
const dsaSeed = bytes(32, 41);
const dsaKp = pqdb.ml_dsa87.keygen(dsaSeed);
const dsaMsgs = Array.from({ length: 64 }, (_, i) => bytes(32, 500 + i));
const dsaSigs = dsaMsgs.map((m) => pqdb.ml_dsa87.sign(m, dsaKp.secretKey, { extraEntropy: false }));
const oqsDsa = await createMLDSA87();
const oqsDsaKp = oqsDsa.generateKeyPair();
const oqsDsaSig = oqsDsa.sign(dsaMsgs[0], oqsDsaKp.secretKey);
let dsaI = 0;
let dsaJ = 0;
benches.push(
  {
    id: 'mldsa87-keygen',
    group: 'pq',
    title: 'ML-DSA-87 keygen',
    impls: [
      ...pq(() => pqdb.ml_dsa87.keygen(dsaSeed).publicKey),
      { name: '@noble/post-quantum', fn: () => nobleDsa.keygen(dsaSeed).publicKey },
      random('@oqs/liboqs-js (random seed)', () => oqsDsa.generateKeyPair().publicKey),
    ],
  },
  {
    id: 'mldsa87-sign-32B',
    group: 'pq',
    title: 'ML-DSA-87 sign, 32-B messages (64 different, deterministic; per signature)',
    impls: [
      ...pq(() => pqdb.ml_dsa87.sign(dsaMsgs[dsaI++ & 63], dsaKp.secretKey, { extraEntropy: false })),
      {
        name: '@noble/post-quantum',
        fn: () => nobleDsa.sign(dsaMsgs[dsaJ++ & 63], dsaKp.secretKey, { extraEntropy: false }),
      },
      random('@oqs/liboqs-js (hedged)', () => oqsDsa.sign(dsaMsgs[dsaJ++ & 63], oqsDsaKp.secretKey)),
    ],
    resetBeforeCheck: () => {
      dsaI = 0;
      dsaJ = 0;
    },
  },
  {
    id: 'mldsa87-verify',
    group: 'pq',
    title: 'ML-DSA-87 verify',
    impls: [
      ...pq(() => (pqdb.ml_dsa87.verify(dsaSigs[0], dsaMsgs[0], dsaKp.publicKey) ? 1 : 0)),
      { name: '@noble/post-quantum', fn: () => (nobleDsa.verify(dsaSigs[0], dsaMsgs[0], dsaKp.publicKey) ? 1 : 0) },
      random('@oqs/liboqs-js', () => (oqsDsa.verify(dsaMsgs[0], oqsDsaSig, oqsDsaKp.publicKey) ? 1 : 0)),
    ],
  },
);

const selected = benches.filter((b) => only === undefined || b.group === only);

const toBytes = (v) => (typeof v === 'number' ? new Uint8Array([v]) : v);

// All implementations must agree before anything is timed.
for (const b of selected) {
  b.resetBeforeCheck?.();
  const ref = Buffer.from(
    toBytes(
      b.impls
        .filter((i) => !i.random)
        .at(-1)
        .fn(),
    ),
  ).toString('hex');
  for (const impl of b.impls.filter((i) => !i.random)) {
    b.resetBeforeCheck?.();
    if (impl.flavor) pqdb.setWasmFlavor(impl.flavor);
    const got = Buffer.from(toBytes(impl.fn())).toString('hex');
    if (got !== ref) throw new Error(`${b.title}: ${impl.name} disagrees with the last deterministic peer`);
  }
}

const host = hostInfo();
console.log(
  `pqdb bench — ${host.cpu} (${host.cores} cores), ${host.arch}${host.emulated ? ' (emulated)' : ''}, ${host.runtime}\n`,
);
const report = { host, quick, benches: [] };
for (const b of selected) {
  const o = b.heavy ? { warmupMs: quick ? 0 : 1500, samples: quick ? 3 : 9, sampleMs: 1 } : opts;
  const timed = measureInterleaved(
    b.impls.map((impl) => ({ fn: impl.fn, before: impl.flavor ? () => pqdb.setWasmFlavor(impl.flavor) : undefined })),
    o,
  );
  const results = b.impls.map((impl, k) => ({ name: impl.name, flavor: impl.flavor, ...timed[k] }));
  pqdb.setWasmFlavor(undefined);
  // Peers are compared with the best of pqdb's rows, or with the rows named `ref` where the bench has
  // rows a peer has no counterpart of (a keyed or into-a-buffer form against a one-shot peer).
  const refRows = results.filter((r) => r.flavor && (b.ref === undefined || r.name.startsWith(`${b.ref} (`)));
  const best = Math.min(...refRows.map((r) => r.median));
  console.log(b.ref === undefined ? b.title : `${b.title} (peers against ${b.ref})`);
  for (const r of results) {
    const thr = b.bytes ? `  ${(((b.bytes / r.median) * 1e9) / 2 ** 20).toFixed(0).padStart(5)} MiB/s` : '';
    const ratio = r.flavor ? '' : `  pqdb is ${(r.median / best).toFixed(2)}× faster`;
    console.log(
      `  ${r.name.padEnd(34)} median ${fmtTime(r.median).padStart(10)}  p90 ${fmtTime(r.p90).padStart(10)}${thr}${ratio}`,
    );
    r.throughputMiBs = b.bytes ? ((b.bytes / r.median) * 1e9) / 2 ** 20 : undefined;
    r.ratioVsPqdb = r.flavor ? undefined : r.median / best;
  }
  console.log('');
  report.benches.push({ id: b.id, title: b.title, bytes: b.bytes, ref: b.ref, results });
}

if (only === undefined || only === 'pq') {
  // Signing time varies with the number of rejection-loop attempts: time single signatures of 300
  // different messages to report the mean beside the median.
  const msgs = Array.from({ length: 300 }, (_, i) => bytes(32, 9000 + i));
  const dist = (fn, n) => {
    const t = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      fn(msgs[i]);
      t.push((performance.now() - t0) * 1e6);
    }
    t.sort((a, b) => a - b);
    return {
      median: t[t.length >> 1],
      mean: t.reduce((a, b) => a + b, 0) / t.length,
      p90: t[Math.floor(t.length * 0.9)],
      samples: n,
    };
  };
  console.log('ML-DSA-87 sign, 32-B messages: single signatures of 300 different messages (hedged)');
  const row = { id: 'mldsa87-sign-distribution', title: 'ML-DSA-87 sign distribution', results: [] };
  for (const [name, fn, n] of [
    ['pqdb (simd)', (m) => (pqdb.setWasmFlavor('simd'), pqdb.ml_dsa87.sign(m, dsaKp.secretKey)), 300],
    ['pqdb (scalar)', (m) => (pqdb.setWasmFlavor('scalar'), pqdb.ml_dsa87.sign(m, dsaKp.secretKey)), 300],
    ['@oqs/liboqs-js', (m) => oqsDsa.sign(m, oqsDsaKp.secretKey), 300],
    ['@noble/post-quantum', (m) => nobleDsa.sign(m, dsaKp.secretKey), quick ? 20 : 60],
  ]) {
    for (let w = 0; w < 20; w++) fn(msgs[w]);
    const r = dist(fn, n);
    console.log(
      `  ${name.padEnd(34)} median ${fmtTime(r.median).padStart(10)}  mean ${fmtTime(r.mean).padStart(10)}  p90 ${fmtTime(r.p90).padStart(10)}  (${n} signatures)`,
    );
    row.results.push({ name, ...r });
  }
  pqdb.setWasmFlavor(undefined);
  report.benches.push(row);
  console.log('');
}

if (only === undefined || only === 'aead') {
  // WebCrypto is asynchronous: measured on its own (not interleaved), awaited per record and with
  // 64 records in flight, on the same 115-B record.
  const wkey = await webcrypto.subtle.importKey('raw', aesKey, 'AES-GCM', false, ['encrypt']);
  const seal = () => webcrypto.subtle.encrypt({ name: 'AES-GCM', iv: nonce12, additionalData: aad16 }, wkey, record115);
  const timeIt = async (fn, n) => {
    for (let i = 0; i < 200; i++) await fn();
    const t = [];
    for (let s = 0; s < (quick ? 5 : 15); s++) {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) await fn();
      t.push(((performance.now() - t0) / n) * 1e6);
    }
    t.sort((a, b) => a - b);
    return { median: t[t.length >> 1], p90: t[Math.floor(t.length * 0.9)], samples: t.length };
  };
  const awaited = await timeIt(seal, 200);
  const inFlight = await timeIt(async () => {
    await Promise.all(Array.from({ length: 64 }, seal));
  }, 20);
  inFlight.median /= 64;
  inFlight.p90 /= 64;
  const gcmRow = report.benches.find((b) => b.id === 'gcm-seal-115B');
  const best = gcmRow
    ? Math.min(...gcmRow.results.filter((r) => r.flavor && r.name.startsWith(`${gcmRow.ref} (`)).map((r) => r.median))
    : NaN;
  console.log('AES-256-GCM seal, 115-B record + 16-B AAD: WebCrypto (asynchronous)');
  for (const [name, r] of [
    ['WebCrypto, awaited per record', awaited],
    ['WebCrypto, 64 in flight (per record)', inFlight],
  ]) {
    console.log(
      `  ${name.padEnd(38)} median ${fmtTime(r.median).padStart(10)}  p90 ${fmtTime(r.p90).padStart(10)}  pqdb is ${(r.median / best).toFixed(2)}× faster`,
    );
    gcmRow?.results.push({ name, ...r, ratioVsPqdb: r.median / best, async: true });
  }
  console.log('');
}

let out;
if (outIdx >= 0) {
  out = args[outIdx + 1];
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
} else out = writeReport('kernels', report);
console.log(`report: ${out}`);
