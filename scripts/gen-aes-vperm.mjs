#!/usr/bin/env node
// Generates assembly/aes/_vperm-tables.ts: the 16-entry nibble tables of the "vector permutation"
// AES S-box (M. Hamburg, "Accelerating AES with Vector Permute Instructions", CHES 2009), derived here
// from first principles, and checks them against the S-box computed from its definition.
//
// The construction (implemented from the paper's description; notation ours):
// - F = GF(2^4) = GF(2)[z]/(z^4 + z + 1), elements as 4-bit polynomials.
// - T = F[θ]/(θ^2 + a·θ + a) for the first a ∈ F that makes the polynomial irreducible; an element
//   i·θ + k is the byte (i << 4) | k: high nibble i, low nibble k.
// - Φ: GF(2^8) (FIPS 197 §4.2, modulus x^8 + x^4 + x^3 + x + 1) → T, the field isomorphism sending x
//   to a root β ∈ T of that modulus; it is GF(2)-linear, so Φ(u ⊕ v) = Φ(u) ⊕ Φ(v) and a byte's image
//   is IPT_LO[low nibble] ⊕ IPT_HI[high nibble].
// - Inversion in T with only one-nibble table look-ups and XOR, on the projective line F ∪ {∞}:
//   a look-up table holds 0x80 ("∞") where the value is 1/0, and i8x16.swizzle (like pshufb) returns 0
//   for any index ≥ 16, so 1/∞ = 0 and ∞ ⊕ (nibble) stays ∞. For y = i·θ + k, j = i ⊕ k:
//     io = j ⊕ 1/(1/i ⊕ a/k),  ko = (a·i ⊕ k) ⊕ 1/(1/i ⊕ 1/k).
//   With M = k² + a·i·k + a·i² (the norm of y, ≠ 0 for y ≠ 0): io = M/(k + a·i) and ko = M/j, and
//   y⁻¹ = ȳ/M = c0 + c1·θ with c0 = (k + a·i)/M = 1/io and c1 = i/M = (1/io ⊕ 1/ko)/(1 ⊕ a), so y⁻¹
//   is a function of io plus a function of ko: y⁻¹ = G1[io] ⊕ G2[ko] (0⁻¹ = 0: both are ∞ for y = 0).
//   The first look-ups take the nibbles i and k as they are; j and a·i ⊕ k, which need an extra XOR,
//   enter only after the second look-up, off the critical path (Hamburg's formula uses 1/j first).
//   The generator does not rely on this algebra: it evaluates the look-up sequence with the exact
//   swizzle semantics on all 256 inputs and compares with the S-box from its definition.
// - Output tables fold in the S-box's linear map A (FIPS 197 §5.1.1, without the constant 0x63, which
//   the cipher carries in its round keys) and the basis of the next step: SB1 gives Φ(A·x⁻¹), SB2 gives
//   Φ(2·A·x⁻¹) and SB3 Φ(3·A·x⁻¹) (for MixColumns), SBO gives A·x⁻¹ in the standard basis (last round);
//   each as a pair (…U indexed by io, …T indexed by ko) whose entries are XORed.
// - Byte permutations (ShiftRows folded into MixColumns' row rotations, round-key layouts) are
//   computed here too, as swizzle masks, and the whole cipher is modelled and checked (FIPS 197 C.3).
//
// Usage: node scripts/gen-aes-vperm.mjs [--out assembly/aes/_vperm-tables.ts]
// The exported renderVpermTables() returns the file text (for a test that the committed file is current).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// ---- Fields --------------------------------------------------------------------------------------

/** Multiplication in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1 (FIPS 197 §4.2). */
function gmul(a, b) {
  let r = 0;
  for (let i = 0; i < 8; i++) {
    if ((b >> i) & 1) r ^= a;
    a = (a << 1) ^ (a & 0x80 ? 0x11b : 0);
  }
  return r & 0xff;
}

