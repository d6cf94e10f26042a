// The node-fs MANIFEST (src/storage/node-fs.ts): its bytes, which file holds the current one, and
// the compare-and-swap that replaces it (docs/storage.md, "Commit protocol" and "Two writers").
//
// Each commit k creates MANIFEST-<k as 16 hex digits> with link(2) from a temporary file only this
// writer uses: link never replaces a name, so of two writers that both start from commit k-1
// exactly one creates it; the other gets EEXIST and CONFLICT. The current manifest is the one of
// the highest counter among the numbered files and MANIFEST, a copy of it kept under the old name
// (stores written before the numbered files, and readers of that format, find it there). A writer
// deletes a numbered file only after it created a higher one, so the highest is never deleted, and
// a stale writer that recreates a deleted lower number sees the higher one right after its link
// and gives up (CONFLICT) before it acknowledges anything.

/// <reference types="node" />
import { link, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { corruption, crc32c } from './page-store';

export const FORMAT_VERSION = 1;
export const MANIFEST_MAGIC = 'PQDBMAN\0';
/** The current manifest's copy under the name of format 1's only manifest file. */
export const MANIFEST = 'MANIFEST';
/** Format 1's temporary manifest (one name for every writer); removed on open. */
export const MANIFEST_TMP = 'MANIFEST.tmp';
/** Commit k's manifest: `MANIFEST-` and k in 16 lowercase hex digits. */
export const MANIFEST_FILE_RE = /^MANIFEST-([0-9a-f]{16})$/;
/** A writer's temporary manifest: format 1's shared name, or one with the writer's own random suffix. */
export const MANIFEST_TMP_RE = /^MANIFEST\.tmp(-[0-9a-f]{16})?$/;
export const manifestName = (commit: number): string => `MANIFEST-${commit.toString(16).padStart(16, '0')}`;

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const randomHex = (bytes: number): string =>
  Array.from(globalThis.crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, '0')).join('');

/** A decoded manifest. */
export interface ManifestState {
  readonly commitSeq: number;
  /** Segment sequence → committed length. */
  readonly segments: Map<number, number>;
  readonly manifest: Uint8Array | undefined;
  /** The file's size in bytes. */
  readonly fileBytes: number;
  /** The file it was read from (MANIFEST or a numbered one); the bytes. */
  readonly file?: string;
  readonly raw?: Uint8Array;
}

export function encodeManifest(
  commitSeq: number,
  segments: ReadonlyMap<number, number>,
  manifest: Uint8Array | undefined,
): Uint8Array {
  const user = manifest ?? new Uint8Array(0);
  const out = new Uint8Array(32 + segments.size * 12 + 4 + user.length + 4);
  const v = new DataView(out.buffer);
  out.set(ascii(MANIFEST_MAGIC));
  v.setUint32(8, FORMAT_VERSION, true);
  v.setUint32(12, manifest === undefined ? 0 : 1, true);
  v.setUint32(16, commitSeq % 2 ** 32, true);
  v.setUint32(20, Math.floor(commitSeq / 2 ** 32), true);
  v.setUint32(24, segments.size, true);
  v.setUint32(28, 0, true);
  let o = 32;
  for (const [seq, length] of [...segments].sort((a, b) => a[0] - b[0])) {
    v.setUint32(o, seq, true);
    v.setUint32(o + 4, length % 2 ** 32, true);
    v.setUint32(o + 8, Math.floor(length / 2 ** 32), true);
    o += 12;
  }
  v.setUint32(o, user.length, true);
  out.set(user, o + 4);
  o += 4 + user.length;
  v.setUint32(o, crc32c(out.subarray(0, o)), true);
  return out;
}

