// Timing-leakage check in the style of dudect (Reparaz, Balasch, Verbauwhede, "Dude, is my code
// constant time?", DATE 2017): many timings of one kernel operation with a secret input that is
// either fixed (class 0) or random (class 1), the classes interleaved at random, outliers cropped,
// then Welch's t-statistic between the classes. |t| above ~4.5 suggests a data-dependent timing;
// below it, none was detected at this sample size (it is evidence, not proof).
//
//   node bench/leakage.mjs [--samples N] [--flavor simd|scalar] [--out report.json]
//   (default report: bench/results/leakage-<arch>[-emulated]-<runtime>-<date>[-n].json)

import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { randomFillSync } from 'node:crypto';
import { hostInfo, reportPath } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (name, dflt) => (args.includes(name) ? args[args.indexOf(name) + 1] : dflt);
const SAMPLES = Number(arg('--samples', 200_000));
const flavors = arg('--flavor') ? [arg('--flavor')] : ['simd', 'scalar'];
const REPS = 8; // calls per timing, to lift the operation above the timer's granularity

function load(flavor) {
  const bin = readFileSync(new URL(`../build/aead.${flavor}.wasm`, import.meta.url));
  const x = new WebAssembly.Instance(new WebAssembly.Module(bin), {}).exports;
  return { x, mem: new Uint8Array(x.memory.buffer), IN: x.MEM_IN.value, RK: x.MEM_AES_RK.value };
}

/** Welch's t over two samples after dropping each class's slowest `crop` fraction. */
function welch(a, b, crop = 0.05) {
  const stats = (v) => {
    const s = Float64Array.from(v).sort();
    const n = Math.floor(s.length * (1 - crop));
    let m = 0;
    for (let i = 0; i < n; i++) m += s[i];
    m /= n;
    let q = 0;
    for (let i = 0; i < n; i++) q += (s[i] - m) ** 2;
    return { n, m, v: q / (n - 1) };
  };
  const x = stats(a);
  const y = stats(b);
  return { t: (x.m - y.m) / Math.sqrt(x.v / x.n + y.v / y.n), meanFixedNs: x.m / REPS, meanRandomNs: y.m / REPS };
}

/**
 * Runs `op` SAMPLES times; before each timing, `prepare(secret)` writes either the fixed secret or
 * a random one (untimed).
 */
function run(prepare, op, secretBytes) {
  // All inputs are drawn before timing starts (as dudect does), so both classes do the same
  // untimed work per sample: only the secret's value differs. Class 0 = all-zero secret.
  const classes = new Uint8Array(SAMPLES);
  randomFillSync(classes);
  const inputs = new Uint8Array(SAMPLES * secretBytes);
  randomFillSync(inputs);
  for (let i = 0; i < SAMPLES; i++) if ((classes[i] & 1) === 0) inputs.fill(0, i * secretBytes, (i + 1) * secretBytes);
  const t0s = [];
  const t1s = [];
  for (let w = 0; w < 2000; w++) {
    prepare(inputs.subarray(0, secretBytes));
    op();
  }
  for (let i = 0; i < SAMPLES; i++) {
    prepare(inputs.subarray(i * secretBytes, (i + 1) * secretBytes));
    const t0 = process.hrtime.bigint();
    for (let r = 0; r < REPS; r++) op();
    const dt = Number(process.hrtime.bigint() - t0);
    ((classes[i] & 1) === 1 ? t1s : t0s).push(dt);
  }
  return welch(t0s, t1s);
}

const report = { host: hostInfo(), samples: SAMPLES, reps: REPS, results: [] };

console.log(
  `leakage check (dudect-style Welch t), ${SAMPLES} timings of ${REPS} calls each; |t| < 4.5: no leak detected\n`,
);

