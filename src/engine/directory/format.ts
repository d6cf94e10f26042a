// The persisted key directory's snapshot format (DESIGN §6, docs/format.md "Directory pages"). A
// checkpoint writes the directory as of its commit: a full snapshot (a *base*) or, while the changes
// since the base stay under a quarter of its records, a *run* holding only the rows changed since
// the last snapshot (removals included). A base is kept in partitions (partitions.ts), each a
// snapshot of kind *part*. Each snapshot is serialised into columns (below), then sealed in pages
// (pages.ts). The decoded columns are checked against their declared sizes.
//
// Snapshot layout (little-endian columns, each padded to 8 bytes so they are read in place):
//   be32(|header|) ‖ header JSON ‖ pad ‖ per collection: idLength u16[n] ‖ ids ‖ page u32[n] ‖
//   offset u32[n] ‖ length u32[n] ‖ leaf u32[n] ‖ generation u32[n] ‖ governance u32[n] ‖
//   sequence f64[n] ‖ suite u8[n] ‖ removed u8[n]; then the commit pages: ids u32[k] ‖
//   generations u32[k] ‖ lengths u32[k] ‖ salts 16·k ‖ dropped ids u32[m]

import { PqdbError } from '../../errors';
import { SALT_BYTES } from '../../crypto/record';
import { emptyRows, type PageInfo, type Rows } from './rows';
import type { KeyDirectory } from './key-directory';

const MAX_ID_BYTES = 1024;
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1)
  throw new Error('pqdb directory snapshots need a little-endian platform');

/** At most 2^12 partitions. */
export const MAX_PART_BITS = 12;

/** A base kept in partitions (header v 2): each partition a snapshot of its own (kind part). */
export interface PartsHeader {
  /** A row's partition: the top `bits` bits of FNV-1a of its id's UTF-8 bytes. */
  bits: number;
  /** A random id of this base (base64 of 16 bytes), which each of its partitions repeats. */
  base: string;
  /** Per partition, its pages in order and its plaintext length. */
  pages: number[][];
  bytes: number[];
  /** Per collection, per partition: its rows and the sum of their sealed lengths. */
  tables: Record<string, { rows: number[]; bytes: number[] }>;
}

/** What a snapshot says besides the rows. */
export interface SnapshotHeader {
  v: 1 | 2;
  kind: 'base' | 'run' | 'part';
  /** The last commit page it covers. */
  afterPage: number;
  governance: string[];
  collections: { name: string; n: number; idBytes: number }[];
  /** Commit pages added (a base: every live one) and dropped since the last snapshot. */
  added: number;
  dropped: number;
  /** Per generation, its log's size at `afterPage`. */
  logs: Record<string, number>;
  /** Per generation, its log's compact range at that size (base64 hashes). */
  frontiers?: Record<string, string[]>;
  /** Per collection, ids a persisted lexical index must re-index when it loads. */
  pending?: Record<string, string[]>;
  /** A base in partitions: where they are (its own collections are then empty). */
  parts?: PartsHeader;
  /** A partition: its number, of 2^bits, and its base's id. */
  part?: number;
  bits?: number;
  base?: string;
}

/** A decoded snapshot: header, rows per collection (views into the plaintext) and page changes. */
export interface Snapshot {
  header: SnapshotHeader;
  collections: { name: string; rows: Rows; removed: Uint8Array }[];
  added: [number, PageInfo][];
  dropped: number[];
}

const pad8 = (n: number) => (n + 7) & ~7;

/** A snapshot's governance list, filled as `govIndex` maps the directory's interned states into it. */
export function governanceList(directory: KeyDirectory): { govList: string[]; govIndex: (interned: number) => number } {
  const govList: string[] = [];
  const govMap = new Map<number, number>();
  const govIndex = (i: number) => {
    let j = govMap.get(i);
    if (j === undefined) govMap.set(i, (j = govList.push(directory.interned.strings[i]) - 1));
    return j;
  };
  return { govList, govIndex };
}

/**
 * Serialises the directory: in full (`kind` base) or the changes it tracked since the last
 * snapshot (`kind` run; see KeyDirectory.changes).
 */
export async function encodeSnapshot(
  directory: KeyDirectory,
  kind: 'base' | 'run',
  afterPage: number,
  logs: Record<string, number>,
  pending?: Record<string, string[]>,
  frontiers?: Record<string, string[]>,
  pause: () => Promise<void> = async () => undefined,
): Promise<{ bytes: Uint8Array; rows: number }> {
  const changes = kind === 'run' ? directory.changes() : undefined;
  if (kind === 'run' && changes === undefined) throw new RangeError('no changes are tracked: write a base');
  const { govList, govIndex } = governanceList(directory);
  const cols: { name: string; rows: Rows & { removed: Uint8Array } }[] = [];
  for (const [name, table] of directory.collections()) {
    if (changes !== undefined) {
      const ids = changes.ids.get(name);
      if (ids !== undefined && ids.size > 0) cols.push({ name, rows: await table.rows(govIndex, ids, pause) });
    } else cols.push({ name, rows: await table.rows(govIndex, undefined, pause) });
  }
  const added: [number, PageInfo][] =
    changes !== undefined ? changes.added.map((id) => [id, directory.page(id)!]) : directory.pages();
  const dropped = changes?.dropped ?? [];
  return serialise(snapshotHeader(1, kind, afterPage, govList, logs, pending, frontiers), cols, added, dropped);
}

