// Byte helpers shared by the record, page, log and proof formats.
//
// Big-endian 64-bit fields hold safe integers (sequences, sizes, counts): DataView's 64-bit
// accessors take BigInt, so each field is written and read as two 32-bit halves.

/** Writes v (a safe, non-negative integer) big-endian at dv[at..at+8). */
export function setU64(dv: DataView, at: number, v: number): void {
  dv.setUint32(at, Math.floor(v / 2 ** 32));
  dv.setUint32(at + 4, v >>> 0);
}

/** Reads the big-endian 64-bit field at dv[at..at+8) as a number. */
export function getU64(dv: DataView, at: number): number {
  return dv.getUint32(at) * 2 ** 32 + dv.getUint32(at + 4);
}

/** Equality of two byte strings in time independent of where they differ. */
export function equalBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a[i] ^ b[i];
  return d === 0;
}

/** The parts, back to back, in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * A buffer reused from call to call for transient bytes: beyond 64 bytes V8 gives every new array
 * a backing store of its own, which its collector has to find and free. `get(n)` gives at least
 * `n` bytes: the kept buffer (grown as needed) up to `max`, a fresh array past it (not kept, so one
 * large value does not pin its size for good). With `secret`, a buffer is zeroed before it is
 * replaced; what a caller writes into it, the caller wipes.
 */
export class Scratch {
  #buf: Uint8Array;
  readonly #max: number;
  readonly #secret: boolean;

  constructor(initial: number, max = Infinity, secret = false) {
    this.#buf = new Uint8Array(initial);
    this.#max = max;
    this.#secret = secret;
  }

  get(n: number): Uint8Array {
    if (n > this.#max) return new Uint8Array(n);
    if (n > this.#buf.length) {
      if (this.#secret) this.#buf.fill(0);
      this.#buf = new Uint8Array(Math.min(this.#max, Math.max(n, this.#buf.length * 2)));
    }
    return this.#buf;
  }
}
