// The OPFS page store's commit protocol (src/storage/opfs.ts) over node files (support/sync-directory.ts):
// a commit as one write and one flush of the log, what opening finds after a crash at every step of
// a commit, torn and damaged slots, commits cut short or put back in the log, a rewrite cut short, a
// full quota and failing flushes, the rewrite that gives back dead space, and the four files.
// The same store runs the shared conformance suite (page-store.test.ts) and, on real OPFS, in Chromium.
import { describe, it, expect, afterAll, afterEach } from 'vitest';
import { appendFile, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openSyncPageStore } from '../src/storage/opfs';
import type { PageStore } from '../src/storage/page-store';
import { calls, failing, nodeSyncDirectory } from './support/sync-directory';
import { Rng } from './cases/_util';

const root = await mkdtemp(join(tmpdir(), 'pqdb-opfs-'));
let n = 0;
const newDir = () => join(root, `s${n++}`);
afterAll(() => rm(root, { recursive: true, force: true }));
afterEach(() => failing.reset());

const open = (dir: string) => openSyncPageStore(nodeSyncDirectory(dir), dir);
const text = (s: string) => new TextEncoder().encode(s);
const str = (b: Uint8Array | undefined) => (b === undefined ? undefined : new TextDecoder().decode(b));
const made = new Map<string, Uint8Array>();
const page = (id: number, size = 100) => {
  const key = `${id}/${size}`;
  if (!made.has(key)) made.set(key, size > 65536 ? new Uint8Array(size).fill(id) : new Rng(id).bytes(size));
  return { id, bytes: made.get(key)! };
};

async function expectCode(p: Promise<unknown>, code: string) {
  await expect(p).rejects.toMatchObject({ name: 'PqdbError', code });
}

