// node-fs segment compaction (src/storage/node-fs.ts, node-fs-compact.ts; docs/storage.md "Segment
// compaction"): thresholds, bounded steps, reads and commits interleaved with it, reopen after it,
// tombstones carried while an older segment needs them, background steps after commits, read-only
// openers beside a compacting writer, failed syncs (IO_ERROR, commits refused until reopened,
// nothing lost), a page failing its checksum (CORRUPTION, nothing written), and a writer SIGKILLed
// while compacting at random points (every acknowledged page there exactly once, right bytes).
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtemp, rm, readdir, readFile, writeFile } from 'node:fs/promises';
import { readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import {
  openNodeFsPageStore,
  RECORD_HEADER_BYTES,
  SEGMENT_HEADER_BYTES,
  type NodeFsPageStoreOptions,
} from '../src/storage/node-fs';
import type { CompactProgress, PageStore } from '../src/storage/page-store';
import { Rng } from './cases/_util';
import { expectBytes } from './support/bytes';
import { runUntilKilled } from './support/kill';
import { generateRecipient, generateSigner, openStore } from '../src/node';

const tmpRoot = await mkdtemp(join(tmpdir(), 'pqdb-compact-'));
let dirs = 0;
const newDir = (): string => join(tmpRoot, `s${dirs++}`);
afterAll(() => rm(tmpRoot, { recursive: true, force: true }));

interface Space {
  seq: number;
  committed: number;
  live: number;
  deadFraction: number;
}
const space = (s: PageStore): Space[] => (s as unknown as { segmentSpace(): Space[] }).segmentSpace();
const segmentFiles = async (dir: string): Promise<string[]> =>
  (await readdir(dir)).filter((n) => n.endsWith('.pqs')).sort();

/** Page `id`'s bytes: a length and content that only this id gives. */
function pageBytes(id: number, base = 900): Uint8Array {
  const rng = new Rng(id * 7919 + 1);
  return rng.bytes(base + ((id * 131) % 400));
}

/** Opens a store with small segments, no background compaction unless asked. */
const openSmall = (dir: string, o: NodeFsPageStoreOptions = {}): Promise<PageStore> =>
  openNodeFsPageStore(dir, { segmentBytes: 8192, autoCompact: false, compactStepBytes: 4096, ...o });

/** Writes pages 1..n, `perCommit` a commit; returns them. */
async function fill(s: PageStore, n: number, perCommit = 2): Promise<Map<number, Uint8Array>> {
  const pages = new Map<number, Uint8Array>();
  for (let id = 1; id <= n; id += perCommit) {
    const batch = [];
    for (let k = id; k < id + perCommit && k <= n; k++) {
      pages.set(k, pageBytes(k));
      batch.push({ id: k, bytes: pages.get(k)! });
    }
    await s.commit({ pages: batch, manifest: new Uint8Array([id & 0xff]) });
  }
  return pages;
}

async function expectPages(s: PageStore, pages: Map<number, Uint8Array>): Promise<void> {
  expect(await s.listPages()).toEqual([...pages.keys()].sort((a, b) => a - b));
  for (const [id, bytes] of pages) expectBytes(await s.readPage(id), bytes, `page ${id}`);
  const st = await s.stats();
  expect(st.pageCount).toBe(pages.size);
  expect(st.pageBytes).toBe([...pages.values()].reduce((n, p) => n + p.length, 0));
}

describe('node-fs compaction: accounting and thresholds', () => {
  it('per-segment live bytes follow commits and deletes, and are rebuilt the same on open', async () => {
    const dir = newDir();
    let s = await openSmall(dir);
    const pages = await fill(s, 40);
    const before = space(s);
    expect(before.length).toBeGreaterThan(4);
    // Every segment is all live (records only; no tombstone yet).
    for (const g of before) expect(g.live).toBe(g.committed - SEGMENT_HEADER_BYTES);
    await s.deletePages([1, 2, 3, 4, 5, 6]);
    for (const id of [1, 2, 3, 4, 5, 6]) pages.delete(id);
    const after = space(s);
    const liveSum = after.reduce((n, g) => n + g.live, 0);
    expect(liveSum).toBe([...pages.values()].reduce((n, p) => n + RECORD_HEADER_BYTES + p.length, 0));
    expect(after[0].deadFraction).toBeGreaterThan(0.5);
    await s.close();
    s = await openSmall(dir);
    expect(space(s)).toEqual(after);
    await s.close();
  });

  it('only segments at or past minDeadFraction are rewritten; a segment with no live page is just removed', async () => {
    const dir = newDir();
    const s = await openSmall(dir);
    const pages = await fill(s, 40);
    const segs = space(s);
    // Kill every page of the first segment, and about 30 % of the second.
    const idsIn = async (seq: number): Promise<number[]> => {
      const out: number[] = [];
      const buf = await readFile(join(dir, `seg-${seq.toString(16).padStart(8, '0')}.pqs`));
      for (let off = SEGMENT_HEADER_BYTES; off < buf.length; off += RECORD_HEADER_BYTES + buf.readUInt32LE(off + 12))
        if (buf[off + 4] === 1) out.push(buf.readUInt32LE(off + 8));
      return out;
    };
    const first = await idsIn(segs[0].seq);
    const second = await idsIn(segs[1].seq);
    const doomed = [...first, ...second.slice(0, 2)];
    await s.deletePages(doomed);
    doomed.forEach((id) => pages.delete(id));
    const dead = space(s);
    expect(dead[0].deadFraction).toBe(1);
    expect(dead[1].deadFraction).toBeGreaterThan(0.2);
    expect(dead[1].deadFraction).toBeLessThan(0.5);
    const none = await s.compact!({ minDeadFraction: 1, maxBytes: 0 });
    expect(none).toMatchObject({ segmentsRewritten: 0, bytesCopied: 0 });
    const r = await s.compact!({ minDeadFraction: 0.5 });
    expect(r.segmentsRewritten).toBe(1); // the first, with nothing to copy; the second stays
    expect(r.bytesCopied).toBe(0);
    expect(r.bytesAfter).toBe(r.bytesBefore - segs[0].committed - 12); // and its MANIFEST entry
    expect((await s.stats()).storedBytes).toBe(r.bytesAfter);
    expect(await segmentFiles(dir)).not.toContain(`seg-${segs[0].seq.toString(16).padStart(8, '0')}.pqs`);
    expect(space(s).map((g) => g.seq)).toEqual(segs.slice(1).map((g) => g.seq));
    await expectPages(s, pages);
    const again = await s.compact!({ minDeadFraction: 0.2 });
    expect(again.segmentsRewritten).toBeGreaterThanOrEqual(1);
    expect(again.bytesCopied).toBeGreaterThan(0);
    await expectPages(s, pages);
    await s.close();
  });

  it('deleting 80 % and compacting brings the store near its live size; reopen sees the same', async () => {
    const dir = newDir();
    let s = await openSmall(dir);
    const pages = await fill(s, 120, 3);
    const rng = new Rng(5);
    const doomed = [...pages.keys()].filter(() => rng.int(10) < 8);
    await s.commit({ deletes: doomed, manifest: new Uint8Array([7]) });
    doomed.forEach((id) => pages.delete(id));
    const r = await s.compact!();
    const live = [...pages.values()].reduce((n, p) => n + RECORD_HEADER_BYTES + p.length, 0);
    expect(r.bytesAfter).toBeLessThan(r.bytesBefore / 2);
    // Every segment left is under half dead (what the call wrote is all live): at most about twice
    // the live bytes. With 8 KiB segments of ~7 pages, some keep 3 of their 7 by chance.
    for (const g of space(s)) expect(g.deadFraction).toBeLessThan(0.5);
    expect(r.bytesAfter).toBeLessThanOrEqual(2 * live + 1000);
    // A lower threshold takes those too.
    const r2 = await s.compact!({ minDeadFraction: 0.25 });
    expect(r2.bytesAfter).toBeLessThanOrEqual(1.3 * live);
    await expectPages(s, pages);
    await s.close();
    s = await openSmall(dir);
    expect(s.recovery.clean).toBe(true);
    expect((await s.stats()).storedBytes).toBe(r2.bytesAfter);
    await expectPages(s, pages);
    expect(await s.readManifest()).toEqual(new Uint8Array([7]));
    // Segment numbers only grow: the next segment is past every one ever used.
    await s.commit({ pages: [{ id: 1000, bytes: pageBytes(1000, 7000) }] });
    const seqs = space(s).map((g) => g.seq);
    expect(seqs).toEqual([...seqs].sort((a, b) => a - b));
    await s.close();
  });

  it('a tombstone is carried forward while an older segment still holds the deleted page: no page comes back', async () => {
    const dir = newDir();
    let s = await openSmall(dir);
    // Segment A: pages 1..6 (mostly kept live). Later segments: filler, then deletes of 1 and 2.
    const pages = await fill(s, 6, 6);
    for (let id = 100; id < 130; id += 2) {
      pages.set(id, pageBytes(id));
      pages.set(id + 1, pageBytes(id + 1));
      await s.commit({
        pages: [
          { id, bytes: pages.get(id)! },
          { id: id + 1, bytes: pages.get(id + 1)! },
        ],
      });
    }
    await s.deletePages([1, 2]);
    pages.delete(1);
    pages.delete(2);
    // Make the segments after A mostly dead, so they (with the tombstones' segment) are compacted and A is not.
    const filler = [...pages.keys()].filter((id) => id >= 100 && id % 4 !== 0);
    await s.deletePages(filler);
    filler.forEach((id) => pages.delete(id));
    const seqA = space(s)[0].seq;
    expect(space(s)[0].deadFraction).toBeLessThan(0.5);
    const r = await s.compact!({ minDeadFraction: 0.5 });
    expect(r.segmentsRewritten).toBeGreaterThan(1);
    expect(space(s)[0].seq).toBe(seqA); // A is still there, with the dead records of 1 and 2
    await expectPages(s, pages);
    await s.close();
    s = await openSmall(dir);
    await expectPages(s, pages); // 1 and 2 stay deleted after replay
    // Once A goes too, its tombstones are no longer needed and are dropped when their segment is.
    await s.deletePages([3, 4, 5]);
    [3, 4, 5].forEach((id) => pages.delete(id));
    await s.compact!({ minDeadFraction: 0.01 });
    await s.compact!({ minDeadFraction: 0.01 });
    await expectPages(s, pages);
    await s.close();
    s = await openSmall(dir);
    await expectPages(s, pages);
    expect((await s.stats()).storedBytes).toBeLessThanOrEqual(
      1.3 * [...pages.values()].reduce((n, p) => n + RECORD_HEADER_BYTES + p.length, 0) + 200,
    );
    await s.close();
  });

  it('a segment holding only tombstones an older segment still needs is left alone, not copied forward again and again', async () => {
    const dir = newDir();
    let s = await openSmall(dir);
    const big = (id: number) => ({ id, bytes: new Uint8Array(2600).fill(id) });
    await s.commit({ pages: [big(1), big(2), big(3)] }); // segment A, full
    await s.commit({ pages: [big(4)] }); // segment B
    await s.deletePages([1]); // a tombstone in B that A needs (A is a third dead: below the threshold)
    await s.deletePages([4]);
    const r1 = await s.compact!();
    expect(r1.segmentsRewritten).toBe(1); // B, its tombstone for 1 carried into a new segment
    const after1 = space(s);
    expect(after1).toHaveLength(2);
    expect(after1[1].live).toBe(0); // the new segment holds that tombstone alone
    const r2 = await s.compact!();
    expect(r2).toMatchObject({ segmentsRewritten: 0, bytesCopied: 0 });
    expect(space(s)).toEqual(after1);
    await s.close();
    s = await openSmall(dir);
    expect(await s.listPages()).toEqual([2, 3]);
    expect((await s.compact!()).segmentsRewritten).toBe(0);
    // Once A goes (its last page copied into this session's own segment, which holds the new
    // tombstone for 2), the tombstones' segment is no longer needed either: one segment is left.
    await s.deletePages([2]);
    const r3 = await s.compact!();
    expect(r3.segmentsRewritten).toBe(2);
    expect(space(s)).toHaveLength(1);
    expect(space(s)[0].live).toBe(RECORD_HEADER_BYTES + 2600);
    expect(await s.listPages()).toEqual([3]);
    await s.close();
    s = await openSmall(dir);
    expect(await s.listPages()).toEqual([3]);
    expect(await s.readPage(3)).toEqual(big(3).bytes);
    await s.close();
  });

  it('argument checks and states: RangeError/TypeError, READ_ONLY, NOT_OPEN', async () => {
    const dir = newDir();
    const s = await openSmall(dir);
    await fill(s, 4);
    const c = s.compact!.bind(s);
    await expect(c({ minDeadFraction: 0 })).rejects.toThrow(RangeError);
    await expect(c({ minDeadFraction: 1.5 })).rejects.toThrow(RangeError);
    await expect(c({ minDeadFraction: NaN })).rejects.toThrow(RangeError);
    await expect(c({ stepBytes: 100 })).rejects.toThrow(RangeError);
    await expect(c({ maxBytes: -1 })).rejects.toThrow(RangeError);
    await expect(c({ onProgress: 1 as unknown as () => void })).rejects.toThrow(TypeError);
    await expect(openSmall(newDir(), { compactDeadFraction: 2 })).rejects.toThrow(RangeError);
    await expect(openSmall(newDir(), { compactStepBytes: 1 })).rejects.toThrow(RangeError);
    await s.close();
    await expect(s.compact!()).rejects.toMatchObject({ code: 'NOT_OPEN' });
    const ro = await openNodeFsPageStore(dir, { readOnly: true });
    await expect(ro.compact!()).rejects.toMatchObject({ code: 'READ_ONLY' });
    await ro.close();
  });
});

describe('node-fs compaction: a segment per writer session', () => {
  it('a store opened again and again for a commit or two keeps few segments: the small ones are merged', async () => {
    const dir = newDir();
    const pages = new Map<number, Uint8Array>();
    for (let session = 0; session < 40; session++) {
      const s = await openNodeFsPageStore(dir, { segmentBytes: 64 * 1024 }); // background compaction on
      const bytes = new Uint8Array(300).fill(session);
      await s.commit({ pages: [{ id: session, bytes }] });
      pages.set(session, bytes);
      await s.close(); // waits for the background step in progress
    }
    const segs = readdirSync(dir).filter((n) => n.endsWith('.pqs'));
    expect(segs.length).toBeLessThanOrEqual(18); // not 40: more than 16 small ones are merged
    const s = await openNodeFsPageStore(dir, { readOnly: true });
    expect(await s.listPages()).toEqual([...pages.keys()]);
    for (const [id, bytes] of pages) expect(await s.readPage(id)).toEqual(bytes);
    await s.close();
  });
});

describe('node-fs compaction: bounded steps beside reads and commits', () => {
  it('steps copy at most stepBytes (or one larger page); maxBytes stops a call early; the next call finishes', async () => {
    const dir = newDir();
    const s = await openSmall(dir, { segmentBytes: 64 * 1024 });
    const pages = await fill(s, 300, 5);
    const doomed = [...pages.keys()].filter((id) => id % 3 !== 0);
    await s.deletePages(doomed);
    doomed.forEach((id) => pages.delete(id));
    const progress: CompactProgress[] = [];
    const part = await s.compact!({ stepBytes: 8192, maxBytes: 20_000, onProgress: (p) => progress.push(p) });
    expect(progress.length).toBeGreaterThanOrEqual(3);
    let prev = 0;
    for (const p of progress) {
      expect(p.bytesCopied - prev).toBeLessThanOrEqual(8192);
      prev = p.bytesCopied;
    }
    expect(part.bytesCopied).toBeGreaterThanOrEqual(20_000 - 2000);
    expect(part.bytesCopied).toBeLessThan(20_000 + 2000);
    await expectPages(s, pages);
    const rest = await s.compact!({ stepBytes: 8192 });
    expect(rest.bytesCopied).toBeGreaterThan(0);
    expect(rest.bytesAfter).toBeLessThan(part.bytesBefore / 2);
    await expectPages(s, pages);
    await s.close();
  });

  it('reads (readPage, readPages, readRange) during compaction always return the right bytes; commits land between steps', async () => {
    const dir = newDir();
    const s = await openSmall(dir, { segmentBytes: 16 * 1024 });
    const pages = await fill(s, 200, 4);
    const rng = new Rng(11);
    const doomed = [...pages.keys()].filter(() => rng.int(10) < 7);
    await s.deletePages(doomed);
    doomed.forEach((id) => pages.delete(id));
    const ids = [...pages.keys()];
    let steps = 0;
    let stepsAtCommit = -1;
    let committed: Promise<void> | undefined;
    const compaction = s.compact!({
      stepBytes: 4096,
      onProgress: () => {
        // A commit called while compaction runs is acknowledged after the next step, not after all of them.
        if (++steps === 2)
          committed = s
            .commit({ pages: [{ id: 5000, bytes: pageBytes(5000) }], manifest: new Uint8Array([1, 2]) })
            .then(() => void (stepsAtCommit = steps));
      },
    });
    let done = false;
    void compaction.finally(() => (done = true));
    let reads = 0;
    const readers = [0, 1, 2].map(async (k) => {
      const r = new Rng(100 + k);
      while (!done) {
        const id = ids[r.int(ids.length)];
        const want = pages.get(id)!;
        if (k === 0) expectBytes(await s.readPage(id), want);
        else if (k === 1) {
          const run = ids.slice(r.int(ids.length - 8), undefined).slice(0, 8);
          const got = await s.readPages!(run);
          run.forEach((rid, i) => expectBytes(got[i], pages.get(rid)!, `page ${rid}`));
        } else expectBytes(await s.readRange!(id, 10, 100), want.subarray(10, 110));
        reads++;
        // Let the compaction's own reads and syncs through: the readers share the event loop and libuv's pool with it.
        await new Promise((r) => setImmediate(r));
      }
    });
    const result = await compaction;
    await Promise.all(readers);
    await committed;
    pages.set(5000, pageBytes(5000));
    expect(reads).toBeGreaterThan(20);
    expect(stepsAtCommit).toBeGreaterThanOrEqual(2);
    expect(steps).toBeGreaterThan(stepsAtCommit + 2);
    expect(result.segmentsRewritten).toBeGreaterThan(3);
    await expectPages(s, pages);
    await s.close();
    const again = await openSmall(dir);
    expect(again.recovery.clean).toBe(true);
    await expectPages(again, pages);
    expect(await again.readManifest()).toEqual(new Uint8Array([1, 2]));
    await again.close();
  });

  it('background: commits whose deletes leave sealed segments mostly dead queue steps that reclaim them; close waits', async () => {
    const dir = newDir();
    const s = await openNodeFsPageStore(dir, { segmentBytes: 16 * 1024, compactStepBytes: 4096 });
    const pages = await fill(s, 200, 4);
    const full = (await s.stats()).storedBytes;
    const doomed = [...pages.keys()].filter((id) => id % 5 !== 0);
    for (let i = 0; i < doomed.length; i += 20) await s.deletePages(doomed.slice(i, i + 20));
    doomed.forEach((id) => pages.delete(id));
    // Steps run between commits; an empty queue slot waits for those already queued.
    for (let i = 0; i < 200 && space(s).some((g, k, all) => k < all.length - 1 && g.deadFraction >= 0.5); i++)
      await s.commit({ manifest: new Uint8Array([i & 0xff]) });
    const sealed = space(s).slice(0, -1);
    for (const g of sealed) expect(g.deadFraction).toBeLessThan(0.5);
    expect((await s.stats()).storedBytes).toBeLessThan(full / 2);
    await expectPages(s, pages);
    await s.close();
    const again = await openNodeFsPageStore(dir, { segmentBytes: 16 * 1024 });
    expect(again.recovery.clean).toBe(true);
    await expectPages(again, pages);
    await again.close();
  });
});

describe('node-fs compaction: under the engine', () => {
  it('a Store over a compacting node-fs page store: checkpoints replace pages, segments are reclaimed, every record reads back after reopen', async () => {
    const dir = newDir();
    const r = generateRecipient('classical');
    const signer = generateSigner();
    const keys = {
      recipients: [r.publicKey],
      unlock: r.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    };
    const schema = { n: 'integer', s: 'string' } as const;
    const pagesOf = () =>
      openNodeFsPageStore(dir, { segmentBytes: 16 * 1024, compactDeadFraction: 0.3, compactStepBytes: 4096 });
    let pages = await pagesOf();
    let store = await openStore({ storage: pages, create: true, ...keys });
    let c = store.collection('c', { schema, index: { text: ['s'] } });
    const want = new Map<string, { n: number; s: string }>();
    for (let round = 0; round < 12; round++) {
      await store.batch((tx) => {
        for (let i = 0; i < 25; i++) {
          const key = `k${(round * 17 + i * 7) % 200}`;
          const v = { n: round * 100 + i, s: `w${i % 9} w${(round * i) % 31} ${'x'.repeat((i * 37) % 400)}` };
          tx.put(c, key, v);
          want.set(key, v);
        }
      });
      // Searched, then checkpointed: each checkpoint replaces the sealed index pages (deletes the old).
      expect((await c.search(`w${round % 9}`, { limit: 1000 })).length).toBeGreaterThan(0);
      if (round % 2 === 1) await store.checkpoint();
      if (round % 3 === 2) {
        const gone = [...want.keys()].slice(0, 5);
        for (const key of gone) await c.delete(key);
        gone.forEach((key) => want.delete(key));
      }
    }
    const before = await pages.stats();
    const result = await pages.compact!({ minDeadFraction: 0.1 });
    expect(result.bytesAfter).toBeLessThanOrEqual(before.storedBytes);
    // Segments were rewritten (in the background or by this call): numbers are missing below the newest.
    const segs = space(pages);
    expect(segs.at(-1)!.seq).toBeGreaterThan(segs.length);
    for (const [key, v] of want) expect(await c.get(key), key).toEqual(v);
    await store.close();
    await pages.close();
    pages = await pagesOf();
    expect(pages.recovery.clean).toBe(true);
    store = await openStore({ storage: pages, ...keys });
    c = store.collection('c', { schema, index: { text: ['s'] } });
    for (const [key, v] of want) expect(await c.get(key), key).toEqual(v);
    let n = 0;
    for await (const _ of c.scan()) n++;
    expect(n).toBe(want.size);
    await store.checkpoint();
    await store.close();
    await pages.close();
  });
});

describe('node-fs compaction: read-only openers beside a compacting writer', () => {
  it('a read-only view in another process, opened before the compaction, reads every page it saw right after it', async () => {
    const dir = newDir();
    const w = await openSmall(dir);
    const pages = await fill(w, 80);
    const child = fork(childScript, [dir, '0', 'reader'], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    const messages: Record<string, unknown>[] = [];
    const waiters: (() => void)[] = [];
    child.on('message', (m) => (messages.push(m as Record<string, unknown>), waiters.shift()?.()));
    const next = async (): Promise<Record<string, unknown>> => {
      if (messages.length === 0) await new Promise<void>((r) => waiters.push(r));
      return messages.shift()!;
    };
    expect(await next()).toEqual({ opened: 80 });
    const doomed = [...pages.keys()].filter((id) => id % 4 !== 0);
    await w.deletePages(doomed);
    const r = await w.compact!();
    expect(r.segmentsRewritten).toBeGreaterThan(3);
    child.send({ read: true });
    expect(await next()).toEqual({ right: 80, wrong: [] });
    await new Promise((res) => child.once('close', res));
    await w.close();
  });

  it('a view opened before the compaction keeps reading the right bytes of the segments removed since', async () => {
    const dir = newDir();
    const w = await openSmall(dir);
    const pages = await fill(w, 60);
    const ro = await openNodeFsPageStore(dir, { readOnly: true });
    const doomed = [...pages.keys()].filter((id) => id % 4 !== 0);
    await w.deletePages(doomed);
    const r = await w.compact!();
    expect(r.segmentsRewritten).toBeGreaterThan(2);
    // The view is as of its opening: every page it saw, deleted since or moved, with its bytes
    // (on POSIX through the descriptors it holds); never another page's bytes.
    for (const [id, bytes] of pages) expect(await ro.readPage(id), `page ${id}`).toEqual(bytes);
    await ro.close();
    // A view opened now sees the compacted store.
    const ro2 = await openNodeFsPageStore(dir, { readOnly: true });
    doomed.forEach((id) => pages.delete(id));
    await expectPages(ro2, pages);
    await ro2.close();
    await w.close();
  });

  it('a read-only open of a store missing a named segment (MANIFEST unchanged) is CORRUPTION', async () => {
    const dir = newDir();
    const w = await openSmall(dir);
    await fill(w, 20);
    await w.close();
    await rm(join(dir, (await segmentFiles(dir))[1]));
    await expect(openNodeFsPageStore(dir, { readOnly: true })).rejects.toMatchObject({ code: 'CORRUPTION' });
  });

  it('read-only opens racing a writer that compacts all the time open the store or fail typed; reads are right', async () => {
    const dir = newDir();
    const w = await openSmall(dir, { autoCompact: true, compactDeadFraction: 0.3 });
    const live = new Map<number, Uint8Array>();
    let next = 1;
    let stop = false;
    const writer = (async () => {
      while (!stop) {
        const batch = [];
        for (let k = 0; k < 3; k++, next++) {
          live.set(next, pageBytes(next));
          batch.push({ id: next, bytes: live.get(next)! });
        }
        const deletes = [...live.keys()].filter((id) => id < next - 12 && id % 3 !== 0);
        await w.commit({ pages: batch, deletes });
        deletes.forEach((id) => live.delete(id));
      }
    })();
    let opened = 0;
    let failed = 0;
    let restarted = 0;
    for (let i = 0; i < 40; i++) {
      try {
        const ro = await openNodeFsPageStore(dir, { readOnly: true });
        opened++;
        if (ro.recovery.actions.some((a) => a.startsWith('started over'))) restarted++;
        for (const id of await ro.listPages()) {
          const got = await ro.readPage(id);
          expect(got, `page ${id}`).toEqual(pageBytes(id));
        }
        await ro.close();
      } catch (e) {
        // A view may fail, typed, never with wrong data.
        expect((e as { code?: string }).code).toMatch(/^(IO_ERROR|CORRUPTION)$/);
        failed++;
      }
    }
    stop = true;
    await writer;
    console.log(
      `[read-only beside compaction] ${opened} opens read everything right (${restarted} started over), ${failed} failed typed`,
    );
    expect(opened).toBeGreaterThan(30);
    await w.close();
  });
});

describe('node-fs compaction: faults', () => {
  for (const what of ['segment', 'manifest', 'directory'] as const) {
    it(`a failed ${what} sync during compaction is IO_ERROR; commits are refused until reopen; nothing is lost`, async () => {
      const dir = newDir();
      let failNext = false;
      const beforeSync = (w: string): void => {
        if (failNext && w === what) {
          failNext = false;
          throw Object.assign(new Error(`EIO: fsync of the ${w} failed`), { code: 'EIO' });
        }
      };
      const s = await openSmall(dir, { beforeSync });
      const pages = await fill(s, 80);
      const doomed = [...pages.keys()].filter((id) => id % 4 !== 0);
      await s.deletePages(doomed);
      doomed.forEach((id) => pages.delete(id));
      await s.compact!({ maxBytes: 3000 }); // a few steps succeed first
      failNext = true;
      await expect(s.compact!()).rejects.toMatchObject({ code: 'IO_ERROR' });
      await expect(s.commit({ pages: [{ id: 9000, bytes: pageBytes(9000) }] })).rejects.toMatchObject({
        code: 'IO_ERROR',
      });
      await expect(s.compact!()).rejects.toMatchObject({ code: 'IO_ERROR' });
      await expectPages(s, pages); // reads still serve the last committed state
      await s.close();
      const again = await openSmall(dir);
      await expectPages(again, pages);
      const r = await again.compact!();
      expect(r.segmentsRewritten).toBeGreaterThan(0);
      await again.commit({ pages: [{ id: 9000, bytes: pageBytes(9000) }] });
      pages.set(9000, pageBytes(9000));
      await expectPages(again, pages);
      await again.close();
    });
  }

  it('a failed sync in a background step makes the next commit IO_ERROR; reopen finds everything', async () => {
    const dir = newDir();
    let fail = false;
    const s = await openSmall(dir, {
      autoCompact: true,
      beforeSync: (w) => {
        if (fail && w === 'manifest') throw Object.assign(new Error('EIO'), { code: 'EIO' });
      },
    });
    const pages = await fill(s, 60);
    const doomed = [...pages.keys()].filter((id) => id < 40);
    await s.deletePages(doomed);
    doomed.forEach((id) => pages.delete(id));
    // The background step queued behind the delete (segments with nothing live: only a MANIFEST to
    // write) syncs after this line runs.
    fail = true;
    await expect(s.commit({ manifest: new Uint8Array([1]) })).rejects.toMatchObject({ code: 'IO_ERROR' });
    fail = false;
    await s.close();
    const again = await openSmall(dir);
    await expectPages(again, pages);
    await again.close();
  });

  it('a live page that fails its checksum stops compaction with CORRUPTION before anything is written', async () => {
    const dir = newDir();
    let s = await openSmall(dir);
    const pages = await fill(s, 40);
    await s.deletePages([1, 2, 3]);
    [1, 2, 3].forEach((id) => pages.delete(id));
    await s.close();
    // Flip a body byte of page 4 (in the first segment, which is now mostly dead).
    const first = join(dir, (await segmentFiles(dir))[0]);
    const buf = await readFile(first);
    let off = SEGMENT_HEADER_BYTES;
    while (buf.readUInt32LE(off + 8) !== 4) off += RECORD_HEADER_BYTES + buf.readUInt32LE(off + 12);
    buf[off + RECORD_HEADER_BYTES + 5] ^= 1;
    await writeFile(first, buf);
    s = await openSmall(dir);
    const before = await readFile(join(dir, 'MANIFEST'));
    await expect(s.compact!()).rejects.toMatchObject({ code: 'CORRUPTION' });
    expect(await readFile(join(dir, 'MANIFEST'))).toEqual(before);
    // The store works on: commits and the other pages.
    await s.commit({ pages: [{ id: 500, bytes: pageBytes(500) }] });
    await expect(s.readPage(4)).rejects.toMatchObject({ code: 'CORRUPTION' });
    expect(await s.readPage(5)).toEqual(pages.get(5));
    expect(await s.readPage(500)).toEqual(pageBytes(500));
    await s.close();
  });
});

// A child process compacting: it commits pages and deletes (telling its parent what before each
// commit and again once acknowledged) and runs compact() in small steps, background steps on too.
let childScript = '';
beforeAll(async () => {
  const entry = join(tmpRoot, 'compact-writer.ts');
  const src = resolve(fileURLToPath(new URL('../src/storage/node-fs.ts', import.meta.url)));
  const util = resolve(fileURLToPath(new URL('./cases/_util.ts', import.meta.url)));
  await writeFile(
    entry,
    `import { openNodeFsPageStore } from ${JSON.stringify(src)};
import { Rng } from ${JSON.stringify(util)};
const [dir, round, mode] = process.argv.slice(2);
const send = (m: unknown) => new Promise((r) => process.send!(m, r));
const pageBytes = (id: number) => new Rng(id * 7919 + 1).bytes(900 + ((id * 131) % 400));
if (mode === 'reader') {
  // A read-only view in another process: opened now, read when told (after the writer compacted).
  const ro = await openNodeFsPageStore(dir, { readOnly: true });
  const ids = await ro.listPages();
  await send({ opened: ids.length });
  await new Promise((r) => process.once('message', r));
  let right = 0;
  const wrong: string[] = [];
  for (const id of ids) {
    try {
      const got = await ro.readPage(id);
      const want = pageBytes(id);
      if (got !== undefined && got.length === want.length && got.every((b, i) => b === want[i])) right++;
      else wrong.push(\`page \${id}: other bytes\`);
    } catch (e) {
      wrong.push(\`page \${id}: \${(e as { code?: string }).code ?? String(e)}\`);
    }
  }
  await ro.close();
  await send({ right, wrong });
  process.exit(0);
}
const s = await openNodeFsPageStore(dir, { segmentBytes: 16384, compactStepBytes: 4096, compactDeadFraction: 0.4 });
const rng = new Rng(1000 + Number(round));
const live = await s.listPages();
let next = Math.max(0, ...live) + 1;
await send({ ready: true });
for (let k = 0; ; k++) {
  const pages = [];
  for (let j = 0; j < 1 + rng.int(4); j++, next++) pages.push({ id: next, bytes: pageBytes(next) });
  const deletes = live.filter(() => rng.int(100) < 5);
  await send({ pending: { pages: pages.map((p) => p.id), deletes } });
  await s.commit({ pages, deletes });
  await send({ acked: true });
  for (const id of deletes) live.splice(live.indexOf(id), 1);
  live.push(...pages.map((p) => p.id));
  if (k % 4 === 3) await s.compact({ stepBytes: 4096, minDeadFraction: 0.3, onProgress: () => process.send!({ step: true }) });
}
`,
  );
  childScript = join(tmpRoot, 'compact-writer.mjs');
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

interface Change {
  pages: number[];
  deletes: number[];
}

/** Runs the child until it is SIGKILLed after `delayMs`; returns the acknowledged changes and the one in flight. */
async function runAndKill(
  dir: string,
  round: number,
  delayMs: number,
): Promise<{ acked: Change[]; pending?: Change; steps: number }> {
  const acked: Change[] = [];
  let pending: Change | undefined;
  let steps = 0;
  await runUntilKilled<{ ready?: boolean; pending?: Change; acked?: boolean; step?: boolean }>(
    childScript,
    [dir, String(round)],
    (m, kill) => {
      if (m.ready) kill(delayMs);
      if (m.pending) pending = m.pending;
      if (m.acked) {
        acked.push(pending!);
        pending = undefined;
      }
      if (m.step) steps++;
    },
    { stdout: 'inherit' },
  );
  return { acked, pending, steps };
}

describe('node-fs compaction: crash safety', () => {
  const ROUNDS = Number(process.env.PQDB_COMPACT_KILLS ?? 8);
  it(
    `${ROUNDS} SIGKILLs of a compacting writer: every acknowledged page there exactly once with its bytes, no deleted page back`,
    async () => {
      const dir = newDir();
      const rng = new Rng(Number(process.env.PQDB_SEED ?? 4242));
      const model = new Set<number>();
      let steps = 0;
      let commits = 0;
      const repairs: string[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const { acked, pending, steps: n } = await runAndKill(dir, round, 150 + rng.int(400));
        steps += n;
        commits += acked.length;
        for (const c of acked) {
          c.deletes.forEach((id) => model.delete(id));
          c.pages.forEach((id) => model.add(id));
        }
        const s = await openNodeFsPageStore(dir, { segmentBytes: 16384, autoCompact: false });
        repairs.push(...s.recovery.actions.map((a) => a.split(' ')[0])); // 'removed' (a segment), 'seg-…' (a tail or a segment left in place), 'MANIFEST' (its copy renewed)
        const ids = await s.listPages();
        // The commit in flight when killed may have landed whole or not at all, never in part.
        let expected = new Set(model);
        if (pending !== undefined && !pending.pages.every((id) => !ids.includes(id))) {
          pending.deletes.forEach((id) => expected.delete(id));
          pending.pages.forEach((id) => expected.add(id));
          pending.deletes.forEach((id) => model.delete(id));
          pending.pages.forEach((id) => model.add(id));
        }
        expected = new Set([...expected].sort((a, b) => a - b));
        expect(ids, `round ${round}`).toEqual([...expected]);
        const st = await s.stats();
        expect(st.pageCount).toBe(expected.size);
        const got = await s.readPages!(ids);
        ids.forEach((id, i) => expect(got[i], `round ${round}: page ${id}`).toEqual(pageBytes(id)));
        // On disk: every named segment is there, nothing unnamed is left after the writer's open.
        expect(st.storedBytes).toBe(
          space(s).reduce((n, g) => n + g.committed, 0) + (await readFile(join(dir, 'MANIFEST'))).length,
        );
        await s.close();
      }
      console.log(
        `[compaction crash] ${ROUNDS} kills, ${commits} acknowledged commits, ${steps} compaction steps reported, ${model.size} live pages at the end, all present once with their bytes; repairs on reopen: ${JSON.stringify(Object.fromEntries([...new Set(repairs)].map((k) => [k, repairs.filter((x) => x === k).length])))}`,
      );
      expect(steps).toBeGreaterThan(ROUNDS);
    },
    ROUNDS * 8000 + 60_000,
  );
});