/** Inverse in GF(2^8) as x^254 (0 ↦ 0), FIPS 197 §5.1.1. */
function ginv(x) {
  let r = 1;
  for (let e = 254, b = x; e > 0; e >>= 1, b = gmul(b, b)) if (e & 1) r = gmul(r, b);
  return x === 0 ? 0 : r;
}

/** The affine map of the S-box without its constant: b'_i = b_i ⊕ b_{i+4} ⊕ b_{i+5} ⊕ b_{i+6} ⊕ b_{i+7}. */
function affineLinear(b) {
  let r = 0;
  for (let i = 0; i < 8; i++) {
    const bit =
      ((b >> i) ^ (b >> ((i + 4) % 8)) ^ (b >> ((i + 5) % 8)) ^ (b >> ((i + 6) % 8)) ^ (b >> ((i + 7) % 8))) & 1;
    r |= bit << i;
  }
  return r;
}

/** The S-box from its definition (FIPS 197 §5.1.1). */
export const sbox = (x) => affineLinear(ginv(x)) ^ 0x63;

/** Multiplication in F = GF(2^4) modulo z^4 + z + 1. */
function fmul(a, b) {
  let r = 0;
  for (let i = 0; i < 4; i++) {
    if ((b >> i) & 1) r ^= a;
    a = (a << 1) ^ (a & 8 ? 0x13 : 0);
  }
  return r & 0xf;
}
const finv = (x) => {
  for (let y = 1; y < 16; y++) if (fmul(x, y) === 1) return y;
  return 0;
};

/** The first a ∈ F with θ² + aθ + a irreducible over F (no root in F). */
const A = (() => {
  for (let a = 1; a < 16; a++) {
    let root = false;
    for (let r = 0; r < 16; r++) if ((fmul(r, r) ^ fmul(a, r) ^ a) === 0) root = true;
    if (!root) return a;
  }
  throw new Error('no irreducible θ² + aθ + a');
})();

/** Multiplication in T: (i1θ + k1)(i2θ + k2) with θ² = aθ + a. */
function tmul(x, y) {
  const i1 = x >> 4,
    k1 = x & 15,
    i2 = y >> 4,
    k2 = y & 15;
  const ii = fmul(i1, i2);
  const hi = fmul(ii, A) ^ fmul(i1, k2) ^ fmul(k1, i2);
  const lo = fmul(ii, A) ^ fmul(k1, k2);
  return (hi << 4) | lo;
}

/** β: the first root in T of the AES modulus m(x) = x^8 + x^4 + x^3 + x + 1. */
const BETA = (() => {
  for (let b = 2; b < 256; b++) {
    const p = [1];
    for (let e = 1; e <= 8; e++) p.push(tmul(p[e - 1], b));
    if ((p[8] ^ p[4] ^ p[3] ^ p[1] ^ p[0]) === 0) return b;
  }
  throw new Error('no root of the AES modulus in T');
})();

/** Φ on the standard basis: Φ(2^m) = β^m; extended GF(2)-linearly. */
const PHI_BASIS = (() => {
  const p = [1];
  for (let m = 1; m < 8; m++) p.push(tmul(p[m - 1], BETA));
  return p;
})();
const phi = (x) => {
  let r = 0;
  for (let m = 0; m < 8; m++) if ((x >> m) & 1) r ^= PHI_BASIS[m];
  return r;
};
const PHI_INV = (() => {
  const t = new Array(256);
  for (let x = 0; x < 256; x++) t[phi(x)] = x;
  return t;
})();
const phiInv = (y) => PHI_INV[y];

// ---- Tables ---------------------------------------------------------------------------------------

const INF = 0x80; // "∞": any swizzle index ≥ 16 selects 0
const range16 = (f) => Array.from({ length: 16 }, (_, n) => f(n));

const G1 = range16((n) => {
  const u = finv(n);
  return (fmul(u, finv(1 ^ A)) << 4) | u;
});
const G2 = range16((n) => fmul(finv(n), finv(1 ^ A)) << 4);

