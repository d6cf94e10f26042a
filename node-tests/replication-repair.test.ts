// Pages a replica holds whose bytes are not its primary's are sent again and replaced
// (src/replication/_digests.ts, docs/replication.md "Pages that differ"). The replica's hello
// carries one digest per range of 4,096 held pages; the primary names the ranges that differ, the
// replica sends those ranges' page digests, and the primary resends the pages that differ. The
// replica verifies them as every shipped page and writes them over its copies in one atomic commit
// (CommitBatch.replaces). Cases: a covered commit page damaged on the replica's own medium (a
// byte flipped with its checksum fixed, on node-fs; and a flipped byte whose checksum fails, in
// memory), and a page kept from a primary whose history forked from the one followed now.
import 'fake-indexeddb/auto';
import { describe, it, expect, afterAll } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, openMemoryPageStore, verifyStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { openNodeFsPageStore } from '../src/storage/node-fs';
import { openIndexedDbPageStore } from '../src/storage/indexeddb';
import { type PageStore } from '../src/storage/page-store';
import { crc32c } from '../src/_crc32c';
import { engineOf as partsOf } from '../src/engine/store';
import { pageKind } from '../src/engine/page-format';
import type { Store } from '../src/engine/store';
import { Primary, type MessageSession } from '../src/replication/primary';
import { Replica } from '../src/replication/replica';
import {
  decodeMessage,
  encodeMessage,
  MSG_COMMIT,
  MSG_DIFFER,
  MSG_DIGESTS,
  MSG_HELLO,
  MSG_HELLO2,
  MSG_REPLACE,
} from '../src/replication/messages';
import { sessionPair } from './support/sessions';
import { coveredStore, recipient, schema, signer } from './support/replication-stores';

const pair = (seen: (bytes: Uint8Array) => void = () => undefined) =>
  sessionPair({ tap: (bytes) => (seen(bytes), bytes) });

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

const primaryStore = coveredStore;

/** A replica on `pages` following `primary` over in-process sessions; `seen` as in pair. */
function follow(pages: PageStore, primary: Primary, seen?: (bytes: Uint8Array) => void): Promise<Replica> {
  return Replica.open(pages, {
    unlock: recipient.secretKey,
    backoffMs: [10],
    connect: async () => {
      const [p, r] = pair(seen);
      void primary.accept(p);
      return r;
    },
  });
}

async function expectAll(replica: Replica): Promise<void> {
  const rw = replica.collection<{ lemma: string; n: number }>('w', { schema });
  for (let b = 0; b < 4; b++)
    for (let i = 0; i < 20; i++) expect(await rw.get(`k${b}-${i}`)).toEqual({ lemma: `word ${b} ${i}`, n: i });
  expect(await rw.get('after')).toEqual({ lemma: 'after', n: 0 });
}

/** The lowest commit page id of `pages` (covered by the key directory the checkpoint persisted). */
async function firstCommitPage(pages: PageStore): Promise<number> {
  for (const id of await pages.listPages()) if (pageKind((await pages.readPage(id))!) === 'commit') return id;
  throw new Error('no commit page');
}

/** Waits for a commit made on `store` now to reach `replica` (after whatever its session sends first). */
async function oneMore(store: Store, replica: Replica, key: string): Promise<void> {
  await store.collection('w', { schema }).put(key, { lemma: key, n: 1 });
  await replica.applied(store.info().commit);
}

const replacedIn = (ids: number[]) => (bytes: Uint8Array) => {
  const m = decodeMessage(bytes);
  if (m.type === MSG_REPLACE) ids.push(...m.pages.map((p) => p.id));
};

