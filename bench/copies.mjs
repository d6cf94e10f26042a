// Managed copies, restore and authority decisions on a real workload: N WordNet 3.1 synsets
// (default 100,000, batches of 1,000) in a file store under 'gcmsiv-hkdf256', each record with a
// governance state (four scopes, two of them with a purpose, two regions), a signed authority
// policy in force whose rules cover those scopes. Everything goes through the public API of the
// built dist/node.js, except the per-record decision, which is dist/engine/authority.js's
// `authorityAllows` (what the migration copy step calls per record).
//
//   1. backup: `store.backup(dir)` repeated on the quiet store (tookMs, pausedMs, pages, bytes), then
//      repeated while a loop of single-record puts runs (each put's latency, and the same loop's
//      latency on the idle store for comparison);
//   2. restore: `restoreStore(copy, { live })` repeated (tookMs, split into the copy's verification,
//      result.verify.ms, and the re-seal, the rest); then once after a policy that revokes
//      `restore` for one scope, whose records must come back as withheld;
//   3. authority: `authorityAllows(manifest, 'migrate', governance)` over 1,000,000 calls per round
//      on the records' canonical governance texts, with the policy and without; and the whole
//      migration (to 'gcmsiv-hkdf384', then back) of two freshly loaded stores, one with the policy
//      and one without, alternately;
//   4. posture: `store.posture()` on the loaded store, when the Store has that method.
//
// Writes bench/results/copies-<arch>[-emulated]-<runtime>-<date>[-n].json and a Markdown summary beside it, and
// prints the table. Exits 0 whatever the figures: the targets are reported, not asserted
// (node-tests/copies-bench.test.ts checks the accounting on a small run).
//
//   node bench/copies.mjs [--records 100000] [--backup-runs 5] [--loaded-backup-runs 20] [--restore-runs 3]
//        [--migration-runs 4] [--decisions 1000000] [--out report.json] [--quiet]

