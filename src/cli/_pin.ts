// What a verb that opens a store may pin it to (docs/cli.md): `--store-id ID`, the store it must be
// (a wholly substituted store, fresh roots wrapped to the caller's public key, has another id),
// `--min-commit N`, the commit it must have reached (an older copy of the whole store is ROLLBACK),
// and `--pin-file FILE`, where both are kept between runs: read before the open (its id and commit
// pin the store), written after each successful open and before the store is closed with the id
// and the commit then seen. A pin file that does not exist yet is trusted on first use (init
// --pin-file writes the first one). It is JSON { storeId, commit }, replaced atomically (a new file
// of mode 0600 made with O_EXCL, synced, renamed over the old one); a pin file that is a symbolic
// link or not a regular file is refused, and the commit it holds never goes down. Node only.

/// <reference types="node" />
import {
  closeSync,
  constants,
  fsyncSync,
  lstatSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { dirname } from 'node:path';
import { PqdbError } from '../errors';
import { UsageError } from './_report';

/** The pin options of the verbs that open a store, and their help lines. */
export const PIN_OPTIONS = {
  'store-id': { type: 'string' },
  'min-commit': { type: 'string' },
  'pin-file': { type: 'string' },
} as const;

export const PIN_HELP = `  --store-id ID          the store must be this one (32 hex digits, as status prints it)
  --min-commit N         the store must have reached commit N, else it is an older copy (ROLLBACK)
  --pin-file FILE        keeps the store id and the last commit seen in FILE and checks them on
                         the next run (a missing FILE is written: trust on first use)`;

/** A store pin: what the store must be and how far it must be, and where it is kept. */
export interface StorePin {
  storeId?: string;
  minCommit?: number;
  file?: string;
}

/**
 * The pin the options give (with the pin file's id and commit folded in), or undefined for none.
 * @throws UsageError for a malformed --store-id or --min-commit, a pin file that cannot be one (a
 * symbolic link, not a regular file, not JSON { storeId, commit }) or that names another store
 * than --store-id.
 * @example
 * const pin = pinFrom({ 'pin-file': 'app.pin' }); // { storeId, minCommit, file } once written
 */
export function pinFrom(options: {
  'store-id'?: string;
  'min-commit'?: string;
  'pin-file'?: string;
}): StorePin | undefined {
  const { 'store-id': id, 'min-commit': min, 'pin-file': file } = options;
  if (id !== undefined && !/^[0-9a-fA-F]{32}$/.test(id))
    throw new UsageError(`--store-id expected 32 hex digits, got "${id}"`);
  if (min !== undefined && (!/^\d+$/.test(min) || !Number.isSafeInteger(Number(min))))
    throw new UsageError(`--min-commit expected a whole number, got "${min}"`);
  const minCommit = min === undefined ? undefined : Number(min);
  if (id === undefined && minCommit === undefined && file === undefined) return undefined;
  const pin: StorePin = { storeId: id?.toLowerCase(), minCommit, file };
  const kept = file !== undefined ? readPin(file) : undefined;
  if (kept !== undefined) {
    if (pin.storeId !== undefined && pin.storeId !== kept.storeId)
      throw new UsageError(`--store-id ${pin.storeId} is not the store ${file} pins (${kept.storeId})`);
    pin.storeId = kept.storeId;
    pin.minCommit = Math.max(pin.minCommit ?? 0, kept.commit);
  }
  return pin;
}

/**
 * Records what an open (or the verb's commits) saw in the pin file, never lowering its commit.
 * @throws PqdbError IO_ERROR when the file cannot be written; UsageError as pinFrom for a file that
 * cannot be a pin file, or PqdbError AUTH_FAILED when it now names another store.
 */
export function recordPin(pin: StorePin | undefined, seen: { storeId: string; commit: number }): void {
  if (pin?.file === undefined) return;
  const file = pin.file;
  const kept = readPin(file); // again: another run may have moved it on since
  if (kept !== undefined && kept.storeId !== seen.storeId)
    throw new PqdbError('AUTH_FAILED', `${file} pins another store (${kept.storeId}) than ${seen.storeId}`);
  const text = `${JSON.stringify({ storeId: seen.storeId, commit: Math.max(seen.commit, kept?.commit ?? 0) })}\n`;
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    const fd = openSync(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      writeSync(fd, text);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(tmp, file);
    syncDirectory(dirname(file));
  } catch (e) {
    rmSync(tmp, { force: true });
    throw new PqdbError('IO_ERROR', `--pin-file ${file}: ${(e as Error).message}`, { cause: e });
  }
}

/** The pin file's { storeId, commit }, or undefined when it does not exist. */
function readPin(file: string): { storeId: string; commit: number } | undefined {
  let text: string;
  try {
    const st = lstatSync(file);
    if (st.isSymbolicLink()) throw new UsageError(`--pin-file ${file} is a symbolic link: refused`);
    if (!st.isFile()) throw new UsageError(`--pin-file ${file} is not a regular file`);
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      text = readFileSync(fd, 'utf8');
    } finally {
      closeSync(fd);
    }
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    if (e instanceof UsageError) throw e;
    throw new UsageError(`--pin-file ${file}: ${(e as Error).message}`, { cause: e });
  }
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    v = undefined;
  }
  const p = v as { storeId?: unknown; commit?: unknown } | undefined;
  if (
    typeof p !== 'object' ||
    p === null ||
    typeof p.storeId !== 'string' ||
    !/^[0-9a-f]{32}$/.test(p.storeId) ||
    !Number.isSafeInteger(p.commit) ||
    (p.commit as number) < 0
  )
    throw new UsageError(`--pin-file ${file} is not a pin file (JSON { storeId, commit })`);
  return { storeId: p.storeId, commit: p.commit as number };
}

/** Makes a rename in `dir` durable (a no-op where directories cannot be opened, as on Windows). */
function syncDirectory(dir: string): void {
  let fd: number | undefined;
  try {
    fd = openSync(dir, 'r');
    fsyncSync(fd);
  } catch {
    // best effort
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}