describe('replication: pages that differ from the primary are sent again', () => {
  it('a covered commit page damaged on the replica medium (checksum fixed, node-fs) is replaced on reconnect', async () => {
    const store = await primaryStore();
    const primary = new Primary(partsOf(store));
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-repair-'));
    dirs.push(dir);
    let replica = await follow(await openNodeFsPageStore(dir), primary);
    await replica.applied(store.info().commit);
    await replica.close();

    // The attacker of the replica's disk (or bit rot the checksum missed): one byte of a sealed
    // record, the page's CRC-32C made to fit (a delete and a write, as a page store allows).
    const disk = await openNodeFsPageStore(dir);
    const id = await firstCommitPage(disk);
    const bytes = (await disk.readPage(id))!;
    bytes[bytes.length - 3] ^= 0x10;
    await disk.commit({ deletes: [id] });
    await disk.commit({ pages: [{ id, bytes }] });
    expect((await verifyStore(disk, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey })).ok).toBe(
      false,
    );
    await disk.close();

    const replaced: number[] = [];
    replica = await follow(await openNodeFsPageStore(dir), primary, replacedIn(replaced));
    await oneMore(store, replica, 'later');
    await expectAll(replica);
    expect(replaced).toEqual([id]); // that page only
    await replica.close();

    const after = await openNodeFsPageStore(dir);
    const report = await verifyStore(after, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
    expect(report.problems).toEqual([]);
    expect(report.ok).toBe(true);
    await after.close();
    await primary.close();
    await store.close();
  });

  it('a page whose checksum fails on the replica medium (memory) is replaced; a whole replica sends no page again', async () => {
    const store = await primaryStore();
    const primary = new Primary(partsOf(store));
    const medium = new MemoryMedium();
    let replica = await follow(await openMemoryPageStore({ medium }), primary);
    await replica.applied(store.info().commit);
    await replica.close();

    // A session on the intact replica: nothing is replaced.
    const none: number[] = [];
    replica = await follow(await openMemoryPageStore({ medium }), primary, replacedIn(none));
    await oneMore(store, replica, 'first');
    await replica.close();
    expect(none).toEqual([]);

    const id = await firstCommitPage(await openMemoryPageStore({ medium: cloneMedium(medium) }));
    medium.flipByte(id, medium.pages.get(id)!.bytes.length - 5);
    const replaced: number[] = [];
    replica = await follow(await openMemoryPageStore({ medium }), primary, replacedIn(replaced));
    await oneMore(store, replica, 'second');
    await expectAll(replica);
    expect(replaced).toEqual([id]);
    await replica.close();
    const report = await verifyStore(await openMemoryPageStore({ medium }), {
      unlock: recipient.secretKey,
      signerPublicKey: signer.publicKey,
    });
    expect(report.ok).toBe(true);
    await primary.close();
    await store.close();
  });

  it('a page kept from a primary whose history forked is replaced by the one the replica follows now', async () => {
    // Primaries A and B hold copies of one store; each then makes its own next commit (a failover
    // to a copy that had not seen A's last commit): the same page id holds other bytes on each.
    const mediumA = new MemoryMedium();
    const base = await primaryStore(await openMemoryPageStore({ medium: mediumA }));
    await base.close();
    const mediumB = cloneMedium(mediumA);
    const open = async (medium: MemoryMedium) =>
      openStore({
        storage: await openMemoryPageStore({ medium }),
        recipients: [recipient.publicKey],
        unlock: recipient.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
      });
    const a = await open(mediumA);
    const b = await open(mediumB);
    await a.collection('w', { schema }).put('fork', { lemma: 'from A', n: 1 });
    await b.collection('w', { schema }).put('fork', { lemma: 'from B', n: 2 });
    await b.collection('w', { schema }).put('next', { lemma: 'B again', n: 3 });
    const pa = new Primary(partsOf(a));
    const pb = new Primary(partsOf(b));

    const medium = new MemoryMedium();
    let replica = await follow(await openMemoryPageStore({ medium }), pa);
    await replica.applied(a.info().commit);
    await replica.close();
    const forked = [...medium.pages.keys()].filter((id) => !mediumB.pages.has(id) || differs(medium, mediumB, id));
    expect(forked.length).toBeGreaterThan(0); // A's commit page at an id B used for its own

    const replaced: number[] = [];
    replica = await follow(await openMemoryPageStore({ medium }), pb, replacedIn(replaced));
    await replica.applied(b.info().commit);
    const rw = replica.collection<{ lemma: string; n: number }>('w', { schema });
    expect(await rw.get('fork')).toEqual({ lemma: 'from B', n: 2 });
    expect(await rw.get('next')).toEqual({ lemma: 'B again', n: 3 });
    await expectAll(replica);
    expect(replaced.length).toBeGreaterThan(0);
    await replica.close();
    expect((await verifyStore(await openMemoryPageStore({ medium }), { unlock: recipient.secretKey })).ok).toBe(true);
    await pa.close();
    await pb.close();
    await a.close();
    await b.close();
  });

  it('a primary answers a plain hello (a replica of an earlier release) as before, without digests', async () => {
    const store = await primaryStore();
    const primary = new Primary(partsOf(store));
    const types: number[] = [];
    const [p, r] = pair((bytes) => types.push(bytes[0]));
    void primary.accept(p);
    await r.send(encodeMessage({ type: MSG_HELLO, applied: 0, pageIds: [] }));
    const m = decodeMessage(await r.receive());
    expect(m.type).toBe(MSG_COMMIT);
    expect(types[0]).toBe(MSG_COMMIT);
    r.close();
    await primary.close();
    await store.close();
  });

  it('pageDigests: false sends a plain hello (no digest work): a damaged page stays', async () => {
    const store = await primaryStore();
    const primary = new Primary(partsOf(store));
    const medium = new MemoryMedium();
    let replica = await follow(await openMemoryPageStore({ medium }), primary);
    await replica.applied(store.info().commit);
    await replica.close();
    const id = await firstCommitPage(await openMemoryPageStore({ medium: cloneMedium(medium) }));
    medium.flipByte(id, medium.pages.get(id)!.bytes.length - 5);
    const hellos: number[] = [];
    replica = await Replica.open(await openMemoryPageStore({ medium }), {
      unlock: recipient.secretKey,
      pageDigests: false,
      connect: async () => {
        const [p, r] = pair();
        void primary.accept({ ...p, receive: () => p.receive().then((b) => (hellos.push(b[0]), b)) });
        return r;
      },
    });
    await oneMore(store, replica, 'third');
    expect(hellos[0]).toBe(MSG_HELLO);
    const rw = replica.collection('w', { schema });
    const failed: string[] = [];
    for (let i = 0; i < 20; i++) await rw.get(`k0-${i}`).catch(() => failed.push(`k0-${i}`));
    expect(failed.length).toBeGreaterThan(0);
    await replica.close();
    await primary.close();
    await store.close();
  });

  it('a replica falls back to a plain hello when a primary of an earlier release closes on its hello', async () => {
    const store = await primaryStore();
    const primary = new Primary(partsOf(store));
    const hellos: number[] = [];
    // An earlier release's primary: a message of a type it does not know ends the session.
    const replica = await Replica.open(await openMemoryPageStore(), {
      unlock: recipient.secretKey,
      backoffMs: [10],
      connect: async () => {
        const [p, r] = pair();
        void (async () => {
          const first = await p.receive();
          hellos.push(first[0]);
          if (first[0] !== MSG_HELLO) return p.close();
          const [q, s] = pair();
          void primary.accept(q);
          await s.send(first);
          const relay = async (from: MessageSession, to: MessageSession) => {
            for (;;) await to.send(await from.receive());
          };
          void relay(s, p).catch(() => p.close());
          void relay(p, s).catch(() => s.close());
        })();
        return r;
      },
    });
    await replica.applied(store.info().commit);
    expect(hellos.slice(0, 2)).toEqual([MSG_HELLO2, MSG_HELLO]);
    await expectAll(replica);
    await replica.close();
    await primary.close();
    await store.close();
  });
});

