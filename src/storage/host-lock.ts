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
// inode. A user who cannot read the key cannot take the lock before its owner.

/// <reference types="node" />
import { createServer, type Server } from 'node:net';
import { createHash } from 'node:crypto';
import { link, open, readFile, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';

/** The key file the host lock's name is derived from. */
export const LOCK_KEY = 'LOCK.key';
/** Its temporary files while it is being made (removed right after; a store file for deleteStore). */
export const LOCK_KEY_TMP_RE = /^LOCK\.key\.tmp-[0-9a-f]{16}$/;

/** Why the lock was not taken: another holder, or no abstract namespace on this platform. */
export type HostLockResult = { release: () => Promise<void> } | 'held' | 'unsupported';

const randomHex = (bytes: number): string =>
  Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');

/** The store's lock key: read from LOCK.key, or made (readable by the owner only) when missing. */
async function lockKey(dir: string): Promise<string> {
  const path = join(dir, LOCK_KEY);
  try {
    return await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const tmp = join(dir, `${LOCK_KEY}.tmp-${randomHex(8)}`);
  const fh = await open(tmp, 'wx', 0o600);
  try {
    await fh.writeFile(`${randomHex(32)}\n`);
    await fh.sync();
  } finally {
    await fh.close();
  }
  try {
    await link(tmp, path); // whole or not at all; a concurrent first opener's key wins if it came first
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  } finally {
    await unlink(tmp).catch(() => undefined);
  }
  return readFile(path, 'utf8');
}

/** The abstract socket name of directory `dir`: its key, device and inode. */
export async function hostLockName(dir: string): Promise<string> {
  const key = await lockKey(dir);
  const s = await stat(dir, { bigint: true });
  const h = createHash('sha256').update(`pqdb node-fs lock v2\0${key}\0${s.dev}\0${s.ino}`).digest('hex');
  return `\0pqdb-${h.slice(0, 40)}`;
}

/** Takes the host lock of `dir`. */
export async function acquireHostLock(dir: string): Promise<HostLockResult> {
  if (process.platform !== 'linux') return 'unsupported';
  const name = await hostLockName(dir);
  const server: Server = createServer((socket) => socket.destroy());
  return new Promise<HostLockResult>((resolve, reject) => {
    server.once('error', (e: NodeJS.ErrnoException) => {
      if (e.code === 'EADDRINUSE') resolve('held');
      else if (e.code === 'EAFNOSUPPORT' || e.code === 'ENOENT' || e.code === 'EINVAL') resolve('unsupported');
      else reject(e);
    });
    server.listen({ path: name, exclusive: true }, () => {
      server.unref(); // the lock never keeps the process alive
      resolve({ release: () => new Promise<void>((done) => server.close(() => done())) });
    });
  });
}