export function decodeManifest(raw: Uint8Array, name = MANIFEST): ManifestState {
  const bad = (why: string): PqdbError => corruption(`node-fs: ${name}: ${why}`);
  if (raw.length < 40) throw bad(`too short (${raw.length} bytes)`);
  for (let i = 0; i < 8; i++) if (raw[i] !== MANIFEST_MAGIC.charCodeAt(i)) throw bad('not a pqdb manifest');
  const v = new DataView(raw.buffer, raw.byteOffset, raw.length);
  const version = v.getUint32(8, true);
  if (version !== FORMAT_VERSION)
    throw new PqdbError('FORMAT_VERSION', `node-fs: ${name} has format version ${version}`);
  if (v.getUint32(raw.length - 4, true) !== crc32c(raw.subarray(0, raw.length - 4))) throw bad('checksum mismatch');
  const flags = v.getUint32(12, true);
  const commitSeq = v.getUint32(16, true) + v.getUint32(20, true) * 2 ** 32;
  const n = v.getUint32(24, true);
  if (32 + n * 12 + 8 > raw.length) throw bad('segment table runs past the end');
  const segments = new Map<number, number>();
  let o = 32;
  for (let i = 0; i < n; i++, o += 12)
    segments.set(v.getUint32(o, true), v.getUint32(o + 4, true) + v.getUint32(o + 8, true) * 2 ** 32);
  const len = v.getUint32(o, true);
  if (o + 4 + len + 4 !== raw.length) throw bad('length mismatch');
  const manifest = flags & 1 ? new Uint8Array(raw.subarray(o + 4, o + 4 + len)) : undefined;
  return { commitSeq, segments, manifest, fileBytes: raw.length };
}

/** The counters of the numbered manifests among directory entries `names`, ascending. */
export function numberedManifests(names: readonly string[]): number[] {
  const out: number[] = [];
  for (const n of names) {
    const m = MANIFEST_FILE_RE.exec(n);
    if (m) out.push(parseInt(m[1], 16));
  }
  return out.sort((a, b) => a - b);
}

const enoent = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

/** The commit counter in MANIFEST's first 24 bytes (0 when absent or too short; checked by the full read). */
async function legacyCounter(dir: string): Promise<number> {
  let fh;
  try {
    fh = await open(join(dir, MANIFEST), 'r');
  } catch (e) {
    if (enoent(e)) return 0;
    throw e;
  }
  try {
    const head = new Uint8Array(24);
    const { bytesRead } = await fh.read(head, 0, 24, 0);
    if (bytesRead < 24) return 0;
    const v = new DataView(head.buffer);
    return v.getUint32(16, true) + v.getUint32(20, true) * 2 ** 32;
  } finally {
    await fh.close();
  }
}

/** The counter of the current commit on disk (0: none yet): the higher of the top numbered file and MANIFEST. */
export async function currentCommit(dir: string): Promise<number> {
  const numbered = numberedManifests(await readdir(dir));
  return Math.max(numbered.at(-1) ?? 0, await legacyCounter(dir));
}

/**
 * Reads the current manifest of `dir` (undefined: nothing committed yet): MANIFEST, or the highest
 * numbered file when that is newer. Both are checked whole (magic, version, CRC-32C, lengths), and a
 * numbered file must carry its own counter. A numbered file deleted between the listing and the
 * read (a writer committed past it) sends it back to the listing.
 * @throws PqdbError CORRUPTION, FORMAT_VERSION
 */
export async function readCurrentManifest(dir: string): Promise<ManifestState | undefined> {
  for (let attempt = 0; ; attempt++) {
    const numbered = numberedManifests(await readdir(dir));
    let legacy: ManifestState | undefined;
    try {
      legacy = decodeManifest(await readFile(join(dir, MANIFEST)));
    } catch (e) {
      if (!enoent(e)) throw e;
    }
    const top = numbered.at(-1);
    if (top === undefined || (legacy !== undefined && legacy.commitSeq >= top)) return legacy;
    const name = manifestName(top);
    let raw: Uint8Array;
    try {
      raw = await readFile(join(dir, name));
    } catch (e) {
      if (enoent(e) && attempt < 100) continue; // a writer went past it and deleted it
      throw e;
    }
    const state = decodeManifest(raw, name);
    if (state.commitSeq !== top) throw corruption(`node-fs: ${name} holds commit ${state.commitSeq}`);
    return { ...state, file: name, raw };
  }
}

/**
 * Removes temporary manifests (format 1's MANIFEST.tmp, and those of writers that died before
 * their rename; a live writer let in beside this one loses its commit with IO_ERROR, never an
 * acknowledged one) and the numbered manifests below `commit` (a writer, on open).
 */
