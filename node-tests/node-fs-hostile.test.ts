// node-fs against writers the lock does not reach and files someone else planted (DESIGN §11):
// a commit made is never reported as not made, a failed commit leaves no bytes behind on a full
// disk, and planted manifests (a huge counter, a FIFO, a sparse giant, a damaged copy) are
// CORRUPTION or ignored, never a hang, an untyped error or a 2 GiB allocation.
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtemp, rm, readdir, stat, writeFile, truncate, unlink } from 'node:fs/promises';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openNodeFsPageStore } from '../src/storage/node-fs';
import type { PageStore } from '../src/storage/page-store';

const tmpRoot = await mkdtemp(join(tmpdir(), 'pqdb-hostile-'));
let dirs = 0;
const newDir = (): string => join(tmpRoot, `s${dirs++}`);
afterAll(() => rm(tmpRoot, { recursive: true, force: true }));

const page = (id: number, n: number) => ({ id, bytes: new Uint8Array(n).fill(id & 0xff) });
const segments = async (dir: string) => (await readdir(dir)).filter((n) => n.endsWith('.pqs')).sort();
const manifests = async (dir: string) => (await readdir(dir)).filter((n) => /^MANIFEST-/.test(n)).sort();

describe('node-fs: a writer that opens inside another writer’s commit', () => {
  it('opening between the link and the listing does not turn the made commit into CONFLICT', async () => {
    const dir = newDir();
    let opened: PageStore | undefined;
    let race = false;
    const a = await openNodeFsPageStore(dir, {
      hostLock: false,
      afterLink: async () => {
        if (!race) return;
        race = false;
        await unlink(join(dir, 'LOCK')); // deleted behind A's back: B (another host) gets in
        opened = await openNodeFsPageStore(dir, { hostLock: false });
      },
    });
    await a.commit({ pages: [page(1, 100)] });
    race = true;
    await a.commit({ pages: [page(2, 100)] }); // made: MANIFEST-2 is A's, and B copied it to MANIFEST
    expect(opened).toBeDefined();
    const b = opened!;
    expect(await b.listPages()).toEqual([1, 2]);
    expect(await manifests(dir)).toEqual(['MANIFEST-0000000000000002']);
    await b.close();
    await a.close();
    const again = await openNodeFsPageStore(dir, { hostLock: false });
    expect(await again.listPages()).toEqual([1, 2]);
    await again.close();
  });

  it('a commit another writer built on inside the window counts as made; the next one is CONFLICT', async () => {
    const dir = newDir();
    let b: PageStore | undefined;
    let race = false;
    const a = await openNodeFsPageStore(dir, {
      hostLock: false,
      afterLink: async () => {
        if (!race) return;
        race = false;
        await unlink(join(dir, 'LOCK'));
        b = await openNodeFsPageStore(dir, { hostLock: false });
        await b.commit({ pages: [page(3, 100)] }); // commit 3, on top of A's commit 2
      },
    });
    await a.commit({ pages: [page(1, 100)] });
    race = true;
    await a.commit({ pages: [page(2, 100)] }); // acknowledged: commit 3 carries it
    await expect(a.commit({ pages: [page(4, 100)] })).rejects.toMatchObject({ code: 'CONFLICT' });
    await b!.close();
    await a.close();
    const again = await openNodeFsPageStore(dir, { hostLock: false });
    expect(await again.listPages()).toEqual([1, 2, 3]);
    await again.close();
  });
  it('a higher commit that cannot be shown to carry the commit is IO_ERROR “outcome unknown”, never “not made”', async () => {
    const dir = newDir();
    let race = false;
    let b: PageStore | undefined;
    const a = await openNodeFsPageStore(dir, {
      hostLock: false,
      afterLink: async () => {
        if (!race) return;
        race = false;
        await unlink(join(dir, 'LOCK'));
        b = await openNodeFsPageStore(dir, { hostLock: false });
        await b.commit({ manifest: new Uint8Array([7]) });
      },
    });
    await a.commit({ pages: [page(1, 100)] });
    race = true;
    // A commit of the user manifest alone: no segment length shows whether commit 3 carries it.
    const err = await a.commit({ manifest: new Uint8Array([6]) }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'IO_ERROR', message: expect.stringMatching(/unknown/) });
    expect((err as Error).message).not.toMatch(/not made/);
    await b!.close();
    await a.close();
    const again = await openNodeFsPageStore(dir, { hostLock: false });
    expect(await again.readManifest()).toEqual(new Uint8Array([7]));
    await again.close();
  });
});

