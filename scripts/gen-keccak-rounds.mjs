// Generates the Keccak-f[1600] round code (AssemblyScript) used in assembly/keccak/_f1600.ts and
// its measured variants: node scripts/gen-keccak-rounds.mjs <variant> prints code to stdout.
//   variants: scalar-plain, scalar-lc (lane complementing), with flags: unroll24, prep (theta prepared in chi)
//   x2: i64x2 two-state round
// Lane index i = x + 5y (FIPS 202 §3.1.2 / §3.1.4, with A[x,y,z] = lane i bit z).

// ρ offsets per FIPS 202 §3.2.2 (Algorithm 2).
export const RHO = new Array(25).fill(0);
{
  let x = 1,
    y = 0;
  for (let t = 0; t < 24; t++) {
    RHO[x + 5 * y] = (((t + 1) * (t + 2)) / 2) % 64;
    [x, y] = [y, (2 * x + 3 * y) % 5];
  }
}
// Round constants per FIPS 202 §3.2.5 (Algorithms 5, 6).
function rc(t) {
  if (t % 255 === 0) return 1;
  let R = 0x80; // bits R[0..7] with R[0] the MSB in this representation: use array instead
  let r = [1, 0, 0, 0, 0, 0, 0, 0];
  for (let i = 1; i <= t % 255; i++) {
    r = [0, ...r];
    r[0] ^= r[8];
    r[4] ^= r[8];
    r[5] ^= r[8];
    r[6] ^= r[8];
    r = r.slice(0, 8);
  }
  return r[0];
}
export const RC = [];
for (let ir = 0; ir < 24; ir++) {
  let v = 0n;
  for (let j = 0; j <= 6; j++) if (rc(j + 7 * ir)) v |= 1n << BigInt((1 << j) - 1);
  RC.push(v);
}

const hex = (v) => '0x' + v.toString(16).padStart(16, '0');
const nm = (p, i) => `${p}${String(i).padStart(2, '0')}`;

// For output row y' and column x', the π source lane (x, y): y = x', x = 3(y' − 3x') mod 5.
function src(xp, yp) {
  const x = (((3 * (yp - 3 * xp)) % 5) + 25) % 5;
  return x + 5 * xp;
}

// ---- lane complementing: which stored lanes hold the complement of the true lane -----------------
const P = new Set([1, 2, 8, 12, 17, 20]);
function chiPlan() {
  // Complement status of C, D, B given P (θ and ρπ are linear; rot(~x) = ~rot(x)).
  const cC = [0, 1, 2, 3, 4].map((x) => [0, 1, 2, 3, 4].reduce((s, y) => s ^ (P.has(x + 5 * y) ? 1 : 0), 0));
  const cD = [0, 1, 2, 3, 4].map((x) => cC[(x + 4) % 5] ^ cC[(x + 1) % 5]);
  const rows = [];
  for (let yp = 0; yp < 5; yp++) {
    const cB = [0, 1, 2, 3, 4].map((xp) => {
      const s = src(xp, yp);
      return (P.has(s) ? 1 : 0) ^ cD[s % 5];
    });
    // Search the smallest set of B lanes to negate so that each output is n0(x0) ^ op(n1(x1), n2(x2)).
    let best = null;
    for (let k = 0; k <= 5 && !best; k++) {
      for (let mask = 0; mask < 32; mask++) {
        if (popcount(mask) !== k) continue;
        const forms = [];
        let ok = true;
        for (let xp = 0; xp < 5 && ok; xp++) {
          const i0 = xp,
            i1 = (xp + 1) % 5,
            i2 = (xp + 2) % 5;
          const outC = P.has(xp + 5 * yp) ? 1 : 0;
          let found = null;
          for (const n0 of (mask >> i0) & 1 ? [0, 1] : [0])
            for (const n1 of (mask >> i1) & 1 ? [0, 1] : [0])
              for (const n2 of (mask >> i2) & 1 ? [0, 1] : [0])
                for (const op of ['&', '|']) {
                  if (found) continue;
                  let good = true;
                  for (let t = 0; t < 8; t++) {
                    const b0 = t & 1,
                      b1 = (t >> 1) & 1,
                      b2 = (t >> 2) & 1;
                    const x0 = b0 ^ cB[i0],
                      x1 = b1 ^ cB[i1],
                      x2 = b2 ^ cB[i2];
                    const l = x1 ^ n1,
                      r = x2 ^ n2;
                    const f = x0 ^ n0 ^ (op === '&' ? l & r : l | r);
                    if (f !== (b0 ^ ((1 ^ b1) & b2) ^ outC)) good = false;
                  }
                  if (good) found = { n0, n1, n2, op };
                }
          if (!found) ok = false;
          else forms.push(found);
        }
        if (ok) {
          best = { mask, forms };
          break;
        }
      }
    }
    if (!best) throw new Error('no plan for row ' + yp);
    rows.push(best);
  }
  return rows;
}
function popcount(m) {
  let c = 0;
  while (m) {
    c += m & 1;
    m >>= 1;
  }
  return c;
}

