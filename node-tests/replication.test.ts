// Shipping sealed commits from a primary to replicas (src/replication/primary.ts, replica.ts) over
// in-process message sessions: catch-up from any watermark, every commit verified before it is
// applied, resume after the replica is closed (as after a kill) from its own page store, and a
// refused commit leaving the replica at its watermark. The post-quantum channel and TCP transport
// under these sessions are tested in node-tests/channel.test.ts.
import { describe, it, expect, vi } from 'vitest';
import { generateSigner, openStore, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { engineOf as partsOf } from '../src/engine/store';
import { Primary } from '../src/replication/primary';
import { Replica } from '../src/replication/replica';
import { decodeMessage, encodeMessage, MSG_COMMIT, MSG_PAGES, type CommitMessage } from '../src/replication/messages';
import { Store } from '../src/engine/store';
import { sessionPair } from './support/sessions';
import { options, recipient, schema, signer } from './support/replication-stores';

const pair = (tap?: (bytes: Uint8Array) => Uint8Array | undefined) => sessionPair({ tap });

async function setup(tap?: (bytes: Uint8Array) => Uint8Array | undefined, idleTimeoutMs?: number) {
  const store = await openStore({ ...options, storage: 'memory' });
  const primary = new Primary(partsOf(store));
  const medium = new MemoryMedium();
  const sessions = { opened: 0 };
  const connect = async () => {
    const [p, r] = pair(tap);
    sessions.opened++;
    void primary.accept(p);
    return r;
  };
  const open = async () =>
    Replica.open(await openMemoryPageStore({ medium }), {
      unlock: recipient.secretKey,
      connect,
      backoffMs: [10],
      ...(idleTimeoutMs !== undefined ? { idleTimeoutMs } : {}),
    });
  return { store, primary, medium, open, sessions };
}

describe('replication: shipping sealed commits', () => {
  it('a replica catches up from nothing, follows every commit, and reads what it applied', async () => {
    const { store, primary, open } = await setup();
    const words = store.collection('w', { schema });
    for (let i = 0; i < 20; i++) await words.put(`a${i}`, { lemma: `a${i}`, n: i });
    const replica = await open();
    await replica.applied(store.info().commit);
    const rw = replica.collection<{ lemma: string; n: number }>('w', { schema });
    expect(rw.size).toBe(20);
    for (let i = 20; i < 40; i++) await words.put(`a${i}`, { lemma: `a${i}`, n: i });
    await words.delete('a3');
    await store.checkpoint();
    await replica.applied(store.info().commit);
    expect(rw.size).toBe(39);
    expect(await rw.get('a39')).toEqual({ lemma: 'a39', n: 39 });
    expect(rw.has('a3')).toBe(false);
    const s = replica.status();
    expect(s).toMatchObject({ appliedWatermark: store.info().commit, lagCommits: 0, connected: true });
    await replica.close();
    await primary.close();
    await store.close();
  });

  it('a catch-up larger than one message goes ahead in PAGES messages and applies whole', async () => {
    let pagesMessages = 0;
    const { store, primary, open } = await setup((bytes) => {
      if (decodeMessage(bytes).type === MSG_PAGES) pagesMessages++;
      return bytes;
    });
    const words = store.collection('w', { schema });
    const filler = 'x'.repeat(400);
    for (let b = 0; b < 12; b++)
      await store.batch((tx) => {
        for (let i = 0; i < 1000; i++) tx.put(words, `k${b}-${i}`, { lemma: filler, n: i });
      });
    const replica = await open();
    await replica.applied(store.info().commit);
    expect(pagesMessages).toBeGreaterThan(0); // over PAGES_PER_MESSAGE_BYTES of pages
    expect(replica.collection('w', { schema }).size).toBe(12_000);
    await replica.close();
    await primary.close();
    await store.close();
  }, 30_000);

  it('a replica closed (as after a kill) resumes from its own watermark: only what it lacks is sent', async () => {
    let shipped = 0;
    const { store, primary, open } = await setup((bytes) => {
      const m = decodeMessage(bytes);
      if (m.type === MSG_COMMIT) shipped += m.pages.length;
      return bytes;
    });
    const words = store.collection('w', { schema });
    for (let i = 0; i < 10; i++) await words.put(`a${i}`, { lemma: 'x', n: i });
    let replica = await open();
    await replica.applied(store.info().commit);
    const before = replica.status().appliedWatermark;
    await replica.close();
    for (let i = 10; i < 15; i++) await words.put(`a${i}`, { lemma: 'y', n: i });
    shipped = 0;
    const opens = vi.spyOn(Store, 'over');
    replica = await open();
    expect(replica.status().appliedWatermark).toBe(before); // its own durable watermark
    await replica.applied(store.info().commit);
    expect(shipped).toBe(5); // the five commit pages written while it was down, nothing more
    expect(opens).toHaveBeenCalledTimes(1); // its own store; the catch-up only added records
    opens.mockRestore();
    expect(replica.collection('w', { schema }).size).toBe(15);
    await replica.close();
    await primary.close();
    await store.close();
  });

  it('a replica whose medium lost one of its pages does not open (CORRUPTION): it never serves or follows from it', async () => {
    const { store, primary, medium, open } = await setup();
    const words = store.collection('w', { schema });
    for (let i = 0; i < 10; i++) await words.put(`a${i}`, { lemma: 'x', n: i });
    let replica = await open();
    await replica.applied(store.info().commit);
    await replica.close();
    for (let i = 10; i < 13; i++) await words.put(`a${i}`, { lemma: 'y', n: i });
    const pages = await openMemoryPageStore({ medium });
    const ids = await pages.listPages();
    await pages.deletePages([ids[3]]); // a commit page of the replica's store gone from its medium
    await pages.close();
    const opens = vi.spyOn(Store, 'over');
    await expect(open()).rejects.toMatchObject({ code: 'CORRUPTION' }); // its own store no longer verifies
    expect(opens).not.toHaveBeenCalled(); // its engine did not open: no store was made over it
    opens.mockRestore();
    await primary.close();
    await store.close();
  });

  it('a commit that fails verification is refused and the replica stays at its watermark', async () => {
    let tamper = false;
    const { store, primary, open } = await setup((bytes) => {
      const m = decodeMessage(bytes);
      if (!tamper || m.type !== MSG_COMMIT || m.pages.length === 0) return bytes;
      m.pages[0].bytes[m.pages[0].bytes.length - 20] ^= 1; // a flipped bit in a sealed page
      return encodeMessage(m);
    });
    const words = store.collection('w', { schema });
    await words.put('a', { lemma: 'a', n: 1 });
    const replica = await open();
    await replica.applied(store.info().commit);
    const at = replica.status().appliedWatermark;
    tamper = true;
    await words.put('b', { lemma: 'b', n: 2 });
    await new Promise((r) => setTimeout(r, 200));
    expect(replica.status().appliedWatermark).toBe(at);
    expect(replica.status().lastError).toMatch(/CORRUPTION|AUTH_FAILED/);
    expect(replica.collection('w', { schema }).has('b')).toBe(false);
    tamper = false; // the link heals: the replica reconnects and catches up
    await replica.applied(store.info().commit);
    expect(await replica.collection('w', { schema }).get('b')).toEqual({ lemma: 'b', n: 2 });
    await replica.close();
    await primary.close();
    await store.close();
  });
});

describe('replication: commits that only add records are taken without opening the store again', () => {
  it('puts and deletes follow in place (lexical search included); a checkpoint opens the store anew', async () => {
    const opens = vi.spyOn(Store, 'over');
    const { store, primary, open } = await setup();
    const text = { schema, index: { text: ['lemma'] } } as const;
    const words = store.collection('w', text);
    for (let i = 0; i < 5; i++) await words.put(`a${i}`, { lemma: `alpha ${i}`, n: i });
    await store.checkpoint();
    const replica = await open();
    await replica.applied(store.info().commit);
    const rw = replica.collection<{ lemma: string; n: number }>('w', text);
    expect((await rw.search('alpha')).length).toBe(5); // the index is loaded now
    const before = opens.mock.calls.length;
    for (let i = 0; i < 10; i++) await words.put(`b${i}`, { lemma: `beta ${i}`, n: i });
    await words.delete('a0');
    await store.batch((tx) => {
      tx.put(words, 'c', { lemma: 'gamma', n: 1 });
      tx.delete(words, 'b9');
    });
    await replica.applied(store.info().commit);
    expect(opens.mock.calls.length).toBe(before); // no store opened for them
    expect(rw.size).toBe(14);
    expect((await rw.search('beta')).map((h) => h.id).sort()).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => `b${i}`));
    expect((await rw.search('alpha')).length).toBe(4);
    expect(await rw.get('c')).toEqual({ lemma: 'gamma', n: 1 });
    await store.checkpoint();
    await replica.applied(store.info().commit);
    expect(opens.mock.calls.length).toBe(before + 1); // a checkpoint changes more than records
    await words.put('d', { lemma: 'delta', n: 4 });
    await replica.applied(store.info().commit);
    expect(opens.mock.calls.length).toBe(before + 1);
    expect((await rw.search('delta')).map((h) => h.id)).toEqual(['d']);
    opens.mockRestore();
    await replica.close();
    // What the replica holds is what a full open of its own pages verifies.
    const reopened = await open();
    expect(reopened.status().appliedWatermark).toBe(store.info().commit);
    expect(reopened.collection('w', text).size).toBe(15);
    await reopened.close();
    await primary.close();
    await store.close();
  });

  type Tamper = (m: CommitMessage, previous: CommitMessage) => void;
  const tampers: [string, Tamper, RegExp][] = [
    ['its page left out', (m) => void (m.pages = []), /CORRUPTION/],
    [
      'the previous commit page under its id',
      (m, prev) => void (m.pages[0].bytes = prev.pages[0].bytes),
      /AUTH_FAILED/,
    ],
    ['a flipped bit in its manifest', (m) => void (m.manifest[m.manifest.length - 5] ^= 1), /AUTH_FAILED|CORRUPTION/],
    ['the previous manifest', (m, prev) => void (m.manifest = prev.manifest), /CORRUPTION|ROLLBACK/],
    ['a page id past the manifest', (m) => void (m.pages[0].id += 1000), /CORRUPTION|AUTH_FAILED/],
  ];
  for (const [what, tamper, error] of tampers)
    it(`a records-only commit with ${what} is refused; the replica stays at its watermark`, async () => {
      let armed = false;
      let previous: CommitMessage | undefined;
      const { store, primary, open } = await setup((bytes) => {
        const m = decodeMessage(bytes);
        if (m.type !== MSG_COMMIT) return bytes;
        if (m.snapshot) return armed ? undefined : bytes; // no catch-up while armed: the refusal holds
        const kept = structuredClone(m);
        if (armed && previous !== undefined) tamper(m, previous);
        previous = kept;
        return encodeMessage(m);
      }, 100);
      const words = store.collection('w', { schema });
      await words.put('a', { lemma: 'a', n: 1 });
      const replica = await open();
      await replica.applied(store.info().commit);
      await words.put('b', { lemma: 'b', n: 2 });
      await replica.applied(store.info().commit);
      const at = replica.status().appliedWatermark;
      armed = true;
      await words.put('c', { lemma: 'c', n: 3 });
      const errors = new Set<string>(); // the refusal, then the silent sessions that follow it
      for (const until = Date.now() + 300; Date.now() < until; await new Promise((r) => setTimeout(r, 2)))
        errors.add(replica.status().lastError ?? '');
      expect(replica.status().appliedWatermark).toBe(at);
      expect([...errors].filter((e) => error.test(e))).not.toEqual([]);
      expect(replica.collection('w', { schema }).has('c')).toBe(false);
      armed = false; // the catch-up after a reconnect is a snapshot, sent untouched
      await replica.applied(store.info().commit);
      expect(await replica.collection('w', { schema }).get('c')).toEqual({ lemma: 'c', n: 3 });
      await replica.close();
      await primary.close();
      await store.close();
    });
});

