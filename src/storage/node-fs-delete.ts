// Deleting a node-fs store (Node only): the directory is removed only when it holds a pqdb store
// and nothing else, and only while no writer holds it. The deleter takes the writer's locks first
// (host lock, LOCK file), so a writer that is open, or one that opens meanwhile, keeps the store.

/// <reference types="node" />
import { open, readdir, rmdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { mediumError } from './page-store-base';
import {
  LOCK,
  MANIFEST,
  MANIFEST_FILE_RE,
  MANIFEST_MAGIC,
  MANIFEST_TMP_RE,
  SEGMENT_RE,
  releaseWriterLock,
  takeWriterLock,
} from './node-fs';
import { LOCK_KEY, LOCK_KEY_TMP_RE } from './host-lock';

/** Files of a store other than MANIFEST and LOCK: segments, numbered and temporary manifests, the lock key. */
const storeFile = (n: string): boolean =>
  SEGMENT_RE.test(n) ||
  MANIFEST_FILE_RE.test(n) ||
  MANIFEST_TMP_RE.test(n) ||
  n === LOCK_KEY ||
  LOCK_KEY_TMP_RE.test(n);

const notFound = (dir: string, why: string): PqdbError =>
  new PqdbError('NOT_FOUND', `no pqdb store at ${dir}: ${why}; nothing was deleted`);

/**
 * Deletes the file store in directory `dir`: its segment files, its MANIFEST last, then the
 * directory. Refuses a directory that is missing, has no pqdb MANIFEST, or holds any other file.
 * @throws PqdbError NOT_FOUND (no pqdb store there), LOCKED (a writer holds it), IO_ERROR
 * @example await deleteNodeFsStore('./data/app');
 */
export async function deleteNodeFsStore(dir: string): Promise<void> {
  if (typeof dir !== 'string' || dir.length === 0)
    throw new TypeError(`"location" expected a non-empty string, got ${typeof dir}`);
  const hadKey = (await entries(dir)).includes(LOCK_KEY); // a missing directory is NOT_FOUND before any lock is tried
  const lock = await takeWriterLock(dir);
  let deleted = false;
  try {
    const names = await entries(dir);
    const foreign = names.filter((n) => n !== MANIFEST && n !== LOCK && !storeFile(n));
    if (foreign.length > 0)
      throw notFound(dir, `it holds files a pqdb store does not (${foreign.slice(0, 3).join(', ')})`);
    if (!names.includes(MANIFEST) || !(await isManifest(join(dir, MANIFEST))))
      throw notFound(dir, `it has no pqdb ${MANIFEST} file`);
    try {
      // The MANIFEST goes last: an interrupted delete leaves a store that a second delete finishes.
      for (const n of await entries(dir)) if (storeFile(n) && n !== LOCK_KEY) await unlink(join(dir, n));
      await unlink(join(dir, MANIFEST));
      await releaseWriterLock(dir, { file: lock.file, host: undefined }); // LOCK
      await unlink(join(dir, LOCK_KEY)).catch(() => undefined); // the host lock's name stays held until release
      await rmdir(dir);
      deleted = true;
    } catch (e) {
      throw mediumError(`node-fs page store ${dir}: delete`, e);
    }
  } finally {
    // A directory that is not a store is left as it was: without the lock key taking the lock made.
    if (!deleted && !hadKey) await unlink(join(dir, LOCK_KEY)).catch(() => undefined);
    // The host lock goes last: no writer on this host gets in before the directory is gone.
    await releaseWriterLock(dir, lock);
  }
}

async function entries(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw notFound(dir, 'no such directory');
    if (code === 'ENOTDIR') throw notFound(dir, 'not a directory');
    throw mediumError(`node-fs page store ${dir}`, e);
  }
}

/** True when the file starts with the node-fs manifest's magic. */
async function isManifest(path: string): Promise<boolean> {
  const fh = await open(path, 'r');
  try {
    const head = new Uint8Array(MANIFEST_MAGIC.length);
    const { bytesRead } = await fh.read(head, 0, head.length, 0);
    return bytesRead === head.length && head.every((b, i) => b === MANIFEST_MAGIC.charCodeAt(i));
  } finally {
    await fh.close();
  }
}
