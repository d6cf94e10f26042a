// The PageStore conformance suite (DESIGN.md §6): platform-neutral checks every adapter must pass,
// run by vitest in Node (memory, node-fs, IndexedDB over fake-indexeddb) and inside a Chromium page
// by Playwright (real IndexedDB). No test-framework imports: each check is an async function that
// throws on failure, so a runner can register it as a test or collect a Summary.

import { MAX_PAGE_BYTES, supportsOf, type PageStore } from '../../src/storage/page-store';
import { readPagesOf, readRangeOf } from '../../src/storage/page-store-base';
import { KIND_PAGE, RECORD_HEADER_BYTES } from '../../src/storage/records';
import type { SyncDirectory } from '../../src/storage/opfs';
import { Rng, equalBytes, type Summary } from './_util';
import { CheckFailed, runStoreCases } from './_store';

/** One store location. Every check gets a fresh one. */
export interface PageStoreFixture {
  /** Opens the store at this location (the same one every call: close + open is a reopen). */
  open(): Promise<PageStore>;
  /** Test hook: flips one byte of page `id` as the medium stores it. Called while the store is closed. */
  corruptPage(id: number): Promise<void>;
  /** Removes the location. */
  dispose(): Promise<void>;
}

export type PageStoreFixtureFactory = () => Promise<PageStoreFixture>;

export interface PageStoreCase {
  readonly name: string;
  readonly run: () => Promise<void>;
}

function ok(cond: unknown, what: string): asserts cond {
  if (!cond) throw new CheckFailed(what);
}

function same(a: Uint8Array | undefined, b: Uint8Array | undefined, what: string): void {
  ok(
    a !== undefined && b !== undefined && equalBytes(a, b),
    `${what}: bytes differ (got ${a === undefined ? 'undefined' : `length ${a.length}`})`,
  );
}

function eqList(a: readonly number[], b: readonly number[], what: string): void {
  ok(
    a.length === b.length && a.every((x, i) => x === b[i]),
    `${what}: expected [${b.slice(0, 20)}], got [${a.slice(0, 20)}]`,
  );
}

/** Awaits `p` and checks it rejected with PqdbError `code` (or the TypeError/RangeError named). */
async function rejects(p: Promise<unknown> | (() => Promise<unknown>), expected: string, what: string): Promise<void> {
  let err: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    err = e;
  }
  ok(err !== undefined, `${what}: expected ${expected}, but it succeeded`);
  const e = err as { name?: string; code?: string; message?: string };
  const got = e.name === 'PqdbError' ? e.code : e.name;
  ok(got === expected, `${what}: expected ${expected}, got ${e.name}${e.code ? ` ${e.code}` : ''}: ${e.message}`);
}

const bytesOf = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const text = (s: string): Uint8Array => new TextEncoder().encode(s);

/** Opens a fresh fixture, runs `body`, always closes what it opened and disposes the fixture. */
function withFixture(
  factory: PageStoreFixtureFactory,
  body: (f: PageStoreFixture, opened: PageStore[]) => Promise<void>,
) {
  return async (): Promise<void> => {
    const f = await factory();
    const opened: PageStore[] = [];
    const tracked: PageStoreFixture = {
      open: async () => {
        const s = await f.open();
        opened.push(s);
        return s;
      },
      corruptPage: (id) => f.corruptPage(id),
      dispose: () => f.dispose(),
    };
    try {
      await body(tracked, opened);
    } finally {
      for (const s of opened) await s.close().catch(() => undefined);
      await f.dispose();
    }
  };
}

