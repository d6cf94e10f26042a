// The cold verifier of the migration evaluation, run in its own process after the store process has
// closed: opens the file store read-only (nothing repaired or written) and checks it against the
// expected-data manifest written before the run and the writes acknowledged during it:
//   - the migration finished ('done') and its accounting adds up to what the run did;
//   - every expected record reads back with the manifest's SHA-384, the deleted one is absent, no
//     other id exists, and every live record's sealed bytes name the target suite and generation;
//   - the lexical index persisted at activation answers like a brute-force index rebuilt from the
//     manifest's data with its own tokenizer (the same ids in the same ranking order: all of them
//     for queries with up to 500 results, the first 500 for the others, since search decrypts each
//     result) and like a fresh pqdb memory store loaded with that data (first 100 ids, in order),
//     over random queries and every word of sampled records;
//   - verifyStore over the read-only page store finds no problem.
// The data for the search checks is regenerated from WordNet and must hash to the manifest first.
//
// Forked; IPC from the parent: { verify: { dir, keysPath, manifestPath, changesPath, queries, seed } };
// it answers { result } or { failed }.

import { readFileSync } from 'node:fs';
import { openStore, openNodeFsPageStore, verifyStore, verifySealed } from '../../dist/node.js';
import { synsets } from '../harness.mjs';
import { COLLECTION, SCHEMA, INDEX, TO_SUITE, TO_SUITE_ID, valueHash, prng, tokenize, fromHex } from './common.mjs';

/** How many leading results of each query are compared, in order, with a fresh memory store. */
const RANKED = 100;
/** Queries with more results than this are compared on their first CAP (in ranking order). */
const CAP = 500;

const timed = async (fn) => {
  const t0 = performance.now();
  const value = await fn();
  return [value, performance.now() - t0];
};

/** Suite id and generation of the sealed record inside an export (docs/format.md: "PQDX" ‖ 1 ‖ be16 ‖ leaf ‖ be32 ‖ record ‖ …). */
function sealedHeader(exported) {
  const dv = new DataView(exported.buffer, exported.byteOffset, exported.byteLength);
  const at = 7 + dv.getUint16(5);
  const record = at + 4;
  return { suite: exported[record + 1], generation: dv.getUint32(record + 4) };
}

/**
 * A plain inverted index (term → id → occurrences) over the lemma and gloss, built without pqdb,
 * ranking as docs/lexical-index.md specifies: more query terms matched first, then the higher total
 * term frequency (a prefix term sums over every term it begins), then id in UTF-16 order.
 */
