// CRC-32C (Castagnoli, RFC 3720 appendix B.4): the accident checksum of the storage adapters' page
// and manifest framing and of the engine's lexical index pages. Shared (a `_` module) because both
// src/storage and src/engine use it.
//
// Security caveat: a CRC detects accidents (torn writes, flipped bits, truncation); it is not a MAC
// and detects nothing an attacker does on purpose — the sealed records above carry the MAC.
//
// Why CRC-32C and not a truncated SHA-256: the job is accident detection, where a 32-bit CRC is
// the standard tool (all burst errors up to 32 bits, all odd bit-counts; the Castagnoli polynomial
// has a better Hamming distance than IEEE CRC-32 at page sizes, which is why ext4, iSCSI and
// LevelDB use it). It is synchronous pure TypeScript, so the IndexedDB adapter can compute it
// without awaiting anything but IDB inside a transaction (WebCrypto digests are async), and the
// storage layer needs no WASM kernel. Tampering is the MAC's job, one layer up.

import { yieldToEventLoop } from './_yield';

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), slicing-by-8: eight 256-entry tables so
// the loop consumes 8 bytes per step (~4x the byte-at-a-time loop in V8).
const CRC_TABLES = ((): Uint32Array => {
  const t = new Uint32Array(8 * 256);
  for (let i = 0; i < 256; i++) {
    let c = i;
    for (let k = 0; k < 8; k++) c = c & 1 ? (c >>> 1) ^ 0x82f63b78 : c >>> 1;
    t[i] = c >>> 0;
  }
  for (let i = 0; i < 256; i++) {
    for (let s = 1; s < 8; s++) {
      const prev = t[(s - 1) * 256 + i];
      t[s * 256 + i] = (prev >>> 8) ^ t[prev & 0xff];
    }
  }
  return t;
})();

/** Bytes checksummed per step by crc32cAsync. */
const CRC_STEP = 1 << 20;

/** Bytes checksummed by crc32cAsync since it last yielded, over all its calls. */
let sinceYield = 0;

/**
 * crc32c of a buffer, yielding to the event loop before each 1 MiB step, counted over every call:
 * a large page, or many small ones checksummed one after another (a commit's pages, a run of pages
 * read), hold the thread for about a millisecond at a time, never tens of them.
 */
export async function crc32cAsync(data: Uint8Array): Promise<number> {
  let crc = 0;
  let at = 0;
  do {
    const step = data.subarray(at, at + CRC_STEP);
    if (sinceYield + step.length > CRC_STEP) {
      await yieldToEventLoop();
      sinceYield = 0;
    }
    sinceYield += step.length;
    crc = crc32c(step, crc);
    at += CRC_STEP;
  } while (at < data.length);
  return crc;
}

/**
 * CRC-32C of `data` (RFC 3720 appendix B.4), continuing from `crc` when given.
 * @example crc32c(new TextEncoder().encode('123456789')) === 0xe3069283
 */
export function crc32c(data: Uint8Array, crc = 0): number {
  const T = CRC_TABLES;
  let c = ~crc >>> 0;
  let i = 0;
  const n = data.length;
  for (; n - i >= 8; i += 8) {
    c ^= data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    c =
      T[1792 + (c & 0xff)] ^
      T[1536 + ((c >>> 8) & 0xff)] ^
      T[1280 + ((c >>> 16) & 0xff)] ^
      T[1024 + (c >>> 24)] ^
      T[768 + data[i + 4]] ^
      T[512 + data[i + 5]] ^
      T[256 + data[i + 6]] ^
      T[data[i + 7]];
  }
  for (; i < n; i++) c = T[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}
