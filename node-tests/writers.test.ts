// Two writers on one file store (DESIGN §11). On this host the host lock keeps a second writer out
// whatever happens to the LOCK file, and a SIGKILLed holder releases it. A writer let in anyway (one
// on another host sharing the directory, after a LOCK deleted while its holder is alive) is stopped
// by the compare-and-swap of the commit counter: whichever writer was overtaken gets CONFLICT and
// writes nothing, and every acknowledged put survives.
import { describe, it, expect, afterEach } from 'vitest';
import { mkdtempSync, rmSync, unlinkSync, existsSync, statSync, readdirSync, writeFileSync, renameSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fork, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, generateRecipient, openNodeFsPageStore } from '../src/node';
import { encodeManifest, publishManifest, readCurrentManifest, type SyncHook } from '../src/storage/node-fs-manifest';

const r = generateRecipient('classical');
const schema = { n: 'integer' } as const;
const dirs: string[] = [];
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

const open = (location: string, create = false) =>
  openStore({ location, create, recipients: [r.publicKey], unlock: r.secretKey });
/** A writer on another host sharing the directory: this host's lock does not reach it. */
const openElsewhere = async (location: string) =>
  openStore({
    storage: await openNodeFsPageStore(location, { hostLock: false }),
    recipients: [r.publicKey],
    unlock: r.secretKey,
  });

describe('a second writer', () => {
  it('on this host is refused while the holder lives, even with LOCK deleted; a SIGKILL frees it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    await (await open(dir, true)).close();
    const child = fork(new URL('./support/crash-writer.mjs', import.meta.url), [
      dir,
      '0',
      Buffer.from(r.publicKey).toString('hex'),
      Buffer.from(r.secretKey).toString('hex'),
      '1',
    ]);
    await new Promise<void>((resolve) => child.on('message', (m: { acked?: number }) => m.acked === 3 && resolve()));
    await expect(open(dir)).rejects.toMatchObject({ code: 'LOCKED' });
    unlinkSync(join(dir, 'LOCK')); // deleted behind the live holder's back
    await expect(open(dir)).rejects.toMatchObject({ code: 'LOCKED', message: expect.stringMatching(/this host/) });
    expect(existsSync(join(dir, 'LOCK'))).toBe(false); // the refused opener left nothing behind
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    const after = await open(dir);
    expect(
      after.collection('crash', { schema: { round: 'integer', i: 'integer', payload: 'string' } }).has('r0-3'),
    ).toBe(true);
    await after.close();
  });

  it('from another host, let in by a deleted LOCK, cannot lose an acknowledged put', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    const a = await open(dir, true);
    const ca = a.collection('c', { schema });
    await ca.put('a1', { n: 1 });
    await expect(openElsewhere(dir)).rejects.toMatchObject({ code: 'LOCKED' });

    unlinkSync(join(dir, 'LOCK')); // deleted behind the holder's back
    const b = await openElsewhere(dir);
    const cb = b.collection('c', { schema });
    await ca.put('a2', { n: 2 }); // acknowledged: A was first
    await expect(cb.put('b1', { n: 3 })).rejects.toMatchObject({ code: 'CONFLICT' }); // B was overtaken
    await expect(cb.put('b2', { n: 4 })).rejects.toMatchObject({ code: expect.stringMatching(/CONFLICT|IO_ERROR/) });
    await ca.put('a3', { n: 5 }); // A goes on
    await b.close();
    await a.close();

    const again = await open(dir);
    const c = again.collection('c', { schema });
    expect([await c.get('a1'), await c.get('a2'), await c.get('a3')]).toEqual([{ n: 1 }, { n: 2 }, { n: 5 }]);
    expect(c.has('b1')).toBe(false);
    expect(again.recovery.actions.join(' ')).not.toMatch(/CORRUPTION/);
    await again.close();
  });

  it('the writer that committed second after a takeover is the one refused', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    const a = await open(dir, true);
    const ca = a.collection('c', { schema });
    await ca.put('a1', { n: 1 });
    unlinkSync(join(dir, 'LOCK'));
    const b = await openElsewhere(dir);
    const cb = b.collection('c', { schema });
    await cb.put('b1', { n: 2 }); // acknowledged: B committed first this time
    await expect(ca.put('a2', { n: 3 })).rejects.toMatchObject({ code: 'CONFLICT' });
    await a.close();
    await b.close();
    const again = await open(dir);
    const c = again.collection('c', { schema });
    expect([await c.get('a1'), await c.get('b1')]).toEqual([{ n: 1 }, { n: 2 }]);
    expect(c.has('a2')).toBe(false);
    await again.close();
  });
});

