/// <reference types="node" />
// The writer's locks of a node-fs page store (src/storage/node-fs.ts): the host lock where the
// platform has one (host-lock.ts), and the LOCK file naming the holder's pid, host and a random
// token, taken over only from a process of this host that is gone.

import { open, readFile, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { hex } from '../_encoding';
import { acquireHostLock, type HostLock } from './host-lock';
import { mediumError } from './page-store-base';

export const LOCK = 'LOCK';

/** What a writer holds: the LOCK file's contents and, where the platform has one, the host lock. */
export interface WriterLock {
  readonly file: string;
  readonly host: (() => Promise<void>) | undefined;
  /** Re-asserts the host lock against LOCK.key (host-lock.ts); absent without a host lock. */
  readonly check?: () => Promise<void>;
}

/** The host locks of this process's writers by their LOCK file's contents (a random token): a release stops its checks. */
const held = new Map<string, HostLock>();

/**
 * Re-asserts the writer's host lock: puts back a deleted LOCK.key, binds the name of a replaced one.
 * Cheap (one open, fstat and read of LOCK.key); a writer calls it before each commit.
 * @throws PqdbError LOCKED when another writer on this host holds the host lock of a replaced key
 */
export async function checkWriterLock(lock: WriterLock): Promise<void> {
  try {
    await lock.check?.();
  } catch (e) {
    throw mediumError(`node-fs page store: lock`, e);
  }
}

/**
 * Takes the writer's locks of `dir`: the host lock (unless `hostLock` is false), then the LOCK file.
 * @throws PqdbError LOCKED when another writer holds either
 */
export async function takeWriterLock(dir: string, hostLock = true): Promise<WriterLock> {
  const host = !hostLock
    ? 'unsupported'
    : await acquireHostLock(dir).catch((e) => {
        throw mediumError(`node-fs page store ${dir}: lock`, e);
      });
  if (host === 'held')
    throw new PqdbError('LOCKED', `node-fs page store ${dir} is held by another writer on this host`);
  try {
    const file = await acquireLock(dir);
    if (host === 'unsupported') return { file, host: undefined };
    held.set(file, host);
    return { file, host: host.release, check: host.check };
  } catch (e) {
    if (host !== 'unsupported') await host.release();
    throw e;
  }
}

/** Releases what takeWriterLock took (the LOCK file only while it is still this holder's). */
export async function releaseWriterLock(dir: string, lock: WriterLock): Promise<void> {
  const host = held.get(lock.file);
  held.delete(lock.file);
  await host?.stopChecks(); // no check puts LOCK.key back from here on (deleteStore removes it next)
  try {
    await releaseLock(join(dir, LOCK), lock.file);
  } finally {
    await lock.host?.();
  }
}

/** Takes the LOCK file; returns what it wrote (pid, host and a random token: this holder's mark). */
async function acquireLock(dir: string): Promise<string> {
  const path = join(dir, LOCK);
  const token = hex(globalThis.crypto.getRandomValues(new Uint8Array(8)));
  const me = `${process.pid}\n${hostname()}\n${token}\n`;
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fh = await open(path, 'wx');
      try {
        await fh.writeFile(me);
      } finally {
        await fh.close();
      }
      return me;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw mediumError(`node-fs page store ${dir}: lock`, e);
    }
    let holder = '';
    try {
      holder = await readFile(path, 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') continue; // released meanwhile
      throw mediumError(`node-fs page store ${dir}: lock`, e);
    }
    const [pidText, host] = holder.split('\n');
    const pid = Number(pidText);
    // A lock file still being written (empty) or held on another host counts as live.
    const stale = Number.isInteger(pid) && pid > 0 && host === hostname() && !alive(pid);
    if (!stale) break;
    await unlink(path).catch(() => undefined);
  }
  throw new PqdbError('LOCKED', `node-fs page store ${dir} is locked by another writer (${LOCK} file)`);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'; // exists, owned by someone else
  }
}

/** Removes the LOCK file if it is still this holder's (a writer let in after it keeps its own). */
async function releaseLock(path: string, mine: string): Promise<void> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  if (text === mine) await unlink(path);
}