/** The conformance checks, each runnable on its own. */
export function pageStoreCases(factory: PageStoreFixtureFactory): PageStoreCase[] {
  const cases: PageStoreCase[] = [];
  const add = (name: string, body: (f: PageStoreFixture, opened: PageStore[]) => Promise<void>): void => {
    cases.push({ name, run: withFixture(factory, body) });
  };

  add('a new store is empty', async (f) => {
    const s = await f.open();
    ok(s.isOpen, 'isOpen');
    ok(s.recovery.clean && s.recovery.truncatedBytes === 0, 'a new store needs no recovery');
    eqList(await s.listPages(), [], 'listPages');
    ok((await s.readManifest()) === undefined, 'readManifest is undefined');
    ok((await s.readPage(0)) === undefined, 'readPage(0) is undefined');
    const st = await s.stats();
    ok(st.pageCount === 0 && st.pageBytes === 0 && st.manifestBytes === 0, `stats ${JSON.stringify(st)}`);
  });

  add('commit, then read pages and manifest back', async (f) => {
    const s = await f.open();
    await s.commit({
      pages: [
        { id: 1, bytes: bytesOf(1, 2, 3) },
        { id: 2, bytes: text('two') },
      ],
      manifest: text('m1'),
    });
    same(await s.readPage(1), bytesOf(1, 2, 3), 'page 1');
    same(await s.readPage(2), text('two'), 'page 2');
    same(await s.readManifest(), text('m1'), 'manifest');
    eqList(await s.listPages(), [1, 2], 'listPages');
    const st = await s.stats();
    ok(
      st.pageCount === 2 && st.pageBytes === 6 && st.manifestBytes === 2 && st.storedBytes >= 8,
      `stats ${JSON.stringify(st)}`,
    );
  });

  add('read of a missing page is undefined (never, before, after, between ids)', async (f) => {
    const s = await f.open();
    await s.commit({
      pages: [
        { id: 10, bytes: bytesOf(1) },
        { id: 20, bytes: bytesOf(2) },
      ],
    });
    for (const id of [0, 9, 11, 15, 21, 0xffffffff]) ok((await s.readPage(id)) === undefined, `readPage(${id})`);
  });

  add(
    'the manifest is replaced as a whole; a commit without one keeps it; a rejected commit changes nothing',
    async (f) => {
      const s = await f.open();
      await s.commit({ pages: [{ id: 1, bytes: bytesOf(1) }], manifest: text('first manifest, long') });
      await s.commit({ manifest: text('m2') });
      same(await s.readManifest(), text('m2'), 'manifest replaced, not overlaid');
      await s.commit({ pages: [{ id: 2, bytes: bytesOf(2) }] });
      same(await s.readManifest(), text('m2'), 'manifest kept');
      // Page 1 exists: the whole commit is refused, including its new page and manifest.
      await rejects(
        s.commit({
          pages: [
            { id: 3, bytes: bytesOf(3) },
            { id: 1, bytes: bytesOf(9) },
          ],
          manifest: text('m3'),
        }),
        'RangeError',
        'rewrite',
      );
      same(await s.readManifest(), text('m2'), 'manifest after refused commit');
      ok((await s.readPage(3)) === undefined, 'page 3 of the refused commit is absent');
      same(await s.readPage(1), bytesOf(1), 'page 1 unchanged');
      await s.commit({ manifest: new Uint8Array(0) });
      same(await s.readManifest(), new Uint8Array(0), 'empty manifest is a manifest');
    },
  );

  add('many pages: 1,000 in one commit and 100 commits of 5', async (f) => {
    const s = await f.open();
    const rng = new Rng(61);
    const want = new Map<number, Uint8Array>();
    const big = Array.from({ length: 1000 }, (_, i) => ({ id: i * 3, bytes: rng.bytes(rng.int(300)) }));
    await s.commit({ pages: big });
    for (const p of big) want.set(p.id, p.bytes);
    for (let c = 0; c < 100; c++) {
      const pages = Array.from({ length: 5 }, (_, i) => ({
        id: 10_000 + c * 5 + i,
        bytes: rng.bytes(1 + rng.int(50)),
      }));
      await s.commit({ pages, manifest: bytesOf(c) });
      for (const p of pages) want.set(p.id, p.bytes);
    }
    eqList(
      await s.listPages(),
      [...want.keys()].sort((a, b) => a - b),
      'listPages',
    );
    for (const [id, b] of want) same(await s.readPage(id), b, `page ${id}`);
    same(await s.readManifest(), bytesOf(99), 'manifest');
    ok((await s.stats()).pageCount === 1500, 'pageCount');
  });

  add('large pages: 1 MiB and 3 MiB round-trip, alongside an empty page', async (f) => {
    const s = await f.open();
    const rng = new Rng(1 << 20);
    const a = rng.bytes(1 << 20);
    const b = rng.bytes(3 << 20);
    await s.commit({
      pages: [
        { id: 1, bytes: a },
        { id: 2, bytes: new Uint8Array(0) },
        { id: 3, bytes: b },
      ],
    });
    same(await s.readPage(1), a, '1 MiB page');
    same(await s.readPage(2), new Uint8Array(0), 'empty page');
    same(await s.readPage(3), b, '3 MiB page');
    ok((await s.stats()).pageBytes === 4 << 20, 'pageBytes');
  });

  add('reopen keeps pages, manifest and deletions; commits continue after it', async (f) => {
    let s = await f.open();
    const rng = new Rng(5);
    const p = Array.from({ length: 20 }, (_, i) => ({ id: i + 1, bytes: rng.bytes(100 + i) }));
    await s.commit({ pages: p.slice(0, 10), manifest: text('a') });
    await s.commit({ pages: p.slice(10), deletes: [3, 4], manifest: text('b') });
    await s.close();
    s = await f.open();
    eqList(
      await s.listPages(),
      p.map((x) => x.id).filter((id) => id !== 3 && id !== 4),
      'listPages after reopen',
    );
    for (const x of p) if (x.id !== 3 && x.id !== 4) same(await s.readPage(x.id), x.bytes, `page ${x.id}`);
    same(await s.readManifest(), text('b'), 'manifest after reopen');
    await s.commit({ pages: [{ id: 100, bytes: bytesOf(7) }], manifest: text('c') });
    await s.close();
    s = await f.open();
    same(await s.readPage(100), bytesOf(7), 'page committed after a reopen');
    same(await s.readManifest(), text('c'), 'manifest after second reopen');
    ok(s.recovery.clean, `clean shutdown needs no recovery: ${s.recovery.actions.join('; ')}`);
  });

  add('delete: deletePages and deletes inside a commit; unknown ids ignored; stats shrink', async (f) => {
    const s = await f.open();
    await s.commit({ pages: [1, 2, 3, 4, 5].map((id) => ({ id, bytes: new Uint8Array(10).fill(id) })) });
    await s.deletePages([2, 4, 999]);
    eqList(await s.listPages(), [1, 3, 5], 'after deletePages');
    ok((await s.readPage(2)) === undefined, 'deleted page reads undefined');
    await s.commit({ pages: [{ id: 6, bytes: bytesOf(6) }], deletes: [1], manifest: text('gc') });
    eqList(await s.listPages(), [3, 5, 6], 'after commit with deletes');
    const st = await s.stats();
    ok(st.pageCount === 3 && st.pageBytes === 21, `stats ${JSON.stringify(st)}`);
    await s.deletePages([]);
    await s.deletePages([3, 3]);
    eqList(await s.listPages(), [5, 6], 'duplicate ids in deletePages');
  });

  add('a deleted id can be written again, and the new page wins after reopen', async (f) => {
    let s = await f.open();
    await s.commit({ pages: [{ id: 5, bytes: text('old') }] });
    await s.deletePages([5]);
    await s.commit({ pages: [{ id: 5, bytes: text('new') }] });
    same(await s.readPage(5), text('new'), 'rewritten page');
    await s.close();
    s = await f.open();
    same(await s.readPage(5), text('new'), 'rewritten page after reopen');
    await s.deletePages([5]);
    await s.close();
    s = await f.open();
    ok((await s.readPage(5)) === undefined, 'deleted again, after reopen');
  });

  add('listPages is ascending numerically (not by string), across commits and extremes', async (f) => {
    const s = await f.open();
    await s.commit({ pages: [100, 2, 0xffffffff].map((id) => ({ id, bytes: bytesOf(1) })) });
    await s.commit({ pages: [10, 0, 1_000_000, 99].map((id) => ({ id, bytes: bytesOf(2) })) });
    eqList(await s.listPages(), [0, 2, 10, 99, 100, 1_000_000, 0xffffffff], 'order');
  });

  add('concurrent commits land in call order', async (f) => {
    const s = await f.open();
    const a = s.commit({ pages: [{ id: 1, bytes: bytesOf(1) }], manifest: text('A') });
    // B deletes what A writes and C re-uses the id: both only make sense if A landed first.
    const b = s.commit({ deletes: [1], pages: [{ id: 2, bytes: bytesOf(2) }], manifest: text('B') });
    const c = s.commit({ pages: [{ id: 1, bytes: bytesOf(3) }], manifest: text('C') });
    const d = rejects(s.commit({ pages: [{ id: 2, bytes: bytesOf(4) }] }), 'RangeError', 'commit D rewrites page 2'); // 2 exists by then
    await Promise.all([a, b, c, d]);
    same(await s.readManifest(), text('C'), 'last manifest wins');
    same(await s.readPage(1), bytesOf(3), 'page 1 from C');
    same(await s.readPage(2), bytesOf(2), 'page 2 from B');
    const many = Array.from({ length: 30 }, (_, i) =>
      s.commit({ pages: [{ id: 100 + i, bytes: bytesOf(i) }], manifest: bytesOf(i) }),
    );
    await Promise.all(many);
    same(await s.readManifest(), bytesOf(29), 'manifest of the last of 30 concurrent commits');
    ok((await s.listPages()).length === 32, 'all 30 concurrent commits landed');
  });

  add('close waits for pending commits; afterwards every method rejects NOT_OPEN; close is idempotent', async (f) => {
    let s = await f.open();
    const pending = s.commit({ pages: [{ id: 1, bytes: bytesOf(1) }], manifest: text('x') });
    const closing = s.close();
    ok(!s.isOpen, 'isOpen is false once close() is called');
    await pending;
    await closing;
    await s.close();
    await rejects(s.readPage(1), 'NOT_OPEN', 'readPage');
    await rejects(s.readManifest(), 'NOT_OPEN', 'readManifest');
    await rejects(s.listPages(), 'NOT_OPEN', 'listPages');
    await rejects(s.commit({ manifest: text('y') }), 'NOT_OPEN', 'commit');
    await rejects(s.deletePages([1]), 'NOT_OPEN', 'deletePages');
    await rejects(s.stats(), 'NOT_OPEN', 'stats');
    await rejects(s.readRange!(1, 0, 1), 'NOT_OPEN', 'readRange');
    s = await f.open();
    same(await s.readPage(1), bytesOf(1), 'the pending commit is durable');
    same(await s.readManifest(), text('x'), 'its manifest too');
  });

  add('a second opener gets LOCKED until the first closes', async (f) => {
    const s = await f.open();
    await s.commit({ pages: [{ id: 1, bytes: bytesOf(1) }] });
    await rejects(() => f.open(), 'LOCKED', 'second open');
    await rejects(() => f.open(), 'LOCKED', 'third open');
    same(await s.readPage(1), bytesOf(1), 'the holder still works');
    await s.close();
    const t = await f.open();
    same(await t.readPage(1), bytesOf(1), 'opened after the holder closed');
  });

  add('a flipped byte in a stored page is CORRUPTION on read, never data; other pages unaffected', async (f) => {
    let s = await f.open();
    const rng = new Rng(99);
    const pages = [1, 2, 3].map((id) => ({ id, bytes: rng.bytes(4096) }));
    await s.commit({ pages, manifest: text('m') });
    await s.close();
    await f.corruptPage(2);
    s = await f.open();
    await rejects(s.readPage(2), 'CORRUPTION', 'corrupted page');
    await rejects(s.readPage(2), 'CORRUPTION', 'corrupted page, second read');
    same(await s.readPage(1), pages[0].bytes, 'page 1');
    same(await s.readPage(3), pages[2].bytes, 'page 3');
    same(await s.readManifest(), text('m'), 'manifest');
    await s.deletePages([2]); // garbage collection of a damaged page works
    eqList(await s.listPages(), [1, 3], 'after deleting the damaged page');
  });

  add(
    'readPages gives what readPage gives, in the order asked, as independent copies, after a reopen too',
    async (f) => {
      let s = await f.open();
      const rng = new Rng(7);
      const pages = Array.from({ length: 40 }, (_, i) => ({ id: i + 1, bytes: rng.bytes(1 + ((i * 97) % 3000)) }));
      for (let i = 0; i < pages.length; i += 8)
        await s.commit({ pages: pages.slice(i, i + 8), manifest: text(`m${i}`) });
      await s.deletePages([5, 6, 17]);
      const ids = [40, 1, 2, 3, 4, 5, 6, 7, 99, 16, 17, 18, 19, 20, 21, 2, 33, 34, 35, 0];
      for (let round = 0; round < 2; round++) {
        const got = await s.readPages!(ids);
        ok(got.length === ids.length, `readPages gives ${got.length} results for ${ids.length} ids`);
        for (let k = 0; k < ids.length; k++) {
          const one = await s.readPage(ids[k]);
          if (one === undefined) ok(got[k] === undefined, `readPages[${k}] (page ${ids[k]}) is undefined`);
          else same(got[k], one, `readPages[${k}] (page ${ids[k]})`);
        }
        got[1]!.fill(0xee); // a caller's change to one result touches no other result and not the store
        same(got[2], pages[1].bytes, 'page 2 after page 1 was overwritten by the caller');
        same(await s.readPage(1), pages[0].bytes, 'page 1 as stored');
        await s.close();
        s = await f.open();
      }
      eqList(await s.readPages!([]).then((r) => r.map((x) => x?.length ?? -1)), [], 'readPages([])');
    },
  );

  add('readPages of a run holding a damaged page is CORRUPTION, never data', async (f) => {
    let s = await f.open();
    const rng = new Rng(8);
    const pages = [1, 2, 3, 4].map((id) => ({ id, bytes: rng.bytes(700) }));
    await s.commit({ pages, manifest: text('m') });
    await s.close();
    await f.corruptPage(3);
    s = await f.open();
    await rejects(s.readPages!([1, 2, 3, 4]), 'CORRUPTION', 'a run holding page 3');
    const [a, b] = await s.readPages!([1, 2]);
    same(a, pages[0].bytes, 'page 1');
    same(b, pages[1].bytes, 'page 2');
  });

  add('argument validation: TypeError/RangeError, nothing written', async (f) => {
    const s = await f.open();
    const bad = s as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    await rejects(bad.readPage('1'), 'TypeError', 'string id');
    await rejects(bad.readPage(1.5), 'TypeError', 'fractional id');
    await rejects(bad.readPage(-1), 'RangeError', 'negative id');
    await rejects(bad.readPage(2 ** 32), 'RangeError', 'id past u32');
    await rejects(bad.readPage(NaN), 'TypeError', 'NaN id');
    await rejects(bad.commit(null), 'TypeError', 'null batch');
    await rejects(bad.commit({ pages: { id: 1, bytes: bytesOf(1) } }), 'TypeError', 'pages not an array');
    await rejects(bad.commit({ pages: [{ id: 1, bytes: [1, 2] }] }), 'TypeError', 'bytes as Array');
    await rejects(bad.commit({ pages: [{ id: 1, bytes: 'ab' }] }), 'TypeError', 'bytes as string');
    await rejects(bad.commit({ pages: [null] }), 'TypeError', 'null page');
    await rejects(bad.commit({ pages: [{ id: -5, bytes: bytesOf(1) }] }), 'RangeError', 'negative page id');
    await rejects(
      bad.commit({
        pages: [
          { id: 1, bytes: bytesOf(1) },
          { id: 1, bytes: bytesOf(2) },
        ],
      }),
      'RangeError',
      'duplicate id in one commit',
    );
    await rejects(bad.commit({ manifest: 'm' }), 'TypeError', 'manifest as string');
    await rejects(
      bad.commit({ pages: [{ id: 1, bytes: bytesOf(1) }], deletes: [1] }),
      'RangeError',
      'write and delete the same id',
    );
    await rejects(bad.commit({ deletes: [1.5] }), 'TypeError', 'fractional delete id');
    await rejects(bad.deletePages(1), 'TypeError', 'deletePages(1)');
    await rejects(bad.deletePages([2 ** 32]), 'RangeError', 'delete id past u32');
    eqList(await s.listPages(), [], 'nothing was written');
    ok((await s.readManifest()) === undefined, 'no manifest was written');
  });

  add('hygiene: inputs copied at call time, outputs are fresh copies, subarray views at offsets', async (f) => {
    const s = await f.open();
    const backing = new Uint8Array(64).map((_, i) => i);
    const view = backing.subarray(3, 19); // byteOffset 3, length 16
    const m = text('manifest');
    const p = s.commit({ pages: [{ id: 1, bytes: view }], manifest: m });
    view.fill(0xee); // mutate before the commit settles
    m.fill(0);
    await p;
    const want = new Uint8Array(16).map((_, i) => i + 3);
    same(await s.readPage(1), want, 'stored the view at call time');
    same(await s.readManifest(), text('manifest'), 'stored the manifest at call time');
    const r = (await s.readPage(1))!;
    r.fill(0);
    same(await s.readPage(1), want, 'mutating a returned page does not reach the store');
    const rm = (await s.readManifest())!;
    rm.fill(0);
    same(await s.readManifest(), text('manifest'), 'mutating the returned manifest does not reach the store');
    ok(backing[2] === 2 && backing[19] === 19, 'bytes around the view untouched');
  });

  add('a rewrite of an existing page is refused (pages are immutable), before and after reopen', async (f) => {
    let s = await f.open();
    await s.commit({ pages: [{ id: 7, bytes: text('seven') }] });
    await rejects(s.commit({ pages: [{ id: 7, bytes: text('other') }] }), 'RangeError', 'rewrite');
    await s.close();
    s = await f.open();
    await rejects(s.commit({ pages: [{ id: 7, bytes: text('other') }] }), 'RangeError', 'rewrite after reopen');
    same(await s.readPage(7), text('seven'), 'original kept');
  });

  add('stats track pages, manifest and stored bytes through commits and deletes', async (f) => {
    const s = await f.open();
    await s.commit({
      pages: [
        { id: 1, bytes: new Uint8Array(1000) },
        { id: 2, bytes: new Uint8Array(500) },
      ],
      manifest: new Uint8Array(33),
    });
    let st = await s.stats();
    ok(st.pageCount === 2 && st.pageBytes === 1500 && st.manifestBytes === 33, `after commit ${JSON.stringify(st)}`);
    ok(st.storedBytes >= 1533, `storedBytes ${st.storedBytes} counts the payload`);
    await s.deletePages([1]);
    st = await s.stats();
    ok(st.pageCount === 1 && st.pageBytes === 500, `after delete ${JSON.stringify(st)}`);
  });

  // readRange: one sealed record (~150 bytes) out of a commit page (~200 KB) without reading it all.

  add(
    'readRange gives the bytes of readPage at the start, middle and end, zero-length and whole-page ranges, after a reopen too',
    async (f) => {
      let s = await f.open();
      ok(supportsOf(s).readRange && typeof s.readRange === 'function', `${s.kind} declares and has readRange`);
      const rng = new Rng(150);
      const pages = new Map<number, Uint8Array>([
        [1, rng.bytes(1000)],
        [2, rng.bytes(200_000)], // a commit page's size: stored out of line (TOAST) on postgres
        [3, new Uint8Array(0)],
      ]);
      await s.commit({ pages: [...pages].map(([id, bytes]) => ({ id, bytes })), manifest: text('m') });
      const n = 200_000;
      const ranges: [number, number, number][] = [
        [2, 0, 150],
        [2, 100_000, 150],
        [2, n - 150, 150],
        [2, n - 1, 1],
        [2, 0, n],
        [2, 0, 0],
        [2, 77, 0],
        [2, n, 0],
        [1, 0, 1000],
        [1, 999, 1],
        [1, 500, 150],
        [3, 0, 0],
      ];
      for (let i = 0; i < 40; i++) {
        const length = 1 + rng.int(400);
        ranges.push([2, rng.int(n - length + 1), length]);
      }
      for (let round = 0; round < 2; round++) {
        for (const [id, offset, length] of ranges) {
          const want = pages.get(id)!.subarray(offset, offset + length);
          same(await s.readRange!(id, offset, length), want, `round ${round}: page ${id} [${offset}, +${length})`);
        }
        same(await s.readPage(2), pages.get(2), `round ${round}: readPage after ranged reads`);
        await s.close();
        s = await f.open();
      }
    },
  );

  add('readRange returns an independent copy holding only the range', async (f) => {
    const s = await f.open();
    const page = new Rng(151).bytes(5000);
    await s.commit({ pages: [{ id: 4, bytes: page }] });
    const a = (await s.readRange!(4, 1000, 150))!;
    const b = (await s.readRange!(4, 1000, 150))!;
    ok(a !== b && a.buffer !== b.buffer, 'two reads give two buffers');
    ok(
      a.byteLength === 150 && a.buffer.byteLength === 150,
      `the result holds the range only (buffer of ${a.buffer.byteLength} bytes)`,
    );
    a.fill(0xee);
    same(b, page.subarray(1000, 1150), 'the other result after the caller wrote to one');
    same(await s.readRange!(4, 1000, 150), page.subarray(1000, 1150), 'the range as stored');
    same(await s.readPage(4), page, 'the page as stored');
    const empty = await s.readRange!(4, 10, 0);
    ok(empty instanceof Uint8Array && empty.length === 0, 'a zero-length range is an empty Uint8Array');
  });

  add(
    'readRange of a page in an older segment (many commits, deletes between), before and after a reopen',
    async (f) => {
      let s = await f.open();
      const rng = new Rng(152);
      const pages = new Map<number, Uint8Array>();
      for (let c = 0; c < 8; c++) {
        // 6 KB pages: every commit rolls the 4 KiB-segment fixture over to a new segment.
        const batch = [0, 1].map((i) => ({ id: 10 * c + i, bytes: rng.bytes(6000 + c) }));
        await s.commit({ pages: batch, deletes: c > 2 ? [10 * (c - 2) + 1] : [], manifest: bytesOf(c) });
        for (const p of batch) pages.set(p.id, p.bytes);
        if (c > 2) pages.delete(10 * (c - 2) + 1);
      }
      for (let round = 0; round < 2; round++) {
        for (const [id, bytes] of pages) {
          for (const [offset, length] of [
            [0, 150],
            [2900, 150],
            [bytes.length - 150, 150],
          ]) {
            same(
              await s.readRange!(id, offset, length),
              bytes.subarray(offset, offset + length),
              `page ${id} [${offset}, +${length})`,
            );
          }
        }
        ok((await s.readRange!(11, 0, 150)) === undefined, 'a deleted page of the first commits');
        await s.close();
        s = await f.open();
      }
    },
  );

  add('readRange of an absent or deleted page is undefined; a rewritten id gives the new page', async (f) => {
    let s = await f.open();
    await s.commit({
      pages: [
        { id: 5, bytes: text('the old page five') },
        { id: 6, bytes: text('six') },
      ],
    });
    for (const id of [0, 4, 7, 0xffffffff]) {
      ok((await s.readRange!(id, 0, 1)) === undefined, `readRange(${id}, 0, 1) of a page never written`);
      ok((await s.readRange!(id, 0, 0)) === undefined, `readRange(${id}, 0, 0) of a page never written`);
      ok((await s.readRange!(id, 1000, 50)) === undefined, `readRange(${id}, 1000, 50): absent wins over any range`);
    }
    await s.deletePages([5]);
    ok((await s.readRange!(5, 4, 3)) === undefined, 'deleted page');
    same(await s.readRange!(6, 1, 2), text('ix'), 'the page beside it');
    await s.close();
    s = await f.open();
    ok((await s.readRange!(5, 4, 3)) === undefined, 'deleted page, after a reopen');
    await s.commit({ pages: [{ id: 5, bytes: text('a new page five') }] });
    same(await s.readRange!(5, 2, 3), text('new'), 'the id written again');
  });

  add('readRange past the end of a page is CORRUPTION, never a short read; the store works on', async (f) => {
    let s = await f.open();
    const page = new Rng(153).bytes(1000);
    await s.commit({
      pages: [
        { id: 1, bytes: page },
        { id: 2, bytes: new Uint8Array(0) },
      ],
    });
    for (let round = 0; round < 2; round++) {
      for (const [id, offset, length] of [
        [1, 0, 1001],
        [1, 1000, 1],
        [1, 999, 2],
        [1, 1001, 0],
        [1, 850, 1000],
        [1, MAX_PAGE_BYTES, 0],
        [1, 0, MAX_PAGE_BYTES],
        [2, 0, 1],
        [2, 1, 0],
      ]) {
        await rejects(
          s.readRange!(id, offset, length),
          'CORRUPTION',
          `round ${round}: page ${id} [${offset}, +${length})`,
        );
      }
      same(await s.readRange!(1, 850, 150), page.subarray(850), `round ${round}: the last 150 bytes`);
      same(await s.readPage(1), page, `round ${round}: the page`);
      await s.close();
      s = await f.open();
    }
  });

  add('readRange argument checks: TypeError/RangeError before any read, for present and absent pages', async (f) => {
    const s = await f.open();
    await s.commit({ pages: [{ id: 1, bytes: bytesOf(1, 2, 3) }] });
    const bad = s as unknown as Record<string, (...a: unknown[]) => Promise<unknown>>;
    for (const id of [1, 99]) {
      await rejects(bad.readRange(id, -1, 1), 'RangeError', `page ${id}: negative offset`);
      await rejects(bad.readRange(id, 0, -1), 'RangeError', `page ${id}: negative length`);
      await rejects(bad.readRange(id, MAX_PAGE_BYTES + 1, 0), 'RangeError', `page ${id}: offset past the largest page`);
      await rejects(bad.readRange(id, 0, 2 ** 32), 'RangeError', `page ${id}: length past the largest page`);
      await rejects(bad.readRange(id, 1.5, 1), 'TypeError', `page ${id}: fractional offset`);
      await rejects(bad.readRange(id, 0, 0.5), 'TypeError', `page ${id}: fractional length`);
      await rejects(bad.readRange(id, NaN, 1), 'TypeError', `page ${id}: NaN offset`);
      await rejects(bad.readRange(id, 0, Infinity), 'TypeError', `page ${id}: infinite length`);
      await rejects(bad.readRange(id, '0', 1), 'TypeError', `page ${id}: offset as string`);
      await rejects(bad.readRange(id, 0), 'TypeError', `page ${id}: length missing`);
    }
    await rejects(bad.readRange('1', 0, 1), 'TypeError', 'string id');
    await rejects(bad.readRange(-1, 0, 1), 'RangeError', 'negative id');
    await rejects(bad.readRange(2 ** 32, 0, 1), 'RangeError', 'id past u32');
    same(await s.readPage(1), bytesOf(1, 2, 3), 'the page is untouched');
  });

  add(
    'readRangeSync: the range into the buffer (1), absent (0) or not now (-1, then readRange); its checks',
    async (f) => {
      let s = await f.open();
      const page = new Rng(154).bytes(3000);
      await s.commit({ pages: [{ id: 1, bytes: page }] });
      for (let round = 0; round < 2; round++) {
        if (!supportsOf(s).readRangeSync) return; // not declared: such a store is read with readRange
        let read = 0;
        let notNow = 0;
        const into = new Uint8Array(400).fill(0xee);
        // More reads than any turn's budget of synchronous reads (node-fs: 64), in one turn.
        for (let i = 0; i < 100; i++) {
          const offset = (i * 37) % 2800;
          const r = s.readRangeSync(1, offset, 150, into);
          ok(r === 1 || r === -1, `round ${round}: read ${i} answered ${r}`);
          if (r === 1) {
            read++;
            same(into.subarray(0, 150), page.subarray(offset, offset + 150), `round ${round}: [${offset}, +150)`);
            ok(into[150] === 0xee, 'nothing written past the range');
          } else {
            notNow++;
            same(await s.readRange!(1, offset, 150), page.subarray(offset, offset + 150), 'readRange after -1');
          }
        }
        ok(read === 0 || notNow > 0, `round ${round}: a store that reads synchronously stops within one turn`);
        await new Promise((resolve) => setTimeout(resolve, 0));
        const again = s.readRangeSync(1, 0, 10, into);
        ok(read === 0 ? again === -1 : again === 1, `round ${round}: the next turn reads again (${again})`);
        const absent = s.readRangeSync(99, 0, 10, into);
        ok(absent === 0 || absent === -1, `round ${round}: an absent page is 0 or -1, got ${absent}`);
        if (read > 0) {
          ok(absent === 0, 'a store that reads synchronously knows a page is absent');
          await rejects(async () => s.readRangeSync!(1, 2900, 150, into), 'CORRUPTION', 'past the end of the page');
        }
        await rejects(async () => s.readRangeSync!(1, 0, 150, new Uint8Array(149)), 'RangeError', '"into" too short');
        await rejects(async () => s.readRangeSync!(1, -1, 1, into), 'RangeError', 'negative offset');
        await s.close();
        await rejects(async () => s.readRangeSync!(1, 0, 1, into), 'NOT_OPEN', 'after close');
        s = await f.open();
      }
    },
  );

  add('readRangeOf gives the same answers with readRange and through readPage where a store has none', async (f) => {
    const s = await f.open();
    const page = new Rng(154).bytes(3000);
    await s.commit({ pages: [{ id: 1, bytes: page }] });
    const plain = {
      kind: s.kind,
      readPage: (id: number) => s.readPage(id),
    } as unknown as PageStore; // a store without readRange: readRangeOf falls back to readPage
    for (const store of [s, plain]) {
      const how = store === s ? 'readRange' : 'readPage fallback';
      const r = (await readRangeOf(store, 1, 2900, 100))!;
      same(r, page.subarray(2900), `${how}: the last 100 bytes`);
      ok(r.buffer.byteLength === 100, `${how}: a copy of the range only`);
      ok((await readRangeOf(store, 2, 0, 10)) === undefined, `${how}: absent page`);
      await rejects(readRangeOf(store, 1, 2901, 100), 'CORRUPTION', `${how}: past the end`);
      await rejects(readRangeOf(store, 1, -1, 100), 'RangeError', `${how}: negative offset`);
      await rejects(readRangeOf(store, 1, 0, 1.5), 'TypeError', `${how}: fractional length`);
    }
  });

  add('after deleting most pages and compacting, every live page reads back and storedBytes shrinks', async (f) => {
    let s = await f.open();
    const rng = new Rng(171);
    const pages = new Map<number, Uint8Array>();
    for (let c = 0; c < 30; c++) {
      const batch = [];
      for (let k = 0; k < 4; k++) {
        const id = c * 4 + k + 1;
        const bytes = rng.bytes(700 + rng.int(600));
        pages.set(id, bytes);
        batch.push({ id, bytes });
      }
      await s.commit({ pages: batch, manifest: bytesOf(c) });
    }
    const full = await s.stats();
    const doomed = [...pages.keys()].filter((id) => id % 5 !== 0); // 80 %
    await s.deletePages(doomed.slice(0, 40));
    await s.commit({ deletes: doomed.slice(40), manifest: text('after deletes') });
    for (const id of doomed) pages.delete(id);
    const result = supportsOf(s).reclaim ? await s.reclaim!({ minDeadFraction: 0.5 }) : undefined;
    const after = await s.stats();
    const liveBytes = [...pages.values()].reduce((n, p) => n + p.length, 0);
    ok(
      after.pageCount === pages.size && after.pageBytes === liveBytes,
      `stats after compaction ${JSON.stringify(after)}`,
    );
    if (result !== undefined) {
      ok(
        result.bytesAfter === after.storedBytes,
        `bytesAfter ${result.bytesAfter} is storedBytes ${after.storedBytes}`,
      );
      ok(result.bytesAfter <= result.bytesBefore, `compaction grew the store: ${JSON.stringify(result)}`);
      // A store whose data all sits in the segment being appended to has nothing sealed to drop.
      if (result.segmentsRewritten > 0)
        ok(after.storedBytes < full.storedBytes, `storedBytes ${after.storedBytes} < ${full.storedBytes}`);
    } else ok(after.storedBytes < full.storedBytes, `storedBytes ${after.storedBytes} < ${full.storedBytes}`);
    for (let round = 0; round < 2; round++) {
      const ids = [...pages.keys()];
      eqList(await s.listPages(), ids, `round ${round}: listPages`);
      for (const [id, bytes] of pages) same(await s.readPage(id), bytes, `round ${round}: page ${id}`);
      const all = await readPagesOf(s, [1, ...ids, 2]);
      ok(all[0] === undefined && all[all.length - 1] === undefined, `round ${round}: deleted pages stay deleted`);
      ids.forEach((id, i) => same(all[i + 1], pages.get(id), `round ${round}: readPages ${id}`));
      same(await s.readManifest(), text('after deletes'), `round ${round}: manifest`);
      const st = await s.stats();
      ok(st.storedBytes === after.storedBytes, `round ${round}: storedBytes ${st.storedBytes} after reopen`);
      await s.close();
      s = await f.open();
    }
    await s.commit({ pages: [{ id: 1, bytes: bytesOf(9, 9) }] });
    same(await s.readPage(1), bytesOf(9, 9), 'a deleted id written again after compaction');
    same(await s.readPage(5), pages.get(5), 'page 5');
  });

  add('supports: declared once, every flag a boolean, and each capability declared has its methods', async (f) => {
    const s = await f.open();
    const d = s.supports;
    ok(d !== undefined && typeof d === 'object', `${s.kind} declares supports`);
    for (const k of ['readPages', 'readRange', 'partialRanges', 'readRangeSync', 'blockingReads', 'reclaim', 'follow'])
      ok(typeof (d as unknown as Record<string, unknown>)[k] === 'boolean', `supports.${k} is a boolean`);
    const has = (m: string): boolean => typeof (s as unknown as Record<string, unknown>)[m] === 'function';
    if (d.readPages) ok(has('readPages'), 'readPages declared: the method is there');
    if (d.readRange || d.partialRanges) ok(has('readRange') && d.readRange, 'partialRanges or readRange: readRange');
    if (d.readRangeSync || d.blockingReads)
      ok(has('readRangeSync') && d.readRangeSync, 'blockingReads or readRangeSync: readRangeSync');
    if (d.reclaim) ok(has('reclaim'), 'reclaim declared: the method is there');
    if (d.follow) ok(has('view') && has('watch') && has('ready'), 'follow declared: view, watch and ready');
    ok(supportsOf(s) === d, 'supportsOf gives the declared object');
  });

  return cases;
}

