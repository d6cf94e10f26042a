// A storage attacker who edits the medium directly (DESIGN §11, docs/security.md): pages dropped,
// swapped, put back from an older copy or taken from another store, manifests flipped, hostile or
// put back, a whole store substituted. Each case writes a real store through the public API, edits
// what the medium holds with the checksums made to match (as an attacker who knows the layout
// would), and requires a PqdbError with the documented code, or, for a consistent older copy, the
// pin that catches it. Platform-neutral: vitest runs it in Node (memory and IndexedDB over
// fake-indexeddb) and Playwright inside Chromium on real IndexedDB, editing its object stores.

import type { Store, StoreOptions } from '../../src/engine/store';
import type { verifyStore } from '../../src/engine/verify';
import { pageKind } from '../../src/engine/page-format';
import { ok, rejection, type StoreCase, type StoreFixture } from './_store';

type KeyPair = { publicKey: Uint8Array; secretKey: Uint8Array };

/** Direct access to what a location stores. Called only while nothing is open on it. */
export interface RawMedium {
  /** Every stored page, id → bytes. */
  pages(): Promise<Map<number, Uint8Array>>;
  /** The stored manifest's bytes. */
  manifest(): Promise<Uint8Array | undefined>;
  /** Stores `bytes` as page `id` with a matching checksum, or removes the page (undefined). */
  setPage(id: number, bytes: Uint8Array | undefined): Promise<void>;
  /** Stores `bytes` as the manifest with a matching checksum. */
  setManifest(bytes: Uint8Array): Promise<void>;
}

export interface TamperFixture extends StoreFixture {
  readonly raw: RawMedium;
}

export type TamperFixtureFactory = () => Promise<TamperFixture>;

export interface TamperApi {
  generateRecipient(type?: 'hybrid' | 'classical'): KeyPair;
  generateSigner(): KeyPair;
  verifyStore: typeof verifyStore;
}

const SCHEMA = { text: 'string' } as const;

/** Everything the medium holds, to put back later. */
async function snapshot(raw: RawMedium) {
  return { pages: await raw.pages(), manifest: (await raw.manifest())! };
}

/** Replaces everything `raw` holds with `copy`. */
async function restore(raw: RawMedium, copy: Awaited<ReturnType<typeof snapshot>>): Promise<void> {
  for (const id of (await raw.pages()).keys()) if (!copy.pages.has(id)) await raw.setPage(id, undefined);
  for (const [id, bytes] of copy.pages) await raw.setPage(id, bytes);
  await raw.setManifest(copy.manifest);
}

/** The ids of `after` that `before` does not hold, of one kind, ascending. */
const added = (before: Map<number, Uint8Array>, after: Map<number, Uint8Array>, kind: string): number[] =>
  [...after.keys()].filter((id) => !before.has(id) && pageKind(after.get(id)!) === kind).sort((a, b) => a - b);

/** The code of the PqdbError `p` rejects with (fails when it resolves or throws anything else). */
async function codeOf(p: Promise<unknown>, what: string): Promise<string> {
  const e = await rejection(p, what);
  ok(
    e.name === 'PqdbError' && typeof e.code === 'string',
    `${what}: expected a PqdbError, got ${e.name}: ${e.message}`,
  );
  return e.code;
}