// Two writers the host lock does not reach: each in a network namespace of its own (a container
// sharing the volume), with LOCK deleted behind the first one's back. They start their puts at the
// same instant; whichever links the next MANIFEST first wins, the other gets CONFLICT at its first
// commit. Every acknowledged put of the winner must survive and the store must open, for writing
// and read-only, after every trial.
const unshareWorks = (() => {
  if (process.platform !== 'linux') return false;
  try {
    return spawnSync('unshare', ['-n', 'true']).status === 0;
  } catch {
    return false;
  }
})();
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

interface RaceChild {
  proc: ChildProcess;
  netns: string;
  next: () => Promise<Record<string, unknown>>;
}

async function raceChild(): Promise<RaceChild> {
  const proc = spawn(
    'unshare',
    [
      '-n',
      process.execPath,
      fileURLToPath(new URL('./support/race-writer.mjs', import.meta.url)),
      hex(r.publicKey),
      hex(r.secretKey),
    ],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
  );
  const inbox: Record<string, unknown>[] = [];
  const waiting: ((m: Record<string, unknown>) => void)[] = [];
  proc.on('message', (m: Record<string, unknown>) => {
    const w = waiting.shift();
    if (w) w(m);
    else inbox.push(m);
  });
  const next = () =>
    new Promise<Record<string, unknown>>((resolve) => {
      const m = inbox.shift();
      if (m) resolve(m);
      else waiting.push(resolve);
    });
  const ready = await next();
  return { proc, netns: String(ready.netns), next };
}

describe('two writers in separate network namespaces, started at one instant', () => {
  const why = unshareWorks ? '' : ' [SKIPPED: `unshare -n` cannot run here; it needs Linux and root]';
  it.skipIf(!unshareWorks)(
    `the overtaken one gets CONFLICT and loses only its own commit; every acknowledged put survives${why}`,
    async () => {
      const [a, b] = await Promise.all([raceChild(), raceChild()]);
      try {
        expect(a.netns).not.toBe(b.netns); // the host lock of one does not reach the other
        const TRIALS = Number(process.env.PQDB_RACE_TRIALS ?? 8); // npm run bench:fuzz runs more
        const PUTS = 60;
        for (let t = 0; t < TRIALS; t++) {
          const dir = mkdtempSync(join(tmpdir(), 'pqdb-race-'));
          dirs.push(dir);
          const seed = await open(dir, true);
          await seed.collection('race', { schema: { w: 'string', i: 'integer' } }).put('seed', { w: 'seed', i: 0 });
          await seed.close();
          a.proc.send({ op: 'open', dir });
          expect(await a.next()).toEqual({ opened: true });
          unlinkSync(join(dir, 'LOCK')); // deleted behind the live holder's back
          b.proc.send({ op: 'open', dir });
          expect(await b.next()).toEqual({ opened: true }); // let in: another namespace, no LOCK
          const done = [a.next(), b.next()];
          a.proc.send({ op: 'go', n: PUTS, tag: 'a' }); // the start barrier: both wait for this
          b.proc.send({ op: 'go', n: PUTS, tag: 'b' });
          const [ra, rb] = (await Promise.all(done)) as { acked: number[]; error?: string; message?: string }[];
          const [winner, loser, wtag, ltag] =
            ra.acked.length >= rb.acked.length ? [ra, rb, 'a', 'b'] : [rb, ra, 'b', 'a'];
          const said = (x: { error?: string; message?: string }) =>
            x.error === undefined ? 'no error' : `${x.error}: ${x.message}`;
          const where = `trial ${t}: a acked ${ra.acked.length} (${said(ra)}), b acked ${rb.acked.length} (${said(rb)})`;
          expect(winner.acked.length, where).toBe(PUTS);
          expect(winner.error, where).toBeUndefined();
          expect(loser.acked, where).toEqual([]); // its first commit was the one overtaken
          expect(loser.error, where).toBe('CONFLICT');

          const check = async (s: Awaited<ReturnType<typeof open>>) => {
            const c = s.collection('race', { schema: { w: 'string', i: 'integer' } });
            expect(await c.get('seed')).toEqual({ w: 'seed', i: 0 });
            for (const i of winner.acked) expect(await c.get(`${wtag}-${i}`), where).toEqual({ w: wtag, i });
            expect(c.has(`${ltag}-0`), where).toBe(false);
            await s.close();
          };
          await check(
            await openStore({ location: dir, readOnly: true, recipients: [r.publicKey], unlock: r.secretKey }),
          );
          await check(await open(dir));
        }
      } finally {
        await Promise.all(
          [a, b].map((c) => {
            const exited = new Promise((resolve) => c.proc.on('exit', resolve));
            c.proc.send({ op: 'exit' });
            return exited;
          }),
        );
      }
    },
    Math.max(120_000, Number(process.env.PQDB_RACE_TRIALS ?? 8) * 10_000),
  );
});