function bruteIndex(values) {
  const postings = new Map();
  for (const [id, v] of values) {
    for (const field of [v.lemma, v.gloss]) {
      for (const t of tokenize(field)) {
        let m = postings.get(t);
        if (m === undefined) postings.set(t, (m = new Map()));
        m.set(id, (m.get(id) ?? 0) + 1);
      }
    }
  }
  const terms = [...postings.keys()];
  return {
    /** Every id matching `query`, best first ('all': every term; 'any': at least one). */
    search(query, { mode, prefix }) {
      const tokens = tokenize(query);
      if (tokens.length === 0) return [];
      const last = prefix ? tokens.pop() : undefined;
      const groups = [...new Set(tokens)].map((t) => postings.get(t) ?? new Map());
      if (last !== undefined) {
        const g = new Map();
        for (const t of terms)
          if (t.startsWith(last)) for (const [id, n] of postings.get(t)) g.set(id, (g.get(id) ?? 0) + n);
        groups.push(g);
      }
      const score = new Map();
      for (const g of groups) {
        for (const [id, n] of g) {
          const x = score.get(id);
          if (x === undefined) score.set(id, { id, matched: 1, tf: n });
          else {
            x.matched++;
            x.tf += n;
          }
        }
      }
      let hits = [...score.values()];
      if (mode === 'all') hits = hits.filter((x) => x.matched === groups.length);
      hits.sort((a, b) => b.matched - a.matched || b.tf - a.tf || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
      return hits.map((x) => x.id);
    },
  };
}

async function verify(o) {
  const log = o.quiet ? () => {} : (s) => process.stderr.write(`[migration-eval verifier] ${s}\n`);
  const manifest = JSON.parse(readFileSync(o.manifestPath, 'utf8'));
  const changes = JSON.parse(readFileSync(o.changesPath, 'utf8'));
  const keys = JSON.parse(readFileSync(o.keysPath, 'utf8'));
  const unlock = fromHex(keys.unlock);
  const signerPublicKey = fromHex(keys.signerPublic);
  const problems = [];
  const problem = (s) => {
    if (problems.length < 50) problems.push(s);
  };

  // The expected final data: the manifest's records (regenerated, each checked against its hash),
  // with the acknowledged update, insert and delete applied.
  const source = synsets(manifest.records);
  let sourceMismatches = 0;
  const expected = new Map();
  for (const { id, value } of source) {
    if (valueHash(value) !== manifest.hashes[id]) sourceMismatches++;
    expected.set(id, value);
  }
  if (sourceMismatches > 0 || source.length !== manifest.records)
    problem(`the regenerated source differs from the manifest (${sourceMismatches} hashes)`);
  const expectedHash = new Map(Object.entries(manifest.hashes));
  for (const c of changes.writes) {
    if (c.kind === 'delete') {
      expected.delete(c.id);
      expectedHash.delete(c.id);
    } else {
      if (valueHash(c.value) !== c.hash) problem(`change ${c.kind} ${c.id}: hash does not match its value`);
      expected.set(c.id, c.value);
      expectedHash.set(c.id, c.hash);
    }
  }

  // Cold, read-only open.
  const [pages, openPagesMs] = await timed(() => openNodeFsPageStore(o.dir, { readOnly: true, create: false }));
  const [store, openStoreMs] = await timed(() =>
    openStore({ storage: pages, readOnly: true, unlock, signerPublicKey }),
  );
  const words = store.collection(COLLECTION, { schema: SCHEMA, index: INDEX });
  const migration = store.migration();
  if (migration?.phase !== 'done') problem(`migration phase ${migration?.phase}, expected done`);

  log('records …');
  // Records.
  const deleted = changes.writes.filter((c) => c.kind === 'delete').map((c) => c.id);
  const records = {
    expected: expectedHash.size,
    checked: 0,
    matched: 0,
    mismatched: 0,
    missing: 0,
    unexpected: 0,
    deletedAbsent: 0,
    size: words.size,
    targetSuite: 0,
    otherSuite: 0,
  };
  const [, recordsMs] = await timed(async () => {
    for (const [id, hash] of expectedHash) {
      records.checked++;
      const v = await words.get(id);
      if (v === undefined) {
        records.missing++;
        problem(`missing ${id}`);
      } else if (valueHash(v) === hash) records.matched++;
      else {
        records.mismatched++;
        problem(`value of ${id} differs from the manifest`);
      }
    }
    for (const id of deleted) {
      if (!words.has(id) && (await words.get(id)) === undefined) records.deletedAbsent++;
      else problem(`deleted ${id} is still there`);
    }
    for await (const { id } of words.scan({})) {
      if (!expectedHash.has(id)) {
        records.unexpected++;
        problem(`unexpected id ${id}`);
      }
    }
  });
  if (records.size !== expectedHash.size) problem(`collection size ${records.size}, expected ${expectedHash.size}`);

  log('sealed suites and exports …');
  // Live records sealed under the target suite in the migration's generation, read from the sealed
  // bytes of their exports (every record up to `suiteSample`, else a random sample of that many
  // plus the ids written during the run: an export costs milliseconds); 200 of those exports also
  // verify against the signed checkpoint. verifyStore below covers every record's generation log.
  const rand = prng(o.seed);
  const allIds = [...expectedHash.keys()];
  const written = changes.writes.filter((c) => c.kind !== 'delete').map((c) => c.id);
  const suiteSample = o.suiteSample ?? 5000;
  const suiteIds =
    allIds.length <= suiteSample
      ? allIds
      : [
          ...new Set([
            ...written,
            ...Array.from({ length: suiteSample }, () => allIds[Math.floor(rand() * allIds.length)]),
          ]),
        ];
  const proofSample = new Set([
    ...written,
    ...Array.from({ length: 200 }, () => suiteIds[Math.floor(rand() * suiteIds.length)]),
  ]);
  records.suiteChecked = suiteIds.length;
  let proofsVerified = 0;
  const [, suitesMs] = await timed(async () => {
    for (const id of suiteIds) {
      const exported = await words.exportSealed(id);
      const h = sealedHeader(exported);
      if (h.suite === TO_SUITE_ID && h.generation === migration?.generation) records.targetSuite++;
      else {
        records.otherSuite++;
        problem(`${id} is sealed with suite ${h.suite} in generation ${h.generation}`);
      }
      if (proofSample.has(id)) {
        const r = verifySealed(exported, signerPublicKey);
        if (r.valid && r.id === id) proofsVerified++;
        else problem(`export of ${id} does not verify`);
      }
    }
  });

  log('search …');
  // Search: random queries (1–3 words of a random record, 'all' mode; some 'any' and prefix ones)
  // and every word of sampled records as a single-word query.
  const brute = bruteIndex(expected);
  const mem = await openStore({
    storage: 'memory',
    create: true,
    recipients: [fromHex(keys.recipientPublic)],
    unlock,
    suite: TO_SUITE,
    autoCheckpoint: false,
  });
  const memWords = mem.collection(COLLECTION, { schema: SCHEMA, index: INDEX });
  const entries = [...expected];
  for (let i = 0; i < entries.length; i += 1000)
    await mem.batch((tx) => entries.slice(i, i + 1000).forEach(([id, v]) => tx.put(memWords, id, v)));
  const queries = [];
  const pick = (a) => a[Math.floor(rand() * a.length)];
  for (let q = 0; q < o.queries; q++) {
    const [, v] = pick(entries);
    const tokens = tokenize(`${v.lemma} ${v.gloss}`);
    const n = 1 + Math.floor(rand() * 3);
    const words_ = Array.from({ length: n }, () => pick(tokens));
    const kind = q % 10;
    // 8 in 10 'all' (the default), 1 'any', 1 prefix ('all', last word cut to 1–4 letters).
    if (kind === 8) queries.push({ query: words_.join(' '), mode: 'any', prefix: false, source: 'random' });
    else if (kind === 9) {
      const last = words_.pop();
      queries.push({
        query: [...words_, last.slice(0, 1 + Math.floor(rand() * Math.min(4, last.length)))].join(' '),
        mode: 'all',
        prefix: true,
        source: 'random',
      });
    } else queries.push({ query: words_.join(' '), mode: 'all', prefix: false, source: 'random' });
  }
  const sampleWords = new Set();
  for (let i = 0; i < o.wordSample; i++) {
    const [, v] = pick(entries);
    for (const t of tokenize(`${v.lemma} ${v.gloss}`)) sampleWords.add(t);
  }
  for (const w of sampleWords) queries.push({ query: w, mode: 'all', prefix: false, source: 'word' });
  const search = {
    queries: queries.length,
    random: o.queries,
    words: sampleWords.size,
    sampledRecords: o.wordSample,
    setEqualBrute: 0,
    orderEqualBrute: 0,
    orderedEqualMemory: 0,
    comparedInFull: 0,
    comparedFirst: 0,
    cap: CAP,
    resultsTotal: 0,
    emptyResults: 0,
    valueMismatches: 0,
  };
  const limit = expected.size + 10;
  const [, searchMs] = await timed(async () => {
    for (const q of queries) {
      const all = brute.search(q.query, q);
      // Every result when there are at most CAP, else the first CAP (each result is decrypted).
      const full = all.length <= CAP;
      const want = full ? all : all.slice(0, CAP);
      const opts = { mode: q.mode, prefix: q.prefix, limit: full ? limit : CAP };
      const got = await words.search(q.query, opts);
      const ids = got.map((r) => r.id);
      for (const r of got) if (valueHash(r.value) !== expectedHash.get(r.id)) search.valueMismatches++;
      if (full) search.comparedInFull++;
      else search.comparedFirst++;
      // Ranking: the first RANKED ids, in order, equal those of a fresh memory store of the same data.
      const memIds = (await memWords.search(q.query, { ...opts, limit: RANKED })).map((r) => r.id);
      search.resultsTotal += ids.length;
      if (ids.length === 0) search.emptyResults++;
      const wantSet = new Set(want);
      if (ids.length === want.length && new Set(ids).size === ids.length && ids.every((id) => wantSet.has(id)))
        search.setEqualBrute++;
      else problem(`search ${JSON.stringify(q)}: ${ids.length} ids, brute force ${want.length} (of ${all.length})`);
      if (ids.every((id, i) => id === want[i])) search.orderEqualBrute++;
      else problem(`search ${JSON.stringify(q)}: ranking differs from the brute-force index`);
      if (memIds.length === Math.min(RANKED, ids.length) && memIds.every((id, i) => id === ids[i]))
        search.orderedEqualMemory++;
      else
        problem(`search ${JSON.stringify(q)}: differs from a fresh memory store (${ids.length} vs ${memIds.length})`);
    }
  });
  if (search.valueMismatches > 0)
    problem(`${search.valueMismatches} search results carried values unlike the manifest`);
  await mem.close();
  await store.close();
  await pages.close();

  log('verifyStore …');
  // verifyStore over the read-only page store.
  const vpages = await openNodeFsPageStore(o.dir, { readOnly: true, create: false });
  const [report, verifyStoreMs] = await timed(() => verifyStore(vpages, { unlock, signerPublicKey }));
  await vpages.close();
  for (const p of report.problems.slice(0, 10)) problem(`verifyStore: ${JSON.stringify(p)}`);

  const ok = problems.length === 0 && report.ok && report.complete;
  return {
    ok,
    problems,
    migration,
    records: { ...records, deleted, proofsVerified, proofSample: proofSample.size },
    search,
    verifyStore: {
      ok: report.ok,
      complete: report.complete,
      counts: report.counts,
      skipped: report.skipped,
      problems: report.problems.length,
    },
    timingsMs: {
      openPages: openPagesMs,
      openStore: openStoreMs,
      records: recordsMs,
      suites: suitesMs,
      search: searchMs,
      verifyStore: verifyStoreMs,
    },
  };
}

process.on('message', (m) => {
  if (m.verify === undefined) return;
  verify(m.verify).then(
    (result) => process.send({ result }, () => process.disconnect()),
    (e) =>
      process.send(
        { failed: e instanceof Error ? `${e.name}${e.code ? ` ${e.code}` : ''}: ${e.message}\n${e.stack}` : String(e) },
        () => process.disconnect(),
      ),
  );
});
