// The `applied` hooks on whole stores (src/engine/commit.ts, apply.ts, follow.ts): a hook that
// throws after a durable put never makes the put reject (the record is readable after reopen and
// store.info() reports the failure); the commits a replica takes in place run the replica store's
// `applied` hooks, marked foreign, with the writes of their pages; a primary's close removes the
// hook it registered.
import { describe, it, expect, vi } from 'vitest';
import { openStore, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { engineOf as partsOf } from '../src/engine/store';
import type { AppliedCommit } from '../src/engine/commit';
import { Primary } from '../src/replication/primary';
import { Replica } from '../src/replication/replica';
import { Store } from '../src/engine/store';
import { sessionPair } from './support/sessions';
import { options, recipient, schema } from './support/replication-stores';

describe('applied hooks', () => {
  it('a hook that throws (or rejects) after a durable put: the put resolves, the record is there after reopen, the failure is reported', async () => {
    const medium = new MemoryMedium();
    const store = await openStore({ ...options, storage: await openMemoryPageStore({ medium }) });
    const text = { schema, index: { text: ['lemma'] } } as const;
    const words = store.collection('w', text);
    await words.put('a', { lemma: 'alpha', n: 1 });
    const pipeline = partsOf(store).pipeline;
    pipeline.on({
      applied: () => {
        throw new Error('a hook failed');
      },
    });
    pipeline.on({ applied: () => Promise.reject(new Error('a hook rejected')) });
    const after: number[] = [];
    pipeline.on({ applied: (c) => void after.push(c.manifest.commit) });
    expect(store.info().afterCommitError).toBeUndefined();
    await words.put('b', { lemma: 'beta', n: 2 }); // resolves: the record is durable
    await store.batch((tx) => tx.put(words, 'c', { lemma: 'gamma', n: 3 }));
    expect(after).toEqual([store.info().commit - 1, store.info().commit]); // the hooks after them ran
    expect(store.info().afterCommitError).toBe('a hook rejected');
    // The hooks registered before them did their work: directory, index.
    expect(await words.get('b')).toEqual({ lemma: 'beta', n: 2 });
    expect((await words.search('gamma')).map((h) => h.id)).toEqual(['c']);
    await store.close();
    const again = await openStore({ ...options, create: false, storage: await openMemoryPageStore({ medium }) });
    const w2 = again.collection('w', text);
    expect(await w2.get('b')).toEqual({ lemma: 'beta', n: 2 });
    expect(await w2.get('c')).toEqual({ lemma: 'gamma', n: 3 });
    expect(again.info().afterCommitError).toBeUndefined();
    await again.close();
  });

  it('commits a replica takes in place run its store’s applied hooks, marked foreign, with their writes', async () => {
    const store = await openStore({ ...options, storage: 'memory' });
    const primary = new Primary(partsOf(store));
    const connect = async () => {
      const [p, r] = sessionPair({});
      void primary.accept(p);
      return r;
    };
    // The stores the replica opens (its store is its own): the last one serves it.
    const opened: Store[] = [];
    // The replica opens engines and serves each through a Store made over it.
    const over = Store.over.bind(Store);
    const spy = vi.spyOn(Store, 'over').mockImplementation((...args) => {
      const s = over(...args);
      opened.push(s);
      return s;
    });
    const words = store.collection('w', { schema });
    await words.put('a0', { lemma: 'a0', n: 0 });
    const replica = await Replica.open(await openMemoryPageStore({ medium: new MemoryMedium() }), {
      unlock: recipient.secretKey,
      connect,
      backoffMs: [10],
    });
    await replica.applied(store.info().commit);
    const rs = opened.at(-1)!;
    const seen: AppliedCommit[] = [];
    const off = partsOf(rs).pipeline.on({ applied: (c) => void seen.push(c) });
    const count = opened.length;
    for (let i = 1; i <= 5; i++) await words.put(`a${i}`, { lemma: `a${i}`, n: i });
    await words.delete('a0');
    await replica.applied(store.info().commit);
    expect(opened.length).toBe(count); // taken in place, not opened anew
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((c) => c.foreign && c.page === undefined)).toBe(true);
    expect(seen.flatMap((c) => c.writes.map((w) => `${w.kind} ${w.id}`))).toEqual([
      ...[1, 2, 3, 4, 5].map((i) => `put a${i}`),
      'delete a0',
    ]);
    expect(seen.flatMap((c) => c.commitPages).length).toBe(6);
    expect(seen.at(-1)!.manifest.commit).toBe(store.info().commit);
    // The store's own hooks ran for them too: the directory follows, and nothing wrote (read-only).
    const rw = replica.collection<{ lemma: string; n: number }>('w', { schema });
    expect(rw.size).toBe(5);
    expect(await rw.get('a5')).toEqual({ lemma: 'a5', n: 5 });
    expect(rs.info()).not.toHaveProperty('afterCommitError');
    expect(rs.info()).not.toHaveProperty('autoCheckpointError');
    off();
    spy.mockRestore();
    await replica.close();
    await primary.close();
    await store.close();
  });

  it('a primary listens to durable commits through the engine, and its close removes the listener', async () => {
    const store = await openStore({ ...options, storage: 'memory' });
    const engine = partsOf(store);
    let listening = 0;
    let shipped = 0;
    const ship = (listener: (c: AppliedCommit) => void) => {
      listening++;
      const off = engine.ship((c) => (shipped++, listener(c)));
      return () => (listening--, off());
    };
    const source = { pages: engine.pages, pipeline: engine.pipeline, ship };
    const primaries = [new Primary(source), new Primary(source)];
    expect(listening).toBe(2);
    const words = store.collection('w', { schema });
    await words.put('a', { lemma: 'a', n: 1 });
    expect(shipped).toBe(2);
    for (const p of primaries) await p.close();
    expect(listening).toBe(0);
    await words.put('b', { lemma: 'b', n: 2 });
    expect(shipped).toBe(2); // no listener is left behind
    await store.close();
  });
});
