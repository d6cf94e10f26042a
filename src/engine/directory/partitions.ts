// A base of the persisted key directory kept in partitions (DESIGN §6): a row's partition is the
// top `bits` bits of FNV-1a of its id's UTF-8 bytes; every partition is a snapshot of its own (kind
// part, format.ts) in pages of its own (pages.ts), and the base's head lists where they are. An
// open loads a partition on first use (KeyDirectory.lazyBase) through a PartSource.

import { PqdbError } from '../../errors';
import { b64 } from '../../_encoding';
import { emptyRows, fnv1a, partOf, type PartSource, type Rows } from './rows';
import type { KeyDirectory } from './key-directory';
import {
  decodeSnapshot,
  governanceList,
  serialise,
  snapshotHeader,
  MAX_PART_BITS,
  type PartsHeader,
  type SnapshotHeader,
} from './format';
import { readSnapshotSync, sealSnapshot, type PageSink } from './pages';

/** Rows per base partition that the number of partitions aims at. */
export const PART_ROWS = 1024;

/**
 * Seals the whole directory as a base in partitions (header v 2) into `sink`: every partition a
 * snapshot of kind part in pages of its own, then the head (kind base: the commit pages and where
 * the partitions are). Loads any partition of a lazily loaded base first.
 */
export async function sealBase(
  sink: PageSink,
  key: Uint8Array,
  directory: KeyDirectory,
  afterPage: number,
  logs: Record<string, number>,
  pending?: Record<string, string[]>,
  frontiers?: Record<string, string[]>,
  pause: () => Promise<void> = async () => undefined,
  partRows = PART_ROWS,
): Promise<{ pages: number[]; partPages: number[]; rows: number; bytes: number }> {
  await directory.loadAllInSteps(pause);
  const { govList, govIndex } = governanceList(directory);
  // Every table's rows, and each row's partition.
  type Table = { name: string; rows: Rows & { removed: Uint8Array }; idAt: Uint32Array; order: Uint32Array };
  const all: Table[] = [];
  let total = 0;
  for (const [name, table] of directory.collections()) {
    const rows = await table.rows(govIndex, undefined, pause);
    all.push({ name, rows, idAt: new Uint32Array(rows.n), order: new Uint32Array(rows.n) });
    total += rows.n;
  }
  let bits = 0;
  while (bits < MAX_PART_BITS && total > partRows * 2 ** bits) bits++;
  const n = 1 << bits;
  const tables: PartsHeader['tables'] = {};
  // Rows grouped by partition (a counting sort): partition p's are order[start[p], start[p + 1]).
  const starts = new Map<Table, Uint32Array>();
  for (const t of all) {
    const counts = (tables[t.name] = { rows: new Array<number>(n).fill(0), bytes: new Array<number>(n).fill(0) });
    const part = new Uint16Array(t.rows.n);
    let at = 0;
    for (let i = 0; i < t.rows.n; i++) {
      if ((i & 1023) === 1023) await pause();
      const len = t.rows.idLength[i];
      const p = partOf(fnv1a(t.rows.ids, at, len), bits);
      part[i] = p;
      t.idAt[i] = at;
      at += len;
      counts.rows[p]++;
      counts.bytes[p] += t.rows.length[i];
    }
    const start = new Uint32Array(n + 1);
    for (let p = 0; p < n; p++) start[p + 1] = start[p] + counts.rows[p];
    const fill = start.slice(0, n);
    for (let i = 0; i < t.rows.n; i++) t.order[fill[part[i]]++] = i;
    starts.set(t, start);
  }
  // A fresh id binds the partitions to this head: pages of a base whose commit never landed (their
  // ids handed out again) do not pass for this one's.
  const base = b64(crypto.getRandomValues(new Uint8Array(16)));
  const parts: PartsHeader = { bits, base, pages: [], bytes: [], tables };
  const partPages: number[] = [];
  try {
    for (let p = 0; p < n; p++) {
      const cols: { name: string; rows: Rows & { removed: Uint8Array } }[] = [];
      if (p > 0) await pause();
      for (const t of all) {
        const k = tables[t.name].rows[p];
        if (k === 0) continue;
        const from = starts.get(t)![p];
        let idBytes = 0;
        for (let j = 0; j < k; j++) idBytes += t.rows.idLength[t.order[from + j]];
        const r = { ...emptyRows(k, idBytes), removed: new Uint8Array(k) };
        const src = t.rows;
        for (let j = 0, at = 0; j < k; j++) {
          const i = t.order[from + j];
          const len = src.idLength[i];
          r.ids.set(src.ids.subarray(t.idAt[i], t.idAt[i] + len), at);
          at += len;
          r.idLength[j] = len;
          r.page[j] = src.page[i];
          r.offset[j] = src.offset[i];
          r.length[j] = src.length[i];
          r.leaf[j] = src.leaf[i];
          r.generation[j] = src.generation[i];
          r.sequence[j] = src.sequence[i];
          r.governance[j] = src.governance[i];
          r.suite[j] = src.suite[i];
        }
        cols.push({ name: t.name, rows: r });
      }
      const header = { ...snapshotHeader(2, 'part', afterPage, govList, {}), part: p, bits, base };
      const { bytes } = serialise(header, cols, [], []);
      try {
        const ids = await sealSnapshot(sink, key, bytes, pause);
        parts.pages.push(ids);
        parts.bytes.push(bytes.length);
        partPages.push(...ids);
      } finally {
        bytes.fill(0);
        for (const c of cols) c.rows.ids.fill(0);
      }
    }
  } finally {
    for (const t of all) t.rows.ids.fill(0);
  }
  const header = { ...snapshotHeader(2, 'base', afterPage, [], logs, pending, frontiers), parts };
  const { bytes } = serialise(header, [], directory.pages(), []);
  try {
    const pages = await sealSnapshot(sink, key, bytes, pause);
    return { pages, partPages, rows: total, bytes: bytes.length };
  } finally {
    bytes.fill(0);
  }
}

/**
 * The partitions of base `head` (decoded, header v 2) as a PartSource: `read` gives a page's bytes
 * synchronously (undefined when it is missing); `key` the directory key.
 */
export function partSource(
  head: SnapshotHeader,
  key: () => Uint8Array,
  read: (id: number, length: number) => Uint8Array | undefined,
): PartSource {
  const parts = head.parts!;
  return {
    bits: parts.bits,
    tables: new Map(Object.entries(parts.tables)),
    load(p) {
      const plain = readSnapshotSync(key(), parts.pages[p], parts.bytes[p], read);
      try {
        const { header: h, collections } = decodeSnapshot(plain);
        if (
          h.kind !== 'part' ||
          h.part !== p ||
          h.bits !== parts.bits ||
          h.base !== parts.base ||
          h.afterPage !== head.afterPage
        )
          throw new PqdbError('CORRUPTION', `directory page ${parts.pages[p][0]} is not partition ${p} of its base`);
        if (collections.some((c) => c.removed.some((x) => x !== 0)))
          throw new PqdbError('CORRUPTION', `partition ${p} of the persisted key directory has a removal`);
        return { governance: h.governance, collections, done: () => plain.fill(0) };
      } catch (e) {
        plain.fill(0);
        throw e;
      }
    },
  };
}