// ---- scalar round ---------------------------------------------------------------------------------
// A → E. `rcExpr` is the round-constant expression. prep: C of the *next* round accumulates in c0..c4
// (input C is assumed in c0..c4 already).
function scalarRound(A, E, rcExpr, { lc, prep }) {
  const L = [];
  if (!prep) {
    for (let x = 0; x < 5; x++) L.push(`c${x} = ${[0, 1, 2, 3, 4].map((y) => nm(A, x + 5 * y)).join(' ^ ')};`);
  }
  for (let x = 0; x < 5; x++) L.push(`d${x} = c${(x + 4) % 5} ^ rotl<u64>(c${(x + 1) % 5}, 1);`);
  const plan = lc ? chiPlan() : null;
  for (let yp = 0; yp < 5; yp++) {
    const bs = [];
    for (let xp = 0; xp < 5; xp++) {
      const s = src(xp, yp);
      const r = RHO[s];
      bs.push(r ? `b${xp} = rotl<u64>(${nm(A, s)} ^ d${s % 5}, ${r});` : `b${xp} = ${nm(A, s)} ^ d${s % 5};`);
    }
    L.push(bs.join(' '));
    const outs = [];
    if (lc) {
      const { mask, forms } = plan[yp];
      for (let j = 0; j < 5; j++) if ((mask >> j) & 1) outs.push(`n${j} = ~b${j};`);
      for (let xp = 0; xp < 5; xp++) {
        const { n0, n1, n2, op } = forms[xp];
        const v = (n, j) => (n ? `n${j}` : `b${j}`);
        let e = `${v(n0, xp)} ^ (${v(n1, (xp + 1) % 5)} ${op} ${v(n2, (xp + 2) % 5)})`;
        if (xp === 0 && yp === 0) e += ` ^ ${rcExpr}`;
        outs.push(`${nm(E, xp + 5 * yp)} = ${e};`);
      }
    } else {
      for (let xp = 0; xp < 5; xp++) {
        let e = `b${xp} ^ (~b${(xp + 1) % 5} & b${(xp + 2) % 5})`;
        if (xp === 0 && yp === 0) e += ` ^ ${rcExpr}`;
        outs.push(`${nm(E, xp + 5 * yp)} = ${e};`);
      }
    }
    L.push(outs.join(' '));
    if (prep) {
      if (yp === 0) L.push([0, 1, 2, 3, 4].map((x) => `c${x} = ${nm(E, x)};`).join(' '));
      else L.push([0, 1, 2, 3, 4].map((x) => `c${x} ^= ${nm(E, x + 5 * yp)};`).join(' '));
    }
  }
  return L;
}