/** A snapshot's header but for its collections and page counts (serialise sets them). */
export function snapshotHeader(
  v: 1 | 2,
  kind: SnapshotHeader['kind'],
  afterPage: number,
  governance: string[],
  logs: Record<string, number>,
  pending?: Record<string, string[]>,
  frontiers?: Record<string, string[]>,
): SnapshotHeader {
  return {
    v,
    kind,
    afterPage,
    governance,
    collections: [],
    added: 0,
    dropped: 0,
    logs,
    ...(frontiers !== undefined ? { frontiers } : {}),
    ...(pending !== undefined && Object.keys(pending).length > 0 ? { pending } : {}),
  };
}

/** The snapshot of `header` (its collection list and page counts set here), its rows and page changes. */
export function serialise(
  header: SnapshotHeader,
  cols: readonly { name: string; rows: Rows & { removed: Uint8Array } }[],
  added: readonly [number, PageInfo][],
  dropped: readonly number[],
): { bytes: Uint8Array; rows: number } {
  header.collections = cols.map(({ name, rows }) => ({ name, n: rows.n, idBytes: rows.ids.length }));
  header.added = added.length;
  header.dropped = dropped.length;
  const head = enc.encode(JSON.stringify(header));
  let size = pad8(4 + head.length);
  for (const { rows: r } of cols) size += columnsBytes(r.n, r.ids.length);
  size += pagesBytes(added.length, dropped.length);
  const out = new Uint8Array(size);
  new DataView(out.buffer).setUint32(0, head.length);
  out.set(head, 4);
  let at = pad8(4 + head.length);
  const put = (a: ArrayBufferView) => {
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at);
    at += pad8(a.byteLength);
  };
  for (const { rows: r } of cols) {
    put(r.idLength);
    put(r.ids);
    for (const c of [r.page, r.offset, r.length, r.leaf, r.generation, r.governance, r.sequence, r.suite, r.removed])
      put(c);
  }
  put(Uint32Array.from(added, ([id]) => id));
  put(Uint32Array.from(added, ([, p]) => p.generation));
  put(Uint32Array.from(added, ([, p]) => p.bytes));
  const salts = new Uint8Array(added.length * SALT_BYTES);
  added.forEach(([, p], i) => salts.set(p.salt, i * SALT_BYTES));
  put(salts);
  put(Uint32Array.from(dropped));
  let rows = 0;
  for (const c of cols) rows += c.rows.n;
  return { bytes: out, rows };
}

const nat = (x: unknown): x is number => Number.isSafeInteger(x) && (x as number) >= 0;

/** A base's partition list as decodeSnapshot accepts it: 2^bits partitions, each with pages no other has. */
function goodParts(x: PartsHeader | undefined): boolean {
  if (typeof x !== 'object' || x === null || !Number.isInteger(x.bits) || x.bits < 0 || x.bits > MAX_PART_BITS)
    return false;
  const n = 1 << x.bits;
  const seen = new Set<number>();
  const list = (a: unknown, ok: (v: unknown) => boolean) => Array.isArray(a) && a.length === n && a.every(ok);
  return (
    typeof x.base === 'string' &&
    list(
      x.pages,
      (ids) =>
        Array.isArray(ids) && ids.length > 0 && ids.every((id) => nat(id) && id > 0 && !seen.has(id) && !!seen.add(id)),
    ) &&
    list(x.bytes, (b) => nat(b) && b > 0) &&
    typeof x.tables === 'object' &&
    x.tables !== null &&
    Object.values(x.tables).every((t) => typeof t === 'object' && t !== null && list(t.rows, nat) && list(t.bytes, nat))
  );
}

/** A partition's own header: its number among 2^bits, and no page changes. */
function goodPart(h: SnapshotHeader): boolean {
  return (
    h.kind === 'part' &&
    Number.isInteger(h.bits) &&
    h.bits! >= 0 &&
    h.bits! <= MAX_PART_BITS &&
    nat(h.part) &&
    h.part < 1 << h.bits! &&
    typeof h.base === 'string' &&
    h.added === 0 &&
    h.dropped === 0
  );
}

function columnsBytes(n: number, idBytes: number): number {
  return pad8(2 * n) + pad8(idBytes) + 6 * pad8(4 * n) + 8 * n + 2 * pad8(n);
}

function pagesBytes(added: number, dropped: number): number {
  return 3 * pad8(4 * added) + pad8(SALT_BYTES * added) + pad8(4 * dropped);
}

/**
 * Decodes an authenticated snapshot (views into `plain`, which must start 8-byte aligned).
 * @throws PqdbError CORRUPTION when the columns do not add up to what the header declares.
 */
