// The node-fs host lock's key file (src/storage/host-lock.ts, DESIGN §11): LOCK.key is trusted only
// as a private regular file of this process's user, of the key's size; the holder keeps its key and
// puts it back (or binds a replaced key's name too), so deleting or swapping the file does not let a
// second writer on this host in; a user who may write the store but not read the key gets LOCKED;
// temporary key files a crashed opener left are removed.
import { describe, it, expect, afterEach } from 'vitest';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  unlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { openStore, generateRecipient } from '../src/node';
import { acquireHostLock, type HostLock, type HostLockResult } from '../src/storage/host-lock';
import { takeWriterLock, releaseWriterLock, checkWriterLock } from '../src/storage/node-fs-lock';

const linux = process.platform === 'linux';
const isRoot = linux && process.getuid?.() === 0;
const r = generateRecipient('classical');
const dirs: string[] = [];
const held: HostLock[] = [];
afterEach(async () => {
  await Promise.all(held.splice(0).map((h) => h.release()));
  dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true }));
});
const fresh = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'pqdb-hostlock-'));
  dirs.push(d);
  return d;
};
const hold = (res: HostLockResult): HostLock => {
  if (typeof res === 'string') throw new Error(`host lock not taken: ${res}`);
  held.push(res);
  return res;
};
const newKey = (): string => `${Buffer.from(globalThis.crypto.getRandomValues(new Uint8Array(32))).toString('hex')}\n`;
/** Replaces LOCK.key with another valid key of this user, as rename(2) does: atomically. */
const swapKey = (dir: string): void => {
  writeFileSync(join(dir, 'LOCK.key.swap'), newKey(), { mode: 0o600 });
  renameSync(join(dir, 'LOCK.key.swap'), join(dir, 'LOCK.key'));
};
const open = (location: string, create = false) =>
  openStore({ location, create, recipients: [r.publicKey], unlock: r.secretKey });

describe.skipIf(!linux)('a LOCK.key someone else chose', () => {
  const planted: [string, (dir: string) => void, string, RegExp][] = [
    ['of another user', (d) => chownSync(join(d, 'LOCK.key'), 65534, 65534), 'LOCKED', /owned by uid 65534/],
    ['others may read', (d) => chmodSync(join(d, 'LOCK.key'), 0o644), 'LOCKED', /mode 644/],
    ['group may write', (d) => chmodSync(join(d, 'LOCK.key'), 0o620), 'LOCKED', /mode 620/],
    [
      'a symbolic link to /dev/zero (read without end)',
      (d) => (unlinkSync(join(d, 'LOCK.key')), symlinkSync('/dev/zero', join(d, 'LOCK.key'))),
      'LOCKED',
      /symbolic link/,
    ],
    [
      'a FIFO (open blocks)',
      (d) => (unlinkSync(join(d, 'LOCK.key')), spawnSync('mkfifo', ['-m', '600', join(d, 'LOCK.key')])),
      'LOCKED',
      /not a regular file/,
    ],
    ['longer than a key', (d) => writeFileSync(join(d, 'LOCK.key'), newKey() + 'x'), 'CORRUPTION', /66 bytes/],
    ['not hex', (d) => writeFileSync(join(d, 'LOCK.key'), 'z'.repeat(64) + '\n'), 'CORRUPTION', /not a lock key/],
  ];
  for (const [what, plant, code, message] of planted) {
    it.skipIf(what.startsWith('of another') && !isRoot)(
      `is refused, with a typed error naming the file: ${what}`,
      async () => {
        const dir = fresh();
        await await takeWriterLock(dir).then((l) => releaseWriterLock(dir, l));
        plant(dir);
        const err = await takeWriterLock(dir).then(
          () => undefined,
          (e) => e,
        );
        expect(err).toMatchObject({ name: 'PqdbError', code, message: expect.stringMatching(message) });
        expect(err.message).toContain(join(dir, 'LOCK.key'));
        expect(existsSync(join(dir, 'LOCK'))).toBe(false); // nothing taken
      },
      10_000,
    );
  }
});

