// The node-fs writer's host lock: a listening Unix socket in Linux's abstract namespace, named by
// a hash of the store directory's device and inode. The kernel holds the name for exactly as long
// as the listening socket lives, and drops it when the process dies (even by SIGKILL). It has no
// file: deleting LOCK, or anything else in the directory, does not release it, so a second writer
// on the same host is refused while the first lives. It does not reach other hosts (a network file
// system) or other network namespaces (containers): there the LOCK file's host check and the
// manifest's compare-and-swap stand (docs/security.md). Other platforms have no abstract
// namespace; there the LOCK file alone keeps writers apart.

/// <reference types="node" />
import { createServer, type Server } from 'node:net';
import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';

/** Why the lock was not taken: another holder, or no abstract namespace on this platform. */
export type HostLockResult = { release: () => Promise<void> } | 'held' | 'unsupported';

/** The abstract socket name of directory `dir` (device and inode, so every path to it agrees). */
export async function hostLockName(dir: string): Promise<string> {
  const s = await stat(dir, { bigint: true });
  const h = createHash('sha256').update(`pqdb node-fs lock v1\0${s.dev}\0${s.ino}`).digest('hex');
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
