// SHA-256, SHA-384, SHA-512 (FIPS 180-4) facade over the WebAssembly kernel.
// Copies input into the kernel's IN region, runs, copies the digest out into a fresh array and
// zeroes what it left in kernel memory. Never returns a view into WebAssembly memory.

import { bytes } from '../_args';
import { sha2Kernel } from '../wasm/sha2';

/** Sha2Kernel algorithm ids (assembly/sha2/hash.ts). */
export const ALG = { sha256: 0, sha384: 1, sha512: 2 } as const;
export type HashName = keyof typeof ALG;

/** An incremental hash: absorb with update(), finish once with digest(). */
export interface HashStream {
  update(data: Uint8Array): HashStream;
  digest(): Uint8Array;
}

/** A SHA-2 hash function: call it for a one-shot digest, or create() a stream. */
export interface Hash {
  (msg: Uint8Array): Uint8Array;
  readonly hashName: HashName;
  readonly outputLen: number;
  readonly blockLen: number;
  create(): HashStream;
}

/**
 * Runs `fn(len)` over `data` in chunks copied to the kernel's IN region, then zeroes the part of IN
 * the chunks used (the kernel's streaming updates leave IN to be wiped once, here).
 */
export function chunked(data: Uint8Array, fn: (len: number) => void): void {
  const k = sha2Kernel();
  for (let off = 0; off < data.length; off += k.IN_BYTES) {
    const part = data.subarray(off, Math.min(off + k.IN_BYTES, data.length));
    k.mem.set(part, k.IN);
    fn(part.length);
  }
  k.mem.fill(0, k.IN, k.IN + Math.min(data.length, k.IN_BYTES));
}

/** Copies `len` bytes of OUT into a new array and zeroes them in kernel memory. */
export function takeOut(len: number): Uint8Array {
  const k = sha2Kernel();
  const out = k.mem.slice(k.OUT, k.OUT + len);
  k.mem.fill(0, k.OUT, k.OUT + len);
  return out;
}

class Sha2Stream implements HashStream {
  private ctx: Uint8Array | undefined;

  constructor(private readonly hash: Hash) {
    const k = sha2Kernel();
    k.x.sha2_init(ALG[hash.hashName]);
    this.ctx = k.mem.slice(k.CTX, k.CTX + k.CTX_BYTES);
    k.mem.fill(0, k.CTX, k.CTX + k.CTX_BYTES);
  }

  private live(): Uint8Array {
    if (this.ctx === undefined) throw new TypeError(`${this.hash.hashName} stream already finished by digest()`);
    return this.ctx;
  }

  update(data: Uint8Array): this {
    const ctx = this.live();
    bytes('data', data);
    const k = sha2Kernel();
    k.mem.set(ctx, k.CTX);
    chunked(data, (len) => k.x.sha2_update(len));
    ctx.set(k.mem.subarray(k.CTX, k.CTX + k.CTX_BYTES));
    k.mem.fill(0, k.CTX, k.CTX + k.CTX_BYTES);
    return this;
  }

  digest(): Uint8Array {
    const ctx = this.live();
    const k = sha2Kernel();
    k.mem.set(ctx, k.CTX);
    ctx.fill(0);
    this.ctx = undefined;
    k.x.sha2_final();
    k.mem.fill(0, k.CTX, k.CTX + k.CTX_BYTES);
    return takeOut(this.hash.outputLen);
  }
}

function makeHash(hashName: HashName, outputLen: number, blockLen: number): Hash {
  const alg = ALG[hashName];
  const fn = ((msg: Uint8Array): Uint8Array => {
    bytes('msg', msg);
    const k = sha2Kernel();
    if (msg.length <= k.IN_BYTES) {
      k.mem.set(msg, k.IN);
      k.x.sha2_digest(alg, msg.length);
      return takeOut(outputLen);
    }
    return hash.create().update(msg).digest();
  }) as Hash;
  const hash = Object.assign(fn, {
    hashName,
    outputLen,
    blockLen,
    create: (): HashStream => new Sha2Stream(hash),
  });
  return Object.freeze(hash);
}

/**
 * SHA-256 (FIPS 180-4 §6.2). `sha256(msg)` or `sha256.create().update(a).update(b).digest()`.
 * @throws TypeError when `msg` is not a Uint8Array.
 * @example sha256(new TextEncoder().encode('abc'))
 */
export const sha256: Hash = /* @__PURE__ */ makeHash('sha256', 32, 64);
/**
 * SHA-384 (FIPS 180-4 §6.5): SHA-512 with its own initial value, truncated to 48 bytes.
 * @throws TypeError when `msg` is not a Uint8Array.
 * @example sha384(new Uint8Array(131))
 */
export const sha384: Hash = /* @__PURE__ */ makeHash('sha384', 48, 128);
/**
 * SHA-512 (FIPS 180-4 §6.4).
 * @throws TypeError when `msg` is not a Uint8Array.
 * @example sha512.create().update(part1).update(part2).digest()
 */
export const sha512: Hash = /* @__PURE__ */ makeHash('sha512', 64, 128);

/** Checks that `hash` is one of pqdb's SHA-2 functions and returns its kernel id. */
export function hashAlg(hash: unknown): number {
  if (hash === sha256 || hash === sha384 || hash === sha512) return ALG[(hash as Hash).hashName];
  throw new TypeError('"hash" expected sha256, sha384 or sha512 from pqdb/crypto');
}
