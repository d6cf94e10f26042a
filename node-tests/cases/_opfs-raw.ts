// Direct edits of an OPFS page store's four files, written from the layout docs/storage.md gives
// (not from the store's code): what an attacker with access to the origin's OPFS can do, checksums
// made to match. The store stands as its newest slot and the commit records after it in the log
// say; a page put is a record appended to the active log and a new commit slot, covering the whole
// log, whose index names it; a page removed, or a manifest, is a new slot. Used by the tamper cases in Node (over plain files) and in
// Chromium and Firefox (real OPFS, in a dedicated worker).

import { crc32c } from '../../src/_crc32c';
import { KIND_COMMIT, KIND_PAGE, RECORD_HEADER_BYTES, recordHeader } from '../../src/storage/records';
import type { SyncDirectory, SyncFile } from '../../src/storage/opfs';
import type { RawMedium } from './tamper';

const SLOT_HEADER = 44;
const ENTRY = 20;

type Entry = { at: number; length: number; crc: number };

interface Slot {
  file: 0 | 1;
  commit: number;
  log: 0 | 1;
  committed: number;
  manifest: Uint8Array | undefined;
  index: Map<number, Entry>;
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
  const count = v.getUint32(40, true);
  const end = SLOT_HEADER + len + count * ENTRY;
  if (end + 4 > b.length || v.getUint32(end, true) !== crc32c(b.subarray(0, end))) return undefined;
  const index = new Map<number, Entry>();
  for (let i = 0, e = SLOT_HEADER + len; i < count; i++, e += ENTRY)
    index.set(v.getUint32(e, true), {
      at: v.getFloat64(e + 4, true),
      length: v.getUint32(e + 12, true),
      crc: v.getUint32(e + 16, true),
    });
  return {
    file,
    commit: v.getFloat64(12, true),
    log: v.getUint32(20, true) as 0 | 1,
    committed: v.getFloat64(24, true),
    manifest: v.getUint32(32, true) === 1 ? b.slice(SLOT_HEADER, SLOT_HEADER + len) : undefined,
    index,
  };
}

function slotBytes(s: Omit<Slot, 'file'>): Uint8Array {
  const m = s.manifest ?? new Uint8Array(0);
  const b = new Uint8Array(SLOT_HEADER + m.length + s.index.size * ENTRY + 4);
  const v = new DataView(b.buffer);
  b.set(new TextEncoder().encode('PQDBOPFS'), 0);
  v.setUint32(8, 2, true);
  v.setFloat64(12, s.commit, true);
  v.setUint32(20, s.log, true);
  v.setFloat64(24, s.committed, true);
  v.setUint32(32, s.manifest === undefined ? 0 : 1, true);
  v.setUint32(36, m.length, true);
  v.setUint32(40, s.index.size, true);
  b.set(m, SLOT_HEADER);
  let e = SLOT_HEADER + m.length;
  for (const [id, x] of s.index) {
    v.setUint32(e, id, true);
    v.setFloat64(e + 4, x.at, true);
    v.setUint32(e + 12, x.length, true);
    v.setUint32(e + 16, x.crc, true);
    e += ENTRY;
  }
  v.setUint32(e, crc32c(b.subarray(0, e)), true);
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
    const s = a !== undefined && (b === undefined || a.commit > b.commit) ? a : b;
    if (s === undefined) return undefined;
    // The commits the log holds past the slot: page records, then a commit record (the store's own
    // writes, so whole; a record header's fields: kind at 4, page id at 8, length at 12).
    const log = await withFile(`log-${s.log}`, readAll);
    const v = new DataView(log.buffer, log.byteOffset, log.byteLength);
    let pending: [number, Entry][] = [];
    for (let off = s.committed; off + RECORD_HEADER_BYTES <= log.length;) {
      const kind = log[off + 4];
      const id = v.getUint32(off + 8, true);
      const length = v.getUint32(off + 12, true);
      const at = off + RECORD_HEADER_BYTES;
      off = at + length;
      if (kind === KIND_PAGE) pending.push([id, { at, length, crc: v.getUint32(at - 8, true) }]);
      if (kind !== KIND_COMMIT) continue;
      // commit 8, start 8, has manifest 4, manifest length 4, deleted ids 4, page records 4; manifest; ids
      const has = v.getUint32(at + 16, true);
      const mlen = v.getUint32(at + 20, true);
      const deletes = v.getUint32(at + 24, true);
      for (let i = 0; i < deletes; i++) s.index.delete(v.getUint32(at + 32 + mlen + 4 * i, true));
      for (const [pid, e] of pending) s.index.set(pid, e);
      pending = [];
      if (has === 1) s.manifest = log.slice(at + 32, at + 32 + mlen);
      s.commit = v.getFloat64(at, true);
      s.committed = off;
    }
    return s;
  };
  const pages = async (): Promise<Map<number, Uint8Array>> => {
    const s = await newest();
    const out = new Map<number, Uint8Array>();
    if (s === undefined) return out;
    const log = await withFile(`log-${s.log}`, readAll);
    for (const [id, e] of s.index) out.set(id, log.slice(e.at, e.at + e.length));
    return out;
  };
  /** Appends `bytes` as page `id` (or drops its entry) and commits the index and `manifest` in the other slot. */
  const commit = async (change: [number, Uint8Array | undefined] | undefined, manifest?: Uint8Array): Promise<void> => {
    const s = await newest();
    if (s === undefined) throw new Error('no commit slot to edit');
    let committed = s.committed;
    const index = new Map(s.index);
    if (change !== undefined) {
      const [id, bytes] = change;
      if (bytes === undefined) index.delete(id);
      else {
        const crc = crc32c(bytes);
        await withFile(`log-${s.log}`, (f) => {
          f.write(recordHeader(KIND_PAGE, id, bytes.length, crc), { at: committed });
          f.write(bytes, { at: committed + RECORD_HEADER_BYTES });
          f.flush();
        });
        index.set(id, { at: committed + RECORD_HEADER_BYTES, length: bytes.length, crc });
        committed += RECORD_HEADER_BYTES + bytes.length;
      }
    }
    const next = slotBytes({ commit: s.commit + 1, log: s.log, committed, manifest: manifest ?? s.manifest, index });
    await withFile(s.file === 0 ? 'slot-b' : 'slot-a', (f) => {
      f.write(next, { at: 0 });
      f.flush();
    });
  };
  return {
    pages,
    manifest: async () => (await newest())?.manifest?.slice(),
    setPage: (id, bytes) => commit([id, bytes?.slice()]),
    setManifest: (bytes) => commit(undefined, bytes.slice()),
  };
}