describe('replication: the digest messages are bounded and taken only in their place', () => {
  it('decodes what it encodes and refuses a range count, an order or a size that does not fit', () => {
    const ids = Array.from({ length: 4097 }, (_, i) => i + 1);
    const hello = { type: MSG_HELLO2, applied: 3, pageIds: ids, ranges: new Uint8Array(96).fill(7) } as const;
    expect(decodeMessage(encodeMessage(hello))).toEqual(hello);
    const short = encodeMessage({ ...hello, ranges: new Uint8Array(48) });
    expect(() => decodeMessage(short)).toThrow(/range count/);
    expect(() => decodeMessage(encodeMessage({ type: MSG_DIFFER, ranges: [2, 1] }))).toThrow(/out of order/);
    expect(() => decodeMessage(encodeMessage({ type: MSG_DIFFER, ranges: [...Array(257).keys()] }))).toThrow(
      /too many ranges/,
    );
    expect(() => decodeMessage(encodeMessage({ type: MSG_DIGESTS, range: 0, digests: new Uint8Array(0) }))).toThrow(
      /bad size/,
    );
    const digests = { type: MSG_DIGESTS, range: 1, digests: new Uint8Array(4096 * 48) } as const;
    expect(decodeMessage(encodeMessage(digests))).toEqual(digests);
  });

  it('a replica refuses a DIFFER past its hello, a second DIFFER, and REPLACE after a plain hello', async () => {
    const store = await primaryStore();
    const primary = new Primary(partsOf(store));
    const medium = new MemoryMedium();
    const first = await follow(await openMemoryPageStore({ medium }), primary);
    await first.applied(store.info().commit);
    await first.close();
    const hostile = async (script: (p: MessageSession) => Promise<void>, pageDigests = true) => {
      const replica = await Replica.open(await openMemoryPageStore({ medium }), {
        unlock: recipient.secretKey,
        pageDigests,
        backoffMs: [10],
        connect: async () => {
          const [p, r] = pair();
          void script(p).catch(() => undefined);
          return r;
        },
      });
      while (replica.status().lastError === undefined) await new Promise((r) => setTimeout(r, 5));
      const error = replica.status().lastError;
      await replica.close();
      return error;
    };
    expect(
      await hostile(async (p) => {
        await p.receive();
        await p.send(encodeMessage({ type: MSG_DIFFER, ranges: [1] }));
      }),
    ).toMatch(/^CORRUPTION: the primary named a range past the hello/);
    expect(
      await hostile(async (p) => {
        await p.receive();
        await p.send(encodeMessage({ type: MSG_DIFFER, ranges: [] }));
        await p.send(encodeMessage({ type: MSG_DIFFER, ranges: [] }));
      }),
    ).toMatch(/^CORRUPTION: the primary sent a message of type 7/);
    expect(
      await hostile(async (p) => {
        await p.receive();
        await p.send(encodeMessage({ type: MSG_REPLACE, pages: [] }));
      }, false),
    ).toMatch(/^CORRUPTION: the primary sent a message of type 9/);
    await primary.close();
    await store.close();
  });
});