function scalarPerm(opts) {
  const { lc, prep, unroll24 } = opts;
  const L = [];
  L.push('export function keccakF1600(s: usize): void {');
  for (let i = 0; i < 25; i += 5)
    L.push('  let ' + [0, 1, 2, 3, 4].map((k) => `${nm('a', i + k)} = load<u64>(s, ${8 * (i + k)})`).join(', ') + ';');
  if (lc) L.push('  ' + [...P].map((i) => `${nm('a', i)} = ~${nm('a', i)};`).join(' '));
  L.push('  let ' + Array.from({ length: 25 }, (_, i) => `${nm('e', i)}: u64`).join(', ') + ';');
  L.push('  let b0: u64, b1: u64, b2: u64, b3: u64, b4: u64, d0: u64, d1: u64, d2: u64, d3: u64, d4: u64;');
  if (lc) L.push('  let n0: u64, n1: u64, n2: u64, n3: u64, n4: u64;');
  if (prep) {
    L.push(
      '  let ' +
        [0, 1, 2, 3, 4]
          .map((x) => `c${x} = ${[0, 1, 2, 3, 4].map((y) => nm('a', x + 5 * y)).join(' ^ ')}`)
          .join(',\n      ') +
        ';',
    );
  } else L.push('  let c0: u64, c1: u64, c2: u64, c3: u64, c4: u64;');
  if (unroll24) {
    for (let r = 0; r < 24; r += 2) {
      L.push(`  // rounds ${r}, ${r + 1}`);
      for (const l of scalarRound('a', 'e', `${hex(RC[r])}`, opts)) L.push('  ' + l);
      for (const l of scalarRound('e', 'a', `${hex(RC[r + 1])}`, opts)) L.push('  ' + l);
    }
  } else if (opts.u4) {
    L.push('  for (let r: usize = 0; r < 192; r += 32) {');
    for (const l of scalarRound('a', 'e', 'load<u64>(r, RC)', opts)) L.push('    ' + l);
    for (const l of scalarRound('e', 'a', 'load<u64>(r, RC + 8)', opts)) L.push('    ' + l);
    for (const l of scalarRound('a', 'e', 'load<u64>(r, RC + 16)', opts)) L.push('    ' + l);
    for (const l of scalarRound('e', 'a', 'load<u64>(r, RC + 24)', opts)) L.push('    ' + l);
    L.push('  }');
  } else if (opts.r1) {
    L.push('  for (let r: usize = 0; r < 192; r += 8) {');
    for (const l of scalarRound('a', 'e', 'load<u64>(r, RC)', opts)) L.push('    ' + l);
    L.push('    ' + Array.from({ length: 25 }, (_, i) => `${nm('a', i)} = ${nm('e', i)};`).join(' '));
    L.push('  }');
  } else {
    L.push('  for (let r: usize = 0; r < 192; r += 16) {');
    for (const l of scalarRound('a', 'e', 'load<u64>(r, RC)', opts)) L.push('    ' + l);
    for (const l of scalarRound('e', 'a', 'load<u64>(r, RC + 8)', opts)) L.push('    ' + l);
    L.push('  }');
  }
  if (lc) L.push('  ' + [...P].map((i) => `${nm('a', i)} = ~${nm('a', i)};`).join(' '));
  for (let i = 0; i < 25; i += 5)
    L.push('  ' + [0, 1, 2, 3, 4].map((k) => `store<u64>(s, ${nm('a', i + k)}, ${8 * (i + k)});`).join(' '));
  L.push('}');
  return L.join('\n');
}