import { mkdtempSync, rmSync, mkdirSync, writeFileSync } from 'node:fs';
import os, { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { openStore, restoreStore, deleteStore, generateRecipient, generateSigner, signPolicy } from '../dist/node.js';
import { authorityAllows } from '../dist/engine/authority.js';
import { canonicalGovernanceText } from '../dist/crypto/record.js';
import { hostInfo, synsets, reportPath } from './harness.mjs';

export const DEFAULTS = Object.freeze({
  records: 100_000,
  batch: 1000,
  backupRuns: 5,
  /** Backups with a put loop running (each gives ~10 put latencies at 100,000 records). */
  loadedBackupRuns: 20,
  restoreRuns: 3,
  /** Migrations per store (forward, back, …), the two stores alternating. */
  migrationRuns: 4,
  decisions: 1_000_000,
  decisionRounds: 11,
  postureRuns: 20,
  /** Puts timed on the idle store, for comparison with the puts issued during a backup. */
  idlePuts: 300,
  quiet: false,
});

/** Targets for 100,000 records (backup and restore scale linearly with the record count). */
export const TARGETS = Object.freeze({ backupMs: 3000, restoreMs: 8000, decisionNs: 200, postureMs: 50 });

const COLLECTION = 'synsets';
const SCHEMA = Object.freeze({ lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' });
const FROM_SUITE = 'gcmsiv-hkdf256';
const TO_SUITE = 'gcmsiv-hkdf384';
const ALL = ['read', 'write', 'migrate', 'restore'];
/** The scope whose `restore` the second policy revokes. */
const REVOKED = 'hr';

/**
 * Governance of record i: public 40%, research (analytics) 25%, billing (invoicing) 20%, hr
 * (payroll) 15%, alternating two regions. Eight distinct states, as a store in service would have
 * a few dozen at most (each is one data key).
 */
export function governanceOf(i) {
  const k = i % 20;
  const region = (i >> 1) % 2 === 0 ? 'eu' : 'us';
  if (k < 8) return { scope: 'public', region };
  if (k < 13) return { scope: 'research', purpose: 'analytics', region };
  if (k < 17) return { scope: 'billing', purpose: 'invoicing', region };
  return { scope: REVOKED, purpose: 'payroll', region };
}

/** Policy version 1 allows everything on the four scopes; version 2 takes `restore` from REVOKED. */
function policyDocument(version) {
  return {
    version,
    rules: [
      { scope: 'public', allow: ALL },
      { scope: 'research', purposes: ['analytics', 'audit'], allow: ALL },
      { scope: 'billing', purposes: ['invoicing', 'audit'], allow: ALL },
      {
        scope: REVOKED,
        purposes: ['payroll', 'audit'],
        allow: version === 1 ? ALL : ALL.filter((op) => op !== 'restore'),
      },
      { scope: '*', allow: ['read'] },
    ],
    domain: 'bench',
  };
}

const now = () => performance.now();
const sorted = (xs) => [...xs].sort((a, b) => a - b);
/** Nearest-rank percentile. */
const rank = (xs, p) => {
  const s = sorted(xs);
  return s.length === 0 ? undefined : s[Math.min(s.length, Math.max(1, Math.ceil((p / 100) * s.length))) - 1];
};
const median = (xs) => {
  const s = sorted(xs);
  const h = s.length >> 1;
  return s.length === 0 ? undefined : s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
};
/** A timed series: every run, the median and the nearest-rank p90. */
const series = (runs) => ({ runs, median: median(runs), p90: rank(runs, 90) });
const latencies = (xs) => ({
  count: xs.length,
  p50: rank(xs, 50),
  p99: rank(xs, 99),
  max: xs.length === 0 ? undefined : Math.max(...xs),
});

/** Loads `data` into a new file store in `dir`, one commit per `batch` records. */
async function loadStore(dir, data, keys, o, { policy }) {
  const t0 = now();
  const store = await openStore({
    location: dir,
    create: true,
    recipients: [keys.recipient.publicKey],
    unlock: keys.recipient.secretKey,
    suite: FROM_SUITE,
    signer: keys.signer.secretKey,
    signerPublicKey: keys.signer.publicKey,
    autoCheckpoint: false,
    ...(policy !== undefined ? { authorityPublicKey: keys.authority.publicKey, authorityDomain: 'bench' } : {}),
  });
  // The policy is in force before the first write: every put goes through the write gate.
  if (policy !== undefined) await store.setPolicy(policy);
  const words = store.collection(COLLECTION, { schema: SCHEMA });
  for (let i = 0; i < data.length; i += o.batch) {
    await store.batch((tx) => {
      for (let j = i; j < Math.min(i + o.batch, data.length); j++)
        tx.put(words, data[j].id, data[j].value, { governance: governanceOf(j) });
    });
  }
  return { store, words, loadMs: now() - t0 };
}

/**
 * `store.posture()` timed `runs` times after one untimed call, when the Store has the method; a
 * record saying it was not run otherwise (no figure is made up for a method that is absent).
 */
export async function timePosture(store, runs) {
  if (typeof store.posture !== 'function')
    return { run: false, reason: 'store.posture is absent from this build: not measured' };
  const first = await store.posture();
  const ms = [];
  for (let i = 0; i < runs; i++) {
    const t = now();
    await store.posture();
    ms.push(now() - t);
  }
  return { run: true, ...series(ms), components: first?.components?.length };
}

/**
 * Times `authorityAllows(manifest, operation, ·)` over `calls` calls per round on `texts` (cycled),
 * `rounds` rounds after one warm-up round; returns ns per call and the allowed count of one round.
 */
function timeDecisions(manifest, operation, texts, calls, rounds) {
  const mask = texts.length - 1; // a power of two
  const round = () => {
    let allowed = 0;
    for (let i = 0; i < calls; i++) if (authorityAllows(manifest, operation, texts[i & mask])) allowed++;
    return allowed;
  };
  const allowed = round();
  const ns = [];
  for (let r = 0; r < rounds; r++) {
    const t = now();
    if (round() !== allowed) throw new Error('authorityAllows changed its answer between rounds');
    ns.push(((now() - t) * 1e6) / calls);
  }
  return { ...series(ns), calls, allowed };
}

/** One migration of `store` to `to`, then retireGenerations (so the next one starts from one generation). */
async function timeMigration(store, to) {
  const t0 = now();
  const status = await store.migrate({ to });
  const wallMs = now() - t0;
  if (status.phase !== 'done' || status.failed !== 0) throw new Error(`migration to ${to}: ${JSON.stringify(status)}`);
  const retired = await store.retireGenerations();
  return {
    to,
    wallMs,
    workMs: status.workMs,
    copyingMs: status.phaseMs.copying,
    copied: status.copied,
    withheld: status.withheld,
    retired,
  };
}

/**
 * Runs the benchmark once; returns the report (also written to `options.out` when given).
 * @param {Partial<typeof DEFAULTS> & { out?: string }} options
 */
export async function runCopiesBench(options = {}) {
  const o = { ...DEFAULTS, ...options };
  const log = o.quiet ? () => {} : (s) => process.stderr.write(`[copies] ${s}\n`);
  const scale = o.records / 100_000;
  const data = synsets(o.records);
  if (data.length < o.records)
    throw new RangeError(`WordNet 3.1 holds ${data.length} synsets, fewer than the ${o.records} asked for`);
  const N = data.length;
  const revokedCount = data.filter((_, i) => governanceOf(i).scope === REVOKED).length;
  const keys = { recipient: generateRecipient(), signer: generateSigner(), authority: generateSigner() };
  const signed = [1, 2].map((v) => signPolicy(policyDocument(v), keys.authority.secretKey, keys.authority.publicKey));
  const base = mkdtempSync(join(tmpdir(), 'pqdb-bench-copies-'));
  const report = {
    kind: 'pqdb managed copies, restore and authority',
    options: o,
    host: { ...hostInfo(), loadAverage: { atStart: os.loadavg() } },
    records: N,
  };
  const opened = [];
  try {
    log(`loading ${N} synsets under ${FROM_SUITE} with policy version 1 in force …`);
    const main = await loadStore(join(base, 'store'), data, keys, o, { policy: signed[0] });
    opened.push(main.store);
    const words = main.words;
    report.load = {
      ms: main.loadMs,
      recordsPerSec: N / (main.loadMs / 1000),
      policyVersion: main.store.policy().version,
    };
    log(`loaded in ${(main.loadMs / 1000).toFixed(2)} s`);

    // A single-record put of an existing record (same value and governance): a write of the kind
    // the backup makes wait; the record count stays N.
    let probe = 0;
    const putOnce = async () => {
      const k = probe++ % Math.min(N, 1000);
      const t = now();
      await words.put(data[k].id, data[k].value, { governance: governanceOf(k) });
      return now() - t;
    };
    const idle = [];
    for (let i = 0; i < o.idlePuts; i++) idle.push(await putOnce());

    // 1. Backups: on the quiet store, then with puts running. Every copy but the one restored
    //    below is retired at once (which deletes its directory).
    const quiet = [];
    let kept;
    for (let r = 0; r < o.backupRuns; r++) {
      const dest = join(base, `backup-quiet-${r}`);
      const b = await main.store.backup(dest);
      quiet.push({ tookMs: b.tookMs, pausedMs: b.pausedMs, pages: b.pages, bytes: b.bytes, records: b.copy.records });
      if (r === o.backupRuns - 1) kept = { dir: dest, id: b.copy.id };
      else await main.store.retireCopy(b.copy.id);
      log(
        `backup ${r + 1}: ${b.tookMs.toFixed(0)} ms, paused ${b.pausedMs.toFixed(1)} ms, ${b.pages} pages, ${b.bytes} B`,
      );
    }
    const loaded = [];
    const duringAll = [];
    for (let r = 0; r < o.loadedBackupRuns; r++) {
      const during = [];
      let done = false;
      const running = main.store.backup(join(base, `backup-loaded-${r}`)).finally(() => (done = true));
      while (!done) during.push(await putOnce());
      const b = await running;
      loaded.push({ tookMs: b.tookMs, pausedMs: b.pausedMs, pages: b.pages, bytes: b.bytes, puts: latencies(during) });
      duringAll.push(...during);
      await main.store.retireCopy(b.copy.id);
      log(
        `backup with puts ${r + 1}: ${b.tookMs.toFixed(0)} ms, paused ${b.pausedMs.toFixed(1)} ms; ${during.length} puts, max ${Math.max(...during).toFixed(1)} ms`,
      );
    }
    report.backup = {
      quiet: {
        runs: quiet,
        tookMs: series(quiet.map((b) => b.tookMs)),
        pausedMs: series(quiet.map((b) => b.pausedMs)),
        pages: quiet.at(-1).pages,
        bytes: quiet.at(-1).bytes,
        records: quiet.at(-1).records,
      },
      withPuts: {
        runs: loaded,
        tookMs: series(loaded.map((b) => b.tookMs)),
        pausedMs: series(loaded.map((b) => b.pausedMs)),
        putLatencyMs: latencies(duringAll),
      },
      idlePutLatencyMs: latencies(idle),
    };

    // 2. Restores of the kept copy next to the live store, each into a new directory.
    const restores = [];
    for (let r = 0; r < o.restoreRuns; r++) {
      const location = join(base, `restored-${r}`);
      const res = await restoreStore(kept.dir, {
        location,
        unlock: keys.recipient.secretKey,
        live: main.store,
        signer: keys.signer.secretKey,
        signerPublicKey: keys.signer.publicKey,
      });
      await res.store.close();
      await deleteStore(location);
      if (!res.verify.ok || res.restored !== N || res.withheld !== 0 || res.deleted !== 0)
        throw new Error(`restore ${r + 1}: ${JSON.stringify({ ...res, store: undefined })}`);
      restores.push({
        tookMs: res.tookMs,
        verifyMs: res.verify.ms,
        resealMs: res.tookMs - res.verify.ms,
        restored: res.restored,
        withheld: res.withheld,
        deleted: res.deleted,
        recordsPerSec: res.restored / (res.tookMs / 1000),
        recordsDecrypted: res.verify.counts.recordsDecrypted,
      });
      log(
        `restore ${r + 1}: ${res.tookMs.toFixed(0)} ms (verify ${res.verify.ms.toFixed(0)} ms), ${res.restored} restored`,
      );
    }
    // The same copy after policy version 2 (no `restore` for REVOKED) is installed on the live store.
    await main.store.setPolicy(signed[1]);
    const location = join(base, 'restored-revoked');
    const rev = await restoreStore(kept.dir, {
      location,
      unlock: keys.recipient.secretKey,
      live: main.store,
      signer: keys.signer.secretKey,
      signerPublicKey: keys.signer.publicKey,
    });
    const revokedPolicy = rev.store.policy()?.version;
    await rev.store.close();
    await deleteStore(location);
    log(`restore under policy 2: ${rev.restored} restored, ${rev.withheld} withheld (expected ${revokedCount})`);
    report.restore = {
      runs: restores,
      tookMs: series(restores.map((r) => r.tookMs)),
      verifyMs: series(restores.map((r) => r.verifyMs)),
      resealMs: series(restores.map((r) => r.resealMs)),
      recordsPerSec: series(restores.map((r) => r.recordsPerSec)),
      revoked: {
        scope: REVOKED,
        tookMs: rev.tookMs,
        verifyMs: rev.verify.ms,
        restored: rev.restored,
        withheld: rev.withheld,
        deleted: rev.deleted,
        expectedWithheld: revokedCount,
        newStorePolicyVersion: revokedPolicy,
        withheldRight: rev.withheld === revokedCount && rev.restored === N - revokedCount && rev.deleted === 0,
      },
    };

    // 3a. The decision per record, on the canonical governance texts of records in store order.
    const texts = Array.from({ length: 4096 }, (_, i) => canonicalGovernanceText(governanceOf(i)));
    const b64 = (u8) => Buffer.from(u8).toString('base64');
    const withPolicy = { authority: { keys: [b64(keys.authority.publicKey)], policy: b64(signed[0]) } };
    const migrateCalls = timeDecisions(withPolicy, 'migrate', texts, o.decisions, o.decisionRounds);
    const noPolicy = timeDecisions({}, 'migrate', texts, o.decisions, o.decisionRounds);
    // Under version 2, `restore` is refused exactly for REVOKED: the decision is not constant.
    const v2 = { authority: { keys: withPolicy.authority.keys, policy: b64(signed[1]) } };
    const restoreCalls = timeDecisions(v2, 'restore', texts, o.decisions, o.decisionRounds);
    let expectedRestore = 0;
    for (let i = 0; i < o.decisions; i++) if (governanceOf(i & (texts.length - 1)).scope !== REVOKED) expectedRestore++;
    report.decision = {
      governanceStates: new Set(texts).size,
      example: texts[0],
      migrateWithPolicy: migrateCalls,
      migrateWithoutPolicy: noPolicy,
      restoreUnderRevocation: {
        ...restoreCalls,
        allowedRight: restoreCalls.allowed === expectedRestore,
      },
    };
    log(
      `authorityAllows: ${migrateCalls.median.toFixed(1)} ns with the policy, ${noPolicy.median.toFixed(1)} ns without`,
    );

    // 4. Posture on the loaded store (policy, inventory, 100,000 records).
    report.posture = await timePosture(main.store, o.postureRuns);
    log(report.posture.run ? `posture: ${report.posture.median.toFixed(2)} ms` : report.posture.reason);
    await main.store.close();
    opened.length = 0;
    rmSync(join(base, 'store'), { recursive: true, force: true });
    rmSync(kept.dir, { recursive: true, force: true });

    // 3b. The whole migration, with the policy and without, on two stores loaded alike.
    log('loading two more stores for the migrations (with and without a policy) …');
    const withP = await loadStore(join(base, 'migrate-policy'), data, keys, o, { policy: signed[0] });
    opened.push(withP.store);
    const without = await loadStore(join(base, 'migrate-none'), data, keys, o, { policy: undefined });
    opened.push(without.store);
    const migrations = { withPolicy: [], withoutPolicy: [] };
    for (let r = 0; r < o.migrationRuns; r++) {
      const to = r % 2 === 0 ? TO_SUITE : FROM_SUITE;
      // Alternate which goes first, so a drift in machine speed does not favour one side.
      const order = r % 2 === 0 ? ['withPolicy', 'withoutPolicy'] : ['withoutPolicy', 'withPolicy'];
      for (const side of order) {
        const m = await timeMigration(side === 'withPolicy' ? withP.store : without.store, to);
        if (m.copied !== N || m.withheld !== 0) throw new Error(`migration ${side}: ${JSON.stringify(m)}`);
        migrations[side].push(m);
        log(`migration ${side} → ${to}: ${m.wallMs.toFixed(0)} ms (copying ${m.copyingMs.toFixed(0)} ms)`);
      }
    }
    const mig = (side) => ({
      runs: migrations[side],
      wallMs: series(migrations[side].map((m) => m.wallMs)),
      workMs: series(migrations[side].map((m) => m.workMs)),
      copyingMs: series(migrations[side].map((m) => m.copyingMs)),
    });
    const mw = mig('withPolicy');
    const mn = mig('withoutPolicy');
    report.migration = {
      records: N,
      withPolicy: mw,
      withoutPolicy: mn,
      differenceMs: mw.workMs.median - mn.workMs.median,
      differenceUsPerRecord: ((mw.workMs.median - mn.workMs.median) * 1000) / N,
      copyingDifferenceUsPerRecord: ((mw.copyingMs.median - mn.copyingMs.median) * 1000) / N,
    };
    for (const s of opened) await s.close();
    opened.length = 0;

    const targets = {
      backup: {
        target: `backup ≤ ${(TARGETS.backupMs * scale).toFixed(0)} ms (median tookMs, quiet store)`,
        value: report.backup.quiet.tookMs.median,
        met: report.backup.quiet.tookMs.median <= TARGETS.backupMs * scale,
      },
      restore: {
        target: `restore (verify + re-seal) ≤ ${(TARGETS.restoreMs * scale).toFixed(0)} ms (median tookMs)`,
        value: report.restore.tookMs.median,
        met: report.restore.tookMs.median <= TARGETS.restoreMs * scale,
      },
      restoreWithheld: {
        target: `restore under a policy revoking "${REVOKED}": ${revokedCount} withheld, the rest restored`,
        value: rev.withheld,
        met: report.restore.revoked.withheldRight,
      },
      decision: {
        target: `authorityAllows ≤ ${TARGETS.decisionNs} ns per decision (median, policy in force)`,
        value: migrateCalls.median,
        met: migrateCalls.median <= TARGETS.decisionNs && report.decision.restoreUnderRevocation.allowedRight,
      },
      posture: report.posture.run
        ? {
            target: `store.posture() ≤ ${TARGETS.postureMs} ms (median of ${o.postureRuns})`,
            value: report.posture.median,
            met: report.posture.median <= TARGETS.postureMs,
          }
        : {
            target: `store.posture() ≤ ${TARGETS.postureMs} ms`,
            value: null,
            met: null,
            reason: report.posture.reason,
          },
    };
    report.targets = targets;
    report.host.loadAverage.atEnd = os.loadavg();
    if (o.out !== undefined) {
      mkdirSync(dirname(o.out), { recursive: true });
      writeFileSync(o.out, JSON.stringify(report, null, 2) + '\n');
      writeFileSync(o.out.replace(/\.json$/, '') + '.md', summarize(report));
    }
    return report;
  } finally {
    for (const s of opened) await s.close().catch(() => undefined);
    rmSync(base, { recursive: true, force: true });
  }
}

const ms = (v, d = 1) => (v === undefined || v === null ? '–' : `${v.toFixed(d)} ms`);
const spread = (xs) => Math.max(...xs) - Math.min(...xs);
const verdict = (t) => (t.met === null ? 'not run' : t.met ? 'met' : '**not met**');

/** The Markdown summary (also what is printed). */
export function summarize(e) {
  const h = e.host;
  const b = e.backup;
  const r = e.restore;
  const d = e.decision;
  const m = e.migration;
  const p = e.posture;
  const n = e.records.toLocaleString('en-US');
  return [
    `# Managed copies, restore and authority: ${n} WordNet synsets`,
    '',
    `${h.date} · ${h.cpu} (${h.cores} cores, ${h.arch}${h.emulated ? ', emulated' : ''}) · ${h.runtime} · pqdb ${h.pqdb} · file store, ${FROM_SUITE}, batches of ${e.options.batch}, policy in force (4 scopes, ${d.governanceStates} governance states) · load average ${h.loadAverage.atStart.map((x) => x.toFixed(2)).join(' ')} at the start, ${(h.loadAverage.atEnd ?? []).map((x) => x.toFixed(2)).join(' ')} at the end (other work on the host shares its cores)`,
    '',
    '| measure | median | p90 | runs | target | |',
    '|---|---:|---:|---:|---|---|',
    `| backup, tookMs (quiet store) | ${ms(b.quiet.tookMs.median)} | ${ms(b.quiet.tookMs.p90)} | ${b.quiet.runs.length} | ${e.targets.backup.target} | ${verdict(e.targets.backup)} |`,
    `| backup, pausedMs (quiet store) | ${ms(b.quiet.pausedMs.median)} | ${ms(b.quiet.pausedMs.p90)} | ${b.quiet.runs.length} | | |`,
    `| backup while puts run, tookMs | ${ms(b.withPuts.tookMs.median)} | ${ms(b.withPuts.tookMs.p90)} | ${b.withPuts.runs.length} | | |`,
    `| backup while puts run, pausedMs | ${ms(b.withPuts.pausedMs.median)} | ${ms(b.withPuts.pausedMs.p90)} | ${b.withPuts.runs.length} | | |`,
    `| restore, tookMs (verify + re-seal) | ${ms(r.tookMs.median)} | ${ms(r.tookMs.p90)} | ${r.runs.length} | ${e.targets.restore.target} | ${verdict(e.targets.restore)} |`,
    `| restore: verify (result.verify.ms) | ${ms(r.verifyMs.median)} | ${ms(r.verifyMs.p90)} | ${r.runs.length} | | |`,
    `| restore: the rest (open the copy, re-seal, commit, checkpoint) | ${ms(r.resealMs.median)} | ${ms(r.resealMs.p90)} | ${r.runs.length} | | |`,
    `| authorityAllows, policy in force (ns per call) | ${d.migrateWithPolicy.median.toFixed(1)} ns | ${d.migrateWithPolicy.p90.toFixed(1)} ns | ${d.migrateWithPolicy.runs.length} × ${d.migrateWithPolicy.calls.toLocaleString('en-US')} | ${e.targets.decision.target} | ${verdict(e.targets.decision)} |`,
    `| authorityAllows, no policy (ns per call) | ${d.migrateWithoutPolicy.median.toFixed(1)} ns | ${d.migrateWithoutPolicy.p90.toFixed(1)} ns | ${d.migrateWithoutPolicy.runs.length} × ${d.migrateWithoutPolicy.calls.toLocaleString('en-US')} | | |`,
    `| migration with the policy, engine work | ${ms(m.withPolicy.workMs.median, 0)} | ${ms(m.withPolicy.workMs.p90, 0)} | ${m.withPolicy.runs.length} | | |`,
    `| migration without a policy, engine work | ${ms(m.withoutPolicy.workMs.median, 0)} | ${ms(m.withoutPolicy.workMs.p90, 0)} | ${m.withoutPolicy.runs.length} | | |`,
    p.run
      ? `| store.posture() | ${ms(p.median, 2)} | ${ms(p.p90, 2)} | ${p.runs.length} | ${e.targets.posture.target} | ${verdict(e.targets.posture)} |`
      : `| store.posture() | not run | | | ${e.targets.posture.target} | not run: ${p.reason} |`,
    '',
    `- Copy: ${b.quiet.pages} pages, ${b.quiet.bytes.toLocaleString('en-US')} B (${(b.quiet.bytes / e.records).toFixed(0)} B per record), ${b.quiet.records.toLocaleString('en-US')} records.`,
    `- Single-record put latency while a backup runs: p50 ${ms(b.withPuts.putLatencyMs.p50, 2)}, p99 ${ms(b.withPuts.putLatencyMs.p99, 2)}, max ${ms(b.withPuts.putLatencyMs.max, 2)} over ${b.withPuts.putLatencyMs.count} puts (the same loop on the idle store: p50 ${ms(b.idlePutLatencyMs.p50, 2)}, p99 ${ms(b.idlePutLatencyMs.p99, 2)}, max ${ms(b.idlePutLatencyMs.max, 2)}).`,
    `- Restore: ${Math.round(r.recordsPerSec.median).toLocaleString('en-US')} records/s; under policy version 2 (no \`restore\` for "${r.revoked.scope}"): ${r.revoked.restored.toLocaleString('en-US')} restored, ${r.revoked.withheld.toLocaleString('en-US')} withheld (expected ${r.revoked.expectedWithheld.toLocaleString('en-US')}: ${verdict(e.targets.restoreWithheld)}), ${ms(r.revoked.tookMs, 0)}.`,
    `- Migration ${FROM_SUITE} ⇄ ${TO_SUITE}, medians: wall ${ms(m.withPolicy.wallMs.median, 0)} with the policy, ${ms(m.withoutPolicy.wallMs.median, 0)} without; copy phase ${ms(m.withPolicy.copyingMs.median, 0)} and ${ms(m.withoutPolicy.copyingMs.median, 0)}; difference in engine work ${m.differenceMs.toFixed(0)} ms, ${m.differenceUsPerRecord.toFixed(2)} µs per record (the decision alone: ${(d.migrateWithPolicy.median / 1000).toFixed(3)} µs; one store's runs span ${spread(m.withPolicy.workMs.runs).toFixed(0)} ms with the policy, ${spread(m.withoutPolicy.workMs.runs).toFixed(0)} ms without).`,
    `- Decision under version 2 for \`restore\`: ${d.restoreUnderRevocation.median.toFixed(1)} ns per call, ${d.restoreUnderRevocation.allowed.toLocaleString('en-US')} of ${d.restoreUnderRevocation.calls.toLocaleString('en-US')} allowed (${d.restoreUnderRevocation.allowedRight ? 'as expected' : 'WRONG'}).`,
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const args = process.argv.slice(2);
  const arg = (name, d) => (args.includes(name) ? args[args.indexOf(name) + 1] : d);
  const num = (name, d) => {
    const v = Number(arg(name, d));
    if (!Number.isSafeInteger(v) || v < 1) throw new RangeError(`${name} expected a positive integer`);
    return v;
  };
  const out = arg('--out', undefined) ?? reportPath('copies');
  const e = await runCopiesBench({
    records: num('--records', DEFAULTS.records),
    backupRuns: num('--backup-runs', DEFAULTS.backupRuns),
    loadedBackupRuns: num('--loaded-backup-runs', DEFAULTS.loadedBackupRuns),
    restoreRuns: num('--restore-runs', DEFAULTS.restoreRuns),
    migrationRuns: num('--migration-runs', DEFAULTS.migrationRuns),
    decisions: num('--decisions', DEFAULTS.decisions),
    quiet: args.includes('--quiet'),
    out,
  });
  process.stdout.write(summarize(e));
  process.stdout.write(`\nreport: ${out}\n`);
}
