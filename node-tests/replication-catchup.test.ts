// A catch-up larger than every buffer (src/replication/primary.ts): a replica bootstraps from a
// store whose pages exceed the primary's per-replica send queue bound many times over. The pages
// stream in bounded messages, each batch read only once the replica's queue has drained below the
// low-water mark, while commits go on; the replica reports its progress and applies the whole
// store in one session. Small limits (internal options) keep it fast.
import { describe, it, expect } from 'vitest';
import { openStore, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { engineOf as partsOf } from '../src/engine/store';
import { Primary } from '../src/replication/primary';
import { Replica } from '../src/replication/replica';
import { decodeMessage, MSG_PAGES } from '../src/replication/messages';
import { sessionPair } from './support/sessions';
import { options, recipient, schema, signer } from './support/replication-stores';

/**
 * An in-process session pair whose primary → replica direction takes one message per macrotask
 * (a slow link: `send` resolves when the message is delivered), counting the bytes delivered.
 */
const slowPair = (counter: { delivered: number; pagesMessages: number }) =>
  sessionPair({
    delay: () => new Promise((r) => setTimeout(r, 1)),
    tap: (bytes) => {
      counter.delivered += bytes.length;
      if (decodeMessage(bytes).type === MSG_PAGES) counter.pagesMessages++;
      return bytes;
    },
  });

const QUEUE = 1 << 20; // the per-replica send queue bound
const LOW = 256 << 10;
const MESSAGE = 128 << 10;

describe('replication: a catch-up larger than every buffer', () => {
  it('streams under the queue bound with back-pressure, reports progress, and applies in one session while commits go on', async () => {
    const store = await openStore({ ...options, storage: 'memory' });
    const words = store.collection('w', { schema });
    const text = (b: number, i: number) =>
      Array.from({ length: 64 }, (_, k) => ((b * 7919 + i * 104729 + k * 31337) % 1e9).toString(36)).join(' ');
    for (let b = 0; b < 40; b++)
      await store.batch((tx) => {
        for (let i = 0; i < 400; i++) tx.put(words, `k${b}-${i}`, { lemma: text(b, i), n: i });
      });
    const parts = partsOf(store);
    const backlog = (await Promise.all((await parts.pages.listPages()).map((id) => parts.pages.readPage(id)))).reduce(
      (n, p) => n + (p?.length ?? 0),
      0,
    );
    expect(backlog).toBeGreaterThan(5 * QUEUE); // larger than every bound here

    // What the primary has read of its pages for the catch-up but not yet delivered is bounded.
    const counter = { delivered: 0, pagesMessages: 0 };
    let read = 0;
    let outstanding = 0;
    const readPage = parts.pages.readPage.bind(parts.pages);
    parts.pages.readPage = async (id: number) => {
      const page = await readPage(id);
      read += page?.length ?? 0;
      outstanding = Math.max(outstanding, read - counter.delivered);
      return page;
    };
    const primary = new Primary(parts, { maxQueuedBytes: QUEUE, lowWaterBytes: LOW, messageBytes: MESSAGE });
    let sessions = 0;
    const replica = await Replica.open(await openMemoryPageStore({ medium: new MemoryMedium() }), {
      unlock: recipient.secretKey,
      backoffMs: [10],
      connect: async () => {
        sessions++;
        const [p, r] = slowPair(counter);
        void primary.accept(p);
        return r;
      },
    });
    // Progress while it streams, and commits (a checkpoint among them) meanwhile.
    const progress: number[] = [];
    let n = 0;
    while (replica.status().appliedWatermark === 0) {
      const c = replica.status().catchUp;
      if (c !== undefined) progress.push(c.bytes);
      if (n < 20) await words.put(`late${n++}`, { lemma: 'late', n });
      if (n === 10) await store.checkpoint();
      await new Promise((r) => setTimeout(r, 5));
    }
    await replica.applied(store.info().commit);
    expect(sessions).toBe(1); // never dropped: no reconnect loop
    expect(outstanding).toBeLessThanOrEqual(QUEUE + MESSAGE);
    expect(counter.pagesMessages).toBeGreaterThan(backlog / MESSAGE / 2);
    expect(progress.length).toBeGreaterThan(2);
    expect(progress.some((b, i) => i > 0 && b > progress[i - 1])).toBe(true);
    expect(replica.status().catchUp).toBeUndefined();
    const rw = replica.collection('w', { schema });
    expect(rw.size).toBe(40 * 400 + n);
    expect(await rw.get('k39-399')).toEqual({ lemma: text(39, 399), n: 399 });
    await words.put('after', { lemma: 'after', n: 1 });
    await replica.applied(store.info().commit); // live from then on
    expect(rw.has('after')).toBe(true);
    await replica.close();
    await primary.close();
    await store.close();
  }, 60_000);
});
