// PageStore: the shared conformance suite on memory, node-fs (default and tiny segments), IndexedDB
// over fake-indexeddb and PostgreSQL (a throwaway cluster, support/postgres.ts); then what only node-fs has (crash recovery, the lock file, a
// second process, a writer killed mid-commit), CRC-32C and error mapping.
import 'fake-indexeddb/auto';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cp, mkdtemp, rm, readdir, readFile, writeFile, truncate, appendFile, stat, utimes } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { openDB, deleteDB } from 'idb';
import {
  pageStoreCases,
  indexedDbFixture,
  syncDirectoryFixture,
  type PageStoreFixtureFactory,
} from './cases/page-store';
import { type PageStore } from '../src/storage/page-store';
import { mediumError } from '../src/storage/page-store-base';
import { crc32c } from '../src/_crc32c';
import { MemoryMedium, openMemoryPageStore } from '../src/storage/memory';
import { openNodeFsPageStore, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES } from '../src/storage/node-fs';
import { openIndexedDbPageStore } from '../src/storage/indexeddb';
import { openPostgresPageStore } from '../src/storage/postgres';
import { openSyncPageStore } from '../src/storage/opfs';
import { nodeSyncDirectory } from './support/sync-directory';
import { freshStoreName, usePostgres } from './support/postgres';
import { PqdbError } from '../src/errors';

const tmpRoot = await mkdtemp(join(tmpdir(), 'pqdb-page-store-'));
let dirs = 0;
const newDir = (): string => join(tmpRoot, `s${dirs++}`);
afterAll(() => rm(tmpRoot, { recursive: true, force: true }));

/** Test hook for node-fs: walks the segments as docs/storage.md describes and flips the first body byte of page `id`'s last record. */
async function corruptFsPage(dir: string, id: number): Promise<void> {
  let hit: { file: string; at: number } | undefined;
  for (const name of (await readdir(dir)).filter((n) => n.endsWith('.pqs')).sort()) {
    const buf = await readFile(join(dir, name));
    let off = SEGMENT_HEADER_BYTES;
    while (off + RECORD_HEADER_BYTES <= buf.length) {
      const kind = buf[off + 4];
      const rid = buf.readUInt32LE(off + 8);
      const len = buf.readUInt32LE(off + 12);
      if (kind === 1 && rid === id && len > 0) hit = { file: join(dir, name), at: off + RECORD_HEADER_BYTES };
      off += RECORD_HEADER_BYTES + len;
    }
  }
  if (!hit) throw new Error(`page ${id} not found on disk`);
  const buf = await readFile(hit.file);
  buf[hit.at] ^= 1;
  await writeFile(hit.file, buf);
}

const cluster = usePostgres();