const isRoot = process.platform === 'linux' && process.getuid?.() === 0;

describe('another local user', () => {
  const why = isRoot ? '' : ' [SKIPPED: needs root on Linux to run a process as nobody]';
  it.skipIf(!isRoot)(
    `cannot lock the owner out: the host lock is named from a key only the owner can read${why}`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-')); // 0700, root's
      dirs.push(dir);
      await (await open(dir, true)).close();
      // The name the host lock had, from stat() of the directory alone: anyone could bind it first.
      const s = statSync(dir, { bigint: true });
      const oldName = `\0pqdb-${createHash('sha256').update(`pqdb node-fs lock v1\0${s.dev}\0${s.ino}`).digest('hex').slice(0, 40)}`;
      const squatter = spawn(
        'runuser',
        [
          '-u',
          'nobody',
          '--',
          process.execPath,
          '-e',
          `const fs = require('node:fs');
         let key = 'unreadable';
         try { fs.readFileSync(process.argv[2] + '/LOCK.key'); key = 'read'; } catch (e) { key = e.code; }
         const srv = require('node:net').createServer();
         srv.on('error', (e) => { console.log('error ' + e.code); process.exit(1); });
         srv.listen({ path: Buffer.from(process.argv[1], 'hex').toString('latin1'), exclusive: true },
           () => console.log('bound ' + process.getuid() + ' ' + key));
         process.stdin.on('end', () => process.exit(0)).resume(); // runuser's child ends with the test`,
          Buffer.from(oldName, 'latin1').toString('hex'),
          dir,
        ],
        { stdio: ['pipe', 'pipe', 'inherit'] },
      );
      const squatterExited = new Promise((resolve) => squatter.on('exit', resolve));
      try {
        const line = await new Promise<string>((resolve) =>
          squatter.stdout!.once('data', (d) => resolve(String(d).trim())),
        );
        expect(line).toBe('bound 65534 EACCES'); // nobody holds the old name and cannot read the key
        const w = await open(dir); // the owner still opens for writing…
        await w.collection('c', { schema }).put('k', { n: 1 });
        const ro = await openStore({ location: dir, readOnly: true, recipients: [r.publicKey], unlock: r.secretKey });
        expect(await ro.collection('c', { schema }).get('k')).toEqual({ n: 1 }); // …and read-only
        await ro.close();
        await w.close();
      } finally {
        squatter.stdin!.end();
        await squatterExited;
      }
    },
  );
});

