// A primary that is trusted but misbehaves: what it ships is checked by the replica in the role the
// verified manifest and key directory give each page id, never by the page's own first bytes
// (src/replication/_check.ts), and what it sends ahead of a commit is bounded (src/replication/replica.ts).
// A server's handshake slots (src/replication/tcp.ts): a connection that sends a byte has not yet
// spoken, and at the overall bound the busiest source gives way. Loopback only (127.0.0.x).
import { describe, it, expect } from 'vitest';
import { generateSigner, openStore, openMemoryPageStore, type Store } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { engineOf as partsOf } from '../src/engine/store';
import { pageKind } from '../src/engine/page-format';
import { Primary } from '../src/replication/primary';
import { Replica } from '../src/replication/replica';
import { decodeMessage, encodeMessage, MSG_COMMIT, MSG_PAGES, MSG_REPLACE } from '../src/replication/messages';
import { listen } from '../src/replication/tcp';
import { connect as netConnect, type Socket } from 'node:net';
import { sessionPair } from './support/sessions';
import { coveredStore, recipient, schema, signer } from './support/replication-stores';

/** Follows `primary` through sessions whose primary messages pass `tap`; counts the sessions. */
async function follow(
  primary: Primary,
  tap: (bytes: Uint8Array) => Uint8Array | undefined,
  medium = new MemoryMedium(),
) {
  const counter = { sessions: 0 };
  const replica = await Replica.open(await openMemoryPageStore({ medium }), {
    unlock: recipient.secretKey,
    backoffMs: [10],
    connect: async () => {
      counter.sessions++;
      const [p, r] = sessionPair({ tap });
      void primary.accept(p);
      return r;
    },
  });
  return { replica, counter };
}

async function readsAll(replica: Replica): Promise<void> {
  const rw = replica.collection<{ lemma: string; n: number }>('w', { schema });
  for (let b = 0; b < 4; b++)
    for (let i = 0; i < 20; i++) expect(await rw.get(`k${b}-${i}`)).toEqual({ lemma: `word ${b} ${i}`, n: i });
}

describe('replication: a page is checked in the role its id has', () => {
  for (const [kind, magic] of [
    ['checkpoint', 'PQDC'],
    ['directory', 'PQDD'],
  ] as const)
    it(`a covered commit page shipped with ${kind} magic and junk is refused; the page comes again whole`, async () => {
      const store = await coveredStore();
      const after = partsOf(store).pipeline.manifest.directory!.afterPage;
      const primary = new Primary(partsOf(store));
      let forged = 0;
      const tap = (bytes: Uint8Array): Uint8Array => {
        const m = decodeMessage(bytes);
        if (forged !== 0 || (m.type !== MSG_COMMIT && m.type !== MSG_PAGES)) return bytes;
        const page = m.pages.find((p) => p.id <= after && pageKind(p.bytes) === 'commit');
        if (page === undefined) return bytes;
        forged = page.id;
        const junk = new Uint8Array(page.bytes.length).fill(0x5a);
        junk.set(new TextEncoder().encode(magic));
        page.bytes = junk;
        return encodeMessage(m);
      };
      const { replica, counter } = await follow(primary, tap);
      await replica.applied(store.info().commit);
      await readsAll(replica);
      expect(forged).toBeGreaterThan(0);
      expect(counter.sessions).toBe(2); // the forged catch-up was refused, the next one applied
      expect(replica.status().lastError).toMatch(
        new RegExp(`^(AUTH_FAILED|CORRUPTION): shipped page ${forged} does not open`),
      );
      await replica.close();
      await primary.close();
      await store.close();
    });
  it('a replacement of a covered commit page sent with checkpoint magic and junk is refused; the page comes again whole', async () => {
    const store = await coveredStore();
    const parts = partsOf(store);
    const after = parts.pipeline.manifest.directory!.afterPage;
    const primary = new Primary(parts);
    const medium = new MemoryMedium();
    const first = await follow(primary, (bytes) => bytes, medium);
    await first.replica.applied(store.info().commit);
    await first.replica.close();
    let id = 0;
    for (const p of await parts.pages.listPages())
      if (p <= after && pageKind((await parts.pages.readPage(p))!) === 'commit') id ||= p;
    medium.flipByte(id, medium.pages.get(id)!.bytes.length - 5); // the replica's copy went bad: it is sent again
    let forged = 0;
    const { replica, counter } = await follow(
      primary,
      (bytes) => {
        const m = decodeMessage(bytes);
        if (forged !== 0 || m.type !== MSG_REPLACE) return bytes;
        const page = m.pages.find((p) => p.id === id)!;
        forged = page.id;
        const junk = new Uint8Array(page.bytes.length).fill(0x5a);
        junk.set(new TextEncoder().encode('PQDC'));
        page.bytes = junk;
        return encodeMessage(m);
      },
      medium,
    );
    await store.collection('w', { schema }).put('later', { lemma: 'later', n: 1 });
    await replica.applied(store.info().commit);
    await readsAll(replica);
    expect(forged).toBe(id);
    expect(counter.sessions).toBe(2);
    expect(replica.status().lastError).toMatch(
      new RegExp(`^(AUTH_FAILED|CORRUPTION): shipped page ${id} does not open`),
    );
    await replica.close();
    await primary.close();
    await store.close();
  });
});

