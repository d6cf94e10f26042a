// pqdb benchmarks: SHA-384 (131 B and 1 MiB), HKDF-SHA384 (32 B out) and the Merkle root of
// 100,000 × 131-B leaves, on both WebAssembly builds, against node:crypto, @noble/hashes and
// hash-wasm measured in the same process. Prints a table and writes a JSON report.
//
//   npm run bench                 all benches
//   node bench/run.mjs --quick    shorter samples (a smoke run)
//   node bench/run.mjs --out f    JSON report path (default bench/results/<arch>-<date>.json)

import { createHash, hash as nodeHash, hkdfSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { sha384 as nobleSha384 } from '@noble/hashes/sha2.js';
import { hkdf as nobleHkdf } from '@noble/hashes/hkdf.js';
import { createSHA384 } from 'hash-wasm';
import * as pqdb from '../dist/crypto.js';
import { measureInterleaved, fmtTime, hostInfo } from './harness.mjs';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const outIdx = args.indexOf('--out');
const opts = quick ? { warmupMs: 150, samples: 7, sampleMs: 10 } : { warmupMs: 500, samples: 21, sampleMs: 25 };

/** Deterministic bytes. */
function bytes(n, seed = 1) {
  const out = new Uint8Array(n);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < n; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

const hw = await createSHA384();
const hashWasm384 = (m) => {
  hw.init();
  hw.update(m);
  return hw.digest('binary');
};

/** The usual JavaScript way to build an RFC 9162 root: hash leaves, then pair up level by level. */
function peerMerkleRoot(leaves, h) {
  let level = leaves.map((leaf) => {
    const buf = new Uint8Array(leaf.length + 1);
    buf.set(leaf, 1);
    return h(buf);
  });
  const node = new Uint8Array(97);
  node[0] = 1;
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i + 1 < level.length; i += 2) {
      node.set(level[i], 1);
      node.set(level[i + 1], 49);
      next.push(h(node));
    }
    if (level.length % 2 === 1) next.push(level[level.length - 1]);
    level = next;
  }
  return level[0];
}

const msg131 = bytes(131, 7);
const mib = bytes(1 << 20, 9);
const ikm = bytes(32, 11);
const salt = bytes(32, 12);
const info = bytes(64, 13);
const leaves = Array.from({ length: 100_000 }, (_, i) => bytes(131, i + 100));
const nodeSha384 = (m) => nodeHash('sha384', m, 'buffer');

const FLAVORS = ['simd', 'scalar'];
const pq = (label, fn) => FLAVORS.map((f) => ({ name: `pqdb (${f})`, flavor: f, fn }));

const benches = [
  {
    id: 'sha384-131B',
    title: 'SHA-384 of 131 B',
    unit: 'op',
    impls: [
      ...pq('', () => pqdb.sha384(msg131)),
      { name: 'node:crypto hash()', fn: () => nodeSha384(msg131) },
      { name: 'node:crypto createHash', fn: () => createHash('sha384').update(msg131).digest() },
      { name: '@noble/hashes', fn: () => nobleSha384(msg131) },
      { name: 'hash-wasm', fn: () => hashWasm384(msg131) },
    ],
  },
  {
    id: 'sha384-1MiB',
    title: 'SHA-384 of 1 MiB',
    bytes: mib.length,
    impls: [
      ...pq('', () => pqdb.sha384(mib)),
      { name: 'node:crypto hash()', fn: () => nodeSha384(mib) },
      { name: '@noble/hashes', fn: () => nobleSha384(mib) },
      { name: 'hash-wasm', fn: () => hashWasm384(mib) },
    ],
  },
  {
    id: 'hkdf-sha384-32B',
    title: 'HKDF-SHA384, 32 B out',
    impls: [
      ...pq('', () => pqdb.hkdf(pqdb.sha384, ikm, salt, info, 32)),
      { name: 'node:crypto hkdfSync', fn: () => new Uint8Array(hkdfSync('sha384', ikm, salt, info, 32)) },
      { name: '@noble/hashes', fn: () => nobleHkdf(nobleSha384, ikm, salt, info, 32) },
    ],
  },
  {
    id: 'merkle-100k',
    title: 'Merkle root, 100,000 × 131-B leaves',
    heavy: true,
    impls: [
      ...pq('', () => pqdb.merkle.root(leaves)),
      { name: 'node:crypto hash() loop', fn: () => peerMerkleRoot(leaves, nodeSha384) },
      { name: 'hash-wasm loop', fn: () => peerMerkleRoot(leaves, hashWasm384) },
      { name: '@noble/hashes loop', fn: () => peerMerkleRoot(leaves, nobleSha384) },
    ],
  },
];

// All implementations must agree before anything is timed.
for (const b of benches) {
  const ref = Buffer.from(b.impls.at(-1).fn()).toString('hex');
  for (const impl of b.impls) {
    if (impl.flavor) pqdb.setWasmFlavor(impl.flavor);
    const got = Buffer.from(impl.fn()).toString('hex');
    if (got !== ref) throw new Error(`${b.title}: ${impl.name} disagrees with ${b.impls.at(-1).name}`);
  }
}

const host = hostInfo();
console.log(`pqdb bench — ${host.cpu} (${host.cores} cores), ${host.arch}${host.emulated ? ' (emulated)' : ''}, ${host.runtime}\n`);
const report = { host, quick, benches: [] };
for (const b of benches) {
  const o = b.heavy ? { warmupMs: quick ? 0 : 1500, samples: quick ? 3 : 9, sampleMs: 1 } : opts;
  const timed = measureInterleaved(
    b.impls.map((impl) => ({ fn: impl.fn, before: impl.flavor ? () => pqdb.setWasmFlavor(impl.flavor) : undefined })),
    o,
  );
  const results = b.impls.map((impl, k) => ({ name: impl.name, flavor: impl.flavor, ...timed[k] }));
  pqdb.setWasmFlavor(undefined);
  const best = Math.min(...results.filter((r) => r.flavor).map((r) => r.median));
  console.log(b.title);
  for (const r of results) {
    const thr = b.bytes ? `  ${((b.bytes / r.median) * 1e9 / 2 ** 20).toFixed(0).padStart(5)} MiB/s` : '';
    const ratio = r.flavor ? '' : `  pqdb is ${(r.median / best).toFixed(2)}× faster`;
    console.log(`  ${r.name.padEnd(26)} median ${fmtTime(r.median).padStart(10)}  p90 ${fmtTime(r.p90).padStart(10)}${thr}${ratio}`);
    r.throughputMiBs = b.bytes ? (b.bytes / r.median) * 1e9 / 2 ** 20 : undefined;
    r.ratioVsPqdb = r.flavor ? undefined : r.median / best;
  }
  console.log('');
  report.benches.push({ id: b.id, title: b.title, bytes: b.bytes, results });
}

const out = outIdx >= 0 ? args[outIdx + 1] : `bench/results/${host.arch}-${host.date.slice(0, 19).replace(/[:T]/g, '-')}.json`;
mkdirSync(dirname(out), { recursive: true });
writeFileSync(out, JSON.stringify(report, null, 2) + '\n');
console.log(`report: ${out}`);
