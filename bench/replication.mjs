// The replication evaluation: a receiver-kill campaign after an industry article's, between two
// processes on two hosts, plus a primary kill, a link cut and a bulk catch-up.
//
//   npm run bench:replication      (node bench/replication.mjs; needs root for the namespaces)
//
// Campaign (the article's timings, each configurable): the primary writes 512 distinct typed
// WordNet records, one commit each, on a fixed schedule spread evenly over the first 210 s, under
// cnsa2-gcm-hkdf384-commit (AES-256-GCM, HKDF-SHA384, HMAC-SHA384). The replica, a child process,
// is SIGKILLed at 45 s, kept down 15 s and started again on the same retained store. Measured: the
// records it reads at once when it reopens (retained at the kill), the time from the spawn of the
// new process (and from the replica's open) to its first readable record it did not hold, and at
// 240 s (a 30 s drain after the last write) a full typed reread of every record on both hosts
// against a fixture recomputed here from the WordNet source, with the replica's commit and applied
// watermarks against the primary's commit counter. Run PQDB_REPL_RUNS times (default 5).
//
// Faults campaign (same schedule, PQDB_REPL_FAULT_RUNS times, default 1): the primary SIGKILLed at
// 45 s and restarted on its store at 60 s while the replica keeps running (it reconnects with its
// default backoff), and the link cut at 120 s for 10 s. Bulk: 100,000 synsets into an empty
// replica, records/s and MB/s (10^6 bytes) on the wire: loaded into the primary first, then caught
// up (also for a 50,000-record store), and followed while the primary loads them.
//
// Two hosts: two network namespaces joined by a veth pair (10.77.0.1/24 and 10.77.0.2/24) made
// here as root and removed at the end, also on failure; each process runs under `ip netns exec`,
// and the link cut sets both veth ends down, then up. Without namespaces (no `ip`, not root), both
// processes run on loopback, and a relaying TCP proxy that stops forwarding stands in for the cut.
//
// Environment (durations in seconds; PQDB_REPL_SCALE multiplies every one of them for a quick run):
//   PQDB_REPL_RECORDS 512   PQDB_REPL_CAMPAIGN_S 240   PQDB_REPL_WRITE_S 210   PQDB_REPL_KILL_S 45
//   PQDB_REPL_DOWN_S 15     PQDB_REPL_PRIMARY_KILL_S 45   PQDB_REPL_PRIMARY_DOWN_S 15
//   PQDB_REPL_CUT_AT_S 120  PQDB_REPL_CUT_S 10   PQDB_REPL_RUNS 5   PQDB_REPL_FAULT_RUNS 1
//   PQDB_REPL_BULK 100000   PQDB_REPL_BULK_SMALL 50000   PQDB_REPL_BULK_FOLLOW 20   PQDB_REPL_BULK_TIMEOUT_S 120
//   PQDB_REPL_NET auto|netns|loopback   PQDB_REPL_ONLY campaign,faults,bulk
//   PQDB_REPL_OUT <dir>     (default bench/results/replication-<arch>-<runtime>-<date>[-n]/; when it holds an
//                            evidence.json, the parts not in PQDB_REPL_ONLY are kept from it)
//
// Writes evidence.json (every write, every applied commit, every process, the verification) and
// summary.md. Exits 0 whatever the figures (targets are reported, not asserted) unless the
// evaluation itself cannot run; node-tests/replication-kill.test.ts asserts the behaviour in small.

import { spawn, execFileSync } from 'node:child_process';
import {
  mkdirSync,
  mkdtempSync,
  writeFileSync,
  existsSync,
  rmSync,
  readdirSync,
  statSync,
  readFileSync,
} from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { hostInfo, duBytes, reportDir } from './harness.mjs';
import { typedEqual, typedHash, wallMs, toB64, SUITE } from './replication/common.mjs';
import { campaignRecords } from './replication/fixture.mjs';
import { generateRecipient, generateSigner } from '../dist/node.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const PART = (name) => join(HERE, 'replication', name);
const TARGET_FIRST_NEW_MS = 250;
const ARTICLE_FIRST_NEW_MS = 1074;
const NS = { a: 'pqdb-repl-a', b: 'pqdb-repl-b' };
const VETH = { a: 'pqdb-va', b: 'pqdb-vb' };
const ADDR = { a: '10.77.0.1', b: '10.77.0.2' };
const PORT = 7447;

const sleep = (ms) => new Promise((r) => setTimeout(r, Math.max(0, ms)));
const log = (s) => process.stderr.write(`[replication] ${s}\n`);

// ---- configuration ------------------------------------------------------------------------------

function config(env = process.env) {
  const num = (name, d) => {
    const v = env[name] === undefined || env[name] === '' ? d : Number(env[name]);
    if (!Number.isFinite(v) || v < 0) throw new RangeError(`${name} expected a non-negative number, got ${env[name]}`);
    return v;
  };
  const scale = num('PQDB_REPL_SCALE', 1);
  const secs = (name, d) => num(name, d) * scale * 1000;
  const c = {
    scale,
    records: num('PQDB_REPL_RECORDS', 512),
    campaignMs: secs('PQDB_REPL_CAMPAIGN_S', 240),
    writeMs: secs('PQDB_REPL_WRITE_S', 210),
    killMs: secs('PQDB_REPL_KILL_S', 45),
    downMs: secs('PQDB_REPL_DOWN_S', 15),
    primaryKillMs: secs('PQDB_REPL_PRIMARY_KILL_S', 45),
    primaryDownMs: secs('PQDB_REPL_PRIMARY_DOWN_S', 15),
    cutAtMs: secs('PQDB_REPL_CUT_AT_S', 120),
    cutMs: secs('PQDB_REPL_CUT_S', 10),
    runs: num('PQDB_REPL_RUNS', 5),
    faultRuns: num('PQDB_REPL_FAULT_RUNS', 1),
    bulk: num('PQDB_REPL_BULK', 100_000),
    bulkFollow: num('PQDB_REPL_BULK_FOLLOW', 20),
    bulkSmall: num('PQDB_REPL_BULK_SMALL', 50_000),
    bulkTimeoutMs: num('PQDB_REPL_BULK_TIMEOUT_S', 120) * 1000,
    net: env.PQDB_REPL_NET ?? 'auto',
    only: new Set((env.PQDB_REPL_ONLY ?? 'campaign,faults,bulk').split(',').map((s) => s.trim())),
    out: env.PQDB_REPL_OUT,
  };
  if (!['auto', 'netns', 'loopback'].includes(c.net))
    throw new RangeError('PQDB_REPL_NET expected auto, netns or loopback');
  c.intervalMs = c.writeMs / c.records;
  c.bulkRuns = [
    ['catchup', c.bulk],
    ...(c.bulkSmall > 0 && c.bulkSmall < c.bulk ? [['catchup', c.bulkSmall]] : []),
    ['follow', c.bulk],
  ];
  return c;
}