describe('replication: a silent session', () => {
  it('is taken as lost after idleTimeoutMs; the replica reconnects and catches up once messages flow again', async () => {
    let cut = false; // the link drops everything the primary sends, as a cable pulled (no end of stream)
    const { store, primary, open, sessions } = await setup((bytes) => (cut ? undefined : bytes), 150);
    const words = store.collection('w', { schema });
    await words.put('a', { lemma: 'a', n: 1 });
    const replica = await open();
    await replica.applied(store.info().commit);
    expect(sessions.opened).toBe(1);
    cut = true;
    await words.put('b', { lemma: 'b', n: 2 });
    const lost = Date.now();
    while (sessions.opened < 2) await new Promise((r) => setTimeout(r, 10));
    expect(Date.now() - lost).toBeLessThan(2000);
    expect(replica.status().lastError).toMatch(/IO_ERROR: no message from the primary for 150 ms/);
    expect(replica.status().appliedWatermark).toBe(store.info().commit - 1);
    cut = false;
    await replica.applied(store.info().commit);
    expect(await replica.collection('w', { schema }).get('b')).toEqual({ lemma: 'b', n: 2 });
    await replica.close();
    await primary.close();
    await store.close();
  });

  it('an idle primary keeps a session alive with its status messages', async () => {
    const { store, primary, open, sessions } = await setup(undefined, 1200);
    await store.collection('w', { schema }).put('a', { lemma: 'a', n: 1 });
    const replica = await open();
    await replica.applied(store.info().commit);
    await new Promise((r) => setTimeout(r, 2500)); // > 2 × the idle timeout, statuses every 500 ms
    expect(sessions.opened).toBe(1);
    expect(replica.status()).toMatchObject({ connected: true, lagCommits: 0 });
    await replica.close();
    await primary.close();
    await store.close();
  });
});

