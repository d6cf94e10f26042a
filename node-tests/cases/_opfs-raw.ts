// Direct edits of an OPFS page store's four files, written from the layout docs/storage.md gives
// (not from the store's code): what an attacker with access to the origin's OPFS can do, checksums
// made to match. A page put or removed is a record appended to the active log and a new commit slot
// naming it; a manifest is a new slot. Used by the tamper cases in Node (over plain files) and in
// Chromium and Firefox (real OPFS, in a dedicated worker).

import { crc32c } from '../../src/_crc32c';
import { KIND_DELETE, KIND_PAGE, RECORD_HEADER_BYTES, recordHeader } from '../../src/storage/records';
import type { SyncDirectory, SyncFile } from '../../src/storage/opfs';
import type { RawMedium } from './tamper';

const SLOT_HEADER = 40;

interface Slot {
  file: 0 | 1;
  commit: number;
  log: 0 | 1;
  committed: number;
  manifest: Uint8Array | undefined;
}

function readAll(f: SyncFile): Uint8Array {
  const b = new Uint8Array(f.getSize());
  f.read(b, { at: 0 });
  return b;
}

function parseSlot(b: Uint8Array, file: 0 | 1): Slot | undefined {
  if (b.length < SLOT_HEADER + 4) return undefined;
  const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
  const len = v.getUint32(36, true);
  if (SLOT_HEADER + len + 4 > b.length) return undefined;
  if (v.getUint32(SLOT_HEADER + len, true) !== crc32c(b.subarray(0, SLOT_HEADER + len))) return undefined;
  return {
    file,
    commit: v.getFloat64(12, true),
    log: v.getUint32(20, true) as 0 | 1,
    committed: v.getFloat64(24, true),
    manifest: v.getUint32(32, true) === 1 ? b.slice(SLOT_HEADER, SLOT_HEADER + len) : undefined,
  };
}

function slotBytes(s: Omit<Slot, 'file'>): Uint8Array {
  const m = s.manifest ?? new Uint8Array(0);
  const b = new Uint8Array(SLOT_HEADER + m.length + 4);
  const v = new DataView(b.buffer);
  b.set(new TextEncoder().encode('PQDBOPFS'), 0);
  v.setUint32(8, 1, true);
  v.setFloat64(12, s.commit, true);
  v.setUint32(20, s.log, true);
  v.setFloat64(24, s.committed, true);
  v.setUint32(32, s.manifest === undefined ? 0 : 1, true);
  v.setUint32(36, m.length, true);
  b.set(m, SLOT_HEADER);
  v.setUint32(SLOT_HEADER + m.length, crc32c(b.subarray(0, SLOT_HEADER + m.length)), true);
  return b;
}

/** The raw medium of the OPFS store whose directory `dir` opens; every call opens and closes the files it needs. */
export function opfsRaw(dir: SyncDirectory): RawMedium {
  const withFile = async <T>(name: string, body: (f: SyncFile) => T): Promise<T> => {
    const f = await dir.open(name);
    try {
      return body(f);
    } finally {
      f.close();
    }
  };
  const newest = async (): Promise<Slot | undefined> => {
    const a = await withFile('slot-a', (f) => parseSlot(readAll(f), 0));
    const b = await withFile('slot-b', (f) => parseSlot(readAll(f), 1));
    return a !== undefined && (b === undefined || a.commit > b.commit) ? a : b;
  };
  const pages = async (): Promise<Map<number, Uint8Array>> => {
    const s = await newest();
    const out = new Map<number, Uint8Array>();
    if (s === undefined) return out;
    const log = await withFile(`log-${s.log}`, readAll);
    const v = new DataView(log.buffer);
    for (let at = 0; at < s.committed;) {
      const kind = log[at + 4];
      const id = v.getUint32(at + 8, true);
      const len = v.getUint32(at + 12, true);
      if (kind === KIND_PAGE) out.set(id, log.slice(at + RECORD_HEADER_BYTES, at + RECORD_HEADER_BYTES + len));
      else out.delete(id);
      at += RECORD_HEADER_BYTES + len;
    }
    return out;
  };
  /** Appends `record` to the active log at the committed end and commits it with `manifest` in the other slot. */
  const commit = async (record: Uint8Array[] | undefined, manifest?: Uint8Array): Promise<void> => {
    const s = await newest();
    if (s === undefined) throw new Error('no commit slot to edit');
    let committed = s.committed;
    if (record !== undefined)
      await withFile(`log-${s.log}`, (f) => {
        for (const part of record) {
          f.write(part, { at: committed });
          committed += part.length;
        }
        f.flush();
      });
    const next = slotBytes({ commit: s.commit + 1, log: s.log, committed, manifest: manifest ?? s.manifest });
    await withFile(s.file === 0 ? 'slot-b' : 'slot-a', (f) => {
      f.write(next, { at: 0 });
      f.flush();
    });
  };
  return {
    pages,
    manifest: async () => (await newest())?.manifest?.slice(),
    setPage: (id, bytes) =>
      commit(
        bytes === undefined
          ? [recordHeader(KIND_DELETE, id, 0, 0)]
          : [recordHeader(KIND_PAGE, id, bytes.length, crc32c(bytes)), bytes.slice()],
      ),
    setManifest: (bytes) => commit(undefined, bytes.slice()),
  };
}
