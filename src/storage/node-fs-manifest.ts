// The node-fs MANIFEST (src/storage/node-fs.ts): its bytes, which file holds the current one, and
// the compare-and-swap that replaces it (docs/storage.md, "Commit protocol" and "Two writers").
//
// Each commit k creates MANIFEST-<k as 16 hex digits> with link(2) from a temporary file only this
// writer uses: link never replaces a name, so of two writers that both start from commit k-1
// exactly one creates it; the other gets EEXIST and CONFLICT. The current manifest is the one of
// the highest counter among the numbered files and MANIFEST, a copy of it kept under the old name
// (stores written before the numbered files, and readers of that format, find it there). A writer
// deletes a numbered file only after it created a higher one, so the highest is never deleted; a
// stale writer sees the higher one in the listing just before its link and gives up (CONFLICT).
// Manifest files are read only as regular files of bounded size (a planted FIFO or giant is CORRUPTION).

/// <reference types="node" />
import { constants, link, open, readdir, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { PqdbError } from '../errors';
import { hex } from '../_encoding';
import { MAX_MANIFEST_BYTES } from './page-store';
import { corruption } from './page-store-base';
import { crc32c } from '../_crc32c';

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
const randomHex = (bytes: number): string => hex(globalThis.crypto.getRandomValues(new Uint8Array(bytes)));

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

/**
 * The counter in numbered manifest name `n` (undefined: not one). A counter no number holds exactly
 * (above 2^53 - 1, which no store reaches by committing) was planted: CORRUPTION.
 */
export function manifestCounter(n: string): number | undefined {
  const m = MANIFEST_FILE_RE.exec(n);
  if (!m) return undefined;
  const k = parseInt(m[1], 16);
  if (!Number.isSafeInteger(k)) throw corruption(`node-fs: ${n}: commit counter out of range`);
  return k;
}

/** The counters of the numbered manifests among directory entries `names`, ascending. */
export function numberedManifests(names: readonly string[]): number[] {
  const out: number[] = [];
  for (const n of names) {
    const k = manifestCounter(n);
    if (k !== undefined) out.push(k);
  }
  return out.sort((a, b) => a - b);
}

const enoent = (e: unknown): boolean => (e as NodeJS.ErrnoException).code === 'ENOENT';

/**
 * The most bytes a manifest file may hold (64 MiB): the user manifest's limit (MAX_MANIFEST_BYTES,
 * 16 MiB) and a segment table of 4 Mi segments (12 bytes each), far more than reclaim leaves.
 */
export const MAX_MANIFEST_FILE_BYTES = MAX_MANIFEST_BYTES + (48 << 20);

/**
 * Reads manifest file `path` whole: opened without following a symbolic link and without blocking
 * (a FIFO planted there must not stall the open or the commit queue), and only a regular file of at
 * most MAX_MANIFEST_FILE_BYTES is read; anything else is CORRUPTION.
 * @throws ENOENT as is (the caller decides), PqdbError CORRUPTION
 */
export async function readManifestFile(path: string, name: string): Promise<Uint8Array> {
  let fh;
  try {
    fh = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw corruption(`node-fs: ${name} is a symbolic link`);
    throw e;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw corruption(`node-fs: ${name} is not a regular file`);
    if (st.size > MAX_MANIFEST_FILE_BYTES) throw corruption(`node-fs: ${name} holds ${st.size} bytes, too many`);
    const out = new Uint8Array(st.size);
    let at = 0;
    while (at < out.length) {
      const { bytesRead } = await fh.read(out, at, out.length - at, at);
      if (bytesRead === 0) break;
      at += bytesRead;
    }
    return at === out.length ? out : out.subarray(0, at);
  } finally {
    await fh.close();
  }
}

/** The commit counter in MANIFEST's first 24 bytes (0 when absent or too short; checked by the full read). */
async function legacyCounter(dir: string): Promise<number> {
  let fh;
  try {
    fh = await open(join(dir, MANIFEST), constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if (enoent(e)) return 0;
    if ((e as NodeJS.ErrnoException).code === 'ELOOP') throw corruption(`node-fs: ${MANIFEST} is a symbolic link`);
    throw e;
  }
  try {
    if (!(await fh.stat()).isFile()) throw corruption(`node-fs: ${MANIFEST} is not a regular file`);
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
    const top = numbered.at(-1);
    // MANIFEST is decoded only when it is the current one: a damaged copy below a valid numbered
    // manifest does not keep the store shut.
    if (top === undefined || (await legacyCounter(dir)) >= top) {
      try {
        return decodeManifest(await readManifestFile(join(dir, MANIFEST), MANIFEST));
      } catch (e) {
        if (!enoent(e)) throw e;
        if (top === undefined) return undefined;
        continue; // replaced between the two reads: list again
      }
    }
    const name = manifestName(top);
    let raw: Uint8Array;
    try {
      raw = await readManifestFile(join(dir, name), name);
    } catch (e) {
      if (enoent(e) && attempt < 100) continue; // a writer went past it and deleted it
      throw e;
    }
    const state = decodeManifest(raw, name);
    if (state.commitSeq !== top) throw corruption(`node-fs: ${name} holds commit ${state.commitSeq}`);
    return { ...state, file: name, raw };
  }
}

/** A temporary manifest this much older than now is a dead writer's, not one in the middle of its commit. */
export const STALE_TMP_MS = 5 * 60 * 1000;

/**
 * Removes temporary manifests (format 1's MANIFEST.tmp, and those of writers that died before
 * their rename, once older than STALE_TMP_MS: a live writer let in beside this one may be between
 * its link and its rename) and the numbered manifests below `commit` (a writer, on open).
 */
export async function removeStaleManifests(dir: string, names: readonly string[], commit: number): Promise<number> {
  let removed = 0;
  for (const n of names) {
    const k = manifestCounter(n);
    let stale = k !== undefined && k < commit;
    if (n === MANIFEST_TMP) stale = true;
    else if (MANIFEST_TMP_RE.test(n)) {
      const st = await stat(join(dir, n)).catch(() => undefined);
      stale = st !== undefined && Date.now() - st.mtimeMs > STALE_TMP_MS;
    }
    if (stale) {
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

/** How publishManifest learns what happened around its commit point. */
export interface PublishHooks {
  /**
   * Whether manifest `top`, above this commit, carries it (a writer that opened after the link
   * committed on top of it): for a commit that wrote records, its segment named at least as long
   * as this commit left it.
   */
  readonly carries?: (top: ManifestState) => boolean;
  /**
   * Called with true just before the link (the commit point): from then on the commit may be made
   * and nothing of it may be undone; with false when the link is known not to have happened.
   */
  readonly linked?: (maybe: boolean) => void;
  /** @internal Awaited right after the link (tests: another writer acting in that window). */
  readonly afterLink?: () => Promise<void>;
}

/**
 * Makes `file` (the manifest of commit `base + 1`) current, if no other writer committed since
 * `base`: write a temporary file of this writer's own, fsync it, check the current commit is
 * still `base`, link it to MANIFEST-<base+1> (exclusive: EEXIST means another writer made that
 * commit), list the directory (a higher commit: a stale writer recreating a deleted number, or a
 * writer that opened after the link and committed on top of it), rename the temporary file over
 * MANIFEST, fsync the directory. Only then are the numbered files below the new one deleted.
 * @throws PqdbError CONFLICT when another writer committed since `base` (nothing of this commit is
 * current), IO_ERROR when a higher commit appeared right after the link and it cannot tell
 * whether that one carries this commit (the outcome is unknown)
 */
export async function publishManifest(
  dir: string,
  base: number,
  file: Uint8Array,
  sync: SyncHook,
  hooks: PublishHooks = {},
): Promise<void> {
  const commit = base + 1;
  const tmp = join(dir, `${MANIFEST_TMP}-${randomHex(8)}`);
  const conflict = (seen: number): PqdbError =>
    new PqdbError(
      'CONFLICT',
      `node-fs page store ${dir}: another writer committed (commit ${seen}, this writer last wrote ${base}); this commit was not made: reopen the store`,
    );
  const same = (a: Uint8Array, b: Uint8Array): boolean => a.length === b.length && a.every((x, i) => x === b[i]);
  const fh = await open(tmp, 'wx');
  try {
    try {
      await fh.writeFile(file);
      await sync(fh, 'manifest');
    } finally {
      await fh.close();
    }
    // A commit already above `base` is seen before the link: a stale writer whose next number
    // was deleted learns it here, so a higher commit seen after the link is one made in its window.
    const before = await currentCommit(dir);
    if (before !== base) throw conflict(before);
    const mine = join(dir, manifestName(commit));
    hooks.linked?.(true); // from here the commit may be made, unless the link is known to have failed
    try {
      await link(tmp, mine); // the commit point: exactly one writer creates this name
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // EEXIST with this writer's bytes: its own link, answered twice (an NFS retransmission).
      const own =
        code === 'EEXIST' &&
        (await readManifestFile(mine, manifestName(commit)).then(
          (raw) => same(raw, file),
          () => false,
        ));
      if (code === 'EEXIST' && !own) {
        hooks.linked?.(false);
        throw conflict(commit);
      }
      if (!own && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'ENOSYS') throw e;
      if (!own) {
        // No hard links here (FAT, exFAT, some network shares): format 1's protocol, whose
        // compare-and-swap is a check just before the rename (a window of a few system calls).
        hooks.linked?.(false);
        const seen = await currentCommit(dir);
        if (seen !== base) throw conflict(seen);
        hooks.linked?.(true);
        await rename(tmp, join(dir, MANIFEST));
        const d = await open(dir, 'r');
        try {
          await sync(d, 'directory');
        } finally {
          await d.close();
        }
        return;
      }
    }
    await hooks.afterLink?.();
    const names = await readdir(dir);
    const top = numberedManifests(names).at(-1) ?? 0;
    if (top > commit) {
      // Either a writer opened after the link and committed on top of this commit, or (a window
      // of a few system calls after the check above) a higher commit made without it.
      const topName = manifestName(top);
      let carried = false;
      try {
        const state = decodeManifest(await readManifestFile(join(dir, topName), topName), topName);
        carried = hooks.carries?.(state) === true;
      } catch (e) {
        if (!enoent(e)) throw e; // gone: higher still; the outcome stays unknown
      }
      if (carried) return; // made, and already superseded: this writer's next commit gets CONFLICT
      throw new PqdbError(
        'IO_ERROR',
        `node-fs page store ${dir}: another writer committed ${top} right after this writer linked commit ${commit}; whether it carries this commit is unknown: reopen the store and check`,
      );
    }
    // MANIFEST holds a copy of a numbered file at most as high as the top one, unless a format 1
    // writer made it: then a counter above ours, or ours with other bytes, is another writer's commit.
    const legacy = await legacyCounter(dir);
    if (legacy > commit || (legacy === commit && !same(await readManifestFile(join(dir, MANIFEST), MANIFEST), file))) {
      await unlink(mine).catch(() => undefined); // MANIFEST is current, not ours: no reader takes ours
      throw conflict(legacy);
    }
    if (legacy < commit)
      await rename(tmp, join(dir, MANIFEST)).catch(async (e) => {
        // A writer that opened after the link removed the temporary file: copy again.
        if (!enoent(e)) throw e;
        await refreshManifestCopy(dir, file);
      });
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