// ---- the two hosts ------------------------------------------------------------------------------

const ip = (...args) => execFileSync('ip', args, { stdio: ['ignore', 'pipe', 'pipe'] }).toString();

/** Whether `ip` runs; when it is missing and apt-get is there (as root), installs iproute2. */
function ensureIp() {
  try {
    ip('-V');
    return true;
  } catch (e) {
    if (e.code !== 'ENOENT' || process.getuid?.() !== 0) return false;
  }
  try {
    log('`ip` is missing: apt-get install -y iproute2');
    execFileSync('apt-get', ['install', '-y', 'iproute2'], { stdio: ['ignore', 'ignore', 'inherit'] });
    ip('-V');
    return true;
  } catch {
    return false;
  }
}

function removeNamespaces() {
  for (const ns of Object.values(NS)) {
    try {
      ip('netns', 'del', ns); // the veth end inside goes with it, and so does its peer
    } catch {
      /* not there */
    }
  }
}

/** Two namespaces joined by a veth pair, or loopback when that cannot be made. */
function setupNet(mode) {
  let reason;
  if (mode !== 'loopback') {
    if (process.platform !== 'linux') reason = 'not Linux';
    else if (process.getuid?.() !== 0) reason = 'not root';
    else if (!ensureIp()) reason = '`ip` (iproute2) unavailable';
    else {
      try {
        removeNamespaces(); // left over from a run that was itself killed
        ip('netns', 'add', NS.a);
        ip('netns', 'add', NS.b);
        ip('link', 'add', VETH.a, 'type', 'veth', 'peer', 'name', VETH.b);
        for (const h of ['a', 'b']) {
          ip('link', 'set', VETH[h], 'netns', NS[h]);
          ip('-n', NS[h], 'addr', 'add', `${ADDR[h]}/24`, 'dev', VETH[h]);
          ip('-n', NS[h], 'link', 'set', 'lo', 'up');
          ip('-n', NS[h], 'link', 'set', VETH[h], 'up');
        }
        const link = (h) => ip('-n', NS[h], '-br', 'addr', 'show', 'dev', VETH[h]).trim();
        return {
          mode: 'netns',
          description: `network namespaces ${NS.a} (${ADDR.a}/24, primary) and ${NS.b} (${ADDR.b}/24, replica) joined by the veth pair ${VETH.a}–${VETH.b}`,
          links: [link('a'), link('b')],
          listenHost: ADDR.a,
          exec: (h) => ['ip', ['netns', 'exec', NS[h], process.execPath]],
          endpoint: (port) => ({ host: ADDR.a, port }),
          async cut() {
            ip('-n', NS.a, 'link', 'set', VETH.a, 'down');
            ip('-n', NS.b, 'link', 'set', VETH.b, 'down');
          },
          async restore() {
            ip('-n', NS.a, 'link', 'set', VETH.a, 'up');
            ip('-n', NS.b, 'link', 'set', VETH.b, 'up');
          },
          rxBytes: () =>
            Number(ip('netns', 'exec', NS.b, 'cat', `/sys/class/net/${VETH.b}/statistics/rx_bytes`).trim()),
          teardown: removeNamespaces,
        };
      } catch (e) {
        reason = `namespaces could not be made: ${String(e.stderr ?? e.message).trim()}`;
        removeNamespaces();
      }
    }
    if (mode === 'netns') throw new Error(`PQDB_REPL_NET=netns: ${reason}`);
  } else reason = 'PQDB_REPL_NET=loopback';
  return {
    mode: 'loopback',
    reason,
    description: `loopback (127.0.0.1), both processes on this host (${reason}); the link cut is a relaying TCP proxy that stops forwarding`,
    listenHost: '127.0.0.1',
    exec: () => [process.execPath, []],
    teardown() {},
  };
}

/**
 * A TCP relay on loopback to `host:port` (the loopback stand-in for a link): `cut()` stops
 * forwarding both ways and holds new connections, `restore()` delivers what it held and goes on;
 * `bytesToReplica` counts what it forwarded from the primary.
 */
function relay(host, port) {
  const pairs = new Set();
  const held = [];
  let cut = false;
  const r = { bytesToReplica: 0, bytesToPrimary: 0 };
  const wire = (from, to, count) => {
    const queue = [];
    from.on('data', (chunk) => {
      r[count] += chunk.length;
      if (cut) {
        queue.push(chunk);
        from.pause();
      } else if (!to.write(chunk)) {
        from.pause();
        to.once('drain', () => !cut && from.resume());
      }
    });
    return () => {
      for (const c of queue.splice(0)) to.write(c);
      from.resume();
    };
  };
  const connectPair = (down) => {
    const up = net.connect(port, host);
    const pair = { down, up, flush: [] };
    pairs.add(pair);
    pair.flush.push(wire(down, up, 'bytesToPrimary'), wire(up, down, 'bytesToReplica'));
    const end = () => {
      pairs.delete(pair);
      down.destroy();
      up.destroy();
    };
    for (const s of [down, up]) {
      s.on('error', end);
      s.on('close', end);
    }
  };
  const server = net.createServer((down) => {
    if (cut) {
      down.pause();
      held.push(down);
    } else connectPair(down);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve(
        Object.assign(r, {
          port: server.address().port,
          cut() {
            cut = true;
            for (const p of pairs) {
              p.down.pause();
              p.up.pause();
            }
          },
          restore() {
            cut = false;
            for (const p of pairs) for (const f of p.flush) f();
            for (const d of held.splice(0)) {
              connectPair(d);
              d.resume();
            }
          },
          close: () =>
            new Promise((done) => {
              for (const p of pairs) (p.down.destroy(), p.up.destroy());
              server.close(() => done());
            }),
        }),
      ),
    ),
  );
}

// ---- processes ----------------------------------------------------------------------------------

const children = new Set();
const tempDirs = new Set();

/** A new directory for a run's stores (removed by the run, or on a signal by the cleanup). */
function tempDir(prefix) {
  const dir = mkdtempSync(join(os.tmpdir(), prefix));
  tempDirs.add(dir);
  return dir;
}

/**
 * Spawns a part on host `h` ('a' primary, 'b' replica) with an IPC channel and `hello` in its
 * environment (it starts at once, no round trip); keeps every message with its arrival time.
 */
