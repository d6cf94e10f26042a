// The persisted key directory (DESIGN §6, docs/format.md "Directory pages"). A checkpoint writes the
// directory as of its commit: a full snapshot (a *base*) or, while the changes since the base stay
// under a quarter of its records, a *run* holding only the rows changed since the last snapshot
// (removals included). Opening applies the base and the runs in order, then replays only the commit
// pages written after them. Each snapshot is serialised into columns (below) and cut into parts of
// DIRECTORY_PART_BYTES, each sealed in a page of its own:
//
//   page   = "PQDD" ‖ version 1 ‖ be32(part i) ‖ be32(parts n) ‖ AES-256-GCM-SIV(K_dir, nonce, aad).encrypt(part)
//   nonce  = be32(page id) ‖ be32(i) ‖ 0^4            aad = bytes 0..13 ‖ be32(page id)
//   K_dir  = HKDF-SHA384(S, "", "pqdb directory key v1", 32), S the store secret
//
// The manifest lists each snapshot's pages in order, so no part can be dropped, repeated, reordered
// or taken from another snapshot or store; a page id is never reused. Nothing is read from a part
// before it authenticates, and the decoded columns are then checked against their declared sizes.
// Ids, collection names and governance states are only inside the sealed parts.
//
// Snapshot layout (little-endian columns, each padded to 8 bytes so they are read in place):
//   be32(|header|) ‖ header JSON ‖ pad ‖ per collection: idLength u16[n] ‖ ids ‖ page u32[n] ‖
//   offset u32[n] ‖ length u32[n] ‖ leaf u32[n] ‖ generation u32[n] ‖ governance u32[n] ‖
//   sequence f64[n] ‖ suite u8[n] ‖ removed u8[n]; then the commit pages: ids u32[k] ‖
//   generations u32[k] ‖ lengths u32[k] ‖ salts 16·k ‖ dropped ids u32[m]

import { PqdbError } from '../errors';
import { gcmsiv, TAG_BYTES } from '../kernels/aead';
import { SALT_BYTES } from '../crypto/record';
import { yieldToEventLoop } from '../_yield';
import { DIRECTORY_MAGIC } from './page-format';
import { emptyRows, fnv1a, partOf, type KeyDirectory, type PageInfo, type PartSource, type Rows } from './directory';
import type { MerkleLogs } from './merkle-log';
import type { KeyRing } from './keys';
import type { Draft } from './commit';
import { b64 } from './manifest';

/** Plaintext bytes sealed per directory page. */
export const DIRECTORY_PART_BYTES = 4 << 20;
export const DIRECTORY_KEY_LABEL = 'pqdb directory key v1';
/** Directory pages are written as version 2 (bases in partitions); version 1 pages are read too. */
const VERSION = 2;
const HEAD_BYTES = 13;
const MAX_ID_BYTES = 1024;
const enc = new TextEncoder();
const dec = new TextDecoder('utf-8', { fatal: true });

if (new Uint8Array(Uint16Array.of(1).buffer)[0] !== 1)
  throw new Error('pqdb directory snapshots need a little-endian platform');