// ---- x2 round -------------------------------------------------------------------------------------
function vrot(x, n, { shufAll, noshuf: o_noshuf }) {
  if (n === 0) return x;
  if (n % 8 === 0 && !o_noshuf) {
    const k = n / 8; // rotl by 8k: out byte i = in byte (i − k) mod 8
    const idx = [];
    for (let h = 0; h < 2; h++) for (let i = 0; i < 8; i++) idx.push(8 * h + ((i - k + 8) % 8));
    return `i8x16.shuffle(${x}, ${x}, ${idx.join(', ')})`;
  }
  if (n === 1 && !shufAll) return `v128.or(i64x2.add(${x}, ${x}), i64x2.shr_u(${x}, 63))`;
  return `v128.or(i64x2.shl(${x}, ${n}), i64x2.shr_u(${x}, ${64 - n}))`;
}
function x2Round(A, E, rcExpr, o) {
  const L = [];
  for (let x = 0; x < 5; x++)
    L.push(
      `c${x} = v128.xor(v128.xor(v128.xor(${nm(A, x)}, ${nm(A, x + 5)}), v128.xor(${nm(A, x + 10)}, ${nm(A, x + 15)})), ${nm(A, x + 20)});`,
    );
  for (let x = 0; x < 5; x++) {
    L.push(`t = c${(x + 1) % 5}; d${x} = v128.xor(c${(x + 4) % 5}, ${vrot('t', 1, o)});`);
  }
  for (let yp = 0; yp < 5; yp++) {
    const bs = [];
    for (let xp = 0; xp < 5; xp++) {
      const s = src(xp, yp);
      bs.push(
        RHO[s]
          ? `t = v128.xor(${nm(A, s)}, d${s % 5}); b${xp} = ${vrot('t', RHO[s], o)};`
          : `b${xp} = v128.xor(${nm(A, s)}, d${s % 5});`,
      );
    }
    L.push(...bs);
    const outs = [];
    for (let xp = 0; xp < 5; xp++) {
      let e = `v128.xor(b${xp}, v128.andnot(b${(xp + 2) % 5}, b${(xp + 1) % 5}))`;
      if (xp === 0 && yp === 0) e = `v128.xor(${e}, ${rcExpr})`;
      outs.push(`${nm(E, xp + 5 * yp)} = ${e};`);
    }
    L.push(...outs);
  }
  return L;
}
function x2Perm(o) {
  const L = [];
  L.push('function permuteX2(sa: usize, sb: usize): void {');
  for (let i = 0; i < 25; i++)
    L.push(`  let ${nm('a', i)} = v128.load64_lane(sb + ${8 * i}, v128.load64_zero(sa + ${8 * i}), 1);`);
  L.push('  let ' + Array.from({ length: 25 }, (_, i) => `${nm('e', i)}: v128`).join(', ') + ';');
  L.push(
    '  let t: v128, b0: v128, b1: v128, b2: v128, b3: v128, b4: v128, c0: v128, c1: v128, c2: v128, c3: v128, c4: v128, d0: v128, d1: v128, d2: v128, d3: v128, d4: v128;',
  );
  if (o.r1) {
    L.push('  for (let r: usize = 0; r < 192; r += 8) {');
    for (const l of x2Round('a', 'e', 'v128.load64_splat(r, RC)', o)) L.push('    ' + l);
    L.push('    ' + Array.from({ length: 25 }, (_, i) => `${nm('a', i)} = ${nm('e', i)};`).join(' '));
    L.push('  }');
  } else {
    L.push('  for (let r: usize = 0; r < 192; r += 16) {');
    for (const l of x2Round('a', 'e', 'v128.load64_splat(r, RC)', o)) L.push('    ' + l);
    for (const l of x2Round('e', 'a', 'v128.load64_splat(r, RC + 8)', o)) L.push('    ' + l);
    L.push('  }');
  }
  for (let i = 0; i < 25; i++)
    L.push(`  v128.store64_lane(sa + ${8 * i}, ${nm('a', i)}, 0); v128.store64_lane(sb + ${8 * i}, ${nm('a', i)}, 1);`);
  L.push('}');
  return L.join('\n');
}

function x2MemPerm(o) {
  // state ping-pongs between X and X + 400 (lane i at +16i); values flow through memory.
  const L = [];
  L.push('function permuteX2(sa: usize, sb: usize): void {');
  L.push('  const X = XBUF;');
  for (let i = 0; i < 25; i++)
    L.push(`  v128.store(X, v128.load64_lane(sb + ${8 * i}, v128.load64_zero(sa + ${8 * i}), 1), ${16 * i});`);
  L.push(
    '  let t: v128, b0: v128, b1: v128, b2: v128, b3: v128, b4: v128, c0: v128, c1: v128, c2: v128, c3: v128, c4: v128, d0: v128, d1: v128, d2: v128, d3: v128, d4: v128;',
  );
  L.push('  for (let r: usize = 0; r < 192; r += 16) {');
  for (const [A, E, rr] of [
    [0, 400, 'r'],
    [400, 0, 'r + 8'],
  ]) {
    const ld = (i) => `v128.load(X, ${A + 16 * i})`;
    for (let x = 0; x < 5; x++)
      L.push(
        `    c${x} = v128.xor(v128.xor(v128.xor(${ld(x)}, ${ld(x + 5)}), v128.xor(${ld(x + 10)}, ${ld(x + 15)})), ${ld(x + 20)});`,
      );
    for (let x = 0; x < 5; x++)
      L.push(`    t = c${(x + 1) % 5}; d${x} = v128.xor(c${(x + 4) % 5}, ${vrot('t', 1, o)});`);
    for (let yp = 0; yp < 5; yp++) {
      for (let xp = 0; xp < 5; xp++) {
        const sidx = src(xp, yp);
        L.push(
          RHO[sidx]
            ? `    t = v128.xor(${ld(sidx)}, d${sidx % 5}); b${xp} = ${vrot('t', RHO[sidx], o)};`
            : `    b${xp} = v128.xor(${ld(sidx)}, d${sidx % 5});`,
        );
      }
      for (let xp = 0; xp < 5; xp++) {
        let e = `v128.xor(b${xp}, v128.andnot(b${(xp + 2) % 5}, b${(xp + 1) % 5}))`;
        if (xp === 0 && yp === 0) e = `v128.xor(${e}, v128.load64_splat(${rr}, RC))`;
        L.push(`    v128.store(X, ${e}, ${E + 16 * (xp + 5 * yp)});`);
      }
    }
  }
  L.push('  }');
  for (let i = 0; i < 25; i++)
    L.push(
      `  { const v = v128.load(X, ${16 * i}); v128.store64_lane(sa + ${8 * i}, v, 0); v128.store64_lane(sb + ${8 * i}, v, 1); }`,
    );
  L.push('}');
  return L.join('\n');
}

