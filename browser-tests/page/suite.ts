// The browser side of the known-answer and differential suites: the same platform-neutral cases
// the Node tests run, against the bundled dist/crypto.js exactly as users load it, with
// @noble/hashes as the oracle (node:crypto does not exist here).

import * as api from 'pqdb/crypto';
import { sha256, sha384, sha512 } from '@noble/hashes/sha2.js';
import { hmac } from '@noble/hashes/hmac.js';
import { hkdf } from '@noble/hashes/hkdf.js';
import type { Oracle, HashName, Api } from '../../node-tests/cases/api';
import type { Summary } from '../../node-tests/cases/_util';
import { allVectorSuites } from '../../node-tests/cases/vectors';
import { hashDifferential, hmacDifferential, hkdfDifferential } from '../../node-tests/cases/differential';
import { merkleCases, appenderCases } from '../../node-tests/cases/merkle';
import { gcm as nobleGcm, gcmsiv as nobleGcmsiv } from '@noble/ciphers/aes.js';
import { ml_kem1024 as nobleKem } from '@noble/post-quantum/ml-kem.js';
import { ml_dsa87 as nobleDsa } from '@noble/post-quantum/ml-dsa.js';
import { x25519 as nobleX25519 } from '@noble/curves/ed25519.js';
import { x25519Differential } from '../../node-tests/cases/x25519';
import { mlkemDifferential, type PqApi } from '../../node-tests/cases/pq';
import {
  aeadWycheproof,
  aeadDifferential,
  aeadTampering,
  type AeadOracle,
  type AeadApi,
} from '../../node-tests/cases/aead';

const noble = { sha256, sha384, sha512 };
const oracle: Oracle = {
  name: '@noble/hashes',
  hash: (n: HashName, m) => noble[n](m),
  hmac: (n: HashName, k, m) => hmac(noble[n], k, m),
  hkdf: (n: HashName, ikm, salt, info, len) => hkdf(noble[n], ikm, salt, info, len),
};

const aeadOracle: AeadOracle = {
  name: '@noble/ciphers',
  seal: (mode, key, nonce, aad, pt) =>
    (mode === 'gcm' ? nobleGcm(key, nonce, aad) : nobleGcmsiv(key, nonce, aad)).encrypt(pt),
};
const aeadApi = api as unknown as AeadApi;

async function load(path: string): Promise<unknown> {
  const res = await fetch(`/vectors/${path}`);
  if (!res.ok) throw new Error(`GET /vectors/${path}: ${res.status}`);
  return res.json();
}

const suites: Record<string, () => Promise<Summary[]> | Summary[]> = {
  vectors: () => allVectorSuites(load, api as unknown as Api, false),
  differential: () => [
    hashDifferential(api as unknown as Api, oracle, 20261130),
    hmacDifferential(api as unknown as Api, oracle, 20261131),
    hkdfDifferential(api as unknown as Api, oracle, 20261132),
    x25519Differential(api, { name: '@noble/curves', ...nobleX25519 }, 200, 25519),
  ],
  merkle: () => [merkleCases(api as unknown as Api, sha384, 130, 9162), appenderCases(api as unknown as Api, 300, 7)],
  pq: () => {
    const s = mlkemDifferential(api as unknown as PqApi, nobleKem, 100, 7);
    // The hybrid: a round trip and the noble provider agreeing byte for byte.
    const h = api.ml_kem1024_x25519;
    const n = api.kemProvider('noble').ml_kem1024_x25519;
    const kp = h.keygen(new Uint8Array(32).fill(9));
    const rnd = new Uint8Array(64).fill(5);
    const e = h.encapsulate(kp.publicKey, rnd);
    const ok =
      [...h.decapsulate(e.cipherText, kp.secretKey)].join() === [...e.sharedSecret].join() &&
      [...n.encapsulate(kp.publicKey, rnd).sharedSecret].join() === [...e.sharedSecret].join();
    // ML-DSA-87: keys and deterministic signatures identical to noble, cross-verified, mutations rejected.
    const d = {
      name: 'ML-DSA-87 vs @noble/post-quantum, 20 seeds',
      total: 0,
      passed: 0,
      skipped: 0,
      failures: [] as string[],
    };
    for (let i = 0; i < 20; i++) {
      const seed = new Uint8Array(32).fill(i + 1);
      const msg = new Uint8Array(i * 7).fill(i);
      const a = api.ml_dsa87.keygen(seed);
      const b = nobleDsa.keygen(seed);
      const sig = api.ml_dsa87.sign(msg, a.secretKey, { extraEntropy: false });
      const bad = sig.slice();
      bad[i * 13] ^= 1;
      const good =
        [...a.publicKey].join() === [...b.publicKey].join() &&
        [...sig].join() === [...nobleDsa.sign(msg, b.secretKey, { extraEntropy: false })].join() &&
        nobleDsa.verify(sig, msg, b.publicKey) &&
        api.ml_dsa87.verify(sig, msg, a.publicKey) &&
        !api.ml_dsa87.verify(bad, msg, a.publicKey);
      d.total++;
      if (good) d.passed++;
      else d.failures.push(`seed #${i}`);
    }
    return [
      s,
      d,
      {
        name: 'hybrid round trip and providers',
        total: 1,
        passed: ok ? 1 : 0,
        skipped: 0,
        failures: ok ? [] : ['hybrid'],
      },
    ];
  },
  aead: async () => [
    aeadWycheproof(await load('wycheproof/aes_gcm_test.json'), aeadApi, 'gcm', 'aes_gcm_test.json'),
    aeadWycheproof(await load('wycheproof/aes_gcm_siv_test.json'), aeadApi, 'gcmsiv', 'aes_gcm_siv_test.json'),
    aeadDifferential(aeadApi, aeadOracle, 'gcm', 3001),
    aeadDifferential(aeadApi, aeadOracle, 'gcmsiv', 3002),
    aeadTampering(aeadApi, 'gcm', 77),
    aeadTampering(aeadApi, 'gcmsiv', 77),
  ],
};

/** Runs one suite on one WebAssembly build; returns its summaries and the build actually used. */
async function run(flavor: api.WasmFlavor, name: string): Promise<{ flavor: string; summaries: Summary[] }> {
  api.setWasmFlavor(flavor);
  const summaries = await suites[name]();
  return { flavor: api.wasmFlavor(), summaries };
}

(globalThis as unknown as { pqdbSuites: unknown }).pqdbSuites = { run, names: Object.keys(suites) };