describe('the OPFS page store: crashes and faults', () => {
  it('keeps four files, whatever the number of commits and pages', async () => {
    const dir = newDir();
    const s = await open(dir);
    for (let c = 0; c < 50; c++) await s.commit({ pages: [page(c + 1)], manifest: text(`m${c}`) });
    await s.close();
    expect((await readdir(dir)).sort()).toEqual(['log-0', 'log-1', 'slot-a', 'slot-b']);
  });

  it('a second open is LOCKED until the first closes', async () => {
    const dir = newDir();
    const a = await open(dir);
    await expectCode(open(dir), 'LOCKED');
    await a.close();
    await (await open(dir)).close();
  });

  it('cuts bytes past the committed length, and keeps every committed page', async () => {
    const dir = newDir();
    const s = await open(dir);
    await s.commit({ pages: [page(1), page(2)], manifest: text('one') });
    await s.close();
    await appendFile(join(dir, 'log-0'), new Uint8Array(777).fill(9));
    const r = await open(dir);
    expect(r.recovery).toMatchObject({ clean: false, truncatedBytes: 777 });
    expect(await r.listPages()).toEqual([1, 2]);
    expect(await r.readPage(2)).toEqual(page(2).bytes);
    expect(str(await r.readManifest())).toBe('one');
    await r.commit({ pages: [page(3)] });
    await r.close();
    const again = await open(dir);
    expect(again.recovery.clean).toBe(true);
    expect(await again.listPages()).toEqual([1, 2, 3]);
    await again.close();
  });

  it('a commit is one write and one flush of the log; a slot is written only as the log grows, and at close', async () => {
    const dir = newDir();
    const s = await open(dir);
    calls.clear();
    for (let c = 1; c <= 20; c++)
      await s.commit({ pages: [page(c)], deletes: c > 1 ? [c - 1] : [], manifest: text(`m${c}`) });
    expect(calls.get('log-0')).toEqual({ writes: 20, flushes: 20 });
    expect(calls.get('slot-a')).toBeUndefined();
    expect(calls.get('slot-b')).toBeUndefined();
    await s.commit({ pages: [page(99, 1 << 20)] }); // the log passes 1 MiB past the newest slot
    expect(calls.get('slot-a')).toEqual({ writes: 1, flushes: 1 });
    await s.commit({ pages: [page(21)], manifest: text('m21') });
    await s.close(); // a slot of the last commit, so the next open reads no log
    expect(calls.get('slot-b')).toEqual({ writes: 1, flushes: 1 });
    const r = await open(dir);
    expect(r.recovery.clean).toBe(true);
    expect(await r.listPages()).toEqual([20, 21, 99]);
    expect(str(await r.readManifest())).toBe('m21');
    await r.close();
  });

  it('an open after a kill takes every whole commit the log holds past the newest slot, and cuts one a crash cut short', async () => {
    const dir = newDir();
    let s = await open(dir);
    for (let c = 1; c <= 5; c++)
      await s.commit({ pages: [page(c)], deletes: c === 4 ? [2] : [], manifest: text(`m${c}`) });
    failing.crashAfter = 0; // killed: the close writes nothing
    await s.close().catch(() => undefined);
    failing.reset();
    s = await open(dir);
    expect(s.recovery.clean).toBe(true);
    expect(await s.listPages()).toEqual([1, 3, 4, 5]);
    expect(str(await s.readManifest())).toBe('m5');
    await s.commit({ pages: [page(6, 5000)], manifest: text('m6') });
    failing.crashAfter = 0;
    await s.close().catch(() => undefined);
    failing.reset();
    // Commit 6 cut short: every byte count from its first record to its last one's end.
    const log = await readFile(join(dir, 'log-0'));
    const whole = log.length;
    const m6 = whole - (24 + 5000) - (24 + 32 + 2); // where commit 6's records start
    for (const keep of [m6 + 1, m6 + 24, m6 + 3000, whole - 30, whole - 1]) {
      await writeFile(join(dir, 'log-0'), log.subarray(0, keep));
      const r = await open(dir);
      expect(r.recovery).toMatchObject({ clean: false, truncatedBytes: keep - m6 });
      expect(str(await r.readManifest())).toBe('m5');
      expect(await r.listPages()).toEqual([1, 3, 4, 5]);
      failing.crashAfter = 0;
      await r.close().catch(() => undefined);
      failing.reset();
    }
    // Blocks that did not land before the crash while later ones did: a hole in commit 6's page.
    const holed = Buffer.from(log);
    holed.fill(0, m6 + 1000, m6 + 1100);
    await writeFile(join(dir, 'log-0'), holed);
    const r = await open(dir);
    expect(r.recovery.truncatedBytes).toBe(whole - m6);
    expect(str(await r.readManifest())).toBe('m5');
    await r.close();
  });

  it('a commit put back after the log (an older one, or the last one twice) is not taken', async () => {
    const dir = newDir();
    let s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('m1') });
    failing.crashAfter = 0;
    await s.close().catch(() => undefined);
    failing.reset();
    const one = await readFile(join(dir, 'log-0'));
    s = await open(dir);
    await s.commit({ pages: [page(2)], manifest: text('m2') });
    failing.crashAfter = 0;
    await s.close().catch(() => undefined);
    failing.reset();
    const two = await readFile(join(dir, 'log-0'));
    // Commit 1's bytes again after commit 2, and commit 2's twice: wrong number, wrong start.
    for (const tail of [one, two.subarray(one.length)]) {
      await writeFile(join(dir, 'log-0'), Buffer.concat([two, tail]));
      const r = await open(dir);
      expect(r.recovery).toMatchObject({ clean: false, truncatedBytes: tail.length });
      expect(str(await r.readManifest())).toBe('m2');
      expect(await r.listPages()).toEqual([1, 2]);
      failing.crashAfter = 0;
      await r.close().catch(() => undefined);
      failing.reset();
    }
  });

  it('a torn newest slot leaves the slot before it, and the log the commits after that; damage to both is CORRUPTION', async () => {
    const dir = newDir();
    let s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('first') });
    await s.close(); // slot-a
    s = await open(dir);
    await s.commit({ pages: [page(2)], manifest: text('second') });
    await s.close(); // slot-b
    const b = await readFile(join(dir, 'slot-b'));
    await writeFile(join(dir, 'slot-b'), b.subarray(0, b.length - 3)); // the write cut short
    const r = await open(dir);
    expect(r.recovery.clean).toBe(true); // slot-a, then commit 2 from the log
    expect(str(await r.readManifest())).toBe('second');
    expect(await r.listPages()).toEqual([1, 2]);
    await r.commit({ pages: [page(3)], manifest: text('third') });
    await r.close();
    expect(
      str(
        await (async () => {
          const x = await open(dir);
          const m = await x.readManifest();
          await x.close();
          return m;
        })(),
      ),
    ).toBe('third');
    for (const f of ['slot-a', 'slot-b']) {
      const bytes = await readFile(join(dir, f));
      bytes[10] ^= 1;
      await writeFile(join(dir, f), bytes);
    }
    await expectCode(open(dir), 'CORRUPTION');
  });

  it('a slot of another format version (the first one, or a later one) is FORMAT_VERSION, never read', async () => {
    const { crc32c } = await import('../src/_crc32c');
    for (const version of [1, 3]) {
      const dir = newDir();
      const s = await open(dir);
      await s.commit({ pages: [page(1)], manifest: text('m') });
      await s.close();
      const bytes = await readFile(join(dir, 'slot-a'));
      bytes.writeUInt32LE(version, 8);
      bytes.writeUInt32LE(crc32c(bytes.subarray(0, bytes.length - 4)), bytes.length - 4);
      await writeFile(join(dir, 'slot-a'), bytes);
      await expectCode(open(dir), 'FORMAT_VERSION');
    }
  });

  it('a rewrite no commit took (the other log not empty) is emptied at open', async () => {
    const dir = newDir();
    const s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('m') });
    await s.close();
    await writeFile(join(dir, 'log-1'), new Uint8Array(5000).fill(3));
    const r = await open(dir);
    expect(r.recovery.actions.join(' ')).toMatch(/log-1/);
    expect(await r.readPage(1)).toEqual(page(1).bytes);
    await r.close();
    expect((await readFile(join(dir, 'log-1'))).length).toBe(0);
  });

  it('a full quota is QUOTA_EXCEEDED: nothing changes, the store goes on, nothing is left behind', async () => {
    const dir = newDir();
    const s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('before') });
    const before = (await s.stats()).storedBytes;
    failing.quota = true;
    await expectCode(s.commit({ pages: [page(2, 50_000)], manifest: text('lost') }), 'QUOTA_EXCEEDED');
    failing.quota = false;
    expect(await s.listPages()).toEqual([1]);
    expect(str(await s.readManifest())).toBe('before');
    expect((await s.stats()).storedBytes).toBe(before);
    await s.commit({ pages: [page(3)], manifest: text('after') });
    await s.close();
    const r = await open(dir);
    expect(await r.listPages()).toEqual([1, 3]);
    expect(r.recovery.clean).toBe(true);
    await r.close();
  });

  it("a write that reports Chromium's no-space code (half written, 4294967288 bytes) is QUOTA_EXCEEDED, never an acknowledged commit", async () => {
    const dir = newDir();
    const s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('before') });
    failing.noSpace = true;
    await expectCode(s.commit({ pages: [page(2, 50_000)], manifest: text('lost') }), 'QUOTA_EXCEEDED');
    failing.noSpace = false;
    expect(await s.listPages()).toEqual([1]);
    expect(str(await s.readManifest())).toBe('before');
    await s.commit({ pages: [page(3)], manifest: text('after') });
    await s.close();
    const r = await open(dir);
    expect(await r.listPages()).toEqual([1, 3]);
    expect(str(await r.readManifest())).toBe('after');
    expect(await r.readPage(3)).toEqual(page(3).bytes);
    await r.close();
  });

  it('a failed log flush is IO_ERROR, and commits are refused until a reopen, which finds one of the two states', async () => {
    const dir = newDir();
    const s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('one') });
    failing.flush.add('log-0');
    await expectCode(s.commit({ pages: [page(2)], manifest: text('two') }), 'IO_ERROR');
    failing.reset();
    await expectCode(s.commit({ pages: [page(3)] }), 'IO_ERROR');
    await s.close();
    const r = await open(dir);
    const m = str(await r.readManifest());
    expect(['one', 'two']).toContain(m);
    expect(await r.listPages()).toEqual(m === 'one' ? [1] : [1, 2]);
    await r.close();
  });

  it('a failed slot write leaves the commit acknowledged in the log, and the store going on', async () => {
    const dir = newDir();
    const s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('one') });
    failing.write.add('slot-a');
    await s.commit({ pages: [page(2, 1 << 20)], manifest: text('two') }); // its slot fails
    await s.commit({ pages: [page(3)], manifest: text('three') });
    failing.reset();
    failing.crashAfter = 0;
    await s.close().catch(() => undefined);
    failing.reset();
    const r = await open(dir);
    expect(str(await r.readManifest())).toBe('three');
    expect(await r.listPages()).toEqual([1, 2, 3]);
    expect(Buffer.from((await r.readPage(2))!).equals(page(2, 1 << 20).bytes)).toBe(true);
    await r.close();
  });

  it('a failed slot flush in a rewrite is IO_ERROR, commits are refused until a reopen, which finds one of the two states', async () => {
    const dir = newDir();
    const s = await open(dir);
    await s.commit({ pages: [page(1)], manifest: text('one') });
    failing.flush.add('slot-a');
    failing.flush.add('slot-b');
    await expectCode(s.reclaim!({ minDeadFraction: 0.01 }), 'IO_ERROR'); // the commit record is dead bytes
    failing.reset();
    await expectCode(s.commit({ pages: [page(3)] }), 'IO_ERROR');
    await s.close();
    const r = await open(dir);
    expect(str(await r.readManifest())).toBe('one');
    expect(await r.listPages()).toEqual([1]);
    expect(await r.readPage(1)).toEqual(page(1).bytes);
    await r.close();
  });

  it('gives back dead space: by itself once dead bytes pass live ones and 4 MiB, and by reclaim()', async () => {
    const dir = newDir();
    const s = await open(dir);
    const big = Array.from({ length: 6 }, (_, i) => page(100 + i, 1 << 20));
    await s.commit({ pages: [page(1), ...big], manifest: text('big') });
    await s.commit({ deletes: big.map((p) => p.id), manifest: text('deleted') });
    expect((await s.stats()).storedBytes).toBeGreaterThan(6 << 20); // dead, not yet given back
    await s.commit({ pages: [page(2)], manifest: text('next') }); // this commit rewrites
    expect((await s.stats()).storedBytes).toBeLessThan(4096);
    await s.close();
    expect((await readFile(join(dir, 'log-0'))).length).toBe(0);
    const r = await open(dir);
    expect(await r.listPages()).toEqual([1, 2]);
    expect(await r.readPage(1)).toEqual(page(1).bytes);
    await r.commit({ pages: [page(3, 10_000)] });
    await r.deletePages([3]);
    const res = await r.reclaim!({ minDeadFraction: 0.5 });
    expect(res).toMatchObject({ segmentsRewritten: 1 });
    expect(res.bytesAfter).toBeLessThan(res.bytesBefore);
    expect(await r.reclaim!()).toMatchObject({ segmentsRewritten: 0 });
    await r.close();
    const again = await open(dir);
    expect(await again.listPages()).toEqual([1, 2]);
    expect(str(await again.readManifest())).toBe('next');
    await again.close();
  });

  it('a crash at any write, cut or flush of a commit (a rewrite included) leaves every acknowledged commit, and at most the one in flight', async () => {
    // Every step of every commit, until a run goes through all twelve.
    for (let crashAt = 0, finished = false; !finished; crashAt++) {
      const dir = newDir();
      let s: PageStore = await open(dir);
      const acked: { pages: number[]; manifest: string }[] = [];
      let live: number[] = [];
      let inFlight: { pages: number[]; manifest: string } | undefined;
      failing.crashAfter = crashAt;
      try {
        for (let c = 1; c <= 12; c++) {
          const dropped = c % 4 === 0 ? live.filter((id) => id % 2 === 0) : [];
          const next = [...live.filter((id) => !dropped.includes(id)), c];
          inFlight = { pages: next, manifest: `m${c}` };
          // Commit 8 carries 5 MiB that commit 9 deletes: commit 10 rewrites the log.
          const size = c === 8 ? 5 << 20 : 200;
          await s.commit({ pages: [page(c, size)], deletes: dropped, manifest: text(`m${c}`) });
          live = next.filter((id) => !(c === 9 && id === 8));
          if (c === 9) await s.commit({ deletes: [8] });
          acked.push({ pages: [...live], manifest: `m${c}` });
          inFlight = undefined;
        }
      } catch (e) {
        expect((e as { name?: string }).name).toBe('PqdbError');
      }
      finished = acked.length === 12;
      failing.reset();
      await s.close().catch(() => undefined);
      s = await open(dir);
      const m = str(await s.readManifest());
      const ids = await s.listPages();
      const last = acked.at(-1);
      const ok =
        (last === undefined ? m === undefined && ids.length === 0 : m === last.manifest) ||
        (inFlight !== undefined && m === inFlight.manifest);
      expect(ok, `crash at ${crashAt}: manifest ${m}, acknowledged ${last?.manifest}`).toBe(true);
      if (last !== undefined && m === last.manifest) expect(ids).toEqual([...last.pages].sort((a, b) => a - b));
      for (const id of ids) {
        // Compared as buffers: a deep equality over 5 MiB element by element takes seconds.
        const got = await s.readPage(id);
        expect(got && Buffer.from(got).equals(page(id, id === 8 ? 5 << 20 : 200).bytes), `page ${id}`).toBe(true);
      }
      await s.close();
      expect(crashAt).toBeLessThan(500);
    }
  });
});