describe('a read-only open', () => {
  it('needs no lock: it opens and reads while a writer in another process holds the store, and does not block it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    await (await open(dir, true)).close();
    const child = fork(new URL('./support/crash-writer.mjs', import.meta.url), [
      dir,
      '0',
      hex(r.publicKey),
      hex(r.secretKey),
      '1',
    ]);
    const acks: number[] = [];
    const waiters: [number, () => void][] = [];
    child.on('message', (m: { acked?: number }) => {
      if (m.acked === undefined) return;
      acks.push(m.acked);
      for (const [n, go] of waiters.splice(0))
        if (acks.length >= n) go();
        else waiters.push([n, go]);
    });
    const acked = (n: number) =>
      new Promise<void>((resolve) => (acks.length >= n ? resolve() : waiters.push([n, resolve])));
    try {
      await acked(3);
      await expect(open(dir)).rejects.toMatchObject({ code: 'LOCKED' }); // a second writer is still refused
      const seen = acks.length; // acknowledged before the open began: in its view
      const ro = await openStore({ location: dir, readOnly: true, recipients: [r.publicKey], unlock: r.secretKey });
      const c = ro.collection('crash', { schema: { round: 'integer', i: 'integer', payload: 'string' } });
      for (let i = 0; i < seen; i++) expect(await c.get(`r0-${i}`)).toMatchObject({ round: 0, i });
      await acked(seen + 6); // the writer goes on committing while the reader is open
      const again = await openStore({ location: dir, readOnly: true, recipients: [r.publicKey], unlock: r.secretKey });
      const c2 = again.collection('crash', { schema: { round: 'integer', i: 'integer', payload: 'string' } });
      expect(await c2.get(`r0-${seen + 4}`)).toMatchObject({ round: 0, i: seen + 4 }); // a later view sees later commits
      await again.close();
      await ro.close();
    } finally {
      const exited = new Promise((resolve) => child.on('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    }
  });
});

describe('the manifest compare-and-swap (link of MANIFEST-<commit>)', () => {
  const sync: SyncHook = (fh) => fh.sync();
  const manifestOf = (commit: number, tag: number) => encodeManifest(commit, new Map(), new Uint8Array([tag]));

  it('of writers publishing the same commit at once exactly one wins; a stale one recreating a deleted number loses', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-writers-'));
    dirs.push(dir);
    for (let k = 0; k < 3; k++) await publishManifest(dir, k, manifestOf(k + 1, k + 1), sync);
    expect(readdirSync(dir).filter((n) => n.startsWith('MANIFEST-'))).toEqual(['MANIFEST-0000000000000003']);
    // Five writers that all read commit 3 publish commit 4 together.
    const results = await Promise.allSettled(
      [1, 2, 3, 4, 5].map((w) => publishManifest(dir, 3, manifestOf(4, 40 + w), sync)),
    );
    const won = results.flatMap((r, i) => (r.status === 'fulfilled' ? [40 + i + 1] : []));
    expect(won).toHaveLength(1);
    for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'CONFLICT' });
    let now = await readCurrentManifest(dir);
    expect([now?.commitSeq, now?.manifest?.[0]]).toEqual([4, won[0]]);
    // A writer still at commit 1: MANIFEST-0000000000000002 was deleted, so its link succeeds, but
    // the higher commit is there: it removes its file and gets CONFLICT.
    await expect(publishManifest(dir, 1, manifestOf(2, 99), sync)).rejects.toMatchObject({ code: 'CONFLICT' });
    expect(existsSync(join(dir, 'MANIFEST-0000000000000002'))).toBe(false);
    now = await readCurrentManifest(dir);
    expect([now?.commitSeq, now?.manifest?.[0]]).toEqual([4, won[0]]);
    // MANIFEST one commit behind (a winner's late rename) changes nothing: the highest counter is current.
    writeFileSync(join(dir, 'MANIFEST.old'), manifestOf(3, 3));
    renameSync(join(dir, 'MANIFEST.old'), join(dir, 'MANIFEST'));
    now = await readCurrentManifest(dir);
    expect([now?.commitSeq, now?.manifest?.[0]]).toEqual([4, won[0]]);
    expect(readdirSync(dir).filter((n) => n.startsWith('MANIFEST.tmp'))).toEqual([]); // no temporary file left
  });
});