/** The tables, in the order of their offsets in the generated blob (16 bytes each). */
export const TABLES = {
  IPT_LO: range16((n) => phi(n)),
  IPT_HI: range16((n) => phi(n << 4)),
  OPT_LO: range16((n) => phiInv(n)),
  OPT_HI: range16((n) => phiInv(n << 4)),
  INV: range16((n) => (n === 0 ? INF : finv(n))),
  AK: range16((n) => (n === 0 ? INF : fmul(A, finv(n)))),
  AI: range16((n) => fmul(A, n)),
  SB1U: G1.map((g) => phi(affineLinear(phiInv(g)))),
  SB1T: G2.map((g) => phi(affineLinear(phiInv(g)))),
  SB2U: G1.map((g) => phi(gmul(2, affineLinear(phiInv(g))))),
  SB2T: G2.map((g) => phi(gmul(2, affineLinear(phiInv(g))))),
  SB3U: G1.map((g) => phi(gmul(3, affineLinear(phiInv(g))))),
  SB3T: G2.map((g) => phi(gmul(3, affineLinear(phiInv(g))))),
  SBOU: G1.map((g) => affineLinear(phiInv(g))),
  SBOT: G2.map((g) => affineLinear(phiInv(g))),
  M0F: range16(() => 0x0f),
  // Byte permutations for i8x16.swizzle (lane n of the result = lane mask[n]); see MASKS below.
  MC0: null,
  MC1: null,
  MC2: null,
  MC3: null,
  MC4: null,
  MC5: null,
  MC6: null,
  MC7: null,
  MC8: null,
  MC9: null,
  MC10: null,
  MC11: null,
  LAYOUT1: null,
  LAYOUT2: null,
  LAYOUT3: null,
  LAST: null,
  P63: range16(() => phi(0x63)),
};
// Key-schedule constants for the steps i ≡ 0 (mod 8): Φ(0x63) in every byte (SubWord's constant)
// with Φ(Rcon) added to byte 0 of every word (Rcon = 01, 02, …, 40; FIPS 197 §5.2).
for (let s = 0; s < 7; s++) TABLES[`RCON${s}`] = range16((n) => phi(0x63) ^ ((n & 3) === 0 ? phi(1 << s) : 0));

// ---- Checks -----------------------------------------------------------------------------------------

/** i8x16.swizzle on one lane: index ≥ 16 gives 0. */
const sw = (table, idx) => (idx < 16 ? table[idx] : 0);

/** The look-up sequence of the cipher's SubBytes for one Φ-domain byte; returns [io, ko]. */
export function vpermInverseIndices(y) {
  const T = TABLES;
  const k = y & 15,
    i = (y >> 4) & 15;
  const ii = sw(T.INV, i);
  return [sw(T.INV, ii ^ sw(T.AK, k)) ^ (i ^ k), sw(T.INV, ii ^ sw(T.INV, k)) ^ (sw(T.AI, i) ^ k)];
}

function check(cond, what) {
  if (!cond) throw new Error(`gen-aes-vperm: check failed: ${what}`);
}

export function checkTables() {
  const T = TABLES;
  check(sbox(0x00) === 0x63 && sbox(0x01) === 0x7c && sbox(0x53) === 0xed && sbox(0xff) === 0x16, 'S-box spot values');
  for (let x = 0; x < 256; x++)
    for (let y = 0; y < 256; y++) check(phi(gmul(x, y)) === tmul(phi(x), phi(y)), 'Φ is multiplicative');
  check(PHI_INV.length === 256 && PHI_INV.every((v) => v !== undefined), 'Φ is a bijection');
  for (let x = 0; x < 256; x++) {
    const y = sw(T.IPT_LO, x & 15) ^ sw(T.IPT_HI, x >> 4);
    check(y === phi(x), 'IPT');
    check((sw(T.OPT_LO, y & 15) ^ sw(T.OPT_HI, y >> 4)) === x, 'OPT');
    const [io, jo] = vpermInverseIndices(y);
    const s = sbox(x) ^ 0x63;
    check((sw(T.SB1U, io) ^ sw(T.SB1T, jo)) === phi(s), `SB1 at ${x}`);
    check((sw(T.SB2U, io) ^ sw(T.SB2T, jo)) === phi(gmul(2, s)), `SB2 at ${x}`);
    check((sw(T.SB3U, io) ^ sw(T.SB3T, jo)) === phi(gmul(3, s)), `SB3 at ${x}`);
    check((sw(T.SBOU, io) ^ sw(T.SBOT, jo)) === s, `SBO at ${x}`);
  }
  check(
    T.P63.every((v) => v === phi(0x63)),
    'P63',
  );
  // The whole cipher as ./aes-vperm.ts computes it (key schedule in the Φ domain, round keys in its
  // format, rows/columns as it lays them out), on the FIPS 197 Appendix C.3 example.
  const key = range16((n) => n).concat(range16((n) => n + 16));
  const pt = range16((n) => n * 0x11);
  const ct = [0x8e, 0xa2, 0xb7, 0xca, 0x51, 0x67, 0x45, 0xbf, 0xea, 0xfc, 0x49, 0x90, 0x4b, 0x49, 0x60, 0x89];
  check(
    modelEncrypt(modelExpand(key), pt).every((v, n) => v === ct[n]),
    'model cipher on FIPS 197 C.3',
  );
}