/** Rows per base partition that the number of partitions aims at. */
export const PART_ROWS = 4096;
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
function governanceList(directory: KeyDirectory): { govList: string[]; govIndex: (interned: number) => number } {
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
function snapshotHeader(
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
function serialise(
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

/** Where sealed pages go: a draft's page-id allocation and page list (src/engine/commit.ts). */
export interface PageSink {
  pageId(): number;
  addPage(page: { id: number; bytes: Uint8Array }): void;
}

/**
 * Length of page `i` of `n` of a snapshot of `bytes` plaintext bytes: parts of DIRECTORY_PART_BYTES
 * but the last. A range past a page's end (a length the manifest got wrong) is CORRUPTION.
 */
export function directoryPageBytes(bytes: number, i: number, n: number): number {
  const last = bytes - (n - 1) * DIRECTORY_PART_BYTES;
  if (last <= 0 || last > DIRECTORY_PART_BYTES)
    throw new PqdbError('CORRUPTION', 'the persisted key directory has a length that does not fit its pages');
  return HEAD_BYTES + (i < n - 1 ? DIRECTORY_PART_BYTES : last) + TAG_BYTES;
}

function partNonce(pageId: number, part: number): Uint8Array {
  const n = new Uint8Array(12);
  const dv = new DataView(n.buffer);
  dv.setUint32(0, pageId);
  dv.setUint32(4, part);
  return n;
}

function partAad(head: Uint8Array, pageId: number): Uint8Array {
  const aad = new Uint8Array(HEAD_BYTES + 4);
  aad.set(head.subarray(0, HEAD_BYTES));
  new DataView(aad.buffer).setUint32(HEAD_BYTES, pageId);
  return aad;
}

/**
 * Seals a serialised snapshot into directory pages added to `sink`, awaiting `pause()` between
 * pages; returns their ids in order.
 */
export async function sealSnapshot(
  sink: PageSink,
  key: Uint8Array,
  plain: Uint8Array,
  pause: () => Promise<void> = async () => undefined,
  partBytes = DIRECTORY_PART_BYTES,
): Promise<number[]> {
  const n = Math.max(1, Math.ceil(plain.length / partBytes));
  const ids: number[] = [];
  for (let i = 0; i < n; i++) {
    if (i > 0) await pause();
    const part = plain.subarray(i * partBytes, (i + 1) * partBytes);
    const id = sink.pageId();
    const page = new Uint8Array(HEAD_BYTES + part.length + TAG_BYTES);
    page.set(DIRECTORY_MAGIC);
    page[4] = VERSION;
    const dv = new DataView(page.buffer);
    dv.setUint32(5, i);
    dv.setUint32(9, n);
    gcmsiv(key, partNonce(id, i), partAad(page, id)).encrypt(part, page.subarray(HEAD_BYTES));
    sink.addPage({ id, bytes: page });
    ids.push(id);
  }
  return ids;
}

/**
 * Opens a snapshot's pages (in the manifest's order) into one 8-byte aligned plaintext.
 * @throws PqdbError AUTH_FAILED (a part that does not open), CORRUPTION (framing), FORMAT_VERSION
 */
export function openSnapshot(key: Uint8Array, ids: readonly number[], pages: readonly Uint8Array[]): Uint8Array {
  const lens = pages.map((page, i) => partLength(ids[i], i, pages.length, page));
  const out = new Uint8Array(lens.reduce((n, len) => n + len, 0));
  let at = 0;
  try {
    pages.forEach((page, i) => {
      openPart(key, ids[i], i, page, out.subarray(at, at + lens[i]));
      at += lens[i];
    });
  } catch (e) {
    out.fill(0);
    throw e;
  }
  return out;
}

/**
 * openSnapshot for a snapshot of `bytes` plaintext bytes, reading its pages one at a time (a page
 * is dropped once opened into the plaintext, so the pages and the plaintext are not all held at
 * once). `read` gives page `ids[i]`, or undefined when it is missing.
 * @throws PqdbError CORRUPTION (a page missing, or not of this length), AUTH_FAILED, FORMAT_VERSION
 */
export async function readSnapshot(
  key: Uint8Array,
  ids: readonly number[],
  bytes: number,
  read: (id: number, length: number) => Promise<Uint8Array | undefined>,
): Promise<Uint8Array> {
  const out = new Uint8Array(bytes);
  try {
    for (let i = 0; i < ids.length; i++)
      placePage(key, ids, i, out, await read(ids[i], directoryPageBytes(bytes, i, ids.length)));
  } catch (e) {
    out.fill(0);
    throw e;
  }
  return out;
}

/** readSnapshot with a synchronous `read`. */
export function readSnapshotSync(
  key: Uint8Array,
  ids: readonly number[],
  bytes: number,
  read: (id: number, length: number) => Uint8Array | undefined,
): Uint8Array {
  const out = new Uint8Array(bytes);
  try {
    for (let i = 0; i < ids.length; i++)
      placePage(key, ids, i, out, read(ids[i], directoryPageBytes(bytes, i, ids.length)));
  } catch (e) {
    out.fill(0);
    throw e;
  }
  return out;
}

/** Opens `page`, page `i` of snapshot pages `ids`, into its place in the snapshot's plaintext `out`. */
function placePage(
  key: Uint8Array,
  ids: readonly number[],
  i: number,
  out: Uint8Array,
  page: Uint8Array | undefined,
): void {
  const n = ids.length;
  const pageBytes = directoryPageBytes(out.length, i, n);
  if (page === undefined) throw new PqdbError('CORRUPTION', `directory page ${ids[i]} is missing`);
  const len = partLength(ids[i], i, n, page);
  if (len !== pageBytes - HEAD_BYTES - TAG_BYTES)
    throw new PqdbError('CORRUPTION', `directory page ${ids[i]} is not as long as the manifest says`);
  const at = i * DIRECTORY_PART_BYTES;
  openPart(key, ids[i], i, page, out.subarray(at, at + len));
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

/** The plaintext length of part `i` of `n` in `page` (its framing checked). */
function partLength(id: number, i: number, n: number, page: Uint8Array): number {
  if (page.length < HEAD_BYTES + TAG_BYTES || !DIRECTORY_MAGIC.every((m, k) => page[k] === m))
    throw new PqdbError('CORRUPTION', `page ${id} is not a pqdb directory page`);
  if (page[4] !== 1 && page[4] !== VERSION)
    throw new PqdbError('FORMAT_VERSION', `directory page version ${page[4]} is not supported`);
  const dv = new DataView(page.buffer, page.byteOffset, page.length);
  if (dv.getUint32(5) !== i || dv.getUint32(9) !== n)
    throw new PqdbError('CORRUPTION', `directory page ${id} is not part ${i} of ${n}`);
  return page.length - HEAD_BYTES - TAG_BYTES;
}

/** Opens part `i` (in `page`, page id `id`) into `out`. @throws PqdbError AUTH_FAILED */
function openPart(key: Uint8Array, id: number, i: number, page: Uint8Array, out: Uint8Array): void {
  gcmsiv(key, partNonce(id, i), partAad(page, id)).decrypt(page.subarray(HEAD_BYTES), out);
}

/** What persisting the directory needs of a store's parts. */
export interface PersistContext {
  readonly directory: KeyDirectory;
  readonly logs: MerkleLogs;
  readonly keys: KeyRing;
}

/**
 * Checkpoint contributor: persists the directory as of `afterPage` (every commit page so far) in the
 * draft — a run of the changes since the last snapshot, or a new base (whose commit deletes the old
 * snapshots' pages) when none is tracked — together with log pages holding every generation's
 * leaves so far, so an open starts from both. `pending`: the lexical indexes' ids to re-index.
 */
export async function persistDirectory(
  draft: Draft,
  ctx: PersistContext,
  afterPage: number,
  pending?: Record<string, string[]>,
): Promise<void> {
  const m = draft.manifest;
  const logs = { ...(m.logs ?? {}) };
  const sizes: Record<string, number> = {};
  const frontiers: Record<string, string[]> = {};
  for (const g of ctx.keys.generations()) {
    await ctx.logs.pushLogPage(g, logs, draft);
    if (ctx.logs.size(g) === 0) continue;
    sizes[g] = ctx.logs.size(g);
    frontiers[g] = ctx.logs.frontier(g).map(b64);
  }
  m.logs = logs;
  const old = m.directory;
  const changes = old !== undefined ? ctx.directory.changes() : undefined;
  const kind = changes !== undefined ? 'run' : 'base';
  if (changes !== undefined && changes.ids.size === 0 && changes.added.length === 0 && changes.dropped.length === 0) {
    // Nothing changed since the last snapshot: no commit page was added after it either.
    m.directory = { ...old!, afterPage, dropped: [] };
    return;
  }
  const key = ctx.keys.storeKey(DIRECTORY_KEY_LABEL);
  if (kind === 'base') {
    // A new base in partitions: the old base's partitions and its runs go with the commit.
    const base = await sealBase(draft, key, ctx.directory, afterPage, sizes, pending, frontiers, yieldToEventLoop);
    for (const s of old?.snapshots ?? []) for (const id of s.pages) draft.deletePage(id);
    for (const id of ctx.directory.partPages) draft.deletePage(id);
    m.directory = {
      afterPage,
      snapshots: [{ kind, pages: base.pages, rows: base.rows, bytes: base.bytes }],
      dropped: [],
    };
    draft.afterCommit(() => (ctx.directory.basePersisted(base.partPages), ctx.directory.persisted(true)));
    return;
  }
  const { bytes, rows } = await encodeSnapshot(
    ctx.directory,
    kind,
    afterPage,
    sizes,
    pending,
    frontiers,
    yieldToEventLoop,
  );
  let ids: number[];
  try {
    ids = await sealSnapshot(draft, key, bytes, yieldToEventLoop);
  } finally {
    bytes.fill(0);
  }
  m.directory = {
    afterPage,
    snapshots: [...old!.snapshots, { kind, pages: ids, rows, bytes: bytes.length }],
    dropped: [],
  };
  draft.afterCommit(() => ctx.directory.persisted(false));
}

/**
 * `prepare` hook: commit pages a commit deletes that the persisted directory covers are listed in
 * it as dropped, so an open does not look for them.
 */
export function noteDroppedPages(draft: Draft, directory: KeyDirectory): void {
  const ref = draft.manifest.directory;
  if (ref === undefined || draft.deletes.length === 0) return;
  const dropped = draft.deletes.filter((id) => id <= ref.afterPage && directory.page(id) !== undefined);
  if (dropped.length > 0) draft.manifest.directory = { ...ref, dropped: [...(ref.dropped ?? []), ...dropped] };
}
