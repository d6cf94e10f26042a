// Differential tests on seeded random inputs against node:crypto and @noble/hashes, both builds.
import { describe, it, expect, beforeAll } from 'vitest';
import * as nodeCrypto from 'node:crypto';
import { sha256 as nSha256, sha384 as nSha384, sha512 as nSha512 } from '@noble/hashes/sha2.js';
import { hmac as nHmac } from '@noble/hashes/hmac.js';
import { hkdf as nHkdf } from '@noble/hashes/hkdf.js';
import * as api from '../src/crypto';
import type { Oracle, HashName } from './cases/api';
import { hashDifferential, hmacDifferential, hkdfDifferential } from './cases/differential';
import { FLAVORS } from './support/vectors';

const nodeOracle: Oracle = {
  name: 'node:crypto',
  hash: (n, m) => new Uint8Array(nodeCrypto.createHash(n).update(m).digest()),
  hmac: (n, k, m) => new Uint8Array(nodeCrypto.createHmac(n, k).update(m).digest()),
  hkdf: (n, ikm, salt, info, len) => new Uint8Array(nodeCrypto.hkdfSync(n, ikm, salt, info, len)),
};
const noble = { sha256: nSha256, sha384: nSha384, sha512: nSha512 };
const nobleOracle: Oracle = {
  name: '@noble/hashes',
  hash: (n: HashName, m) => noble[n](m),
  hmac: (n: HashName, k, m) => nHmac(noble[n], k, m),
  hkdf: (n: HashName, ikm, salt, info, len) => nHkdf(noble[n], ikm, salt, info, len),
};

describe.each(FLAVORS)('differential (%s)', (flavor) => {
  beforeAll(() => api.setWasmFlavor(flavor));
  const seed = Number(process.env.PQDB_SEED ?? 20261130);
  for (const oracle of [nodeOracle, nobleOracle]) {
    it(`SHA-2 vs ${oracle.name}`, () => {
      const s = hashDifferential(api, oracle, seed);
      expect(s.failures).toEqual([]);
      expect(s.total).toBeGreaterThan(500);
    });
    it(`HMAC vs ${oracle.name}`, () => {
      const s = hmacDifferential(api, oracle, seed + 1);
      expect(s.failures).toEqual([]);
      expect(s.total).toBeGreaterThan(100);
    });
    it(`HKDF vs ${oracle.name}`, () => {
      const s = hkdfDifferential(api, oracle, seed + 2);
      expect(s.failures).toEqual([]);
      expect(s.total).toBeGreaterThan(100);
    });
  }
  it('SHA-384 of 1 MiB + 1 and 300 KiB HMAC/HKDF inputs (multi-call paths) vs node:crypto', () => {
    const big = nodeCrypto.randomBytes((1 << 20) + 1);
    expect(Buffer.from(api.sha384(big)).toString('hex')).toBe(
      nodeCrypto.createHash('sha384').update(big).digest('hex'),
    );
    const key = nodeCrypto.randomBytes(200_000);
    const msg = big.subarray(0, 300_000);
    expect(Buffer.from(api.hmac(api.sha384, key, msg))).toEqual(
      nodeCrypto.createHmac('sha384', key).update(msg).digest(),
    );
    // node:crypto caps HKDF info at 1024 bytes, so the oversized-info path is checked against noble.
    const info = nodeCrypto.randomBytes(140_000);
    expect(api.hkdf(api.sha512, key, msg, info, 200)).toEqual(nHkdf(nSha512, key, msg, info, 200));
  });
});