export function decodeSnapshot(plain: Uint8Array): Snapshot {
  const bad = (why: string): never => {
    throw new PqdbError('CORRUPTION', `the persisted key directory ${why}`);
  };
  if (plain.byteOffset % 8 !== 0 || plain.length < 4) bad('is truncated');
  const headLen = new DataView(plain.buffer, plain.byteOffset).getUint32(0);
  if (4 + headLen > plain.length) bad('is truncated');
  let h: SnapshotHeader;
  try {
    h = JSON.parse(dec.decode(plain.subarray(4, 4 + headLen))) as SnapshotHeader;
  } catch {
    return bad('has a bad header');
  }
  if (
    typeof h !== 'object' ||
    h === null ||
    (h.v === 1 ? h.kind !== 'base' && h.kind !== 'run' : h.v !== 2 || (h.kind !== 'base' && h.kind !== 'part')) ||
    !nat(h.afterPage) ||
    !Array.isArray(h.governance) ||
    !h.governance.every((g) => typeof g === 'string') ||
    !Array.isArray(h.collections) ||
    !nat(h.added) ||
    !nat(h.dropped) ||
    typeof h.logs !== 'object' ||
    h.logs === null ||
    !Object.entries(h.logs).every(([g, n]) => nat(Number(g)) && nat(n)) ||
    (h.frontiers !== undefined &&
      (typeof h.frontiers !== 'object' ||
        h.frontiers === null ||
        !Object.values(h.frontiers).every((f) => Array.isArray(f) && f.every((x) => typeof x === 'string')))) ||
    (h.pending !== undefined &&
      (typeof h.pending !== 'object' ||
        !Object.values(h.pending).every((ids) => Array.isArray(ids) && ids.every((id) => typeof id === 'string'))))
  )
    bad('has a bad header');
  if (
    h.v === 2
      ? !(h.kind === 'base' ? goodParts(h.parts) && h.collections.length === 0 : goodPart(h))
      : h.parts !== undefined || h.part !== undefined || h.bits !== undefined || h.base !== undefined
  )
    bad('has a bad partition header');
  let size = pad8(4 + headLen);
  for (const c of h.collections) {
    if (typeof c !== 'object' || c === null || typeof c.name !== 'string' || !nat(c.n) || !nat(c.idBytes))
      bad('has a bad collection entry');
    size += columnsBytes(c.n, c.idBytes);
  }
  size += pagesBytes(h.added, h.dropped);
  if (size !== plain.length) bad(`is ${plain.length} bytes where its header declares ${size}`);
  let at = pad8(4 + headLen);
  const take = <T>(make: (buf: ArrayBuffer, off: number, n: number) => T, n: number, width: number): T => {
    const v = make(plain.buffer as ArrayBuffer, plain.byteOffset + at, n);
    at += pad8(n * width);
    return v;
  };
  const u8 = (n: number) => take((b, o, k) => new Uint8Array(b, o, k), n, 1);
  const u16 = (n: number) => take((b, o, k) => new Uint16Array(b, o, k), n, 2);
  const u32 = (n: number) => take((b, o, k) => new Uint32Array(b, o, k), n, 4);
  const f64 = (n: number) => take((b, o, k) => new Float64Array(b, o, k), n, 8);
  const collections = h.collections.map(({ name, n, idBytes }) => {
    const rows: Rows = { ...emptyRows(0, 0), n };
    rows.idLength = u16(n);
    rows.ids = u8(idBytes);
    rows.page = u32(n);
    rows.offset = u32(n);
    rows.length = u32(n);
    rows.leaf = u32(n);
    rows.generation = u32(n);
    rows.governance = u32(n);
    rows.sequence = f64(n);
    rows.suite = u8(n);
    const removed = u8(n);
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const len = rows.idLength[i];
      if (len === 0 || len > MAX_ID_BYTES || removed[i] > 1) bad(`has a bad row in collection ${name}`);
      if (removed[i] === 0 && (rows.governance[i] >= h.governance.length || !Number.isSafeInteger(rows.sequence[i])))
        bad(`has a bad row in collection ${name}`);
      sum += len;
    }
    if (sum !== idBytes) bad(`has ids that do not add up in collection ${name}`);
    return { name, rows, removed };
  });
  const ids = u32(h.added);
  const gens = u32(h.added);
  const lengths = u32(h.added);
  const salts = u8(h.added * SALT_BYTES);
  const added: [number, PageInfo][] = Array.from(ids, (id, i) => [
    id,
    { generation: gens[i], salt: salts.slice(i * SALT_BYTES, (i + 1) * SALT_BYTES), bytes: lengths[i] },
  ]);
  const dropped = Array.from(u32(h.dropped));
  return { header: h, collections, added, dropped };
}

/**
 * Applies a decoded snapshot to the directory (a base onto an empty one, runs in order after it).
 * `adopt`: the tables may keep the snapshot's columns as their memory (the caller never wipes it).
 */
export function applySnapshot(directory: KeyDirectory, s: Snapshot, adopt = false): void {
  for (const { name, rows, removed } of s.collections)
    directory.table(name).applyRows(rows, s.header.governance, removed, adopt);
  for (const [id, p] of s.added) directory.addPage(id, p.generation, p.salt, p.bytes);
  directory.dropPages(s.dropped);
}
