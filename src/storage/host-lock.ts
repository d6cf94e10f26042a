// The node-fs writer's host lock: a listening Unix socket in Linux's abstract namespace. The kernel
// holds the name for exactly as long as the listening socket lives, and drops it when the process
// dies (even by SIGKILL). It has no file: deleting LOCK, or anything else in the directory, does not
// release it, so a second writer on the same host is refused while the first lives. It does not
// reach other hosts (a network file system) or other network namespaces (containers): there the
// LOCK file's host check and the manifest's compare-and-swap stand (docs/storage.md). Other
// platforms have no abstract namespace; there the LOCK file alone keeps writers apart.
//
// Any local user can bind any abstract name, so the name must be one only those who may open the
// store can compute: it hashes a random key kept in the store directory (LOCK.key, mode 0600, made
// once with link(2) so that concurrent first openers agree on it) with the directory's device and
// inode. A user who cannot read the key cannot take the lock before its owner. The key is trusted
// only as a regular file of this process's user that no one else may read or write, of exactly the
// size it is written with. The holder keeps its key and checks the file (on each check() and every
// KEY_CHECK_MS): a deleted key is put back, and a replaced one has its name bound too, so a second
// writer on this host, reading either key, is refused.

/// <reference types="node" />
import { createServer, type Server } from 'node:net';
import { createHash } from 'node:crypto';
import { constants, type Stats } from 'node:fs';
import { link, lstat, open, readdir, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { hex } from '../_encoding';

/** The key file the host lock's name is derived from. */
export const LOCK_KEY = 'LOCK.key';
/** Its temporary files while it is being made (removed right after; a store file for deleteStore). */
export const LOCK_KEY_TMP_RE = /^LOCK\.key\.tmp-[0-9a-f]{16}$/;
/** How often a holder checks that LOCK.key is still its key (ms). */
export const KEY_CHECK_MS = 1000;
/** A temporary key file older than this (ms) is left by a crashed opener and is removed. */
const STALE_TMP_MS = 60_000;
const KEY_RE = /^[0-9a-f]{64}\n$/;
const KEY_SIZE = 65;

/** A held host lock: check() re-asserts it against LOCK.key, release() gives it up. */
export interface HostLock {
  /** @throws PqdbError LOCKED when LOCK.key was replaced and another process holds the new key's name */
  readonly check: () => Promise<void>;
  /** Stops the periodic check (waiting for one under way); the name stays held until release. */
  readonly stopChecks: () => Promise<void>;
  readonly release: () => Promise<void>;
}

/** Why the lock was not taken: another holder, or no abstract namespace on this platform. */
export type HostLockResult = HostLock | 'held' | 'unsupported';

const randomHex = (bytes: number): string => hex(globalThis.crypto.getRandomValues(new Uint8Array(bytes)));

const untrusted = (path: string, why: string): PqdbError =>
  new PqdbError(
    'LOCKED',
    `cannot take the host lock: ${path} ${why}; another user may have planted it (remove it if the store is not open)`,
  );

/**
 * Checks what fstat says of the key file: a regular file of ours or of the store directory's owner
 * (root opening a user's store trusts that user's key: the store is theirs), private, of the key's
 * size.
 */
function checkKeyStats(path: string, s: Stats, dirOwner: number): void {
  if (!s.isFile()) throw untrusted(path, 'is not a regular file');
  const euid = process.geteuid?.();
  if (euid !== undefined && s.uid !== euid && s.uid !== dirOwner)
    throw untrusted(path, `is owned by uid ${s.uid}, neither this process's ${euid} nor the store directory's owner`);
  if ((s.mode & 0o077) !== 0)
    throw untrusted(path, `has mode ${(s.mode & 0o777).toString(8)}; only its owner may read or write it (0600)`);
  if (s.size !== KEY_SIZE) throw new PqdbError('CORRUPTION', `${path}: ${s.size} bytes, a lock key has ${KEY_SIZE}`);
}

/** The key in LOCK.key, or undefined when there is none. Never follows a link nor blocks on a FIFO. */
export async function readLockKey(dir: string): Promise<string | undefined> {
  const path = join(dir, LOCK_KEY);
  let fh;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return undefined;
    if (code === 'ELOOP') throw untrusted(path, 'is a symbolic link');
    if (code === 'EACCES' || code === 'EPERM')
      throw new PqdbError(
        'LOCKED',
        `cannot take the host lock: ${path} is not readable by this user (${code}); only the user who made it may open the store for writing or delete it`,
        { cause: e },
      );
    throw e;
  }
  try {
    checkKeyStats(path, await fh.stat(), (await stat(dir)).uid);
    const buf = Buffer.alloc(KEY_SIZE);
    const { bytesRead } = await fh.read(buf, 0, KEY_SIZE, 0);
    const text = buf.toString('latin1', 0, bytesRead);
    if (!KEY_RE.test(text)) throw new PqdbError('CORRUPTION', `${path}: not a lock key (64 hex digits and a newline)`);
    return text;
  } finally {
    await fh.close();
  }
}