let idbNames = 0;
const FACTORIES: [string, PageStoreFixtureFactory][] = [
  [
    'memory',
    async () => {
      const medium = new MemoryMedium();
      return {
        open: () => openMemoryPageStore({ medium }),
        corruptPage: async (id) => medium.flipByte(id, 0),
        dispose: async () => undefined,
      };
    },
  ],
  [
    'opfs (its logic over node files)',
    async () => {
      const dir = newDir();
      return syncDirectoryFixture({
        dir: nodeSyncDirectory(dir),
        open: () => openSyncPageStore(nodeSyncDirectory(dir), dir),
        dispose: () => rm(dir, { recursive: true, force: true }),
      });
    },
  ],
  [
    'node-fs',
    async () => {
      const dir = newDir();
      return {
        open: () => openNodeFsPageStore(dir),
        corruptPage: (id) => corruptFsPage(dir, id),
        dispose: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
  [
    'node-fs, 4 KiB segments',
    async () => {
      const dir = newDir();
      return {
        open: () => openNodeFsPageStore(dir, { segmentBytes: 4096 }),
        corruptPage: (id) => corruptFsPage(dir, id),
        dispose: () => rm(dir, { recursive: true, force: true }),
      };
    },
  ],
  [
    'indexeddb (fake-indexeddb)',
    async () => {
      return indexedDbFixture(`pqdb-test-${idbNames++}`, { openDB, deleteDB, open: openIndexedDbPageStore });
    },
  ],
  [
    'postgres',
    async () => {
      const { connectionString, admin } = cluster();
      const name = freshStoreName('conformance');
      return {
        open: () => openPostgresPageStore({ connectionString, name }),
        // As a superuser editing the table: the stored checksum no longer matches.
        corruptPage: async (id) =>
          void (await admin.query(
            'UPDATE pqdb_pages SET bytes = set_byte(bytes, 0, get_byte(bytes, 0) # 1) WHERE store = $1 AND id = $2',
            [name, id],
          )),
        dispose: async () => {
          await admin.query('DELETE FROM pqdb_pages WHERE store = $1', [name]).catch(() => undefined);
          await admin.query('DELETE FROM pqdb_manifest WHERE store = $1', [name]).catch(() => undefined);
        },
      };
    },
  ],
];

describe.each(FACTORIES)('PageStore conformance (%s)', (_name, factory) => {
  const cases = pageStoreCases(factory);
  it('has at least 15 checks', () => expect(cases.length).toBeGreaterThanOrEqual(15));
  for (const c of cases) it(c.name, c.run);
});

describe('CRC-32C and error mapping', () => {
  it('CRC-32C matches RFC 3720 B.4 and the check value, across the 8-byte loop boundary', () => {
    expect(crc32c(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
    expect(crc32c(new Uint8Array(32))).toBe(0x8a9136aa); // RFC 3720 B.4: 32 bytes of zeros
    expect(crc32c(new Uint8Array(32).fill(0xff))).toBe(0x62a8ab43); // 32 bytes of ones
    expect(crc32c(Uint8Array.from({ length: 32 }, (_, i) => i))).toBe(0x46dd794e); // incrementing
    expect(crc32c(new Uint8Array(0))).toBe(0);
    const data = Uint8Array.from({ length: 1000 }, (_, i) => (i * 7919) & 0xff);
    for (const cut of [1, 7, 8, 9, 500, 999])
      expect(crc32c(data.subarray(cut), crc32c(data.subarray(0, cut)))).toBe(crc32c(data));
  });

  it('medium errors: quota → QUOTA_EXCEEDED, anything else → IO_ERROR with cause; PqdbError and programmer errors pass through', () => {
    const quota = new DOMException('full', 'QuotaExceededError');
    expect(mediumError('x', quota)).toMatchObject({ code: 'QUOTA_EXCEEDED', cause: quota });
    expect(mediumError('x', Object.assign(new Error('nospc'), { code: 'ENOSPC' }))).toMatchObject({
      code: 'QUOTA_EXCEEDED',
    });
    const eio = Object.assign(new Error('eio'), { code: 'EIO' });
    expect(mediumError('x', eio)).toMatchObject({ name: 'PqdbError', code: 'IO_ERROR', cause: eio });
    const locked = new PqdbError('LOCKED', 'l');
    expect(mediumError('x', locked)).toBe(locked);
    const range = new RangeError('r');
    expect(mediumError('x', range)).toBe(range);
  });

  it('memory: a commit past the medium quota is QUOTA_EXCEEDED and changes nothing', async () => {
    const medium = new MemoryMedium({ quotaBytes: 1000 });
    const s = await openMemoryPageStore({ medium });
    await s.commit({ pages: [{ id: 1, bytes: new Uint8Array(500) }], manifest: new Uint8Array(10) });
    await expect(
      s.commit({ pages: [{ id: 2, bytes: new Uint8Array(600) }], manifest: new Uint8Array(1) }),
    ).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    expect(await s.listPages()).toEqual([1]);
    expect((await s.readManifest())!.length).toBe(10);
    await s.deletePages([1]);
    await s.commit({ pages: [{ id: 2, bytes: new Uint8Array(600) }] });
    await s.close();
  });
});

describe('indexeddb specifics (fake-indexeddb)', () => {
  it('a QuotaExceededError inside the commit transaction is QUOTA_EXCEEDED and the transaction aborts whole', async () => {
    const name = `pqdb-quota-${idbNames++}`;
    const s = await openIndexedDbPageStore(name);
    await s.commit({ pages: [{ id: 1, bytes: new Uint8Array([1]) }], manifest: new Uint8Array([1]) });
    const proto = IDBObjectStore.prototype;
    const add = proto.add;
    let calls = 0;
    proto.add = function (this: IDBObjectStore, ...args: Parameters<typeof add>) {
      if (++calls === 3) throw new DOMException('quota', 'QuotaExceededError'); // the second page
      return add.apply(this, args);
    };
    try {
      await expect(
        s.commit({
          pages: [
            { id: 2, bytes: new Uint8Array([2]) },
            { id: 3, bytes: new Uint8Array([3]) },
          ],
          deletes: [1],
          manifest: new Uint8Array([9]),
        }),
      ).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    } finally {
      proto.add = add;
    }
    expect(await s.listPages()).toEqual([1]);
    await s.close();
    const t = await openIndexedDbPageStore(name);
    expect(await t.listPages()).toEqual([1]);
    expect(await t.readPage(2)).toBeUndefined();
    expect(await t.readManifest()).toEqual(new Uint8Array([1]));
    await t.close();
    await deleteDB(name);
  });

  it('uses the Web Locks API when given one: an unavailable lock is LOCKED', async () => {
    const held = new Set<string>();
    const locks = {
      request: async (name: string, _opts: unknown, cb: (l: unknown) => Promise<unknown>) => {
        if (held.has(name)) return cb(null);
        held.add(name);
        try {
          return await cb({ name, mode: 'exclusive' });
        } finally {
          held.delete(name);
        }
      },
    } as unknown as LockManager;
    const name = `pqdb-locks-${idbNames++}`;
    const s = await openIndexedDbPageStore(name, { locks });
    expect(held.has(`pqdb-page-store:${name}`)).toBe(true);
    await expect(openIndexedDbPageStore(name, { locks })).rejects.toMatchObject({ code: 'LOCKED' });
    await s.close();
    await new Promise((r) => setTimeout(r, 0));
    expect(held.size).toBe(0);
    const t = await openIndexedDbPageStore(name, { locks });
    await t.close();
    await deleteDB(name);
  });
});

// ---- node-fs specifics -------------------------------------------------------------------------

const segments = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((n) => n.endsWith('.pqs')).sort();
const lastSegment = async (dir: string): Promise<string> => join(dir, (await segments(dir)).at(-1)!);
const page = (id: number, n = 100): { id: number; bytes: Uint8Array } => ({
  id,
  bytes: new Uint8Array(n).fill(id & 0xff),
});

/** The crash before a commit's manifest landed: MANIFEST as `bytes` (a format 1 store's file), no numbered manifest. */
async function rewindManifest(dir: string, bytes: Uint8Array): Promise<void> {
  for (const n of await readdir(dir)) if (/^MANIFEST/.test(n)) await rm(join(dir, n));
  await writeFile(join(dir, 'MANIFEST'), bytes);
}

describe('node-fs recovery', () => {
  it('garbage appended to the last segment is ignored on reopen, never truncated, and reported; committed pages intact', async () => {
    const dir = newDir();
    let s = await openNodeFsPageStore(dir);
    await s.commit({ pages: [page(1), page(2)], manifest: new Uint8Array([1]) });
    await s.close();
    const seg = await lastSegment(dir);
    const size = (await stat(seg)).size;
    await appendFile(seg, new Uint8Array(37).fill(0xab));
    s = await openNodeFsPageStore(dir);
    expect(s.recovery.clean).toBe(false);
    expect(s.recovery.truncatedBytes).toBe(37);
    expect(s.recovery.actions.join()).toMatch(
      /seg-00000001\.pqs has 37 bytes past its committed length .*left in place/,
    );
    expect((await stat(seg)).size).toBe(size + 37); // it may be another writer's commit in progress
    expect(await s.readPage(1)).toEqual(page(1).bytes);
    expect(await s.readPage(2)).toEqual(page(2).bytes);
    await s.commit({ pages: [page(3)] }); // into a segment of this writer's own
    await s.close();
    expect(await segments(dir)).toEqual(['seg-00000001.pqs', 'seg-00000002.pqs']);
    expect((await stat(seg)).size).toBe(size + 37);
    s = await openNodeFsPageStore(dir);
    expect(s.recovery.truncatedBytes).toBe(37);
    expect(await s.listPages()).toEqual([1, 2, 3]);
    await s.close();
  });

  it('a commit cut mid-record before its manifest landed is invisible and its torn tail ignored', async () => {
    const dir = newDir();
    let s = await openNodeFsPageStore(dir);
    await s.commit({ pages: [page(1), page(2)], manifest: new Uint8Array([1]) });
    const manifestA = await readFile(join(dir, 'MANIFEST'));
    const seg = await lastSegment(dir);
    const sizeA = (await stat(seg)).size;
    await s.commit({ pages: [page(3, 5000), page(4, 5000)], deletes: [1], manifest: new Uint8Array([2]) });
    await s.close();
    // The crash: segment writes of commit B reached the disk only in part, its manifest never did.
    await rewindManifest(dir, manifestA);
    const cut = sizeA + 24 + RECORD_HEADER_BYTES + 1234; // inside page 3's body
    await truncate(seg, cut);
    s = await openNodeFsPageStore(dir);
    expect(s.recovery.truncatedBytes).toBe(cut - sizeA);
    expect(await s.listPages()).toEqual([1, 2]);
    expect(await s.readPage(1)).toEqual(page(1).bytes);
    expect(await s.readPage(3)).toBeUndefined();
    expect(await s.readManifest()).toEqual(new Uint8Array([1]));
    await s.commit({ pages: [page(3, 10)], manifest: new Uint8Array([3]) });
    await s.close();
    expect((await stat(seg)).size).toBe(cut);
    s = await openNodeFsPageStore(dir);
    expect(s.recovery.truncatedBytes).toBe(cut - sizeA);
    expect(await s.listPages()).toEqual([1, 2, 3]);
    expect(await s.readPage(3)).toEqual(page(3, 10).bytes);
    await s.close();
  });

  it('a segment the manifest does not name (new segment of an unfinished commit) is removed once a later one is named; a leftover MANIFEST.tmp at once', async () => {
    const dir = newDir();
    let s = await openNodeFsPageStore(dir, { segmentBytes: 4096 });
    await s.commit({ pages: [page(1, 3000)] });
    const manifestA = await readFile(join(dir, 'MANIFEST'));
    await s.commit({ pages: [page(2, 3000)] }); // rolls over to segment 2
    await s.close();
    expect(await segments(dir)).toEqual(['seg-00000001.pqs', 'seg-00000002.pqs']);
    await rewindManifest(dir, manifestA);
    await writeFile(join(dir, 'MANIFEST.tmp'), new Uint8Array(10));
    await writeFile(join(dir, 'MANIFEST.tmp-0123456789abcdef'), new Uint8Array(10));
    const old = new Date(Date.now() - 3600_000); // a dead writer's (a live one's is seconds old and kept)
    await utimes(join(dir, 'MANIFEST.tmp-0123456789abcdef'), old, old);
    await writeFile(join(dir, 'MANIFEST.tmp-fedcba9876543210'), new Uint8Array(10));
    s = await openNodeFsPageStore(dir, { segmentBytes: 4096 });
    // Above every named segment: it may be another writer's, for a commit it has yet to publish.
    expect(s.recovery.actions.join()).toMatch(/seg-00000002\.pqs is not named .*left in place/);
    expect(existsSync(join(dir, 'MANIFEST.tmp'))).toBe(false);
    expect(existsSync(join(dir, 'MANIFEST.tmp-0123456789abcdef'))).toBe(false);
    expect(existsSync(join(dir, 'MANIFEST.tmp-fedcba9876543210'))).toBe(true);
    expect(await s.listPages()).toEqual([1]);
    await s.commit({ pages: [page(5, 3000)] }); // a new segment above it
    expect(await s.readPage(5)).toEqual(page(5, 3000).bytes);
    await s.close();
    expect(await segments(dir)).toEqual(['seg-00000001.pqs', 'seg-00000002.pqs', 'seg-00000003.pqs']);
    s = await openNodeFsPageStore(dir, { segmentBytes: 4096 });
    expect(s.recovery.actions.join()).toMatch(/removed seg-00000002\.pqs/); // no writer that can still win made it
    expect(await segments(dir)).toEqual(['seg-00000001.pqs', 'seg-00000003.pqs']);
    expect(await s.listPages()).toEqual([1, 5]);
    await s.close();
  });

  it('a store written before the numbered manifests (MANIFEST alone, a torn tail, MANIFEST.tmp) opens and goes on', async () => {
    const dir = newDir();
    await cp(new URL('../test-data/node-fs-v1/', import.meta.url), dir, { recursive: true });
    await rm(join(dir, 'README.md'));
    const check = async (s: PageStore, more: number[]) => {
      expect(await s.listPages()).toEqual([1, 3, 4, ...more]);
      expect(await s.readPage(1)).toEqual(page(1, 1000).bytes);
      expect(await s.readPage(3)).toEqual(page(3, 3000).bytes);
      expect(await s.readPage(4)).toEqual(page(4, 500).bytes);
      expect(await s.readPage(2)).toBeUndefined();
    };
    const ro = await openNodeFsPageStore(dir, { readOnly: true });
    await check(ro, []);
    expect(await ro.readManifest()).toEqual(new Uint8Array([3]));
    await ro.close();
    const legacy = (await readFile(join(dir, 'MANIFEST'))).readUInt32LE(16); // its commit counter
    let s = await openNodeFsPageStore(dir, { segmentBytes: 4096, autoCompact: false });
    await check(s, []);
    expect(s.recovery.truncatedBytes).toBe(15);
    expect(existsSync(join(dir, 'MANIFEST.tmp'))).toBe(false);
    await s.commit({ pages: [page(5, 700)], manifest: new Uint8Array([4]) });
    await s.close();
    expect((await readdir(dir)).filter((n) => n.startsWith('MANIFEST')).sort()).toEqual([
      'MANIFEST',
      `MANIFEST-${(legacy + 1).toString(16).padStart(16, '0')}`,
    ]);
    s = await openNodeFsPageStore(dir, { segmentBytes: 4096 });
    await check(s, [5]);
    expect(await s.readManifest()).toEqual(new Uint8Array([4]));
    await s.close();
  });

  it('a committed page that is missing from disk is CORRUPTION on open, never silently dropped; the lock is released', async () => {
    const dir = newDir();
    let s = await openNodeFsPageStore(dir);
    await s.commit({ pages: [page(1), page(2)] });
    await s.close();
    const seg = await lastSegment(dir);
    await truncate(seg, (await stat(seg)).size - 10);
    await expect(openNodeFsPageStore(dir)).rejects.toMatchObject({ code: 'CORRUPTION' });
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
    // A damaged record header inside the committed range, and a damaged MANIFEST: CORRUPTION too.
    const dir2 = newDir();
    s = await openNodeFsPageStore(dir2);
    await s.commit({ pages: [page(1), page(2)] });
    await s.close();
    const seg2 = await lastSegment(dir2);
    const buf = await readFile(seg2);
    buf[SEGMENT_HEADER_BYTES + 9] ^= 1; // page 1's id
    await writeFile(seg2, buf);
    await expect(openNodeFsPageStore(dir2)).rejects.toMatchObject({ code: 'CORRUPTION' });
    buf[SEGMENT_HEADER_BYTES + 9] ^= 1;
    await writeFile(seg2, buf);
    const man = await readFile(join(dir2, 'MANIFEST'));
    man[30] ^= 4;
    await rewindManifest(dir2, man);
    await expect(openNodeFsPageStore(dir2)).rejects.toMatchObject({ code: 'CORRUPTION' });
  });

  it('segments roll over at segmentBytes and reads span them after reopen', async () => {
    const dir = newDir();
    let s = await openNodeFsPageStore(dir, { segmentBytes: 8192 });
    for (let i = 0; i < 20; i++) await s.commit({ pages: [page(i, 1500)], manifest: new Uint8Array([i]) });
    await s.commit({ pages: [page(100, 20_000)] }); // one commit larger than a segment
    await s.close();
    expect((await segments(dir)).length).toBeGreaterThan(4);
    s = await openNodeFsPageStore(dir, { segmentBytes: 8192 });
    for (let i = 0; i < 20; i++) expect(await s.readPage(i)).toEqual(page(i, 1500).bytes);
    expect(await s.readPage(100)).toEqual(page(100, 20_000).bytes);
    expect(await s.readManifest()).toEqual(new Uint8Array([19]));
    await s.close();
  });
});

// A tiny child process using the adapter, bundled once from TypeScript with esbuild.
let childScript = '';
beforeAll(async () => {
  const entry = join(tmpRoot, 'child.ts');
  const src = resolve(fileURLToPath(new URL('../src/storage/node-fs.ts', import.meta.url)));
  await writeFile(
    entry,
    `import { openNodeFsPageStore } from ${JSON.stringify(src)};
const [dir, mode] = process.argv.slice(2);
const send = (m: unknown) => new Promise((r) => process.send!(m, r));
try {
  const s = await openNodeFsPageStore(dir);
  await send({ opened: true });
  if (mode === 'writer') {
    // Commits forever; reports each commit only after it resolved (acknowledged = durable).
    for (let i = 1; ; i++) {
      const bytes = new Uint8Array(1 + (i * 131) % 3000).fill(i & 0xff);
      await s.commit({ pages: [{ id: i, bytes }], deletes: i > 5 ? [i - 5] : [], manifest: new Uint8Array(new Uint32Array([i]).buffer) });
      process.send!({ acked: i });
    }
  }
  if (mode === 'hold') await new Promise(() => setInterval(() => undefined, 1 << 30)); // keeps the process alive
  await s.close();
} catch (e) {
  await send({ error: (e as { code?: string }).code ?? String(e) });
}
process.exit(0);
`,
  );
  childScript = join(tmpRoot, 'child.mjs');
  await esbuild.build({
    entryPoints: [entry],
    outfile: childScript,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
  });
});

function startChild(
  dir: string,
  mode: 'open' | 'hold' | 'writer',
): { child: ChildProcess; next: () => Promise<Record<string, unknown>>; messages: Record<string, unknown>[] } {
  const child = fork(childScript, [dir, mode], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  closed.set(child, new Promise((r) => child.once('close', () => r())));
  const messages: Record<string, unknown>[] = [];
  const waiters: ((m: Record<string, unknown>) => void)[] = [];
  child.on('message', (m) => {
    messages.push(m as Record<string, unknown>);
    waiters.shift()?.(m as Record<string, unknown>);
  });
  let seen = 0;
  const next = (): Promise<Record<string, unknown>> =>
    seen < messages.length
      ? Promise.resolve(messages[seen++])
      : new Promise((r) => waiters.push((m) => (seen++, r(m))));
  return { child, next, messages };
}

// 'close' (not 'exit'): fires once the IPC channel is drained too, so every message sent is seen.
const closed = new WeakMap<ChildProcess, Promise<void>>();
const exited = (c: ChildProcess): Promise<void> => closed.get(c)!;

describe('node-fs lock', () => {
  it('the LOCK file holds the pid, is released on close, and a second store in this process gets LOCKED', async () => {
    const dir = newDir();
    const s = await openNodeFsPageStore(dir);
    expect((await readFile(join(dir, 'LOCK'), 'utf8')).split('\n')[0]).toBe(String(process.pid));
    await expect(openNodeFsPageStore(dir)).rejects.toMatchObject({ code: 'LOCKED' });
    await s.close();
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
  });

  it('another process gets LOCKED while we hold the store, and opens it once we close', async () => {
    const dir = newDir();
    const s = await openNodeFsPageStore(dir);
    const a = startChild(dir, 'open');
    expect(await a.next()).toEqual({ error: 'LOCKED' });
    await exited(a.child);
    await s.close();
    const b = startChild(dir, 'open');
    expect(await b.next()).toEqual({ opened: true });
    await exited(b.child);
    expect(existsSync(join(dir, 'LOCK'))).toBe(false);
  });

  it('we get LOCKED while another process holds the store; its lock turns stale when it is killed', async () => {
    const dir = newDir();
    const c = startChild(dir, 'hold');
    expect(await c.next()).toEqual({ opened: true });
    await expect(openNodeFsPageStore(dir)).rejects.toMatchObject({ code: 'LOCKED' });
    c.child.kill('SIGKILL');
    await exited(c.child);
    expect(existsSync(join(dir, 'LOCK'))).toBe(true); // left behind by the dead holder
    const s = await openNodeFsPageStore(dir);
    expect((await readFile(join(dir, 'LOCK'), 'utf8')).split('\n')[0]).toBe(String(process.pid));
    await s.close();
  });

  it('a lock naming another host is never broken', async () => {
    const dir = newDir();
    const s = await openNodeFsPageStore(dir);
    await s.close();
    await writeFile(join(dir, 'LOCK'), '999999\nsome-other-host\n');
    await expect(openNodeFsPageStore(dir)).rejects.toMatchObject({ code: 'LOCKED' });
  });
});

describe('node-fs crash', () => {
  it('a writer killed with SIGKILL mid-stream loses no acknowledged commit', async () => {
    for (const [after, delayMs] of [
      [5, 0],
      [40, 7],
      [80, 13],
    ]) {
      const dir = newDir();
      const w = startChild(dir, 'writer');
      expect(await w.next()).toEqual({ opened: true });
      // Kill once `after` commits were acknowledged (plus a little): independent of machine speed.
      while (((await w.next()).acked as number) < after);
      await new Promise((r) => setTimeout(r, delayMs));
      w.child.kill('SIGKILL');
      await exited(w.child);
      const acked = Math.max(0, ...w.messages.map((m) => (m.acked as number) ?? 0));
      expect(acked).toBeGreaterThan(0);
      const s: PageStore = await openNodeFsPageStore(dir);
      const manifest = new Uint32Array((await s.readManifest())!.slice().buffer)[0];
      // The last commit may have landed without its acknowledgement reaching us; never fewer.
      expect(manifest === acked || manifest === acked + 1).toBe(true);
      const ids = await s.listPages();
      expect(ids).toEqual(
        Array.from({ length: Math.min(5, manifest) }, (_, k) => manifest - Math.min(5, manifest) + 1 + k),
      );
      for (const id of ids)
        expect(await s.readPage(id)).toEqual(new Uint8Array(1 + ((id * 131) % 3000)).fill(id & 0xff));
      console.log(
        `[node-fs crash after ${after} acks + ${delayMs} ms] acknowledged ${acked}, recovered manifest ${manifest}; ${s.recovery.actions.join('; ') || 'clean'}`,
      );
      await s.close();
    }
  });
});
