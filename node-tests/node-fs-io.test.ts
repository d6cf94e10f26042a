// node-fs's write and checksum helpers at their edges: a gathered write that the OS cuts short
// anywhere (inside a buffer, on a boundary, one byte at a time) still writes every byte in order,
// the paced CRC-32C equals the one-shot one for every size around its 1 MiB step, whatever was
// checksummed before it, and pages read in runs through one scratch buffer each get bytes of their own.
import { describe, it, expect } from 'vitest';
import { mkdtemp, open, rm, type FileHandle } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32c, crc32cAsync } from '../src/_crc32c';
import { writeGathered } from '../src/storage/node-fs-records';
import { openNodeFsPageStore } from '../src/storage/node-fs';

const MiB = 1 << 20;
const bytes = (n: number, seed: number) => Uint8Array.from({ length: n }, (_, i) => (i * 131 + seed * 7) & 0xff);

/** A FileHandle whose writev writes at most `cut(call)` bytes per call into `file`. */
function shortWriter(file: Uint8Array, cut: (call: number) => number) {
  let calls = 0;
  let maxBuffers = 0;
  const fh = {
    async writev(buffers: Uint8Array[], position: number) {
      maxBuffers = Math.max(maxBuffers, buffers.length);
      let room = cut(calls++);
      let at = position;
      for (const b of buffers) {
        const n = Math.min(room, b.length);
        file.set(b.subarray(0, n), at);
        at += n;
        room -= n;
        if (room === 0) break;
      }
      return { bytesWritten: at - position, buffers };
    },
  };
  return { fh: fh as unknown as FileHandle, stats: () => ({ calls, maxBuffers }) };
}

describe('writeGathered', () => {
  const chunks = [
    bytes(10, 1),
    new Uint8Array(0),
    bytes(5 * MiB + 3, 2),
    ...Array.from({ length: 700 }, (_, i) => bytes(i % 37, i)),
  ];
  const total = chunks.reduce((n, c) => n + c.length, 0);
  const expected = new Uint8Array(100 + total);
  let end = 100;
  for (const c of chunks) {
    expected.set(c, end);
    end += c.length;
  }

  for (const [name, cut] of [
    ['whole writes', () => Number.MAX_SAFE_INTEGER],
    ['7 bytes a call', () => 7],
    ['cut inside and on boundaries', (k: number) => [10, 1, MiB, 3, 4096][k % 5]],
  ] as const) {
    it(`writes every byte in order from its position, over short writes (${name})`, async () => {
      const file = new Uint8Array(100 + total);
      const w = shortWriter(file, cut);
      await writeGathered(w.fh, chunks, 100);
      expect(Buffer.from(file).equals(Buffer.from(expected))).toBe(true);
      expect(w.stats().maxBuffers).toBeLessThanOrEqual(512);
    });
  }

  it('writes a real file the same way, and copies none of the chunks (they are left as given)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pqdb-gather-'));
    try {
      const before = chunks.map((c) => Buffer.from(c));
      const fh = await open(join(dir, 'f'), 'w+');
      await fh.write(new Uint8Array(100), 0, 100, 0);
      await writeGathered(fh, chunks, 100);
      const read = new Uint8Array(100 + total);
      await fh.read(read, 0, read.length, 0);
      await fh.close();
      expect(Buffer.from(read).equals(Buffer.from(expected))).toBe(true);
      chunks.forEach((c, i) => expect(Buffer.from(c).equals(before[i])).toBe(true));
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('crc32cAsync', () => {
  it('equals crc32c at every size around its step, after any amount checksummed before', async () => {
    const big = bytes(3 * MiB + 17, 9);
    for (const lead of [0, 1, MiB - 1, 700_000])
      for (const n of [0, 1, 8, MiB - 1, MiB, MiB + 1, 2 * MiB, 3 * MiB + 17]) {
        if (lead > 0) await crc32cAsync(big.subarray(0, lead));
        const data = big.subarray(big.length - n);
        expect(await crc32cAsync(data)).toBe(crc32c(data));
      }
    expect(await crc32cAsync(new TextEncoder().encode('123456789'))).toBe(0xe3069283);
  });

  it('lets the event loop turn while checksumming many buffers one after another', async () => {
    let turns = 0;
    const timer = setInterval(() => turns++, 0);
    try {
      const page = bytes(200_000, 3);
      // Let the timer arm, then 40 pages (8 MB) back to back, with no await of anything else.
      await new Promise((r) => setTimeout(r, 5));
      const at = turns;
      for (let i = 0; i < 40; i++) await crc32cAsync(page);
      expect(turns - at).toBeGreaterThan(0);
    } finally {
      clearInterval(timer);
    }
  });
});

describe('node-fs readPages', () => {
  it('gives each page its own bytes, with runs read at once by concurrent calls into one scratch buffer', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pqdb-runs-'));
    const store = await openNodeFsPageStore(dir, { hostLock: false });
    try {
      const pages = Array.from({ length: 60 }, (_, i) => ({ id: i + 1, bytes: bytes(1000 + i * 977, i) }));
      await store.commit({ pages, manifest: new Uint8Array([1]) }); // back to back: runs
      const ids = pages.map((p) => p.id);
      const reads = await Promise.all([
        store.readPages!(ids),
        store.readPages!([...ids].reverse()),
        store.readPages!(ids),
      ]);
      for (const got of [reads[0], [...reads[1]].reverse(), reads[2]])
        got.forEach((b, i) => expect(Buffer.from(b!).equals(Buffer.from(pages[i].bytes))).toBe(true));
      // No page shares its buffer with another result: changing one changes nothing else.
      reads[0][0]!.fill(0);
      expect(Buffer.from(reads[2][0]!).equals(Buffer.from(pages[0].bytes))).toBe(true);
      expect(Buffer.from((await store.readPages!([1, 2]))[0]!).equals(Buffer.from(pages[0].bytes))).toBe(true);
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
