// Shared pieces of the live-migration evaluation (bench/migration-eval.mjs): the fixture's
// collection, the canonical value hash the expected-data manifest holds, a seeded PRNG, the
// process-independent clock every timestamp uses, nearest-rank percentiles and a tokenizer that
// mirrors the lexical index's (docs/lexical-index.md) for the brute-force search check.
//
// Hashes use node:crypto's SHA-384, not pqdb's, so the check does not trust the engine under test.

import { createHash } from 'node:crypto';
import { createServer } from 'node:net';

export const COLLECTION = 'synsets';
export const SCHEMA = Object.freeze({ lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' });
export const INDEX = Object.freeze({ text: ['lemma', 'gloss'] });
export const FROM_SUITE = 'gcmsiv-hkdf256';
export const TO_SUITE = 'gcmsiv-hkdf384';
/** Suite id of TO_SUITE in a sealed record's header (docs/format.md, byte 1). */
export const TO_SUITE_ID = 2;

/** JSON with object keys sorted at every level: the same value always gives the same text. */
export function canonicalJson(v) {
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v);
}

/** Hex SHA-384 of a value's canonical JSON (what the manifest records per id). */
export function valueHash(v) {
  return createHash('sha384').update(canonicalJson(v)).digest('hex');
}

/** Milliseconds since the Unix epoch with sub-millisecond resolution, comparable across processes. */
export const wallMs = () => performance.timeOrigin + performance.now();

/** mulberry32: a small seeded PRNG returning floats in [0, 1). */
export function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Nearest-rank percentile of ascending `sorted` (p in 0..100); undefined when empty. */
export function nearestRank(sorted, p) {
  if (sorted.length === 0) return undefined;
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(sorted.length, rank) - 1];
}

const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;
const MAX_TOKEN_CODE_POINTS = 64;

/**
 * The index terms of `text` as the lexical index defines them (docs/lexical-index.md): NFKC, lower
 * case, runs of letters and numbers with the marks inside words, at most 64 code points each.
 */
export function tokenize(text) {
  const ascii = /^[\x00-\x7f]*$/.test(text);
  const s = ascii ? text.toLowerCase() : text.normalize('NFKC').toLowerCase().normalize('NFKC');
  const out = [];
  for (const m of s.matchAll(WORD)) {
    let t = m[0];
    if (t.length > MAX_TOKEN_CODE_POINTS) {
      const cps = Array.from(t);
      if (cps.length > MAX_TOKEN_CODE_POINTS) t = cps.slice(0, MAX_TOKEN_CODE_POINTS).join('');
    }
    out.push(t);
  }
  return out;
}

export const hexOf = (u8) => Buffer.from(u8).toString('hex');
export const fromHex = (h) => new Uint8Array(Buffer.from(h, 'hex'));

/**
 * Wall-clock time of each migration phase, from the progress reports ({ phase, at }, in order):
 * a phase's first report marks the end of the one before it. [downFrom, downTo) is the time the
 * store was down (kill or reload to serving again), subtracted where it overlaps a phase.
 */
export function phaseWalls(progress, migrateAt, doneAt, downFrom, downTo) {
  const firstAt = (phase) => progress.find((p) => p.phase === phase)?.at;
  const bounds = [
    ['copying', migrateAt, firstAt('indexing')],
    ['indexing', firstAt('indexing'), firstAt('verifying')],
    ['verifying', firstAt('verifying'), firstAt('activating')],
    ['activating', firstAt('activating'), doneAt],
  ];
  const walls = {};
  for (const [phase, a, b] of bounds) {
    if (a === undefined || b === undefined) continue;
    const overlap = downFrom !== undefined ? Math.max(0, Math.min(b, downTo) - Math.max(a, downFrom)) : 0;
    walls[phase] = { wallMs: b - a, downMs: overlap, wallExcludingDownMs: b - a - overlap };
  }
  return walls;
}

/**
 * Event-loop stalls of the store process ({ process, at, ms }: a gap of `ms` ending at `at`) by
 * migration phase (bounds as in phaseWalls; 'other' before the migration or after it).
 */