/** Runs every check and returns one Summary (for the browser page and plain runners). */
export function runPageStoreCases(name: string, factory: PageStoreFixtureFactory): Promise<Summary> {
  return runStoreCases(`PageStore conformance (${name})`, pageStoreCases(factory));
}

/**
 * The IndexedDB adapter's fixture, shared by the Node run (over fake-indexeddb) and the Chromium
 * page: `corruptPage` flips a byte of the stored page through a second, raw connection.
 */
export function indexedDbFixture(
  name: string,
  deps: {
    openDB: (name: string) => Promise<{
      get(store: string, key: number): Promise<unknown>;
      put(store: string, value: unknown, key: number): Promise<unknown>;
      close(): void;
    }>;
    deleteDB: (name: string) => Promise<void>;
    open: (name: string) => Promise<PageStore>;
  },
): PageStoreFixture {
  return {
    open: () => deps.open(name),
    corruptPage: async (id) => {
      const db = await deps.openDB(name);
      const bytes = (await db.get('pages', id)) as Uint8Array;
      bytes[0] ^= 1;
      await db.put('pages', bytes, id);
      db.close();
    },
    dispose: () => deps.deleteDB(name),
  };
}

/**
 * The OPFS store's fixture, shared by the Node run (its logic over plain files) and the Chromium
 * worker (real OPFS): `corruptPage` flips the first body byte of page `id`'s last record in the
 * logs (records from byte 0, framed as docs/storage.md says) through the same SyncDirectory.
 */
