// The forms a user of node:crypto, hash-wasm or @noble/hashes would write to build an RFC 9162
// Merkle root of 100,000 × 131-B leaves, timed against pqdb.merkle.root in the same process, rounds
// interleaved: a fresh Uint8Array per leaf and node, Buffer.concat, incremental update() calls, and
// one scratch buffer reused for every input. bench/run.mjs's Merkle peers use the fastest form.
//
//   node bench/merkle-forms.mjs [--rounds N]    (default 7; prints the median of each form and its
//                                               ratio over pqdb's median)
import { hash, createHash } from 'node:crypto';
import { createSHA384 } from 'hash-wasm';
import { sha384 } from '@noble/hashes/sha2.js';
import * as pqdb from '../dist/crypto.js';
import { bytes } from './harness.mjs';

const roundsIdx = process.argv.indexOf('--rounds');
const rounds = roundsIdx >= 0 ? Number(process.argv[roundsIdx + 1]) : 7;

const leaves = Array.from({ length: 100_000 }, (_, i) => bytes(131, i + 100));
const Z = Buffer.from([0]);
const O = Buffer.from([1]);

/** Pairs a level up to the root with `node(a, b)`. */
function up(level, node) {
  while (level.length > 1) {
    const next = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(node(level[i], level[i + 1]));
    if (level.length % 2 === 1) next.push(level[level.length - 1]);
    level = next;
  }
  return level[0];
}

/** The fresh-array, Buffer.concat and scratch-buffer forms over a one-shot hash `h`. */
function forms(label, h) {
  return {
    [`${label}, fresh Uint8Array per input`]: () =>
      up(
        leaves.map((x) => {
          const b = new Uint8Array(x.length + 1);
          b.set(x, 1);
          return h(b);
        }),
        (a, b) => {
          const n = new Uint8Array(97);
          n[0] = 1;
          n.set(a, 1);
          n.set(b, 49);
          return h(n);
        },
      ),
    [`${label}, Buffer.concat`]: () =>
      up(
        leaves.map((x) => h(Buffer.concat([Z, x]))),
        (a, b) => h(Buffer.concat([O, a, b])),
      ),
    [`${label}, one scratch buffer`]: () => {
      const leaf = new Uint8Array(132);
      const node = new Uint8Array(97);
      node[0] = 1;
      return up(
        leaves.map((x) => {
          leaf.set(x, 1);
          return h(leaf);
        }),
        (a, b) => {
          node.set(a, 1);
          node.set(b, 49);
          return h(node);
        },
      );
    },
  };
}

const hw = await createSHA384();
const hashWasm = (m) => {
  hw.init();
  hw.update(m);
  return hw.digest('binary');
};
const all = {
  pqdb: () => pqdb.merkle.root(leaves),
  ...forms('node:crypto hash()', (m) => hash('sha384', m, 'buffer')),
  'node:crypto createHash, update() per part': () =>
    up(
      leaves.map((x) => createHash('sha384').update(Z).update(x).digest()),
      (a, b) => createHash('sha384').update(O).update(a).update(b).digest(),
    ),
  ...forms('hash-wasm', hashWasm),
  'hash-wasm, update() per part': () =>
    up(
      leaves.map((x) => {
        hw.init();
        hw.update(Z);
        hw.update(x);
        return hw.digest('binary');
      }),
      (a, b) => {
        hw.init();
        hw.update(O);
        hw.update(a);
        hw.update(b);
        return hw.digest('binary');
      },
    ),
  ...forms('@noble/hashes', (m) => sha384(m)),
  '@noble/hashes, update() per part': () =>
    up(
      leaves.map((x) => sha384.create().update(Z).update(x).digest()),
      (a, b) => sha384.create().update(O).update(a).update(b).digest(),
    ),
};

const ref = Buffer.from(all.pqdb()).toString('hex');
for (const [k, f] of Object.entries(all))
  if (Buffer.from(f()).toString('hex') !== ref) throw new Error(`${k} gives another root`);
const times = Object.fromEntries(Object.keys(all).map((k) => [k, []]));
for (let r = 0; r < rounds; r++)
  for (const [k, f] of Object.entries(all)) {
    const t = performance.now();
    f();
    times[k].push(performance.now() - t);
  }
const median = (t) => [...t].sort((a, b) => a - b)[t.length >> 1];
const base = median(times.pqdb);
for (const [k, t] of Object.entries(times))
  console.log(`${k.padEnd(48)} ${median(t).toFixed(0).padStart(6)} ms  ${(median(t) / base).toFixed(2)}×`);
