// A SyncDirectory (src/storage/opfs.ts) over a directory of files in Node: FileSystemSyncAccessHandle's
// calls made with node:fs's synchronous ones, and its exclusivity (a second handle on an open file is
// refused with NoModificationAllowedError, as OPFS refuses it). Lets the OPFS page store's logic
// run the conformance suite in Node; the store itself is proven on Chromium's real OPFS.
import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { SyncDirectory, SyncFile } from '../../src/storage/opfs';

const held = new Set<string>();

/**
 * Fault injection: writes or flushes of the files named here throw (a failing medium), every write
 * throws QuotaExceededError (`quota`), or, with `crashAfter` set, every write, truncate and flush
 * once that many have run throws (a process killed there: nothing after it reaches the files).
 */
export const failing = {
  write: new Set<string>(),
  flush: new Set<string>(),
  quota: false,
  /** Writes as Chromium's do on a full quota: half the bytes land, the count is FILE_ERROR_NO_SPACE as a uint32. */
  noSpace: false,
  crashAfter: Infinity,
  reset() {
    this.write.clear();
    this.flush.clear();
    this.quota = false;
    this.noSpace = false;
    this.crashAfter = Infinity;
  },
};

/** The writes and flushes each file has had (by file name), for tests of what a commit costs. */
export const calls = new Map<string, { writes: number; flushes: number }>();
const count = (name: string, what: 'writes' | 'flushes') => {
  const c = calls.get(name) ?? { writes: 0, flushes: 0 };
  c[what]++;
  calls.set(name, c);
};

function step(name: string): void {
  if (failing.crashAfter <= 0) throw domError('InvalidStateError', `${name}: the process is gone`);
  failing.crashAfter--;
}

function domError(name: string, message: string): Error {
  const e = new Error(message);
  e.name = name;
  return e;
}

export function nodeSyncDirectory(dir: string): SyncDirectory {
  mkdirSync(dir, { recursive: true });
  return {
    async open(name: string): Promise<SyncFile> {
      const path = join(dir, name);
      if (held.has(path)) throw domError('NoModificationAllowedError', `${name} has an open access handle`);
      const fd = openSync(path, 'a+');
      closeSync(fd);
      const h = openSync(path, 'r+');
      held.add(path);
      let closed = false;
      const live = () => {
        if (closed) throw domError('InvalidStateError', `${name}: the access handle is closed`);
      };
      return {
        read(buffer, { at }) {
          live();
          return readSync(h, buffer, 0, buffer.length, at);
        },
        write(buffer, { at }) {
          live();
          step(name);
          count(name, 'writes');
          if (failing.quota) throw domError('QuotaExceededError', 'quota exceeded');
          if (failing.write.has(name)) throw domError('InvalidModificationError', `${name}: write failed`);
          if (failing.noSpace) {
            writeSync(h, buffer, 0, buffer.length >> 1, at);
            return 4294967288;
          }
          return writeSync(h, buffer, 0, buffer.length, at);
        },
        truncate(size) {
          live();
          step(name);
          ftruncateSync(h, size);
        },
        getSize() {
          live();
          return fstatSync(h).size;
        },
        flush() {
          live();
          step(name);
          count(name, 'flushes');
          if (failing.flush.has(name)) throw domError('InvalidModificationError', `${name}: flush failed`);
          fsyncSync(h);
        },
        close() {
          if (closed) return;
          closed = true;
          held.delete(path);
          closeSync(h);
        },
      };
    },
  };
}