function scalarMemPerm() {
  // lane complementing, state ping-pongs between s and a 200-byte buffer T (lane i at +8i)
  const plan = chiPlan();
  const L = ['export function keccakF1600(s: usize): void {', '  const T = TBUF;'];
  L.push('  ' + [...P].map((i) => `store<u64>(s, ~load<u64>(s, ${8 * i}), ${8 * i});`).join(' '));
  L.push(
    '  let b0: u64, b1: u64, b2: u64, b3: u64, b4: u64, c0: u64, c1: u64, c2: u64, c3: u64, c4: u64, d0: u64, d1: u64, d2: u64, d3: u64, d4: u64, n0: u64, n1: u64, n2: u64, n3: u64, n4: u64;',
  );
  L.push('  for (let r: usize = 0; r < 192; r += 16) {');
  for (const [A, E, rr] of [
    ['s', 'T', 'r'],
    ['T', 's', 'r + 8'],
  ]) {
    const ld = (i) => `load<u64>(${A}, ${8 * i})`;
    for (let x = 0; x < 5; x++) L.push(`    c${x} = ${[0, 1, 2, 3, 4].map((y) => ld(x + 5 * y)).join(' ^ ')};`);
    for (let x = 0; x < 5; x++) L.push(`    d${x} = c${(x + 4) % 5} ^ rotl<u64>(c${(x + 1) % 5}, 1);`);
    for (let yp = 0; yp < 5; yp++) {
      for (let xp = 0; xp < 5; xp++) {
        const si = src(xp, yp);
        L.push(
          RHO[si]
            ? `    b${xp} = rotl<u64>(${ld(si)} ^ d${si % 5}, ${RHO[si]});`
            : `    b${xp} = ${ld(si)} ^ d${si % 5};`,
        );
      }
      const { mask, forms } = plan[yp];
      for (let j = 0; j < 5; j++) if ((mask >> j) & 1) L.push(`    n${j} = ~b${j};`);
      for (let xp = 0; xp < 5; xp++) {
        const { n0, n1, n2, op } = forms[xp];
        const v = (n, j) => (n ? `n${j}` : `b${j}`);
        let e = `${v(n0, xp)} ^ (${v(n1, (xp + 1) % 5)} ${op} ${v(n2, (xp + 2) % 5)})`;
        if (xp === 0 && yp === 0) e += ` ^ load<u64>(${rr}, RC)`;
        L.push(`    store<u64>(${E}, ${e}, ${8 * (xp + 5 * yp)});`);
      }
    }
  }
  L.push('  }');
  L.push('  ' + [...P].map((i) => `store<u64>(s, ~load<u64>(s, ${8 * i}), ${8 * i});`).join(' '));
  L.push('}');
  return 'const TBUF: usize = memory.data(200, 64);\n' + L.join('\n');
}

const args = process.argv.slice(2);
const mode = args[0];
if (mode === 'rc') {
  console.log(RC.map(hex).join(', '));
  console.log(RHO.join(','));
} else if (mode === 'plan') console.log(JSON.stringify(chiPlan()));
else if (mode === 'scalar')
  console.log(
    scalarPerm({
      lc: args.includes('lc'),
      prep: args.includes('prep'),
      unroll24: args.includes('unroll24'),
      u4: args.includes('u4'),
      r1: args.includes('r1'),
    }),
  );
else if (mode === 'smem') console.log(scalarMemPerm());
else if (mode === 'x2mem') console.log('const XBUF: usize = memory.data(800, 64);\n' + x2MemPerm({}));
else if (mode === 'x2')
  console.log(x2Perm({ shufAll: args.includes('shl1'), noshuf: args.includes('noshuf'), r1: args.includes('r1') }));