export async function removeStaleManifests(dir: string, names: readonly string[], commit: number): Promise<number> {
  let removed = 0;
  for (const n of names) {
    const m = MANIFEST_FILE_RE.exec(n);
    if (MANIFEST_TMP_RE.test(n) || (m && parseInt(m[1], 16) < commit)) {
      await unlink(join(dir, n)).catch(() => undefined);
      removed++;
    }
  }
  return removed;
}

/**
 * Makes MANIFEST a copy of `raw` again (a writer, on open, when a numbered manifest is newer: a
 * writer died between its link and its rename), for readers that know MANIFEST alone.
 */
export async function refreshManifestCopy(dir: string, raw: Uint8Array): Promise<void> {
  const tmp = join(dir, `${MANIFEST_TMP}-${randomHex(8)}`);
  const fh = await open(tmp, 'wx');
  try {
    await fh.writeFile(raw);
    await fh.sync();
  } finally {
    await fh.close();
  }
  await rename(tmp, join(dir, MANIFEST)).catch(async (e) => {
    await unlink(tmp).catch(() => undefined);
    throw e;
  });
}

/** Called before each fsync of the manifest protocol (fault injection). */
export type SyncHook = (fh: { sync(): Promise<void> }, what: 'manifest' | 'directory') => Promise<void>;

/**
 * Makes `file` (the manifest of commit `base + 1`) current, if no other writer committed since
 * `base`: write a temporary file of this writer's own, fsync it, link it to MANIFEST-<base+1>
 * (exclusive: EEXIST means another writer made that commit), check that no higher commit exists
 * (a stale writer recreating a deleted number), rename the temporary file over MANIFEST, fsync the
 * directory. Only then are the numbered files below the new one deleted.
 * @throws PqdbError CONFLICT when another writer committed since `base` (nothing of this commit is current)
 */
export async function publishManifest(dir: string, base: number, file: Uint8Array, sync: SyncHook): Promise<void> {
  const commit = base + 1;
  const tmp = join(dir, `${MANIFEST_TMP}-${randomHex(8)}`);
  const conflict = (seen: number): PqdbError =>
    new PqdbError(
      'CONFLICT',
      `node-fs page store ${dir}: another writer committed (commit ${seen}, this writer last wrote ${base}); this commit was not made: reopen the store`,
    );
  const fh = await open(tmp, 'wx');
  try {
    try {
      await fh.writeFile(file);
      await sync(fh, 'manifest');
    } finally {
      await fh.close();
    }
    const mine = join(dir, manifestName(commit));
    try {
      await link(tmp, mine); // the commit point: exactly one writer creates this name
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') throw conflict(commit);
      if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw e;
      // No hard links here (FAT, exFAT, some network shares): format 1's protocol, whose
      // compare-and-swap is a check just before the rename (a window of a few system calls).
      const seen = await currentCommit(dir);
      if (seen !== base) throw conflict(seen);
      await rename(tmp, join(dir, MANIFEST));
      const d = await open(dir, 'r');
      try {
        await sync(d, 'directory');
      } finally {
        await d.close();
      }
      return;
    }
    const names = await readdir(dir);
    // MANIFEST holds a copy of a numbered file at most as high as the top one, unless a format 1
    // writer made it: then any counter from ours up is another writer's commit.
    const top = numberedManifests(names).at(-1) ?? 0;
    const legacy = await legacyCounter(dir);
    const seen = Math.max(top, legacy);
    if (top > commit || legacy >= commit) {
      await unlink(mine).catch(() => undefined); // below the current one: no reader takes it
      throw conflict(seen);
    }
    await rename(tmp, join(dir, MANIFEST));
    const d = await open(dir, 'r');
    try {
      await sync(d, 'directory'); // the link, the rename and any new segment's entry are durable
    } finally {
      await d.close();
    }
    for (const n of numberedManifests(names))
      if (n < commit) await unlink(join(dir, manifestName(n))).catch(() => undefined);
  } finally {
    await unlink(tmp).catch(() => undefined); // gone already after the rename
  }
}