export function stallsByPhase(stalls, progress, migrateAt, doneAt) {
  const firstAt = (phase) => progress.find((p) => p.phase === phase)?.at ?? Infinity;
  const edges = [
    ['copying', migrateAt],
    ['indexing', firstAt('indexing')],
    ['verifying', firstAt('verifying')],
    ['activating', firstAt('activating')],
    ['other', doneAt],
  ];
  const out = Object.fromEntries([...edges.map(([p]) => p)].map((p) => [p, { count: 0, maxMs: 0 }]));
  for (const s of stalls) {
    let phase = 'other';
    for (const [p, at] of edges) if (s.at - s.ms / 2 >= at) phase = p;
    out[phase].count++;
    out[phase].maxMs = Math.max(out[phase].maxMs, s.ms);
  }
  return out;
}

/** A TCP port on 127.0.0.1 that was free a moment ago. */
export function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Latencies of requests sorted ascending, a failed or wrong read counting as ∞. */
export function sortedLatencies(requests) {
  return requests.map((r) => (r.class === 'ok' || r.class === 'late' ? r.latencyMs : Infinity)).sort((a, b) => a - b);
}

/**
 * The read statistics of an evaluation: counts per outcome class (`classes`, beyond 'ok'), and
 * nearest-rank latency percentiles of the measured requests (neither excluded nor interrupted).
 */
export function readStats(requests, dispatchMs, classes, readers) {
  const measured = requests.filter((r) => r.class !== 'excluded' && r.class !== 'interrupted');
  const latencies = sortedLatencies(measured);
  const count = (c) => requests.filter((r) => r.class === c).length;
  const dispatch = [...dispatchMs].sort((a, b) => a - b);
  return {
    scheduled: requests.length,
    measured: measured.length,
    withinDeadline: count('ok'),
    missedDeadline: measured.length - count('ok'),
    ...Object.fromEntries(classes.map((c) => [c, count(c)])),
    latencyMs: {
      p50: nearestRank(latencies, 50),
      p95: nearestRank(latencies, 95),
      p99: nearestRank(latencies, 99),
      max: latencies.at(-1),
    },
    dispatchDelayMs: { p50: nearestRank(dispatch, 50), p99: nearestRank(dispatch, 99), max: dispatch.at(-1) },
    byReader: Array.from({ length: readers }, (_, r) => requests.filter((x) => x.reader === r).length),
  };
}

/**
 * The "Migration" section of an evaluation's summary.md: the accounting against the expected one,
 * the wall and work times, and each phase's time. `down` names the down window ("kill → serving
 * again", "reload → reopened").
 */
export function migrationMarkdown(accounting, expected, m, down) {
  const ms = (v) => (v === undefined ? '—' : `${Math.round(v)} ms`);
  const s = (v) => `${(v / 1000).toFixed(2)} s`;
  const a = accounting;
  return [
    '## Migration',
    '',
    '| | copied | superseded | deleted | inserted | withheld | failed | total |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
    `| accounting | ${a.copied} | ${a.superseded} | ${a.deleted} | ${a.inserted} | ${a.withheld} | ${a.failed} | ${a.total} |`,
    `| expected | ${expected.copied} | 1 | 1 | 1 | 0 | 0 | ${expected.total} |`,
    '',
    `Wall clock ${s(m.wallMs)}, of which down ${s(m.downMs)} (${down}); **without the down window ${s(m.wallExcludingDownMs)}**; engine work time (accounting.workMs) ${s(m.engineWorkMs)}.`,
    '',
    '| phase | engine phaseMs | wall (down window excluded) |',
    '|---|---:|---:|',
    ...['copying', 'indexing', 'verifying', 'activating'].map(
      (p) => `| ${p} | ${ms(m.enginePhaseMs?.[p])} | ${ms(m.wallPhases[p]?.wallExcludingDownMs)} |`,
    ),
    ...(m.stalls === undefined
      ? []
      : [
          '',
          'Event-loop stalls of the store process (a 2 ms tick arriving ≥ 10 ms late; reads wait through them):',
          '',
          '| phase | stalls ≥ 10 ms | longest |',
          '|---|---:|---:|',
          ...Object.entries(m.stalls).map(
            ([p, x]) => `| ${p} | ${x.count} | ${x.count === 0 ? '—' : `${x.maxMs.toFixed(1)} ms`} |`,
          ),
        ]),
  ];
}
