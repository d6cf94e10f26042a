// The forms a user of FlexSearch 0.8 would write for bench/search.mjs's queries, timed side by side
// on the same WordNet documents and queries: string ids (the synset's id) or numeric ids (the
// README's "Use numeric IDs" advice), the default profile, preset "performance" (resolution 3,
// fastupdate, a context index of depth 1) and preset "memory" (resolution 1). Exact and 'all'/'any'
// queries go to a "strict" index, prefix queries to a "forward" one, as in search.mjs. Prints the
// p50 / p99 and mean hits of each form per query kind; search.mjs's FlexSearch peer uses the
// fastest form whose hits match the others'. (On 2026-12-07: numeric ids with the default profile;
// "performance" answers 'all' queries in microseconds but finds half the matches, since its
// context index pairs only neighbouring words; "memory" is slower on multi-word queries.)
//
//   node bench/search-forms.mjs [--records 100000] [--queries 500]

import { Index as FlexIndex } from 'flexsearch';
import { synsets, queryWords, rng, searchText } from './harness.mjs';

const args = process.argv.slice(2);
const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
const N = Number(arg('--records', 100_000));
const QUERIES = Number(arg('--queries', 500));
const LIMIT = 20;

const records = synsets(N);
const text = searchText;
const random = rng(1);
const { pick, wordsFrom } = queryWords(records, random);
const cut = (w) => w.slice(0, 2 + Math.floor(random() * 3));
const KINDS = [
  { kind: 'exact, 1 word', prefix: false, suggest: false, make: () => wordsFrom(1)[0] },
  { kind: "'all', 2 words", prefix: false, suggest: false, make: () => wordsFrom(2).join(' ') },
  { kind: "'any', 2 words", prefix: false, suggest: true, make: () => `${wordsFrom(1)[0]} ${wordsFrom(1)[0]}` },
  { kind: 'prefix, 2–4 letters', prefix: true, suggest: false, make: () => cut(wordsFrom(1, 2)[0]) },
  {
    kind: "prefix, 'all', word + 2–4",
    prefix: true,
    suggest: false,
    make: () => {
      const [a, b] = wordsFrom(2, 2);
      return `${a} ${cut(b)}`;
    },
  },
];
for (const k of KINDS) k.queries = Array.from({ length: QUERIES }, k.make);

const FORMS = [
  { name: 'string ids, default profile', numeric: false, opts: {} },
  { name: 'numeric ids, default profile', numeric: true, opts: {} },
  { name: 'numeric ids, preset "performance"', numeric: true, opts: { preset: 'performance' } },
  { name: 'numeric ids, preset "memory"', numeric: true, opts: { preset: 'memory' } },
];
const rank = (a, p) => a[Math.max(0, Math.ceil((p / 100) * a.length) - 1)];
console.log(`FlexSearch forms: ${records.length} synsets, ${QUERIES} queries per kind, limit ${LIMIT}\n`);
for (const f of FORMS) {
  const t0 = performance.now();
  const strict = new FlexIndex({ ...f.opts, tokenize: 'strict' });
  const forward = new FlexIndex({ ...f.opts, tokenize: 'forward' });
  for (let i = 0; i < records.length; i++) {
    const id = f.numeric ? i : records[i].id;
    strict.add(id, text(records[i].value));
    forward.add(id, text(records[i].value));
  }
  const buildMs = performance.now() - t0;
  const line = [];
  for (const k of KINDS) {
    const ix = k.prefix ? forward : strict;
    for (const q of k.queries.slice(0, 50)) ix.search(q, { limit: LIMIT, suggest: k.suggest });
    const times = new Float64Array(k.queries.length);
    let hits = 0;
    for (let i = 0; i < k.queries.length; i++) {
      const t = performance.now();
      hits += ix.search(k.queries[i], { limit: LIMIT, suggest: k.suggest }).length;
      times[i] = performance.now() - t;
    }
    times.sort();
    line.push(
      `${k.kind}: p50 ${rank(times, 50).toFixed(3)} p99 ${rank(times, 99).toFixed(2)} ms, ${(hits / k.queries.length).toFixed(1)} hits`,
    );
  }
  console.log(`${f.name} (build ${(buildMs / 1000).toFixed(1)} s)\n  ${line.join('\n  ')}`);
}