describe('replication: reads while commits are applied', () => {
  it('a read that started on a store a commit then replaced still completes', async () => {
    const { store, primary, open } = await setup();
    const words = store.collection('w', { schema });
    for (let i = 0; i < 50; i++) await words.put(`a${i}`, { lemma: `a${i}`, n: i });
    const replica = await open();
    await replica.applied(store.info().commit);
    const rw = replica.collection<{ lemma: string; n: number }>('w', { schema });
    let writing = true;
    const failures: unknown[] = [];
    let reads = 0;
    const reader = (async () => {
      while (writing) {
        const id = `a${reads++ % 50}`;
        await rw.get(id).catch((e) => failures.push(e));
        if (reads % 25 === 0) for await (const _ of rw.scan({ limit: 5 })); // a scan across a swap too
      }
    })();
    for (let i = 0; i < 60; i++) await words.put(`b${i}`, { lemma: 'b', n: i });
    await replica.applied(store.info().commit);
    writing = false;
    await reader;
    expect(failures).toEqual([]);
    expect(reads).toBeGreaterThan(60);
    await replica.close();
    await primary.close();
    await store.close();
  });
});

describe('replication over TCP: what crosses the wire', () => {
  it('carries no plaintext and no key bytes (captured through a relaying proxy)', async () => {
    const net = await import('node:net');
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openStore: openNodeStore, openReplica } = await import('../src/node');
    const dir = await mkdtemp(join(tmpdir(), 'pqdb-wire-'));
    const primaryId = generateSigner();
    const replicaId = generateSigner();
    const store = await openNodeStore({ ...options, location: join(dir, 'p') });
    const server = await store.serveReplication({ port: 0, identity: primaryId, trustedPeers: [replicaId.publicKey] });
    const captured: Buffer[] = [];
    const proxy = net.createServer((c) => {
      const up = net.connect(server.port, '127.0.0.1');
      c.on('data', (d) => (captured.push(Buffer.from(d)), up.write(d)));
      up.on('data', (d) => (captured.push(Buffer.from(d)), c.write(d)));
      c.on('error', () => up.destroy());
      up.on('error', () => c.destroy());
      c.on('close', () => up.destroy());
      up.on('close', () => c.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    const words = store.collection('w', { schema });
    const secrets = Array.from({ length: 20 }, (_, i) => `plaintext-marker-${i}-${'x'.repeat(24)}`);
    for (const [i, lemma] of secrets.entries()) await words.put(`id-marker-${i}`, { lemma, n: i });
    const replica = await openReplica({
      location: join(dir, 'r'),
      unlock: recipient.secretKey,
      identity: replicaId,
      primary: { host: '127.0.0.1', port, publicKey: primaryId.publicKey },
    });
    await replica.applied(store.info().commit);
    expect((await replica.collection('w', { schema }).get('id-marker-3'))?.lemma).toBe(secrets[3]);
    await replica.close();
    const wire = Buffer.concat(captured);
    expect(wire.length).toBeGreaterThan(1000);
    for (const s of [...secrets, 'id-marker-', 'lemma']) expect(wire.includes(Buffer.from(s))).toBe(false);
    const keys = [recipient.secretKey, signer.secretKey, primaryId.secretKey, replicaId.secretKey];
    for (const k of keys)
      for (let at = 0; at + 32 <= k.length; at += 512)
        expect(wire.includes(Buffer.from(k.subarray(at, at + 32)))).toBe(false);
    const hot = store.dataKeyFor(2, 1, '{}').key; // the data key the records are sealed under
    expect(wire.includes(Buffer.from(hot))).toBe(false);
    proxy.close();
    await server.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
});

describe('replication over TCP: a primary restarted', () => {
  it('the replica reconnects with backoff and catches up from its watermark', async () => {
    const { mkdtemp, rm } = await import('node:fs/promises');
    const { tmpdir } = await import('node:os');
    const { join } = await import('node:path');
    const { openStore: openNodeStore, openReplica } = await import('../src/node');
    const dir = await mkdtemp(join(tmpdir(), 'pqdb-restart-'));
    const primaryId = generateSigner();
    const replicaId = generateSigner();
    const serve = async (port = 0) => {
      const store = await openNodeStore({ ...options, location: join(dir, 'p') });
      return {
        store,
        server: await store.serveReplication({ port, identity: primaryId, trustedPeers: [replicaId.publicKey] }),
      };
    };
    let { store, server } = await serve();
    const port = server.port;
    await store.collection('w', { schema }).put('a', { lemma: 'a', n: 1 });
    const replica = await openReplica({
      location: join(dir, 'r'),
      unlock: recipient.secretKey,
      identity: replicaId,
      primary: { host: '127.0.0.1', port, publicKey: primaryId.publicKey },
      backoffMs: [20, 50, 100],
    });
    await replica.applied(store.info().commit);
    await server.close();
    await store.close();
    await new Promise((r) => setTimeout(r, 150));
    expect(replica.status().connected).toBe(false);
    ({ store, server } = await serve(port));
    await store.collection('w', { schema }).put('b', { lemma: 'b', n: 2 });
    await replica.applied(store.info().commit);
    expect(await replica.collection('w', { schema }).get('b')).toEqual({ lemma: 'b', n: 2 });
    expect(replica.status()).toMatchObject({ connected: true, lagCommits: 0, appliedWatermark: store.info().commit });
    await replica.close();
    await server.close();
    await store.close();
    await rm(dir, { recursive: true, force: true });
  });
});
