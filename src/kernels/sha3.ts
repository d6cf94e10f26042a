// SHA3-256, SHA3-512, SHAKE128 and SHAKE256 (FIPS 202) facade over the WebAssembly Keccak kernel.
// One-shot calls run in one kernel call when input and output fit; streams keep their sponge
// context in JavaScript between calls (copied in and out around each call, zeroed in the kernel).

import { bytes, integer } from '../_args';
import { keccakKernel, type KeccakKernel } from '../wasm/keccak';

interface Params {
  readonly name: string;
  readonly rate: number;
  readonly ds: number;
  readonly outputLen: number;
}

/** An incremental sponge: absorb with update(), then digest() (fixed) or xof(n) (SHAKE, repeatable). */
export interface KeccakStream {
  update(data: Uint8Array): KeccakStream;
  /** Finishes and returns the output (outputLen bytes, or dkLen for SHAKE). */
  digest(): Uint8Array;
  /** SHAKE only: squeezes the next `n` bytes (after padding on the first call). */
  xof(n: number): Uint8Array;
}

function withCtx<T>(k: KeccakKernel, ctx: Uint8Array, fn: () => T): T {
  k.mem.set(ctx, k.KCTX);
  try {
    return fn();
  } finally {
    ctx.set(k.mem.subarray(k.KCTX, k.KCTX + k.KCTX_BYTES));
    k.mem.fill(0, k.KCTX, k.KCTX + k.KCTX_BYTES);
  }
}

function squeezeInto(k: KeccakKernel, out: Uint8Array): void {
  for (let off = 0; off < out.length; off += k.OUT_BYTES) {
    const n = Math.min(k.OUT_BYTES, out.length - off);
    k.x.keccak_squeeze(n);
    out.set(k.mem.subarray(k.OUT, k.OUT + n), off);
    k.mem.fill(0, k.OUT, k.OUT + n);
  }
}

class Stream implements KeccakStream {
  private ctx: Uint8Array | undefined;
  private squeezing = false;

  constructor(
    private readonly p: Params,
    private readonly dkLen: number,
  ) {
    const k = keccakKernel();
    k.x.keccak_init(p.rate, p.ds);
    this.ctx = k.mem.slice(k.KCTX, k.KCTX + k.KCTX_BYTES);
    k.mem.fill(0, k.KCTX, k.KCTX + k.KCTX_BYTES);
  }

  private live(): Uint8Array {
    if (this.ctx === undefined) throw new TypeError(`${this.p.name} stream already finished by digest()`);
    return this.ctx;
  }

  update(data: Uint8Array): this {
    const ctx = this.live();
    if (this.squeezing) throw new TypeError(`${this.p.name}: update() after xof()`);
    bytes('data', data);
    const k = keccakKernel();
    withCtx(k, ctx, () => {
      for (let off = 0; off < data.length; off += k.IN_BYTES) {
        const part = data.subarray(off, off + k.IN_BYTES);
        k.mem.set(part, k.IN);
        k.x.keccak_absorb(part.length);
      }
      k.mem.fill(0, k.IN, k.IN + Math.min(data.length, k.IN_BYTES));
    });
    return this;
  }

  xof(n: number): Uint8Array {
    if (this.p.ds !== 0x1f) throw new TypeError(`${this.p.name} is not an XOF`);
    integer('n', n, 0, Number.MAX_SAFE_INTEGER);
    const ctx = this.live();
    this.squeezing = true;
    const out = new Uint8Array(n);
    const k = keccakKernel();
    withCtx(k, ctx, () => squeezeInto(k, out));
    return out;
  }

  digest(): Uint8Array {
    const ctx = this.live();
    if (this.squeezing) throw new TypeError(`${this.p.name}: digest() after xof()`);
    const out = new Uint8Array(this.dkLen);
    const k = keccakKernel();
    withCtx(k, ctx, () => squeezeInto(k, out));
    ctx.fill(0);
    this.ctx = undefined;
    return out;
  }
}

/** A fixed-output SHA-3 hash: `h(msg)`, `h.create()`. */
export interface Sha3Hash {
  (msg: Uint8Array): Uint8Array;
  readonly outputLen: number;
  readonly blockLen: number;
  create(): KeccakStream;
}

/** A SHAKE XOF: `shake(msg, { dkLen })`, `shake.create({ dkLen })`. */
export interface Shake {
  (msg: Uint8Array, opts?: { dkLen?: number }): Uint8Array;
  readonly outputLen: number;
  readonly blockLen: number;
  create(opts?: { dkLen?: number }): KeccakStream;
}

function oneShot(p: Params, msg: Uint8Array, outLen: number): Uint8Array {
  bytes('msg', msg);
  const k = keccakKernel();
  if (msg.length <= k.IN_BYTES && outLen <= k.OUT_BYTES) {
    k.mem.set(msg, k.IN);
    k.x.keccak_hash(p.rate, p.ds, msg.length, outLen);
    const out = k.mem.slice(k.OUT, k.OUT + outLen);
    k.mem.fill(0, k.OUT, k.OUT + outLen);
    return out;
  }
  return new Stream(p, outLen).update(msg).digest();
}

function sha3(name: string, rate: number, outputLen: number): Sha3Hash {
  const p: Params = { name, rate, ds: 0x06, outputLen };
  return Object.freeze(
    Object.assign((msg: Uint8Array) => oneShot(p, msg, outputLen), {
      outputLen,
      blockLen: rate,
      create: () => new Stream(p, outputLen),
    }),
  );
}

function shake(name: string, rate: number, outputLen: number): Shake {
  const p: Params = { name, rate, ds: 0x1f, outputLen };
  const dk = (opts?: { dkLen?: number }) =>
    opts?.dkLen === undefined ? outputLen : integer('dkLen', opts.dkLen, 0, Number.MAX_SAFE_INTEGER);
  return Object.freeze(
    Object.assign((msg: Uint8Array, opts?: { dkLen?: number }) => oneShot(p, msg, dk(opts)), {
      outputLen,
      blockLen: rate,
      create: (opts?: { dkLen?: number }) => new Stream(p, dk(opts)),
    }),
  );
}

/** SHA3-256 (FIPS 202 §6.1). @example sha3_256(msg) // 32 bytes */
export const sha3_256: Sha3Hash = /* @__PURE__ */ sha3('sha3_256', 136, 32);
/** SHA3-512 (FIPS 202 §6.1). @example sha3_512(msg) // 64 bytes */
export const sha3_512: Sha3Hash = /* @__PURE__ */ sha3('sha3_512', 72, 64);
/** SHAKE128 (FIPS 202 §6.2), default 16 bytes out. @example shake128(msg, { dkLen: 168 }) */
export const shake128: Shake = /* @__PURE__ */ shake('shake128', 168, 16);
/** SHAKE256 (FIPS 202 §6.2), default 32 bytes out. @example shake256(msg, { dkLen: 64 }) */
export const shake256: Shake = /* @__PURE__ */ shake('shake256', 136, 32);
