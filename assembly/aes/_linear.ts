// Word operations and the AES linear layer (ShiftRows, the row rotations of MixColumns) on bit
// slices, for both builds: T = v128 in the SIMD build, u64 in the scalar build (u32 is used by the
// key schedule's S-box only). The slice representations are described in ./aes.ts. Pure bitwise,
// shift and constant shuffle operations: no branch or memory index depends on the data.

/** a ⊕ b on slice words. */
// @ts-ignore: decorator
@inline export function xor<T>(a: T, b: T): T {
  if (isVector<T>()) return v128.xor(a, b);
  else return a ^ b;
}

/** a ∧ b on slice words. */
// @ts-ignore: decorator
@inline export function and<T>(a: T, b: T): T {
  if (isVector<T>()) return v128.and(a, b);
  else return a & b;
}

/** ShiftRows (FIPS 197 §5.1.2) of one slice: new (row r, column c) = old (r, c + r mod 4). */
// @ts-ignore: decorator
@inline export function shiftRows<T>(s: T): T {
  if (isVector<T>()) {
    // Lane 4r + c: each 32-bit row rotated by r bytes. A swizzle by a constant in-range mask is one
    // pshufb in V8 (Node 20, x64), and the eight swizzles of a round share one materialised mask;
    // i8x16.shuffle rebuilt its mask before every pshufb (movq, vmovq, movq, vpinsrq): 8-block pass
    // 473 ns instead of 514 ns together with row-major lanes (pshufd rotations below).
    return i8x16.swizzle(s, v128(0, 1, 2, 3, 5, 6, 7, 4, 10, 11, 8, 9, 15, 12, 13, 14));
  } else {
    // Row r is the 16-bit field at bit 16·r; rotate it right by 4·r bits (one column per nibble) in
    // two steps: rows 2 and 3 by 8 bits, then rows 1 and 3 by 4 bits. 14 operations instead of the
    // 19 of rotating each row separately: scalar 8-block ECB 838 → 766 ns, CTR 157 → 181 MB/s.
    let x = <u64>s;
    x = (x & 0x00000000ffffffff) | ((x >> 8) & 0x00ff00ff00000000) | ((x << 8) & 0xff00ff0000000000);
    return <T>((x & 0x0000ffff0000ffff) | ((x >> 4) & 0x0fff00000fff0000) | ((x << 12) & 0xf0000000f0000000));
  }
}

/** Rotation by one row: new (r, c) = q(r + 1 mod 4, c). SIMD: a 32-bit lane rotation (pshufd). */
// @ts-ignore: decorator
@inline export function rowUp<T>(q: T): T {
  if (isVector<T>()) return i8x16.shuffle(q, q, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3);
  else return <T>rotr<u64>(<u64>q, 16);
}

/** Rotation by two rows: new (r, c) = a(r + 2 mod 4, c). */
// @ts-ignore: decorator
@inline export function rowUp2<T>(a: T): T {
  if (isVector<T>()) return i8x16.shuffle(a, a, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3, 4, 5, 6, 7);
  else return <T>rotr<u64>(<u64>a, 32);
}
