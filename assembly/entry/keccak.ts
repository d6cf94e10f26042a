// The pqdb Keccak (SHA3-256/512, SHAKE128/256) WebAssembly module: its exported operations and buffer offsets.
// ABI: `<kernel>_<op>(…lengths)`; inputs are placed at IN and the sponge context at KCTX by the facade, results come back at
// OUT. Every operation zeroes the kernel scratch (and the part of IN it read) before it returns; the
// facade zeroes OUT and the sponge context at KCTX after copying them out.

import { KCTX, KECCAK_TMP, IN, OUT, wipeIn } from '../common/layout';
import { keccakInit, keccakAbsorb, keccakSqueeze, wipeKeccak, KECCAK_CTX_BYTES } from '../keccak/keccak';

export * from './_common';

// ---- Keccak: SHA3-256/512, SHAKE128/256 ---------------------------------------------------------
// A sponge context lives at KCTX while a stream is being absorbed/squeezed; the facade keeps it
// between calls and zeroes it here after each.

export const MEM_KCTX: usize = KCTX;
export const MEM_KCTX_BYTES: usize = KECCAK_CTX_BYTES;

/** OUT[0, outLen) = Keccak[rate, ds](IN[0, len)) — SHA3 (ds 0x06) or SHAKE (ds 0x1f). */
export function keccak_hash(rate: u32, ds: u32, len: usize, outLen: usize): void {
  keccakInit(KECCAK_TMP, rate, <u8>ds);
  keccakAbsorb(KECCAK_TMP, IN, len);
  keccakSqueeze(KECCAK_TMP, OUT, outLen);
  memory.fill(KECCAK_TMP, 0, KECCAK_CTX_BYTES);
  wipeKeccak();
  wipeIn(len);
}

/** KCTX = a fresh sponge. */
export function keccak_init(rate: u32, ds: u32): void {
  keccakInit(KCTX, rate, <u8>ds);
}

/** Absorbs IN[0, len) into KCTX (IN is zeroed by the facade after the last chunk). */
export function keccak_absorb(len: usize): void {
  keccakAbsorb(KCTX, IN, len);
  wipeKeccak();
}

/** OUT[0, len) = the next `len` bytes squeezed from KCTX (padding first on the first call). */
export function keccak_squeeze(len: usize): void {
  keccakSqueeze(KCTX, OUT, len);
  wipeKeccak();
}
