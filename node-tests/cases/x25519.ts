// X25519 cases shared by vitest (Node) and the Chromium suite page: Wycheproof x25519_test.json
// (every case), the RFC 7748 vectors (§5.2 single and iterated, §6.1 Diffie–Hellman), and a
// differential run on seeded random inputs against independent implementations.

import type { X25519 } from '../../src/kernels/x25519';
import { type Summary, summary, record, hex, unhex, Rng } from './_util';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What the cases need of pqdb/crypto. */
export interface X25519Api {
  x25519: X25519;
}

/** An independent X25519: scalarMult(k, u) and the public key of k. */
export interface X25519Oracle {
  name: string;
  scalarMult(k: Uint8Array, u: Uint8Array): Uint8Array;
  getPublicKey(k: Uint8Array): Uint8Array;
}

const isZero = (b: Uint8Array) => b.every((x) => x === 0);

/** The error getSharedSecret must throw for an all-zero result: PqdbError INVALID_KEY. */
function refusedLowOrder(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (e) {
    return (
      (e as { name?: string; code?: string }).name === 'PqdbError' && (e as { code?: string }).code === 'INVALID_KEY'
    );
  }
}

/**
 * Wycheproof XDH (x25519_test.json): every case, valid or acceptable, gives `shared` from
 * scalarMult(private, public). Where `shared` is all zero (a low-order public key),
 * getSharedSecret must refuse with INVALID_KEY; elsewhere it must give `shared` too.
 */
export function x25519Wycheproof(json: Json, api: X25519Api): Summary {
  const s = summary('Wycheproof x25519_test.json');
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const k = unhex(t.private);
      const u = unhex(t.public);
      const want = unhex(t.shared);
      const got = api.x25519.scalarMult(k, u);
      const dh = isZero(want)
        ? refusedLowOrder(() => api.x25519.getSharedSecret(k, u))
        : hex(api.x25519.getSharedSecret(k, u)) === t.shared;
      const id = `tcId ${t.tcId} (${t.result}${t.flags?.length ? ' ' + t.flags.join(',') : ''})`;
      record(s, id, t.result !== 'invalid' && hex(got) === t.shared && dh, hex(got));
    }
  }
  return s;
}

/**
 * RFC 7748: the two §5.2 test vectors, the iterated vector after 1 and 1,000 iterations (and after
 * 1,000,000 when `slow`), and the §6.1 Diffie–Hellman example (both public keys, both sides).
 */
export function x25519Rfc7748(api: X25519Api, slow: boolean): Summary {
  const s = summary('RFC 7748 X25519');
  const x = api.x25519;
  const single: [string, string, string][] = [
    [
      'a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4',
      'e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c',
      'c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552',
    ],
    [
      '4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d',
      'e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493',
      '95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957',
    ],
  ];
  single.forEach(([k, u, out], i) => record(s, `§5.2 vector ${i + 1}`, hex(x.scalarMult(unhex(k), unhex(u))) === out));

  // §5.2 iterated: k = u = 9; then (k, u) = (X25519(k, u), k).
  const iterated: [number, string][] = [
    [1, '422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079'],
    [1000, '684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51'],
    [1_000_000, '7c3911e0ab2586fd864497297e575e6f3bc601c0883c30df5f4dd2d24f665424'],
  ];
  let k = new Uint8Array(32);
  k[0] = 9;
  let u = k.slice();
  let done = 0;
  for (const [n, want] of iterated) {
    if (n > 1000 && !slow) {
      s.skipped++;
      s.note = 'the 1,000,000-iteration vector runs with SLOW=1';
      continue;
    }
    for (; done < n; done++) {
      const r = x.scalarMult(k, u);
      u = k;
      k = r;
    }
    record(s, `§5.2 after ${n} iteration(s)`, hex(k) === want, hex(k));
  }

  // §6.1: Alice and Bob.
  const aSk = unhex('77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a');
  const bSk = unhex('5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb');
  const aPk = x.getPublicKey(aSk);
  const bPk = x.getPublicKey(bSk);
  const shared = '4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742';
  record(s, '§6.1 Alice public key', hex(aPk) === '8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a');
  record(s, '§6.1 Bob public key', hex(bPk) === 'de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f');
  record(s, '§6.1 shared (Alice)', hex(x.getSharedSecret(aSk, bPk)) === shared);
  record(s, '§6.1 shared (Bob)', hex(x.getSharedSecret(bSk, aPk)) === shared);
  return s;
}

/**
 * `count` random (scalar, u) pairs, with the edge bits the decoder handles forced in a share of them
 * (bit 255 of u set, u ≥ p, unclamped scalar bits), against `oracle`: scalarMult, getPublicKey and
 * getSharedSecret must agree byte for byte.
 */
export function x25519Differential(api: X25519Api, oracle: X25519Oracle, count: number, seed: number): Summary {
  const s = summary(`X25519 vs ${oracle.name} (seed ${seed})`);
  const rng = new Rng(seed);
  for (let i = 0; i < count; i++) {
    const k = rng.bytes(32);
    const u = rng.bytes(32);
    if (i % 4 === 1) u[31] |= 0x80; // bit 255, masked by the decoder
    if (i % 8 === 2) u.fill(0xff, 1).fill(0xff - rng.int(17), 0, 1); // u ∈ [p + 2, 2^255) once masked
    if (i % 4 === 3) ((k[0] |= 7), (k[31] |= 0x80)); // bits the clamping clears
    const want = hex(oracle.scalarMult(k, u));
    record(s, `#${i} scalarMult`, hex(api.x25519.scalarMult(k, u)) === want);
    record(s, `#${i} getSharedSecret`, hex(api.x25519.getSharedSecret(k, u)) === want);
    record(s, `#${i} getPublicKey`, hex(api.x25519.getPublicKey(k)) === hex(oracle.getPublicKey(k)));
  }
  return s;
}

/** Cases each X25519 summary must have run (+ skipped). */
export const X25519_TOTALS: Record<string, number> = {
  'Wycheproof x25519_test.json': 518,
  'RFC 7748 X25519': 9,
};