describe('page stores: a commit that replaces a page', () => {
  it('memory, node-fs and IndexedDB: the new page is in place at once, after a reopen and after compaction', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pqdb-replace-'));
    dirs.push(dir);
    const medium = new MemoryMedium();
    const stores: [string, () => Promise<PageStore>][] = [
      ['memory', () => openMemoryPageStore({ medium })],
      ['node-fs', () => openNodeFsPageStore(dir, { segmentBytes: 4096 })],
      ['indexeddb', () => openIndexedDbPageStore('pqdb-replace-test')],
    ];
    for (const [kind, open] of stores) {
      let s = await open();
      const page = (n: number) => new Uint8Array(1000).fill(n);
      await s.commit({ pages: [1, 2, 3].map((id) => ({ id, bytes: page(id) })), manifest: page(9) });
      await expect(s.commit({ pages: [{ id: 2, bytes: page(7) }] }), kind).rejects.toThrow(RangeError);
      await expect(s.commit({ pages: [{ id: 4, bytes: page(7) }], replaces: [5] }), kind).rejects.toThrow(RangeError);
      await s.commit({
        pages: [
          { id: 2, bytes: page(7) },
          { id: 4, bytes: page(4) },
        ],
        replaces: [2, 4],
      });
      expect(await s.readPage(2), kind).toEqual(page(7));
      expect(await s.listPages(), kind).toEqual([1, 2, 3, 4]);
      await s.close();
      s = await open();
      expect(await s.readPage(2), kind).toEqual(page(7));
      expect(await s.listPages(), kind).toEqual([1, 2, 3, 4]);
      if (s.compact !== undefined) {
        await s.commit({ deletes: [1, 3] });
        expect((await s.compact({ minDeadFraction: 0.01 })).segmentsRewritten).toBeGreaterThan(0);
        await s.close();
        s = await open();
        expect(await s.readPage(2), kind).toEqual(page(7));
        expect(await s.listPages(), kind).toEqual([2, 4]);
      }
      expect((await s.stats()).pageCount, kind).toBe((await s.listPages()).length);
      await s.close();
    }
  });
});

function cloneMedium(m: MemoryMedium): MemoryMedium {
  const c = new MemoryMedium();
  for (const [id, p] of m.pages) c.pages.set(id, { bytes: p.bytes.slice(), crc: p.crc });
  if (m.manifest !== undefined) c.manifest = { bytes: m.manifest.bytes.slice(), crc: m.manifest.crc };
  return c;
}

function differs(a: MemoryMedium, b: MemoryMedium, id: number): boolean {
  const x = a.pages.get(id)!.bytes;
  const y = b.pages.get(id)!.bytes;
  return x.length !== y.length || x.some((v, i) => v !== y[i]) || crc32c(x) !== crc32c(y);
}