// Positive control: an early-exit comparison leaks by construction; the method must flag it.
{
  const ref = new Uint8Array(256);
  let cur = ref;
  let sink = 0;
  const r = run(
    (secret) => {
      cur = secret;
    },
    () => {
      let i = 0;
      while (i < 256 && cur[i % cur.length] === ref[i]) i++;
      sink += i;
    },
    256,
  );
  globalThis.__sink = sink;
  console.log(
    `  [control] early-exit comparison (leaks by design)            |t| = ${Math.abs(r.t).toFixed(2).padStart(6)}  ${Math.abs(r.t) >= 4.5 ? 'leak detected, as it must be' : 'NOT DETECTED: the method is too weak here'}`,
  );
  report.control = { check: 'early-exit comparison', t: r.t };
}
for (const flavor of flavors) {
  const k = load(flavor);
  /** key ‖ nonce ‖ 16-byte AAD ‖ 115-byte record: the one-shot checks' input. */
  const oneShotIn = new Uint8Array(32 + 12 + 16 + 115).fill(0x5a);
  const checks = [
    {
      name: 'AES-256 key schedule + 8 blocks, secret key',
      secretBytes: 32,
      prepare: (key) => k.mem.set(key, k.IN),
      op: () => {
        k.x.aes_expand_key(); // IN (key) → OUT (expanded key)
        k.mem.copyWithin(k.RK, k.x.MEM_OUT.value, k.x.MEM_OUT.value + k.x.MEM_AES_RK_BYTES.value);
        k.x.aes_ecb(8);
      },
    },
    {
      name: 'AES-256 8 blocks, secret plaintext (fixed key)',
      secretBytes: 128,
      prepare: (pt) => k.mem.set(pt, k.IN),
      op: () => k.x.aes_ecb(8),
    },
    // The one-shot form of a 115-byte record: in the SIMD build the short-message paths (the key
    // expanded for the vector-permutation cipher only; derivation, tag and CTR all through it).
    // The kernel wipes IN after each call, so each call gets its input again (the same copy in
    // both classes).
    ...['GCM-SIV', 'GCM'].map((mode, m) => ({
      name: `one-shot ${mode} seal of 115 B, secret key`,
      secretBytes: 32,
      prepare: (key) => {
        oneShotIn.set(key);
      },
      op: () => {
        k.mem.set(oneShotIn, k.IN);
        k.x.aead_seal_key(1 - m, 12, 16, 115);
      },
    })),
    {
      name: 'one-shot GCM-SIV seal of 115 B, secret plaintext (fixed key)',
      secretBytes: 115,
      prepare: (pt) => {
        oneShotIn.set(pt, 32 + 12 + 16);
      },
      op: () => {
        k.mem.set(oneShotIn, k.IN);
        k.x.aead_seal_key(1, 12, 16, 115);
      },
    },
    {
      name: 'POLYVAL 8 blocks, secret key H',
      secretBytes: 16,
      prepare: (h) => k.mem.set(h, k.IN),
      op: () => k.x.polyval_digest(8),
    },
    {
      name: 'POLYVAL 8 blocks, secret data (fixed H)',
      secretBytes: 128,
      prepare: (d) => k.mem.set(d, k.IN + 16),
      op: () => k.x.polyval_digest(8),
    },
    {
      name: 'GHASH 8 blocks, secret key H',
      secretBytes: 16,
      prepare: (h) => k.mem.set(h, k.IN),
      op: () => k.x.ghash_digest(8),
    },
  ];
  for (const c of checks) {
    const r = run(c.prepare, c.op, c.secretBytes);
    const verdict = Math.abs(r.t) < 4.5 ? 'no leak detected' : 'POSSIBLE LEAK';
    console.log(
      `  [${flavor.padEnd(6)}] ${c.name.padEnd(48)} |t| = ${Math.abs(r.t).toFixed(2).padStart(6)}  ${verdict}  (${r.meanFixedNs.toFixed(0)} / ${r.meanRandomNs.toFixed(0)} ns)`,
    );
    report.results.push({ flavor, check: c.name, t: r.t, meanFixedNs: r.meanFixedNs, meanRandomNs: r.meanRandomNs });
  }
}
const out = arg('--out', undefined) ?? reportPath('leakage', { host: report.host });
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
console.log(`\nreport: ${out}`);