function spawnPart(network, h, name, hello) {
  const [cmd, pre] = network.exec(h);
  const env = { ...process.env, PQDB_REPL_HELLO: JSON.stringify(hello) };
  const spawnAt = wallMs();
  const child = spawn(cmd, [...pre, PART(name)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env,
  });
  children.add(child);
  const p = { child, name, spawnAt, messages: [], waiters: [], exit: undefined };
  child.on('message', (m) => {
    m.receivedAt = wallMs();
    p.messages.push(m);
    if (m.failed !== undefined) log(`${name} (pid ${child.pid}) failed: ${m.failed}`);
    for (const w of [...p.waiters]) if (w.pred(m)) w.done(m);
  });
  child.on('exit', (code, signal) => {
    children.delete(child);
    p.exit = { code, signal, at: wallMs() };
    for (const w of [...p.waiters]) w.fail(new Error(`${name} (pid ${child.pid}) exited (${code ?? signal})`));
  });
  p.wait = (pred, timeoutMs = 120_000, what = 'a message') => {
    const m = p.messages.find(pred);
    if (m !== undefined) return Promise.resolve(m);
    if (p.exit !== undefined) return Promise.reject(new Error(`${name} exited before ${what}`));
    return new Promise((resolve, reject) => {
      const w = {
        pred,
        done: (x) => (clear(), resolve(x)),
        fail: (e) => (clear(), reject(e)),
      };
      const timer = setTimeout(() => w.fail(new Error(`timed out waiting for ${what} from ${name}`)), timeoutMs);
      const clear = () => {
        clearTimeout(timer);
        p.waiters.splice(p.waiters.indexOf(w), 1);
      };
      p.waiters.push(w);
    });
  };
  p.kill = async () => {
    const at = wallMs();
    child.kill('SIGKILL');
    if (p.exit === undefined) await new Promise((r) => child.once('exit', r));
    return at;
  };
  p.close = async () => {
    if (p.exit !== undefined) return;
    child.send({ close: true });
    await p.wait((m) => m.closed, 20_000, 'closed').catch(() => undefined);
    if (p.exit === undefined) await p.kill();
  };
  return p;
}

function keySet() {
  const recipient = generateRecipient();
  const signer = generateSigner();
  const primaryId = generateSigner();
  const replicaId = generateSigner();
  return {
    primary: {
      recipientPublic: toB64(recipient.publicKey),
      unlock: toB64(recipient.secretKey),
      signerSecret: toB64(signer.secretKey),
      signerPublic: toB64(signer.publicKey),
      idPub: toB64(primaryId.publicKey),
      idSec: toB64(primaryId.secretKey),
      replicaPub: toB64(replicaId.publicKey),
    },
    replica: {
      unlock: toB64(recipient.secretKey),
      idPub: toB64(replicaId.publicKey),
      idSec: toB64(replicaId.secretKey),
      primaryPub: toB64(primaryId.publicKey),
    },
  };
}

async function startPrimary(network, hello) {
  const p = spawnPart(network, 'a', 'primary.mjs', hello);
  const ready = await p.wait((m) => m.ready || m.failed, 30 * 60_000, 'ready');
  if (ready.failed) throw new Error(`primary: ${ready.failed}`);
  return p;
}

async function startReplica(network, hello) {
  const p = spawnPart(network, 'b', 'replica.mjs', hello);
  const open = await p.wait((m) => m.open || m.failed, 120_000, 'open');
  if (open.failed) throw new Error(`replica: ${open.failed}`);
  return p;
}

// ---- figures ------------------------------------------------------------------------------------