/** Removes temporary key files a crashed opener left (older than a minute). */
async function removeStaleTmps(dir: string): Promise<void> {
  for (const n of await readdir(dir).catch(() => [] as string[])) {
    if (!LOCK_KEY_TMP_RE.test(n)) continue;
    const s = await lstat(join(dir, n)).catch(() => undefined);
    if (s !== undefined && Date.now() - s.mtimeMs > STALE_TMP_MS) await unlink(join(dir, n)).catch(() => undefined);
  }
}

/** Puts `key` in place as LOCK.key unless one exists (link(2): whole or not at all, never replaced). */
async function linkKey(dir: string, key: string): Promise<void> {
  await removeStaleTmps(dir);
  const tmp = join(dir, `${LOCK_KEY}.tmp-${randomHex(8)}`);
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(key);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, join(dir, LOCK_KEY)); // a concurrent first opener's key wins if it came first
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
}

/** The store's lock key: read from LOCK.key, or made (readable by the owner only) when missing. */
async function lockKey(dir: string, mine = `${randomHex(32)}\n`): Promise<string> {
  const key = await readLockKey(dir);
  if (key !== undefined) return key;
  await linkKey(dir, mine);
  const made = await readLockKey(dir);
  if (made === undefined) throw new PqdbError('LOCKED', `cannot take the host lock: ${join(dir, LOCK_KEY)} vanished`);
  return made;
}

const nameOf = (key: string, s: { dev: bigint; ino: bigint }): string =>
  `\0pqdb-${createHash('sha256').update(`pqdb node-fs lock v2\0${key}\0${s.dev}\0${s.ino}`).digest('hex').slice(0, 40)}`;

/** The abstract socket name of directory `dir`: its key, device and inode. */
export async function hostLockName(dir: string): Promise<string> {
  const key = await lockKey(dir);
  return nameOf(key, await stat(dir, { bigint: true }));
}

/** Listens on abstract name `name`: the server, or why not. */
function bind(name: string): Promise<Server | 'held' | 'unsupported'> {
  const server: Server = createServer((socket) => socket.destroy());
  return new Promise((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') resolve('held');
      else if (e.code === 'EAFNOSUPPORT' || e.code === 'ENOENT' || e.code === 'EINVAL') resolve('unsupported');
      else reject(e);
    });
    server.listen({ path: name, exclusive: true }, () => {
      server.unref(); // the lock never keeps the process alive
      resolve(server);
    });
  });
}

/** Takes the host lock of `dir`. */
export async function acquireHostLock(dir: string): Promise<HostLockResult> {
  if (process.platform !== 'linux') return 'unsupported';
  const key = await lockKey(dir);
  const ids = await stat(dir, { bigint: true });
  const first = await bind(nameOf(key, ids));
  if (typeof first === 'string') return first;
  const held = new Map<string, Server>([[key, first]]); // every key whose name this holder has bound
  let lost: PqdbError | undefined;
  let running: Promise<void> = Promise.resolve();
  let released = false;
  const checkOnce = async (): Promise<void> => {
    if (released) return;
    if (lost !== undefined) throw lost;
    const now = await lockKey(dir, key); // a deleted key is put back: this holder's own
    if (held.has(now)) return;
    const also = await bind(nameOf(now, ids)); // a replaced key: its name is this holder's too
    if (also === 'held') {
      lost = new PqdbError(
        'LOCKED',
        `node-fs page store ${dir}: ${LOCK_KEY} was replaced and another writer on this host holds the host lock of the new key`,
      );
      throw lost;
    }
    if (also !== 'unsupported') held.set(now, also);
  };
  const check = (): Promise<void> => (running = running.catch(() => undefined).then(checkOnce));
  const timer = setInterval(() => void check().catch(() => undefined), KEY_CHECK_MS);
  timer.unref();
  const stopChecks = async (): Promise<void> => {
    clearInterval(timer);
    await running.catch(() => undefined);
  };
  const release = async (): Promise<void> => {
    released = true;
    await stopChecks();
    await Promise.all([...held.values()].map((s) => new Promise<void>((done) => s.close(() => done()))));
    held.clear();
  };
  return { check, stopChecks, release };
}