describe('node-fs: a commit that fails before its commit point leaves nothing behind', () => {
  const enospc = () => Object.assign(new Error('ENOSPC: no space left on device'), { code: 'ENOSPC' });

  it('a new segment made for it is removed (no orphan kept by every later open)', async () => {
    const dir = newDir();
    let fail = false;
    const s = await openNodeFsPageStore(dir, {
      segmentBytes: 4096,
      beforeSync: (w) => {
        if (fail && w === 'manifest') throw enospc();
      },
    });
    await s.commit({ pages: [page(1, 3000)] });
    fail = true;
    await expect(s.commit({ pages: [page(2, 3000)] })).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' }); // would roll over
    expect(await segments(dir)).toEqual(['seg-00000001.pqs']);
    await s.close();
    const again = await openNodeFsPageStore(dir, { segmentBytes: 4096 });
    expect(again.recovery).toMatchObject({ clean: true, truncatedBytes: 0 });
    expect(await again.listPages()).toEqual([1]);
    await again.close();
  });

  it('its bytes in the writer’s own segment are cut back to the committed length', async () => {
    const dir = newDir();
    let fail = false;
    const s = await openNodeFsPageStore(dir, {
      beforeSync: (w) => {
        if (fail && w === 'manifest') throw enospc();
      },
    });
    await s.commit({ pages: [page(1, 3000)] });
    const committed = (await stat(join(dir, 'seg-00000001.pqs'))).size;
    fail = true;
    await expect(s.commit({ pages: [page(2, 3000)] })).rejects.toMatchObject({ code: 'QUOTA_EXCEEDED' });
    expect((await stat(join(dir, 'seg-00000001.pqs'))).size).toBe(committed);
    await s.close();
    const again = await openNodeFsPageStore(dir);
    expect(again.recovery).toMatchObject({ clean: true, truncatedBytes: 0 });
    expect(await again.listPages()).toEqual([1]);
    await again.close();
  });
});

describe('node-fs: planted manifests', () => {
  const store = async () => {
    const dir = newDir();
    const s = await openNodeFsPageStore(dir);
    await s.commit({ pages: [page(1, 100)] });
    await s.close();
    return dir;
  };

  it('a counter above 2^53 - 1 is CORRUPTION at once', async () => {
    const dir = await store();
    await writeFile(join(dir, 'MANIFEST-ffffffffffffffff'), new Uint8Array(40));
    await expect(openNodeFsPageStore(dir, { readOnly: true })).rejects.toMatchObject({
      code: 'CORRUPTION',
      message: expect.stringMatching(/counter out of range/),
    });
  });

  it('a FIFO at MANIFEST or at a numbered manifest is CORRUPTION, not a hang', { timeout: 10_000 }, async () => {
    const dir = await store();
    const mkfifo = (p: string) => expect(spawnSync('mkfifo', [p]).status).toBe(0);
    mkfifo(join(dir, 'MANIFEST-0000000000000009'));
    await expect(openNodeFsPageStore(dir, { readOnly: true })).rejects.toMatchObject({ code: 'CORRUPTION' });
    await unlink(join(dir, 'MANIFEST-0000000000000009'));
    await unlink(join(dir, 'MANIFEST'));
    mkfifo(join(dir, 'MANIFEST'));
    await unlink(join(dir, 'MANIFEST-0000000000000001')); // MANIFEST alone
    await expect(openNodeFsPageStore(dir, { readOnly: true })).rejects.toMatchObject({ code: 'CORRUPTION' });
  });

  it('a sparse manifest past 2 GiB is CORRUPTION (nothing that size is read)', async () => {
    const dir = await store();
    await writeFile(join(dir, 'MANIFEST-0000000000000009'), new Uint8Array(0));
    await truncate(join(dir, 'MANIFEST-0000000000000009'), 3 * 2 ** 30);
    await expect(openNodeFsPageStore(dir, { readOnly: true })).rejects.toMatchObject({
      code: 'CORRUPTION',
      message: expect.stringMatching(/too many/),
    });
  });

  it('a damaged MANIFEST copy below a valid numbered manifest does not keep the store shut', async () => {
    const dir = await store();
    await unlink(join(dir, 'MANIFEST')); // a hard link of MANIFEST-0000000000000001 after a commit
    await writeFile(join(dir, 'MANIFEST'), new Uint8Array(10));
    const ro = await openNodeFsPageStore(dir, { readOnly: true });
    expect(await ro.listPages()).toEqual([1]);
    await ro.close();
    const s = await openNodeFsPageStore(dir);
    expect(await s.listPages()).toEqual([1]);
    await s.commit({ pages: [page(2, 100)] });
    await s.close();
  });
});

describe('node-fs: a read-only open beside a writer', () => {
  it('a segment number reused after compaction (a short file under the old name) sends it back to the listing', async () => {
    const dir = newDir();
    const w = await openNodeFsPageStore(dir, { segmentBytes: 4096, autoCompact: false, hostLock: false });
    for (const id of [1, 2, 3]) await w.commit({ pages: [page(id, 3000)] });
    expect(await segments(dir)).toEqual(['seg-00000001.pqs', 'seg-00000002.pqs', 'seg-00000003.pqs']);
    let once = true;
    const ro = await openNodeFsPageStore(dir, {
      readOnly: true,
      afterManifestRead: async () => {
        if (!once) return;
        once = false;
        // After this open read the manifest: the writer compacts segment 2 away, and a writer
        // that will lose its compare-and-swap takes the number for a file of its own.
        await w.deletePages([2]);
        await w.compact!();
        await writeFile(join(dir, 'seg-00000002.pqs'), new Uint8Array(16), { flag: 'wx' });
      },
    });
    expect(once).toBe(false);
    expect(await ro.listPages()).toEqual([1, 3]);
    expect(ro.recovery.actions.join(' ')).toMatch(/started over 1 time/);
    await ro.close();
    await w.close();
  });
});