export function tamperCases(factory: TamperFixtureFactory, api: TamperApi): StoreCase[] {
  const recipient = api.generateRecipient('hybrid');
  const signer = api.generateSigner();
  const options = (extra: Partial<StoreOptions> = {}): StoreOptions => ({
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: false,
    ...extra,
  });

  /** Runs `body` on fresh fixtures (as many as it asks for), closing and disposing all of them. */
  const tamper =
    (
      body: (
        fresh: () => Promise<{ f: TamperFixture; open: (o?: Partial<StoreOptions>) => Promise<Store> }>,
      ) => Promise<void>,
    ) =>
    async (): Promise<void> => {
      const fixtures: TamperFixture[] = [];
      const stores: Store[] = [];
      try {
        await body(async () => {
          const f = await factory();
          fixtures.push(f);
          const open = async (o: Partial<StoreOptions> = {}) => {
            const s = await f.open(options(o));
            stores.push(s);
            return s;
          };
          return { f, open };
        });
      } finally {
        for (const s of stores) await s.close().catch(() => undefined);
        for (const f of fixtures) await f.dispose();
      }
    };

  /** A store with two records, closed; returns the medium's state after each step. */
  const written = async (open: (o?: Partial<StoreOptions>) => Promise<Store>, raw: RawMedium) => {
    const store = await open({ create: true });
    const notes = store.collection('notes', { schema: SCHEMA });
    await notes.put('a', { text: 'kept' });
    await notes.put('b', { text: 'v1' });
    const { storeId } = store.info();
    await store.close();
    return { storeId, state: await snapshot(raw) };
  };

  return [
    {
      name: 'a dropped delete-only commit page does not bring the record back: open and verify refuse',
      run: tamper(async (fresh) => {
        const { f, open } = await fresh();
        const { state } = await written(open, f.raw);
        const store = await open();
        await store.collection('notes', { schema: SCHEMA }).delete('b');
        await store.close();
        const [deletePage] = added(state.pages, await f.raw.pages(), 'commit');
        ok(deletePage !== undefined, 'the delete wrote a commit page');
        await f.raw.setPage(deletePage, undefined);
        const code = await codeOf(open(), 'open without the delete page');
        ok(code === 'CORRUPTION', `open: expected CORRUPTION, got ${code}`);
        const pages = await f.pages();
        const report = await api.verifyStore(pages, { unlock: recipient.secretKey });
        await pages.close();
        ok(!report.ok, 'verifyStore reports the dropped page');
      }),
    },
    {
      name: 'a commit page dropped under a checkpoint is refused on open; one put back from an older copy, on open or when read',
      run: tamper(async (fresh) => {
        const { f, open } = await fresh();
        const { state } = await written(open, f.raw);
        const store = await open();
        await store.collection('notes', { schema: SCHEMA }).put('b', { text: 'v2' });
        await store.checkpoint();
        await store.close();
        const now = await f.raw.pages();
        const [update] = added(state.pages, now, 'commit');
        await f.raw.setPage(update, undefined);
        ok((await codeOf(open(), 'open without the update')) === 'CORRUPTION', 'a dropped update is CORRUPTION');
        // The update's page id holding the page of another commit (an older copy's bytes at that id).
        const older = [...state.pages.keys()].filter((id) => pageKind(state.pages.get(id)!) === 'commit').pop()!;
        await f.raw.setPage(update, state.pages.get(older)!);
        // Under a persisted key directory an open does not read the pages it covers: the page put
        // back is refused when a record in it is read (its AEAD tag and its sequence), never
        // returned as data.
        let code: string | undefined;
        try {
          const s = await open();
          code = await codeOf(
            s.collection('notes', { schema: SCHEMA }).get('b'),
            'read of a record in the page put back',
          );
          await s.close();
        } catch (e) {
          code = (e as { code?: string }).code;
        }
        ok(
          code === 'CORRUPTION' || code === 'AUTH_FAILED',
          `a page put back: expected CORRUPTION or AUTH_FAILED, got ${code}`,
        );
        await f.raw.setPage(update, now.get(update)!);
        const again = await open();
        ok((await again.collection('notes', { schema: SCHEMA }).get('b'))?.text === 'v2', 'the real page reads v2');
      }),
    },
    {
      name: 'a directory page copied over a commit page the directory covers: reads fail typed, verifyStore reports it',
      run: tamper(async (fresh) => {
        const { f, open } = await fresh();
        await written(open, f.raw);
        const store = await open();
        await store.checkpoint(); // persists the key directory: it now covers both commit pages
        await store.close();
        const now = await f.raw.pages();
        const ids = (kind: string) => [...now.keys()].filter((id) => pageKind(now.get(id)!) === kind);
        const [commit] = ids('commit');
        const [directory] = ids('directory');
        ok(commit !== undefined && directory !== undefined, 'the store holds commit and directory pages');
        await f.raw.setPage(commit, now.get(directory)!);
        // Roles come from the manifest and directory, never from a page's magic: the page listed as a
        // live commit page must open as one.
        try {
          const s = await open();
          for (const id of ['a', 'b'])
            await s
              .collection('notes', { schema: SCHEMA })
              .get(id)
              .then(
                (v) => ok(v?.text === (id === 'a' ? 'kept' : 'v1'), `${id} reads its own value or fails`),
                (e) => ok(e?.name === 'PqdbError', `read of ${id}: expected a PqdbError, got ${e?.name}`),
              );
          await s.close();
        } catch (e) {
          ok((e as { name?: string }).name === 'PqdbError', 'open: a PqdbError or a store');
        }
        const pages = await f.pages();
        const report = await api.verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
        await pages.close();
        ok(!report.ok, 'verifyStore reports the directory page in a commit page\u2019s place');
      }),
    },
    {
      name: 'two commit pages swapped, or a page from another store at the same id, are refused',
      run: tamper(async (fresh) => {
        const a = await fresh();
        const b = await fresh();
        const { state } = await written(a.open, a.f.raw);
        const other = await written(b.open, b.f.raw);
        const commits = [...state.pages.keys()].filter((id) => pageKind(state.pages.get(id)!) === 'commit');
        ok(commits.length >= 2, 'two commit pages');
        const [x, y] = commits.slice(-2);
        await a.f.raw.setPage(x, state.pages.get(y)!);
        await a.f.raw.setPage(y, state.pages.get(x)!);
        await codeOf(a.open(), 'open with two pages swapped');
        await restore(a.f.raw, state);
        ok(other.state.pages.has(y), 'the other store has the same page id');
        await a.f.raw.setPage(y, other.state.pages.get(y)!);
        await codeOf(a.open(), "open with another store's page");
        await restore(a.f.raw, state);
        await (await a.open()).close();
      }),
    },
    {
      name: 'a manifest flipped, truncated or with a hostile header is a typed error, never a store',
      run: tamper(async (fresh) => {
        const { f, open } = await fresh();
        const { state } = await written(open, f.raw);
        const m = state.manifest;
        const flipped = m.slice();
        flipped[m.length - 20] ^= 1; // inside the sealed body
        await f.raw.setManifest(flipped);
        ok((await codeOf(open(), 'a flipped body')) === 'AUTH_FAILED', 'a flipped body is AUTH_FAILED');
        await f.raw.setManifest(m.subarray(0, m.length - 40));
        await codeOf(open(), 'a truncated manifest');
        const headerLength = new DataView(m.buffer, m.byteOffset).getUint32(5);
        for (const header of [
          '{"v":2,"storeId":7}',
          '[]',
          '{"v":2,"storeId":"00","commit":-1,"envelopes":[{}]}',
          '{',
        ]) {
          const h = new TextEncoder().encode(header);
          const hostile = new Uint8Array(9 + h.length + m.length - 9 - headerLength);
          hostile.set(m.subarray(0, 9));
          new DataView(hostile.buffer).setUint32(5, h.length);
          hostile.set(h, 9);
          hostile.set(m.subarray(9 + headerLength), 9 + h.length);
          await f.raw.setManifest(hostile);
          const code = await codeOf(open(), `header ${header}`);
          ok(code === 'CORRUPTION' || code === 'FORMAT_VERSION', `header ${header}: got ${code}`);
        }
        await f.raw.setManifest(m);
        await (await open()).close();
      }),
    },
    {
      name: 'an older manifest or an older copy of the whole store is caught by the freshness pins',
      run: tamper(async (fresh) => {
        const { f, open } = await fresh();
        const { state } = await written(open, f.raw);
        const store = await open();
        await store.collection('notes', { schema: SCHEMA }).delete('b');
        await store.checkpoint();
        const { commit, checkpoint } = store.info();
        await store.close();
        // Only the old manifest put back: the newer pages are beyond what it names.
        const current = await snapshot(f.raw);
        await f.raw.setManifest(state.manifest);
        ok((await codeOf(open({ minCommit: commit }), 'old manifest, pinned')) === 'ROLLBACK', 'ROLLBACK');
        const unpinned = await open();
        ok(unpinned.info().commit < commit, 'unpinned, the store says it is older');
        await unpinned.close();
        // The whole older copy.
        await restore(f.raw, state);
        ok((await codeOf(open({ minCommit: commit }), 'old copy, pinned')) === 'ROLLBACK', 'ROLLBACK');
        const pages = await f.pages();
        const report = await api.verifyStore(pages, {
          unlock: recipient.secretKey,
          expectCheckpoint: checkpoint!.hash,
        });
        await pages.close();
        ok(
          report.problems.some((p) => p.code === 'ROLLBACK'),
          `verify --expect-checkpoint: ${JSON.stringify(report.problems)}`,
        );
        await restore(f.raw, current);
        const back = await open({ minCommit: commit });
        ok(!back.collection('notes', { schema: SCHEMA }).has('b'), 'the delete holds');
      }),
    },
    {
      name: 'a checkpoint page dropped or replaced by another store\u2019s is refused on open',
      run: tamper(async (fresh) => {
        const a = await fresh();
        const b = await fresh();
        const { state } = await written(a.open, a.f.raw);
        await written(b.open, b.f.raw);
        for (const { open } of [a, b]) {
          const s = await open();
          await s.checkpoint();
          await s.close();
        }
        const [cp] = added(state.pages, await a.f.raw.pages(), 'checkpoint');
        const theirs = await b.f.raw.pages();
        const [otherCp] = added(new Map(), theirs, 'checkpoint');
        ok(cp !== undefined && otherCp !== undefined, 'both stores wrote a checkpoint page');
        const mine = (await a.f.raw.pages()).get(cp)!;
        await a.f.raw.setPage(cp, undefined);
        await codeOf(a.open(), 'open without the checkpoint page');
        await a.f.raw.setPage(cp, theirs.get(otherCp)!);
        ok((await codeOf(a.open(), "another store's checkpoint")) === 'CORRUPTION', 'CORRUPTION');
        await a.f.raw.setPage(cp, mine);
        await (await a.open()).close();
      }),
    },
    {
      name: 'a wholly substituted store opens only without a store id pin, and says it is another store',
      run: tamper(async (fresh) => {
        const a = await fresh();
        const b = await fresh();
        const { storeId } = await written(a.open, a.f.raw);
        const other = await written(b.open, b.f.raw);
        ok(other.storeId !== storeId, 'two stores have two ids');
        await restore(a.f.raw, other.state);
        const code = await codeOf(a.open({ storeId }), 'a substituted store, pinned');
        ok(code === 'AUTH_FAILED', `a substituted store: expected AUTH_FAILED, got ${code}`);
        const unpinned = await a.open();
        ok(unpinned.info().storeId === other.storeId, 'unpinned, it reports the other id');
      }),
    },
    {
      name: 'a flipped byte inside a sealed commit page (checksum fixed) never reads as data',
      run: tamper(async (fresh) => {
        const { f, open } = await fresh();
        const { state } = await written(open, f.raw);
        const commits = [...state.pages.keys()].filter((id) => pageKind(state.pages.get(id)!) === 'commit');
        const target = commits[commits.length - 1];
        const page = state.pages.get(target)!;
        for (const at of [8, page.length >> 1, page.length - 1]) {
          const bad = page.slice();
          bad[at] ^= 0x40;
          await f.raw.setPage(target, bad);
          let s: Store;
          try {
            s = await open();
          } catch (e) {
            ok((e as { name?: string }).name === 'PqdbError', `open after flipping byte ${at}: ${String(e)}`);
            continue;
          }
          const got = await s
            .collection('notes', { schema: SCHEMA })
            .get('b')
            .catch((e: { name?: string }) => (e.name === 'PqdbError' ? 'refused' : String(e)));
          await s.close();
          ok(got === 'refused', `byte ${at} flipped, the read gave ${JSON.stringify(got)}`);
        }
      }),
    },
  ];
}