// ---- A model of ./aes-vperm.ts on byte arrays (16 lanes) ----------------------------------------------

const lanes = (f) => range16(f);
const vxor = (a, b) => lanes((n) => a[n] ^ b[n]);
const vshuf = (a, mask) => lanes((n) => a[mask[n]]);
const ipt = (x) => lanes((n) => sw(TABLES.IPT_LO, x[n] & 15) ^ sw(TABLES.IPT_HI, x[n] >> 4));
const opt = (x) => lanes((n) => sw(TABLES.OPT_LO, x[n] & 15) ^ sw(TABLES.OPT_HI, x[n] >> 4));
/** [SB1, SB2, SB3, SBO] of every lane: Φ(A), Φ(2·A), Φ(3·A), A where A = S(x) ⊕ 63. */
function vsub(x) {
  const ik = x.map(vpermInverseIndices);
  const pair = (u, t) => ik.map(([io, ko]) => sw(TABLES[u], io) ^ sw(TABLES[t], ko));
  return [pair('SB1U', 'SB1T'), pair('SB2U', 'SB2T'), pair('SB3U', 'SB3T'), pair('SBOU', 'SBOT')];
}
// Layouts. Lanes hold the state in FIPS byte order (lane 4·column + row), but ShiftRows never moves a
// byte: after t ShiftRows, the state byte at (row r, column c) sits in lane 4·((c + t·r) mod 4) + r
// ("layout t", period 4). So MixColumns, which needs the byte of row r + k in the same column, reads
// lane 4·((pc + t·k) mod 4) + ((r + k) mod 4) for the lane 4·pc + r: one byte permutation per k and
// t mod 4 (MC[3·t + k − 1]). Round key r is stored in layout r mod 4; the last round's SubBytes input
// is permuted from layout 13 to ShiftRows-then-FIPS order (LAST).
const at = (t, r, c) => 4 * ((((c + t * r) % 4) + 4) % 4) + r;
/** Lane n of the result = lane mask[n] of the input. */
export const MASKS = {};
for (let t = 0; t < 4; t++) {
  for (let k = 1; k <= 3; k++)
    MASKS[`MC${3 * t + k - 1}`] = lanes((n) => 4 * (((n >> 2) + t * k) & 3) + (((n & 3) + k) & 3));
  if (t > 0)
    MASKS[`LAYOUT${t}`] = lanes((n) => {
      const r = n & 3,
        pc = n >> 2;
      return 4 * ((((pc - t * r) % 4) + 4) % 4) + r;
    });
}
MASKS.LAST = lanes((n) => {
  const c = n >> 2,
    r = n & 3;
  return at(13, r, (c + r) & 3);
});
for (const m of Object.keys(MASKS)) TABLES[m] = MASKS[m];
const layout = (v, t) => (t % 4 === 0 ? v : vshuf(v, MASKS[`LAYOUT${t % 4}`]));
const SHL4 = lanes((n) => (n < 4 ? 16 : n - 4)),
  SHL8 = lanes((n) => (n < 8 ? 16 : n - 8)); // 16: zero