describe.skipIf(!linux)('the holder of the host lock', () => {
  it('puts a deleted LOCK.key back (its own key), so a second writer on this host is still refused', async () => {
    const dir = fresh();
    const a = hold(await acquireHostLock(dir));
    const key = readFileSync(join(dir, 'LOCK.key'), 'utf8');
    unlinkSync(join(dir, 'LOCK.key'));
    await a.check();
    expect(readFileSync(join(dir, 'LOCK.key'), 'utf8')).toBe(key);
    expect(await acquireHostLock(dir)).toBe('held');
  });

  it('binds the name of a LOCK.key swapped behind its back, so a writer reading the new key is refused', async () => {
    const dir = fresh();
    const a = hold(await acquireHostLock(dir));
    swapKey(dir);
    await a.check();
    expect(await acquireHostLock(dir)).toBe('held');
    swapKey(dir); // and again: both earlier names stay held
    await a.check();
    expect(await acquireHostLock(dir)).toBe('held');
  });

  it('learns it lost the lock when a second writer took a new key first: its check is LOCKED', async () => {
    const dir = fresh();
    const a = await takeWriterLock(dir);
    try {
      unlinkSync(join(dir, 'LOCK.key'));
      unlinkSync(join(dir, 'LOCK'));
      hold(await acquireHostLock(dir)); // the second writer, with a key of its own
      await expect(checkWriterLock(a)).rejects.toMatchObject({
        code: 'LOCKED',
        message: expect.stringMatching(/LOCK\.key was replaced/),
      });
    } finally {
      await releaseWriterLock(dir, a);
    }
  });

  it('of an open store puts LOCK.key back by itself: with LOCK and LOCK.key deleted a second open is still LOCKED', async () => {
    const dir = fresh();
    const w = await open(dir, true);
    try {
      unlinkSync(join(dir, 'LOCK.key'));
      unlinkSync(join(dir, 'LOCK'));
      for (let i = 0; i < 100 && !existsSync(join(dir, 'LOCK.key')); i++)
        await new Promise((ok) => setTimeout(ok, 100));
      expect(existsSync(join(dir, 'LOCK.key'))).toBe(true);
      await expect(open(dir)).rejects.toMatchObject({ code: 'LOCKED', message: expect.stringMatching(/this host/) });
    } finally {
      await w.close();
    }
    await (await open(dir)).close(); // released on close
  });
});

describe.skipIf(!linux)('temporary key files', () => {
  it('a crashed first opener left (older than a minute) are removed when the key is made; a recent one stays', async () => {
    const dir = fresh();
    const stale = join(dir, 'LOCK.key.tmp-00112233445566ff');
    const recent = join(dir, 'LOCK.key.tmp-ffeeddccbbaa9988');
    writeFileSync(stale, 'half');
    writeFileSync(recent, 'half');
    const old = new Date(Date.now() - 5 * 60_000);
    utimesSync(stale, old, old);
    hold(await acquireHostLock(dir));
    expect(existsSync(stale)).toBe(false);
    expect(existsSync(recent)).toBe(true); // maybe another opener's, still being written
  });
});

describe('a user who may write the store but not read LOCK.key', () => {
  const why = isRoot ? '' : ' [SKIPPED: needs root on Linux to run a process as nobody]';
  it.skipIf(!isRoot)(`gets LOCKED, naming the key file, when opening as a writer or deleting${why}`, async () => {
    const dir = fresh();
    await (await open(dir, true)).close();
    chmodSync(dir, 0o777); // a shared directory; LOCK.key stays the owner's, 0600
    const bin = fresh();
    chmodSync(bin, 0o755);
    buildSync({
      stdin: {
        contents: `export { takeWriterLock } from './src/storage/node-fs-lock';
          export { deleteNodeFsStore } from './src/storage/node-fs-delete';`,
        resolveDir: process.cwd(),
        loader: 'ts',
      },
      bundle: true,
      platform: 'node',
      format: 'esm',
      outfile: join(bin, 'lock.mjs'),
      logLevel: 'silent',
    });
    const script = `const m = await import(${JSON.stringify(join(bin, 'lock.mjs'))});
      const out = [];
      for (const f of [() => m.takeWriterLock(process.argv[1]), () => m.deleteNodeFsStore(process.argv[1])])
        await f().then(() => out.push('ok'), (e) => out.push(e.code + ' ' + e.message));
      console.log(JSON.stringify(out));`;
    const run = spawnSync(
      'runuser',
      ['-u', 'nobody', '--', process.execPath, '--input-type=module', '-e', script, dir],
      {
        encoding: 'utf8',
      },
    );
    expect(run.stderr).toBe('');
    const [opened, deleted] = JSON.parse(run.stdout) as string[];
    for (const line of [opened, deleted]) {
      expect(line).toMatch(/^LOCKED /);
      expect(line).toContain(`${join(dir, 'LOCK.key')} is not readable by this user`);
    }
    expect(existsSync(join(dir, 'MANIFEST'))).toBe(true); // nothing deleted
    await (await open(dir)).close(); // the owner still opens it
  });
});
