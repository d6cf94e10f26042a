// A schema upgrade's rewrite beside a reader: N WordNet synsets in a file store, then the
// collection reopened with a schema that renames a field and adds a required one, and
// `upgradeRecords()` rewriting every record while a reader issues random gets on a fixed schedule
// of --rate reads a second (a read's latency runs from its scheduled time, so event-loop time the
// rewrite takes counts against it). Also the commit of an optional field added (no rewrite): the
// first write after reopening with it against a write without.
//
//   node bench/upgrade.mjs [--records 100000] [--rate 200] [--no-auto-compact] [--out report.json]
// Default report: bench/results/upgrade-<arch>-<runtime>-<date>[-n].json.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, generateRecipient } from '../dist/node.js';
import { hostInfo, synsets, saveReport, rng } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const RATE = Number(arg('--rate', 200));
const OUT = arg('--out', undefined);

// Past WordNet's 117,659 synsets, the same ones again under new ids (as bench/scale.mjs).
const source = synsets(N);
const records = Array.from({ length: N }, (_, i) => {
  const s = source[i % source.length];
  const lap = Math.floor(i / source.length);
  return { id: lap === 0 ? s.id : `${s.id}.${lap}`, value: s.value };
});
const dir = mkdtempSync(join(tmpdir(), 'pqdb-bench-upgrade-'));
const who = generateRecipient();
const OLD = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
const NEW = { word: 'string', pos: 'string', gloss: 'string', offset: 'integer', source: 'string' };
/** --no-auto-compact: the store's automatic compaction off (by default it runs once the rewrite leaves enough dead bytes). */
const AUTO_COMPACT = !args.includes('--no-auto-compact');
const opened = (create = false) =>
  openStore({
    location: dir,
    create,
    recipients: [who.publicKey],
    unlock: who.secretKey,
    autoCheckpoint: false,
    ...(AUTO_COMPACT ? {} : { autoCompact: false }),
  });
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(p * xs.length) - 1)];

let store = await opened(true);
let c = store.collection('synsets', { schema: OLD });
for (let i = 0; i < N; i += 1000)
  await store.batch((tx) => {
    for (let j = i; j < Math.min(N, i + 1000); j++) tx.put(c, records[j].id, records[j].value);
  });
await store.close();

// An optional field added: recorded by the next write's commit, no rewrite.
store = await opened();
c = store.collection('synsets', { schema: { ...OLD, note: 'string?' } });
let t = performance.now();
await c.put(records[0].id, { ...records[0].value, note: 'added' });
const optionalCommitMs = performance.now() - t;
t = performance.now();
await c.put(records[1].id, { ...records[1].value, note: 'again' });
const plainCommitMs = performance.now() - t;
await store.close();

store = await opened();
const up = store.collection('synsets', {
  schema: { ...NEW, note: 'string?' },
  upgrade: (v) => ({
    word: v.lemma,
    pos: v.pos,
    gloss: v.gloss,
    offset: v.offset,
    source: 'wordnet',
    ...(v.note ? { note: v.note } : {}),
  }),
});
await up.put('upgrade-marker', { word: 'w', pos: 'n', gloss: 'g', offset: 0, source: 'bench' }); // records version 2
const random = rng(5);
const latencies = [];
let reading = true;
const reader = (async () => {
  const start = performance.now();
  for (let k = 0; reading; k++) {
    const due = start + (k * 1000) / RATE;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const id = records[Math.floor(random() * N)].id;
    const v = await up.get(id);
    if (v?.source !== 'wordnet') throw new Error(`read ${id}: ${JSON.stringify(v)}`);
    latencies.push(performance.now() - due);
  }
})();
t = performance.now();
const result = await up.upgradeRecords();
const upgradeMs = performance.now() - t;
reading = false;
await reader;
await store.close();
rmSync(dir, { recursive: true, force: true });

const report = {
  bench: 'upgrade',
  host: hostInfo(),
  records: N,
  rate: RATE,
  autoCompact: AUTO_COMPACT,
  optionalFieldCommitMs: optionalCommitMs,
  plainCommitMs,
  upgrade: { ...result, ms: upgradeMs, recordsPerSec: result.rewritten / (upgradeMs / 1000) },
  reads: {
    count: latencies.length,
    p50Ms: pct(latencies, 0.5),
    p99Ms: pct(latencies, 0.99),
    maxMs: Math.max(...latencies),
  },
};
console.log(JSON.stringify(report.upgrade), JSON.stringify(report.reads));
console.log(
  `optional field: ${optionalCommitMs.toFixed(1)} ms for the commit that records it (a plain write ${plainCommitMs.toFixed(1)} ms); upgrade rewrite of ${result.rewritten} records ${(upgradeMs / 1000).toFixed(2)} s beside ${RATE} reads/s: p50 ${report.reads.p50Ms.toFixed(2)} / p99 ${report.reads.p99Ms.toFixed(2)} / max ${report.reads.maxMs.toFixed(2)} ms`,
);
saveReport('upgrade', report, OUT);
