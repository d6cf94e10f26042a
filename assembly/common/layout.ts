// Static memory layout shared by the kernels. Nothing is allocated at run time: every buffer is a
// fixed region of linear memory reserved at compile time. Regions named *_IN/_OUT/_CTX are written
// and read by the TypeScript facades; SCRATCH is private to the kernels and every exported operation
// zeroes it before returning (see wipeScratch), so no secret outlives the call that used it.

/** Input region: messages, keys, leaves (128 KiB). */
export const IN_BYTES: usize = 128 * 1024;
export const IN: usize = memory.data(<i32>IN_BYTES, 64);

/** Output region: digests, HKDF output, batches of leaf hashes (64 KiB). */
export const OUT_BYTES: usize = 64 * 1024;
export const OUT: usize = memory.data(<i32>OUT_BYTES, 64);

/** A hash context the facade may keep between calls (streaming): see assembly/sha2/hash.ts. */
export const CTX_BYTES: usize = 256;
export const CTX: usize = memory.data(<i32>CTX_BYTES, 64);
/** A second context (the outer HMAC context in streaming HMAC). */
export const CTX2: usize = memory.data(<i32>CTX_BYTES, 64);

/** Merkle compact range: up to 64 subtree roots of 48 bytes each, largest first. */
export const FRONTIER_BYTES: usize = 64 * 48;
export const FRONTIER: usize = memory.data(<i32>FRONTIER_BYTES, 64);

/** Kernel-private scratch, zeroed at the end of every exported operation. */
export const SCRATCH_BYTES: usize = 3008; // the sub-regions below, exactly
export const SCRATCH: usize = memory.data(<i32>SCRATCH_BYTES, 64);

// Sub-regions of SCRATCH.
export const HMAC_I: usize = SCRATCH; //          256: inner HMAC context template
export const HMAC_O: usize = SCRATCH + 256; //    256: outer HMAC context template
export const TMP_A: usize = SCRATCH + 512; //     256: working context
export const TMP_B: usize = SCRATCH + 768; //     256: working context
export const PAD: usize = SCRATCH + 1024; //      256: key pads, final blocks
export const DIGEST: usize = SCRATCH + 1280; //    64: intermediate digest
export const KEY_DIGEST: usize = SCRATCH + 1344; // 64: hashed long HMAC key
export const SCHEDULE512: usize = SCRATCH + 1408; // 640: SHA-512 message schedule
export const SCHEDULE256: usize = SCRATCH + 2048; // 256: SHA-256 message schedule
export const STATE: usize = SCRATCH + 2304; //     64: compression state for one-block paths
export const SCHEDULE512_WK: usize = SCRATCH + 2368; // 640: W_t + K_t (SIMD build)

/** Zeroes the first `inLen` bytes of IN. */
export function wipeIn(inLen: usize): void {
  memory.fill(IN, 0, inLen < IN_BYTES ? inLen : IN_BYTES);
}

/** Zeroes the SHA-2 kernels' private scratch and the first `inLen` bytes of IN. */
export function wipeScratch(inLen: usize): void {
  memory.fill(SCRATCH, 0, SCRATCH_BYTES);
  wipeIn(inLen);
}

// ---- AES / GHASH / POLYVAL regions (each wiped by its own kernel's exported operations) --------

/**
 * Room for one expanded AES-256 key as the AEAD layer keeps it (assembly/aes/aead.ts, "key blob"):
 * the bitsliced round keys, the vector-permutation round keys (SIMD build) and GHASH's H.
 */
export const AES_RK_BYTES: usize = 2304;
/** The expanded key the facade passes in (keyed AEAD forms keep it on the JavaScript side). */
export const AES_RK: usize = memory.data(<i32>AES_RK_BYTES, 64);
/** AES core private scratch: bitsliced state, key-schedule temporaries. */
export const AES_SCRATCH_BYTES: usize = 4096;
export const AES_SCRATCH: usize = memory.data(<i32>AES_SCRATCH_BYTES, 64);
/** GHASH/POLYVAL private scratch: precomputed key powers, accumulator temporaries. */
export const POLY_SCRATCH_BYTES: usize = 1024;
export const POLY_SCRATCH: usize = memory.data(<i32>POLY_SCRATCH_BYTES, 64);
/** AEAD composition scratch: derived keys (incl. a second expanded key), counter blocks, tags. */
export const AEAD_SCRATCH_BYTES: usize = 3072;
export const AEAD_SCRATCH: usize = memory.data(<i32>AEAD_SCRATCH_BYTES, 64);

// ---- Keccak regions ----------------------------------------------------------------------------

/** A sponge context the facade keeps between calls (streaming SHA-3/SHAKE). */
export const KCTX: usize = memory.data(256, 64);
/** A sponge context for one-shot hashing inside a single call (zeroed before it returns). */
export const KECCAK_TMP: usize = memory.data(256, 64);