const pct = (xs, p) => {
  if (xs.length === 0) return null;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

/** Typed comparison of a full reread against the fixture. */
function checkValues(values, fixture) {
  let matched = 0;
  const wrong = [];
  fixture.forEach((r, i) => {
    if (typedEqual(values[i], r.value)) matched++;
    else if (wrong.length < 10) wrong.push({ id: r.id, got: values[i] ?? null });
  });
  return { expected: fixture.length, matched, missing: values.filter((v) => v === null).length, wrong };
}

/**
 * When each record became readable on the replica (the first applied commit after which it held
 * more than `seq` records: records are written in schedule order, so the replica's records are a
 * prefix of it) and how long after the primary's acknowledgement; outage windows are set apart.
 */
function lagOf(writes, applied, outages) {
  const out = [];
  let j = 0;
  const sorted = [...applied].sort((a, b) => a.at - b.at);
  const bySeq = [...writes].sort((a, b) => a.wrote - b.wrote);
  for (const w of bySeq) {
    while (j < sorted.length && sorted[j].records <= w.wrote) j++;
    if (j >= sorted.length) break;
    const visible = sorted[j].at;
    const during = outages.some(([a, b]) => w.at >= a && w.at <= b);
    out.push({ seq: w.wrote, ackAt: w.at, visibleAt: visible, lagMs: visible - w.at, outage: during });
  }
  const steady = out.filter((x) => !x.outage).map((x) => x.lagMs);
  return {
    perRecord: out,
    steady: {
      records: steady.length,
      p50: pct(steady, 50),
      p99: pct(steady, 99),
      max: steady.length ? Math.max(...steady) : null,
    },
  };
}

const rel = (t, t0) => (t === undefined ? undefined : t - t0);

// ---- the campaign -------------------------------------------------------------------------------

/**
 * One campaign run. kind 'receiver': the replica SIGKILLed at c.killMs, down c.downMs, restarted
 * on its store. kind 'faults': the primary SIGKILLed at c.primaryKillMs and restarted after
 * c.primaryDownMs, and the link cut at c.cutAtMs for c.cutMs.
 */
async function campaign(c, network, kind, runIndex) {
  const dir = tempDir('pqdb-repl-');
  const fixture = campaignRecords(c.records); // recomputed here, from the WordNet source
  const keys = keySet();
  const primaryPort = network.mode === 'netns' ? PORT : await freePort();
  const target = network.mode === 'netns' ? { host: ADDR.a, port: PORT } : { host: '127.0.0.1', port: primaryPort };
  let replicaTarget = target;
  let loopProxy;
  if (kind === 'faults' && network.mode === 'loopback') {
    loopProxy = await relay('127.0.0.1', primaryPort);
    replicaTarget = { host: '127.0.0.1', port: loopProxy.port };
  }
  const primaries = [];
  const replicas = [];
  const events = {};
  const loadAtStart = os.loadavg();
  const outages = []; // [from, to]: writes acknowledged inside are set apart from the steady lag
  try {
    const t0 = wallMs() + 4000;
    const primaryHello = {
      mode: 'schedule',
      location: join(dir, 'primary'),
      host: network.listenHost,
      port: primaryPort,
      keys: keys.primary,
      t0,
      intervalMs: c.intervalMs,
      records: c.records,
    };
    primaries.push(await startPrimary(network, primaryHello));
    const replicaHello = {
      location: join(dir, 'replica'),
      ...replicaTarget,
      keys: keys.replica,
      ids: fixture.map((r) => r.id),
    };
    replicas.push(await startReplica(network, replicaHello));
    log(`run ${runIndex} (${kind}): writing ${c.records} records every ${c.intervalMs.toFixed(1)} ms from t0`);
    const writes = () => primaries.flatMap((p) => p.messages.filter((m) => m.wrote !== undefined));
    const applied = () =>
      replicas.flatMap((p, i) => p.messages.filter((m) => m.applied !== undefined).map((m) => ({ ...m, process: i })));

    if (kind === 'receiver') {
      await sleep(t0 + c.killMs - wallMs());
      const before = replicas[0].messages.filter((m) => m.applied !== undefined).at(-1);
      events.killAt = await replicas[0].kill();
      events.writtenAtKill = writes().filter((w) => w.at <= events.killAt).length;
      events.reportedAtKill = before ? { records: before.records, applied: before.status.appliedWatermark } : null;
      log(
        `replica SIGKILLed at ${((events.killAt - t0) / 1000).toFixed(1)} s: ${events.writtenAtKill} written, ${before?.records ?? 0} reported`,
      );
      await sleep(t0 + c.killMs + c.downMs - wallMs());
      const r = await startReplica(network, replicaHello);
      replicas.push(r);
      const started = r.messages.find((m) => m.started);
      const open = r.messages.find((m) => m.open);
      const first = await r.wait((m) => m.firstNew, 60_000, 'a new record');
      r.child.send({ retained: true });
      const retained = await r.wait((m) => m.retained, 60_000, 'the retained records');
      const connected = r.messages.find((m) => m.connection && m.connected);
      const firstApplied = r.messages.find((m) => m.applied !== undefined);
      outages.push([events.killAt - 1000, firstApplied?.at ?? Infinity]);
      const retainedOk = retained.values.filter((x) => typedEqual(x.value, fixture[x.seq].value)).length;
      events.restart = {
        spawnAt: r.spawnAt,
        processStartAt: started.startAt,
        importedAt: started.importedAt,
        openStartAt: open.openStartAt,
        openedAt: open.openedAt,
        connectedAt: connected?.at,
        firstAppliedAt: firstApplied?.at,
        firstNewAt: first.at,
        statusAtOpen: open.status,
        retained: {
          records: open.present.length,
          readableTyped: retainedOk,
          seqs: open.present,
          readErrors: retained.readErrors,
        },
        firstNew: { seq: first.seq, id: first.id, typedOk: typedEqual(first.value, fixture[first.seq].value) },
        writtenAtRestart: writes().filter((w) => w.at <= r.spawnAt).length,
        spawnToProcessMs: started.startAt - r.spawnAt,
        spawnToOpenedMs: open.openedAt - r.spawnAt,
        openMs: open.openedAt - open.openStartAt,
        spawnToConnectedMs: connected ? connected.at - r.spawnAt : null,
        spawnToFirstNewMs: first.at - r.spawnAt,
        openToFirstNewMs: first.at - open.openStartAt,
      };
      log(
        `replica restarted: retained ${open.present.length} (${retainedOk} typed-equal) at watermark ${open.status.appliedWatermark}; first new record ${events.restart.spawnToFirstNewMs.toFixed(0)} ms after the spawn, ${events.restart.openToFirstNewMs.toFixed(0)} ms after the open`,
      );
    } else {
      // (a) the primary killed and restarted on its store while the replica keeps running.
      await sleep(t0 + c.primaryKillMs - wallMs());
      const recordsBefore = applied().at(-1)?.records ?? 0;
      events.primaryKillAt = await primaries[0].kill();
      const acked = writes().filter((w) => w.at <= events.primaryKillAt).length;
      log(
        `primary SIGKILLed at ${((events.primaryKillAt - t0) / 1000).toFixed(1)} s after ${acked} acknowledged writes`,
      );
      await sleep(t0 + c.primaryKillMs + c.primaryDownMs - wallMs());
      const p = await startPrimary(network, primaryHello);
      primaries.push(p);
      const ready = p.messages.find((m) => m.ready);
      const started = p.messages.find((m) => m.started);
      const rp = replicas[0];
      const lost = rp.messages.find((m) => m.connection && !m.connected && m.at >= events.primaryKillAt);
      const back = await rp.wait((m) => m.connection && m.connected && m.at >= p.spawnAt, 60_000, 'a reconnection');
      const fresh = await rp.wait(
        (m) => m.applied !== undefined && m.at >= p.spawnAt && m.records > recordsBefore,
        60_000,
        'new records after the primary restart',
      );
      outages.push([events.primaryKillAt - 1000, fresh.at]);
      events.primaryRestart = {
        ackedAtKill: acked,
        replicaRecordsAtKill: recordsBefore,
        presentAtReopen: ready.present,
        commitAtReopen: ready.commit,
        spawnAt: p.spawnAt,
        spawnToProcessMs: started.startAt - p.spawnAt,
        spawnToListeningMs: ready.listenAt - p.spawnAt,
        primaryOpenMs: ready.openedAt - ready.openStartAt,
        replicaLostSessionAfterKillMs: lost ? lost.at - events.primaryKillAt : null,
        replicaLastError: lost?.lastError ?? null,
        listeningToReconnectedMs: back.at - ready.listenAt,
        spawnToReplicaNewRecordMs: fresh.at - p.spawnAt,
        listeningToReplicaNewRecordMs: fresh.at - ready.listenAt,
      };
      log(
        `primary restarted: ${ready.present} records present (${acked} acknowledged), listening ${events.primaryRestart.spawnToListeningMs.toFixed(0)} ms after the spawn; the replica reconnected ${events.primaryRestart.listeningToReconnectedMs.toFixed(0)} ms later and read new records ${events.primaryRestart.listeningToReplicaNewRecordMs.toFixed(0)} ms after the listen`,
      );
      // (b) the link cut for c.cutMs and restored.
      await sleep(t0 + c.cutAtMs - wallMs());
      const cutRecords = applied().at(-1)?.records ?? 0;
      events.cutAt = wallMs();
      if (network.mode === 'netns') await network.cut();
      else loopProxy.cut();
      await sleep(t0 + c.cutAtMs + c.cutMs - wallMs());
      const duringCut = applied().filter((m) => m.at > events.cutAt);
      events.restoreAt = wallMs();
      if (network.mode === 'netns') await network.restore();
      else loopProxy.restore();
      const writtenDuringCut = writes().filter((w) => w.at >= events.cutAt && w.at <= events.restoreAt).length;
      const resumed = await rp.wait(
        (m) => m.applied !== undefined && m.at >= events.restoreAt && m.records > cutRecords + duringCut.length,
        120_000,
        'new records after the link came back',
      );
      const sessionEvents = rp.messages
        .filter((m) => m.connection && m.at >= events.cutAt && m.at <= resumed.at)
        .map((m) => ({ connected: m.connected, atMs: m.at - events.cutAt, lastError: m.lastError }));
      outages.push([events.cutAt - 1000, resumed.at]);
      events.linkCut = {
        cutMs: events.restoreAt - events.cutAt,
        replicaRecordsAtCut: cutRecords,
        appliedDuringCut: duringCut.length,
        writtenDuringCut,
        restoreToNewRecordMs: resumed.at - events.restoreAt,
        recordsAfterRestore: resumed.records,
        sessionEvents,
      };
      log(
        `link cut for ${(events.linkCut.cutMs / 1000).toFixed(1)} s (${writtenDuringCut} written meanwhile): the replica read new records ${events.linkCut.restoreToNewRecordMs.toFixed(0)} ms after the restore`,
      );
    }

    // The drain, then the full typed reread on both hosts and the watermarks.
    await sleep(t0 + c.campaignMs - wallMs());
    const pLast = primaries.at(-1);
    const rLast = replicas.at(-1);
    pLast.child.send({ final: { records: c.records } });
    const pFinal = await pLast.wait((m) => m.final || m.failed, 120_000, 'the final reread');
    rLast.child.send({ final: {} });
    const rFinal = await rLast.wait((m) => m.final || m.failed, 120_000, 'the final reread');
    if (pFinal.failed || rFinal.failed) throw new Error(`final reread: ${pFinal.failed ?? rFinal.failed}`);
    const primaryCheck = checkValues(pFinal.values, fixture);
    const replicaCheck = checkValues(rFinal.values, fixture);
    const wm = {
      primaryCommit: pFinal.commit,
      commitWatermark: rFinal.status.commitWatermark,
      appliedWatermark: rFinal.status.appliedWatermark,
      lagCommits: rFinal.status.lagCommits,
      connected: rFinal.status.connected,
    };
    wm.equal = wm.commitWatermark === wm.primaryCommit && wm.appliedWatermark === wm.primaryCommit;
    const allWrites = writes();
    const lastWrite = Math.max(...allWrites.map((w) => w.at));
    const lag = lagOf(allWrites, applied(), outages);
    log(
      `end: primary ${primaryCheck.matched}/${c.records}, replica ${replicaCheck.matched}/${c.records} typed-equal; watermarks commit ${wm.commitWatermark} applied ${wm.appliedWatermark}, primary commit ${wm.primaryCommit}`,
    );
    const result = {
      kind,
      run: runIndex,
      t0,
      loadAverage: { atStart: loadAtStart, atEnd: os.loadavg() },
      timings: {
        campaignMs: c.campaignMs,
        writeMs: c.writeMs,
        intervalMs: c.intervalMs,
        ...(kind === 'receiver'
          ? { killMs: c.killMs, downMs: c.downMs }
          : { primaryKillMs: c.primaryKillMs, primaryDownMs: c.primaryDownMs, cutAtMs: c.cutAtMs, cutMs: c.cutMs }),
      },
      events,
      writes: {
        count: allWrites.length,
        lastAtMs: lastWrite - t0,
        late: allWrites.filter((w) => w.sentAt - w.due > 100).length,
      },
      final: {
        primary: { ...primaryCheck, size: pFinal.size, scanned: pFinal.scanned },
        replica: {
          ...replicaCheck,
          size: rFinal.size,
          scanned: rFinal.scanned,
          readMs: rFinal.readMs,
          readErrors: rFinal.readErrors,
        },
        watermarks: wm,
      },
      lag: lag.steady,
      outagesMs: outages.map(([a, b]) => [a - t0, b - t0]),
      ok:
        primaryCheck.matched === c.records &&
        replicaCheck.matched === c.records &&
        pFinal.scanned === c.records &&
        rFinal.scanned === c.records &&
        wm.equal,
      processes: [...primaries, ...replicas].map((p) => ({
        part: p.name,
        spawnAtMs: p.spawnAt - t0,
        exit: p.exit && { ...p.exit, atMs: p.exit.at - t0 },
      })),
      perRecord: lag.perRecord.map((x) => ({ seq: x.seq, ackAtMs: x.ackAt - t0, lagMs: x.lagMs, outage: x.outage })),
      appliedCommits: applied().map((m) => ({
        process: m.process,
        atMs: m.at - t0,
        applied: m.status.appliedWatermark,
        commitWatermark: m.status.commitWatermark,
        records: m.records,
      })),
      connections: replicas.flatMap((p, i) =>
        p.messages
          .filter((m) => m.connection)
          .map((m) => ({ process: i, atMs: m.at - t0, connected: m.connected, lastError: m.lastError })),
      ),
    };
    if (result.events.restart)
      for (const k of [
        'spawnAt',
        'processStartAt',
        'importedAt',
        'openStartAt',
        'openedAt',
        'connectedAt',
        'firstAppliedAt',
        'firstNewAt',
      ])
        result.events.restart[k] = rel(result.events.restart[k], t0);
    for (const k of ['killAt', 'primaryKillAt', 'cutAt', 'restoreAt']) if (k in events) events[k] = rel(events[k], t0);
    if (events.primaryRestart) events.primaryRestart.spawnAt = rel(events.primaryRestart.spawnAt, t0);
    return result;
  } finally {
    await Promise.all([...primaries, ...replicas].map((p) => p.close()));
    await loopProxy?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

// ---- what a bare process costs -----------------------------------------------------------------

/**
 * A bare Node process on the replica's host, five times: when its first line runs and when it has
 * imported pqdb, after the spawn (median) — the part of a restart that is neither the replica nor
 * the channel.
 */
async function baseline(network) {
  const code = `const first = performance.timeOrigin + performance.now(); await import(${JSON.stringify(new URL('../dist/node.js', import.meta.url).href)}); process.send({ first, imported: performance.timeOrigin + performance.now() }, () => process.exit(0));`;
  const firsts = [];
  const imports = [];
  for (let i = 0; i < 5; i++) {
    const [cmd, pre] = network.exec('b');
    const spawnAt = wallMs();
    const child = spawn(cmd, [...pre, '--input-type=module', '-e', code], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const m = await new Promise((resolve, reject) => {
      child.once('message', resolve);
      child.once('exit', (c) => reject(new Error(`the bare process exited (${c})`)));
    });
    await new Promise((r) => (child.exitCode !== null ? r() : child.once('exit', r)));
    firsts.push(m.first - spawnAt);
    imports.push(m.imported - spawnAt);
  }
  return { spawnToFirstLineMs: pct(firsts, 50), spawnToPqdbImportedMs: pct(imports, 50), samples: { firsts, imports } };
}

// ---- the bulk catch-up --------------------------------------------------------------------------

/**
 * `records` synsets into an empty replica. mode 'catchup': the primary loads them (batches of
 * 1,000, one checkpoint), then the replica starts on an empty directory and catches up from the
 * primary's current commit (given c.bulkTimeoutMs; one that does not finish is reported with its
 * last error). mode 'follow': the empty replica connects first and follows while the primary loads
 * (each batch commit shipped as it is made). Then, when it caught up, c.bulkFollow single-record
 * commits 500 ms apart (the follow latency on the large store) and a full typed reread.
 */
async function bulk(c, network, mode, records) {
  const dir = tempDir('pqdb-repl-bulk-');
  const keys = keySet();
  const primaryPort = network.mode === 'netns' ? PORT : await freePort();
  let target = network.mode === 'netns' ? { host: ADDR.a, port: PORT } : { host: '127.0.0.1', port: primaryPort };
  let loopProxy;
  if (network.mode === 'loopback') {
    loopProxy = await relay('127.0.0.1', primaryPort);
    target = { host: '127.0.0.1', port: loopProxy.port };
  }
  const rxBytes = () => (network.mode === 'netns' ? network.rxBytes() : loopProxy.bytesToReplica);
  const parts = [];
  const out = {
    mode,
    records,
    date: new Date().toISOString(),
    wireBytesMeasuredAt:
      network.mode === 'netns' ? `rx_bytes of ${VETH.b} in ${NS.b}` : 'the relay, primary to replica',
  };
  try {
    log(`bulk (${mode}): ${records} synsets …`);
    const p = await startPrimary(network, {
      mode: 'bulk',
      location: join(dir, 'primary'),
      host: network.listenHost,
      port: primaryPort,
      keys: keys.primary,
      records,
      batch: 1000,
      serveFirst: mode === 'follow',
    });
    parts.push(p);
    const ready = p.messages.find((m) => m.ready);
    let rx0;
    let r;
    let startAt; // the start of what is timed: the replica's open (catchup) or the load (follow)
    let commit;
    if (mode === 'catchup') {
      out.loadMs = ready.buildMs;
      commit = ready.commit;
      out.primaryStoreBytes = duBytes(join(dir, 'primary'));
      log(
        `bulk: loaded in ${sec(ready.buildMs)} (${(out.primaryStoreBytes / 1e6).toFixed(1)} MB, commit ${commit}); an empty replica starts`,
      );
      rx0 = rxBytes();
      r = await startReplica(network, { location: join(dir, 'replica'), ...target, keys: keys.replica });
      parts.push(r);
      startAt = r.messages.find((m) => m.open).openStartAt;
    } else {
      r = await startReplica(network, { location: join(dir, 'replica'), ...target, keys: keys.replica });
      parts.push(r);
      await r.wait((m) => m.connection && m.connected, 60_000, 'the session');
      rx0 = rxBytes();
      p.child.send({ load: true });
      const loaded = await p.wait((m) => m.loaded || m.failed, 30 * 60_000, 'the load');
      if (loaded.failed) throw new Error(`bulk load: ${loaded.failed}`);
      out.loadMs = loaded.buildMs;
      commit = loaded.commit;
      startAt = loaded.loadStartAt;
      out.primaryStoreBytes = duBytes(join(dir, 'primary'));
    }
    out.primaryCommit = commit;
    let done;
    try {
      done = await r.wait(
        (m) => m.applied !== undefined && m.status.appliedWatermark >= commit,
        c.bulkTimeoutMs,
        'the catch-up',
      );
    } catch (e) {
      if (r.exit !== undefined) throw e;
    }
    const rx1 = rxBytes();
    out.wireBytes = rx1 - rx0;
    const sessions = r.messages.filter((m) => m.connection && m.connected);
    out.sessions = sessions.length;
    if (done === undefined) {
      const lastError = r.messages.filter((m) => m.connection && m.lastError !== undefined).at(-1)?.lastError;
      const lastApplied = r.messages.filter((m) => m.applied !== undefined).at(-1);
      Object.assign(out, {
        caughtUp: false,
        waitedMs: wallMs() - startAt,
        appliedWatermark: lastApplied?.status.appliedWatermark ?? 0,
        lastError: lastError ?? null,
        ok: false,
      });
      log(
        `bulk (${mode}): not caught up after ${sec(out.waitedMs)} (applied ${out.appliedWatermark} of ${commit}; ${out.sessions} sessions, ${(out.wireBytes / 1e6).toFixed(1)} MB received, last error ${out.lastError})`,
      );
      return out;
    }
    out.caughtUp = true;
    out.caughtUpMs = done.at - startAt;
    out.sessionToCaughtUpMs = sessions[0] ? done.at - sessions[0].at : null;
    out.spawnToCaughtUpMs = done.at - r.spawnAt;
    out.recordsPerSecond = records / (out.caughtUpMs / 1000);
    out.wireMBPerSecond = out.wireBytes / 1e6 / (out.caughtUpMs / 1000);
    out.replicaStoreBytes = duBytes(join(dir, 'replica'));
    // Then single-record commits on the large store, one every 500 ms: the replica's follow latency there.
    const follow = [];
    if (c.bulkFollow > 0) {
      p.child.send({ more: { count: c.bulkFollow, gapMs: 500 } });
      await p.wait((m) => m.moreDone || m.failed, 10 * 60_000, 'the follow-up writes');
      const wrote = p.messages.filter((m) => m.wrote !== undefined);
      const last = wrote.at(-1).commit;
      await r.wait(
        (m) => m.applied !== undefined && m.status.appliedWatermark >= last,
        10 * 60_000,
        'the follow-up commits',
      );
      const appliedMsgs = r.messages.filter((m) => m.applied !== undefined);
      for (const w of wrote) {
        const a = appliedMsgs.find((m) => m.status.appliedWatermark >= w.commit);
        follow.push({ seq: w.wrote, commit: w.commit, putMs: w.at - w.sentAt, lagMs: a.at - w.at });
      }
    }
    const followLag = follow.map((x) => x.lagMs);
    out.follow = {
      records: follow.length,
      gapMs: 500,
      lagMs: { p50: pct(followLag, 50), max: followLag.length ? Math.max(...followLag) : null },
      perRecord: follow,
    };
    const fixture = campaignRecords(records + c.bulkFollow);
    r.child.send({ final: { ids: fixture.map((x) => x.id), hashes: true } });
    const fin = await r.wait((m) => m.final || m.failed, 30 * 60_000, 'the reread');
    if (fin.failed) throw new Error(`bulk reread: ${fin.failed}`);
    let matched = 0;
    fixture.forEach((x, i) => void (fin.hashes[i] === typedHash(x.value) && matched++));
    out.watermarks = { commit: fin.status.commitWatermark, applied: fin.status.appliedWatermark };
    out.primaryFinalCommit = p.messages.filter((m) => m.wrote !== undefined).at(-1)?.commit ?? commit;
    out.reread = {
      expected: fixture.length,
      matched,
      size: fin.size,
      scanned: fin.scanned,
      readMs: fin.readMs,
      readErrors: fin.readErrors,
    };
    out.ok =
      matched === fixture.length &&
      fin.scanned === fixture.length &&
      out.watermarks.applied === out.primaryFinalCommit &&
      out.watermarks.commit === out.primaryFinalCommit;
    log(
      `bulk (${mode}): ${records} records in ${sec(out.caughtUpMs)}: ${out.recordsPerSecond.toFixed(0)} records/s, ${out.wireMBPerSecond.toFixed(1)} MB/s on the wire; reread ${matched}/${fixture.length} typed-equal`,
    );
    return out;
  } finally {
    await Promise.all(parts.map((x) => x.close()));
    await loopProxy?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- the report ---------------------------------------------------------------------------------

const f0 = (v) => (v === null || v === undefined ? '–' : `${Math.round(v).toLocaleString('en-US')}`);
const ms = (v) => (v === null || v === undefined ? '–' : `${Math.round(v).toLocaleString('en-US')} ms`);
const sec = (v) => `${(v / 1000).toFixed(v % 1000 === 0 ? 0 : 1)} s`;

export function summarize(e) {
  const h = e.host;
  const c = e.config;
  const lines = [
    `# Replication: receiver-kill campaign, ${c.records} typed WordNet records, ${SUITE}`,
    '',
    `${h.date} · host ${h.host} · ${h.cpu} (${h.cores} cores, ${h.arch}${h.emulated ? ', emulated' : ''}) · ${h.runtime} · kernel ${h.kernel} · pqdb ${h.pqdb} · load average ${h.loadAverage.atStart.map((x) => x.toFixed(2)).join(' ')} at the start`,
    '',
    `Network: **${e.network.mode}** — ${e.network.description}.`,
    '',
    `Timings: ${c.records} records on a fixed schedule over the first ${sec(c.writeMs)} (one every ${c.intervalMs.toFixed(1)} ms, one commit each); campaign ${sec(c.campaignMs)}; replica SIGKILLed at ${sec(c.killMs)}, down ${sec(c.downMs)}${c.scale !== 1 ? `; **every duration scaled by ${c.scale} (a quick run, not the article's timings)**` : ''}.`,
    '',
  ];
  if (e.campaign.length > 0) {
    lines.push(
      '## Receiver kill',
      '',
      `First new readable record: target ≤ ${TARGET_FIRST_NEW_MS} ms (the article measured ${ARTICLE_FIRST_NEW_MS.toLocaleString('en-US')} ms), measured from the spawn of the new replica process and, separately, from the start of its openReplica call.`,
      '',
      '| run | written at kill | replica had reported | retained at reopen (typed-equal) | reopen watermark | spawn → open done | open | spawn → first new record | open → first new record | ≤ 250 ms | primary reread | replica reread | commit / applied watermark | primary commit | lag p50 / p99 (steady) | |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|',
      ...e.campaign.map((r) => {
        const x = r.events.restart;
        const w = r.final.watermarks;
        return `| ${r.run} | ${r.events.writtenAtKill} | ${r.events.reportedAtKill?.records ?? 0} (commit ${r.events.reportedAtKill?.applied ?? 0}) | ${x.retained.records} (${x.retained.readableTyped}) | ${x.statusAtOpen.appliedWatermark} | ${ms(x.spawnToOpenedMs)} | ${ms(x.openMs)} | **${ms(x.spawnToFirstNewMs)}** | ${ms(x.openToFirstNewMs)} | ${x.spawnToFirstNewMs <= TARGET_FIRST_NEW_MS ? 'met' : '**not met**'} | ${r.final.primary.matched} / ${c.records} | ${r.final.replica.matched} / ${c.records} | ${w.commitWatermark} / ${w.appliedWatermark} | ${w.primaryCommit} | ${ms(r.lag.p50)} / ${ms(r.lag.p99)} | ${r.ok ? 'equal' : '**NOT EQUAL**'} |`;
      }),
      '',
      'Restart, step by step (ms after the spawn of the new process), and the host load (1-minute average, other work on the host shares its cores):',
      '',
      '| run | process running | modules loaded | replica open | session up | first commit applied | first new record read | load at start / end |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...e.campaign.map((r) => {
        const x = r.events.restart;
        const d = (k) => (x[k] === undefined ? '–' : f0(x[k] - x.spawnAt));
        return `| ${r.run} | ${d('processStartAt')} | ${d('importedAt')} | ${d('openedAt')} | ${d('connectedAt')} | ${d('firstAppliedAt')} | ${d('firstNewAt')} | ${r.loadAverage.atStart[0].toFixed(2)} / ${r.loadAverage.atEnd[0].toFixed(2)} |`;
      }),
      '',
    );
    const firsts = e.campaign.map((r) => r.events.restart.spawnToFirstNewMs);
    if (e.baseline)
      lines.push(
        `For scale: a bare Node process on the replica's host runs its first line ${ms(e.baseline.spawnToFirstLineMs)} after its spawn and has imported pqdb ${ms(e.baseline.spawnToPqdbImportedMs)} after it (median of 5), before any replica work.`,
        '',
      );
    lines.push(
      `Spawn → first new record over ${firsts.length} run(s): min ${ms(Math.min(...firsts))}, median ${ms(pct(firsts, 50))}, max ${ms(Math.max(...firsts))}. Lag is from the primary's acknowledgement of a write to the replica's applied commit holding it, outside the outage (kill to first commit applied after the restart).`,
      '',
    );
  }
  if (e.faults.length > 0) {
    lines.push(
      '## Primary kill and link cut',
      '',
      `The primary SIGKILLed at ${sec(c.primaryKillMs)} and restarted on its store ${sec(c.primaryDownMs)} later, the replica running throughout (default backoff 50, 100, 250, 500, 1000 ms, the last repeating; a session silent for 2 s is taken as lost; each TCP connect has 1.5 s); the link cut at ${sec(c.cutAtMs)} for ${sec(c.cutMs)} (${e.network.mode === 'netns' ? 'both veth ends down, then up' : 'the relay stops forwarding and holds new connections'}).`,
      '',
      '| run | acknowledged at kill | present at primary reopen | spawn → listening | listening → replica reconnected | listening → replica reads new records | written during cut | applied during cut | restore → replica reads new records | session during cut | primary reread | replica reread | commit / applied / primary | |',
      '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---|',
      ...e.faults.map((r) => {
        const p = r.events.primaryRestart;
        const l = r.events.linkCut;
        const w = r.final.watermarks;
        const sess =
          l.sessionEvents.length === 0
            ? 'kept'
            : l.sessionEvents.map((s) => `${s.connected ? 'up' : 'lost'} at +${f0(s.atMs)} ms`).join(', ');
        return `| ${r.run} | ${p.ackedAtKill} | ${p.presentAtReopen} | ${ms(p.spawnToListeningMs)} | ${ms(p.listeningToReconnectedMs)} | ${ms(p.listeningToReplicaNewRecordMs)} | ${l.writtenDuringCut} | ${l.appliedDuringCut} | ${ms(l.restoreToNewRecordMs)} | ${sess} | ${r.final.primary.matched} / ${c.records} | ${r.final.replica.matched} / ${c.records} | ${w.commitWatermark} / ${w.appliedWatermark} / ${w.primaryCommit} | ${r.ok ? 'equal' : '**NOT EQUAL**'} |`;
      }),
      '',
    );
  }
  if (e.bulk !== undefined && e.bulk.length > 0) {
    lines.push(
      '## Bulk catch-up into an empty replica',
      '',
      "catch-up: the primary loads the records (batches of 1,000, one checkpoint), then an empty replica starts and catches up from the primary's current commit, timed from the replica's open. follow: the empty replica is connected first and follows while the primary loads, timed from the start of the load.",
      '',
      '| mode | records | primary store | received on the wire | time | records/s | MB/s on the wire | sessions | reread (typed-equal) | applied / primary commit |',
      '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
      ...e.bulk.map((b) =>
        b.caughtUp
          ? `| ${b.mode} | ${b.records.toLocaleString('en-US')} | ${(b.primaryStoreBytes / 1e6).toFixed(1)} MB | ${(b.wireBytes / 1e6).toFixed(1)} MB | ${ms(b.caughtUpMs)} | ${f0(b.recordsPerSecond)} | ${b.wireMBPerSecond.toFixed(1)} | ${b.sessions} | ${b.reread.matched.toLocaleString('en-US')} / ${b.reread.expected.toLocaleString('en-US')} | ${b.watermarks.applied} / ${b.primaryFinalCommit} |`
          : `| ${b.mode} | ${b.records.toLocaleString('en-US')} | ${(b.primaryStoreBytes / 1e6).toFixed(1)} MB | ${(b.wireBytes / 1e6).toFixed(1)} MB | **not caught up after ${sec(b.waitedMs)}** (last error: ${b.lastError ?? 'none'}) | – | – | ${b.sessions} | – | ${b.appliedWatermark} / ${b.primaryCommit} |`,
      ),
      '',
      ...e.bulk
        .filter((b) => b.caughtUp && b.follow.records > 0)
        .map(
          (b) =>
            `- ${b.mode}, ${b.records.toLocaleString('en-US')}: then ${b.follow.records} single-record commits ${b.follow.gapMs} ms apart; the replica held each ${ms(b.follow.lagMs.p50)} (median; max ${ms(b.follow.lagMs.max)}) after the primary acknowledged it (the reread covers them).`,
        ),
      '',
      `Wire bytes: ${e.bulk[0].wireBytesMeasuredAt} (channel frames and TCP/IP headers included). MB = 10^6 bytes.`,
      '',
    );
  }
  if (e.kept !== undefined)
    lines.push(
      `Kept from the run of ${e.kept.from} (same directory, same configuration apart from the part run again): ${e.kept.parts.join(', ')}; load average then ${e.kept.host.loadAverage.atStart.map((x) => x.toFixed(2)).join(' ')} at its start.`,
      '',
    );
  const bad = [
    ...e.campaign.filter((r) => !r.ok).map((r) => `receiver-kill run ${r.run}`),
    ...e.faults.filter((r) => !r.ok).map((r) => `faults run ${r.run}`),
    ...(e.bulk ?? [])
      .filter((b) => !b.ok)
      .map((b) => `bulk ${b.mode} of ${b.records.toLocaleString('en-US')}${b.caughtUp ? '' : ' (never caught up)'}`),
  ];
  const readErrors = [
    ...[...e.campaign, ...e.faults].flatMap((r) => [
      ...(r.events.restart?.retained.readErrors ?? []),
      ...r.final.replica.readErrors,
    ]),
    ...(e.bulk ?? []).flatMap((b) => b.reread?.readErrors ?? []),
  ];
  const codes = [...new Set(readErrors.map((x) => `${x.code}: ${x.message}`))];
  lines.push(
    readErrors.length === 0
      ? 'No replica read failed.'
      : `**${readErrors.length} replica read(s) failed** and were tried again (${codes.join('; ')}): a read under which a commit is applied fails when the replica closes the store the read began on.`,
    '',
  );
  lines.push(
    `Every full reread compares each record, field by field with its type, against the fixture recomputed in the evaluating process from the WordNet source; ${bad.length === 0 ? 'all runs ended equal' : `**not equal at the end: ${bad.join(', ')}**; every other run ended equal`}.`,
    '',
  );
  return lines.join('\n');
}

/** bench/results/replication-<arch>[-emulated]-node<major>-<date>[-n]/. */
function defaultOut() {
  return reportDir('replication', { dir: join(HERE, 'results') });
}

export async function main() {
  const c = config();
  const out = c.out ?? defaultOut();
  mkdirSync(out, { recursive: true });
  const network = setupNet(c.net);
  const cleanup = () => {
    for (const ch of children) ch.kill('SIGKILL');
    network.teardown();
    for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
  };
  const onSignal = (sig) => {
    log(`${sig}: removing the namespaces`);
    cleanup();
    process.exit(130);
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  log(`network: ${network.description}`);
  const loadAtStart = os.loadavg();
  const evidence = {
    kind: 'pqdb replication evaluation',
    config: { ...c, only: [...c.only] },
    network: { mode: network.mode, description: network.description, links: network.links, reason: network.reason },
    campaign: [],
    faults: [],
  };
  // With PQDB_REPL_OUT naming a directory that holds an evidence.json, the parts not run now are kept
  // from it (and said to be in the summary): one part can be run again without the others.
  const previousPath = join(out, 'evidence.json');
  if (c.out !== undefined && existsSync(previousPath)) {
    const previous = JSON.parse(readFileSync(previousPath, 'utf8'));
    const kept = [];
    for (const part of ['campaign', 'faults', 'bulk'])
      if (!c.only.has(part) && previous[part] !== undefined && previous[part].length !== 0) {
        evidence[part] = previous[part];
        kept.push(part);
      }
    if (kept.length > 0) {
      if (!c.only.has('campaign')) evidence.baseline = previous.baseline;
      evidence.kept = { parts: kept, from: previous.host?.date, host: previous.host, config: previous.config };
    }
  }
  const write = () => {
    evidence.host = {
      ...hostInfo(),
      kernel: `${os.release()} (${os.version()})`,
      loadAverage: { atStart: loadAtStart, atEnd: os.loadavg() },
    };
    writeFileSync(join(out, 'evidence.json'), JSON.stringify(evidence, null, 1));
    writeFileSync(join(out, 'summary.md'), summarize(evidence));
  };
  try {
    if (c.only.has('campaign') || evidence.baseline === undefined) evidence.baseline = await baseline(network);
    log(
      `a bare Node process on the replica's host: first line ${evidence.baseline.spawnToFirstLineMs.toFixed(0)} ms, pqdb imported ${evidence.baseline.spawnToPqdbImportedMs.toFixed(0)} ms after the spawn (median of 5)`,
    );
    if (c.only.has('campaign'))
      for (let i = 1; i <= c.runs; i++) {
        evidence.campaign.push(await campaign(c, network, 'receiver', i));
        write();
      }
    if (c.only.has('faults'))
      for (let i = 1; i <= c.faultRuns; i++) {
        evidence.faults.push(await campaign(c, network, 'faults', i));
        write();
      }
    if (c.only.has('bulk') && c.bulk > 0) {
      evidence.bulk = [];
      for (const [mode, n] of c.bulkRuns) {
        evidence.bulk.push(await bulk(c, network, mode, n));
        write();
      }
    }
    write();
  } finally {
    cleanup();
  }
  log(`wrote ${join(out, 'evidence.json')} and summary.md`);
  process.stdout.write(readFileSync(join(out, 'summary.md'), 'utf8'));
  process.stdout.write(`\nresults in ${out}\n`);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) await main();