const ROTWORD = lanes((n) => 12 + ((n + 1) & 3)),
  WORD3 = lanes((n) => 12 + (n & 3));
const vshufz = (a, mask) => vshuf(a.concat([0]), mask);

export function modelExpand(key) {
  const P63 = TABLES.P63;
  let a = ipt(key.slice(0, 16)),
    b = ipt(key.slice(16, 32));
  const rk = [a, layout(vxor(b, P63), 1)];
  for (let r = 2; r <= 14; r++) {
    const [s] = vsub(b);
    const t = r % 2 === 0 ? vxor(vshuf(s, ROTWORD), TABLES[`RCON${r / 2 - 1}`]) : vxor(vshuf(s, WORD3), P63);
    let n = vxor(a, vshufz(a, SHL4));
    n = vxor(vxor(n, vshufz(n, SHL8)), t);
    a = b;
    b = n;
    rk.push(
      r < 14
        ? layout(vxor(n, P63), r)
        : vxor(
            opt(n),
            lanes(() => 0x63),
          ),
    );
  }
  return rk;
}

export function modelEncrypt(rk, block) {
  let x = vxor(ipt(block), rk[0]);
  for (let r = 1; r <= 13; r++) {
    const [a1, a2, a3] = vsub(x);
    const m = 3 * (r % 4);
    x = [a2, vshuf(a3, MASKS[`MC${m}`]), vshuf(a1, MASKS[`MC${m + 1}`]), vshuf(a1, MASKS[`MC${m + 2}`]), rk[r]].reduce(
      vxor,
    );
  }
  return vxor(vsub(vshuf(x, MASKS.LAST))[3], rk[14]);
}

// ---- Output -----------------------------------------------------------------------------------------

const hex = (v) => `0x${v.toString(16).padStart(2, '0')}`;

export function renderVpermTables() {
  checkTables();
  const names = Object.keys(TABLES);
  const lines = [
    '// GENERATED by scripts/gen-aes-vperm.mjs — do not edit; edit the generator and run',
    '// `node scripts/gen-aes-vperm.mjs`.',
    '//',
    '// Constant 16-byte tables of the vector-permutation AES-256 (./aes-vperm.ts), after M. Hamburg,',
    '// "Accelerating AES with Vector Permute Instructions", CHES 2009. Derived by the generator from',
    `// GF(2^4) = GF(2)[z]/(z^4 + z + 1), T = GF(2^4)[θ]/(θ^2 + ${hex(A)}·θ + ${hex(A)}) (byte = i·θ + k as`,
    `// (i << 4) | k) and the isomorphism Φ from the AES field sending x to β = ${hex(BETA)} ∈ T; the`,
    '// generator checked every S-box path on all 256 inputs against the S-box from its definition',
    '// (FIPS 197 §5.1.1). Tables are indexed only by i8x16.swizzle (index ≥ 16 gives 0; 0x80 is "∞").',
    '// The tables are public constants; loading them from their fixed addresses reveals nothing.',
    '',
    '/** Offsets (bytes) of each 16-byte table in VP_TABLES. */',
    ...names.map((n, t) => `export const VP_${n}: usize = ${t * 16};`),
    '',
    `/** ${names.length} tables × 16 bytes, 16-byte aligned. */`,
    'export const VP_TABLES: usize = memory.data<u8>([',
    ...names.map((n) => `  ${TABLES[n].map(hex).join(', ')}, // ${n}`),
    '], 16);',
    '',
  ];
  return lines.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
  const i = process.argv.indexOf('--out');
  const out = i > 0 ? process.argv[i + 1] : path.join(root, 'assembly/aes/_vperm-tables.ts');
  fs.writeFileSync(out, renderVpermTables());
  console.log(
    `wrote ${path.relative(process.cwd(), out)} (a = ${hex(A)}, β = ${hex(BETA)}; all 256 S-box inputs checked)`,
  );
}
