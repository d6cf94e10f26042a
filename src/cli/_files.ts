// The one way the pqdb verbs write a file: a new one, created with O_EXCL ("wx"), so an existing
// file is never overwritten and a symbolic link (even one to nowhere) is never followed: the open
// fails instead of writing through it. Node only.

/// <reference types="node" />
import { writeFileSync } from 'node:fs';
import { PqdbError } from '../errors';

/**
 * Writes `data` to a new file (mode `mode`, default 0644 less the umask); an existing file or a
 * symbolic link at `file` is an error and nothing is written.
 * @throws PqdbError IO_ERROR when the file exists, is a link, or cannot be written
 * @example
 * writeNew('policy.signed', text);
 */
export function writeNew(file: string, data: string | Uint8Array, mode?: number): void {
  try {
    writeFileSync(file, data, { flag: 'wx', ...(mode !== undefined ? { mode } : {}) });
  } catch (e) {
    throw new PqdbError('IO_ERROR', `cannot write ${file}: ${(e as Error).message}`, { cause: e });
  }
}
