// Differential cases: pqdb's SHA-2, HMAC and HKDF against an independent implementation on seeded
// random inputs, including every block-boundary neighbour and the streaming interface.

import type { Api, HashName, Oracle } from './api';
import { type Summary, summary, record, hex, Rng } from './_util';

const HASHES: HashName[] = ['sha256', 'sha384', 'sha512'];

/** Lengths 0..2048 around every 64/128-byte block and padding boundary, plus a random sample. */
export function boundaryLengths(rng: Rng, randomCount = 64): number[] {
  const set = new Set<number>();
  for (let b = 0; b <= 2048; b += 64) for (let d = -2; d <= 2; d++) if (b + d >= 0) set.add(b + d);
  for (const b of [55, 56, 111, 112, 119, 120, 239, 240]) for (let d = -1; d <= 1; d++) set.add(b + d);
  for (let i = 0; i < randomCount; i++) set.add(rng.int(2049));
  return [...set].sort((a, b) => a - b);
}

export function hashDifferential(api: Api, oracle: Oracle, seed: number): Summary {
  const s = summary(`SHA-2 vs ${oracle.name} (seed ${seed})`);
  const rng = new Rng(seed);
  for (const name of HASHES) {
    for (const len of boundaryLengths(rng)) {
      const msg = rng.bytes(len);
      const want = hex(oracle.hash(name, msg));
      record(s, `${name} len=${len}`, hex(api[name](msg)) === want);
      // Streaming in uneven pieces must agree too.
      const st = api[name].create();
      for (let off = 0; off < len;) {
        const step = 1 + rng.int(200);
        st.update(msg.subarray(off, off + step));
        off += step;
      }
      record(s, `${name}.create() len=${len}`, hex(st.digest()) === want);
    }
  }
  return s;
}

export function hmacDifferential(api: Api, oracle: Oracle, seed: number): Summary {
  const s = summary(`HMAC vs ${oracle.name} (seed ${seed})`);
  const rng = new Rng(seed);
  for (const name of HASHES) {
    const block = name === 'sha256' ? 64 : 128;
    const keyLens = [0, 1, 16, 32, 48, block - 1, block, block + 1, 2 * block + 3, 300];
    for (const keyLen of keyLens) {
      for (const len of [0, 1, 31, block - 1, block, block + 1, rng.int(2049)]) {
        const key = rng.bytes(keyLen);
        const msg = rng.bytes(len);
        record(
          s,
          `${name} key=${keyLen} len=${len}`,
          hex(api.hmac(api[name], key, msg)) === hex(oracle.hmac(name, key, msg)),
        );
      }
    }
  }
  return s;
}

export function hkdfDifferential(api: Api, oracle: Oracle, seed: number): Summary {
  const s = summary(`HKDF vs ${oracle.name} (seed ${seed})`);
  const rng = new Rng(seed);
  for (const name of HASHES) {
    const hl = name === 'sha256' ? 32 : name === 'sha384' ? 48 : 64;
    const lengths = new Set([1, 16, 32, hl - 1, hl, hl + 1, 2 * hl, 255 * hl - 1, 255 * hl]);
    for (let i = 0; i < 12; i++) lengths.add(1 + rng.int(255 * hl));
    for (const length of lengths) {
      const ikm = rng.bytes(rng.int(200));
      const salt = rng.bytes(rng.int(3) === 0 ? 0 : rng.int(200));
      const info = rng.bytes(rng.int(3) === 0 ? 0 : rng.int(300));
      const want = hex(oracle.hkdf(name, ikm, salt, info, length));
      record(s, `${name} L=${length}`, hex(api.hkdf(api[name], ikm, salt, info, length)) === want);
      const prk = api.extract(api[name], ikm, salt);
      record(s, `${name} extract+expand L=${length}`, hex(api.expand(api[name], prk, info, length)) === want);
    }
  }
  return s;
}
