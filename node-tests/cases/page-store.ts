// The PageStore conformance suite (DESIGN.md §6): platform-neutral checks every adapter must pass,
// run by vitest in Node (memory, node-fs, IndexedDB over fake-indexeddb) and inside a Chromium page
// by Playwright (real IndexedDB). No test-framework imports: each check is an async function that
// throws on failure, so a runner can register it as a test or collect a Summary.

import type { PageStore } from '../../src/storage/page-store';
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