describe('replication: what a primary sends ahead of a commit is bounded', () => {
  /** Delivers `forged` in place of the primary's first message, then follows it honestly. */
  async function refused(forged: () => Uint8Array, expected: RegExp): Promise<void> {
    const store = await coveredStore();
    const primary = new Primary(partsOf(store));
    let armed = true;
    const { replica, counter } = await follow(primary, (bytes) => {
      if (!armed) return bytes;
      armed = false;
      return forged();
    });
    await replica.applied(store.info().commit);
    await readsAll(replica);
    expect(counter.sessions).toBe(2);
    expect(replica.status().lastError).toMatch(expected);
    await replica.close();
    await primary.close();
    await store.close();
  }

  it('a PAGES message of 2^17 empty pages is refused with a typed error', async () => {
    const pages = Array.from({ length: 1 << 17 }, (_, i) => ({ id: i + 1, bytes: new Uint8Array(0) }));
    await refused(() => encodeMessage({ type: MSG_PAGES, pages }), /^CORRUPTION: the primary sent page 1 empty/);
  });

  it('a page sent twice ahead of its commit is refused', async () => {
    const page = { id: 3, bytes: new Uint8Array(40).fill(7) };
    await refused(
      () => encodeMessage({ type: MSG_PAGES, pages: [page, page] }),
      /^CORRUPTION: the primary sent page 3 twice/,
    );
  });
});

describe('replication server: which unauthenticated connection gives way', () => {
  /** Connections from `from` (127.0.0.x), in order, each sending `bytes` once connected. */
  async function open(port: number, from: string, bytes: number): Promise<{ s: Socket; closed: boolean }> {
    const s = netConnect({ host: '127.0.0.1', port, localAddress: from });
    s.on('error', () => undefined);
    await new Promise<void>((r) => s.once('connect', () => r()));
    const c = { s, closed: false };
    s.on('close', () => void (c.closed = true));
    if (bytes > 0) s.write(new Uint8Array(bytes).fill(1));
    return c;
  }
  /** The first of `cs` the server ends (every other one still open then). */
  const firstClosed = (cs: { s: Socket; closed: boolean }[]) =>
    new Promise<number>((resolve) => cs.forEach((c, i) => c.s.once('close', () => resolve(i))));
  const settle = () => new Promise((r) => setTimeout(r, 200)); // the server has read what was sent

  async function server(maxHandshakes: number, maxHandshakesPerSource: number) {
    return listen({
      port: 0,
      identity: signer,
      trustedPeers: [generateSigner().publicKey],
      onSession: () => undefined,
      onError: () => undefined,
      maxHandshakes,
      maxHandshakesPerSource,
    });
  }

  it('a byte is not a first record: of one source, the older of a one-byte and a silent connection goes', async () => {
    const l = await server(32, 2);
    const cs = [await open(l.port, '127.0.0.2', 1), await open(l.port, '127.0.0.2', 0)];
    try {
      await settle();
      const first = firstClosed(cs);
      cs.push(await open(l.port, '127.0.0.2', 0));
      expect(await first).toBe(0);
      expect(cs[1].closed).toBe(false);
    } finally {
      for (const c of cs) c.s.destroy();
      await l.close();
    }
  }, 10_000);

  it('at the overall bound a connection of the source with the most goes, not the oldest of another', async () => {
    const l = await server(4, 3);
    const cs = [await open(l.port, '127.0.0.3', 1)];
    for (let i = 0; i < 3; i++) cs.push(await open(l.port, '127.0.0.2', 1));
    try {
      await settle();
      const first = firstClosed(cs);
      cs.push(await open(l.port, '127.0.0.4', 0));
      expect(await first).toBe(1); // the oldest of 127.0.0.2, which held three
      expect(cs[0].closed).toBe(false);
    } finally {
      for (const c of cs) c.s.destroy();
      await l.close();
    }
  }, 10_000);
});