export function syncDirectoryFixture(deps: {
  dir: SyncDirectory;
  open: () => Promise<PageStore>;
  dispose: () => Promise<void>;
}): PageStoreFixture {
  return {
    open: deps.open,
    corruptPage: async (id) => {
      let hit: { name: string; at: number } | undefined;
      for (const name of ['log-0', 'log-1']) {
        const file = await deps.dir.open(name);
        try {
          const buf = new Uint8Array(file.getSize());
          file.read(buf, { at: 0 });
          const v = new DataView(buf.buffer);
          for (let off = 0; off + RECORD_HEADER_BYTES <= buf.length;) {
            const len = v.getUint32(off + 12, true);
            if (buf[off + 4] === KIND_PAGE && v.getUint32(off + 8, true) === id && len > 0)
              hit = { name, at: off + RECORD_HEADER_BYTES };
            off += RECORD_HEADER_BYTES + len;
          }
        } finally {
          file.close();
        }
      }
      if (hit === undefined) throw new CheckFailed(`page ${id} not found in the logs`);
      const file = await deps.dir.open(hit.name);
      try {
        const b = new Uint8Array(1);
        file.read(b, { at: hit.at });
        b[0] ^= 1;
        file.write(b, { at: hit.at });
        file.flush();
      } finally {
        file.close();
      }
    },
    dispose: deps.dispose,
  };
}
