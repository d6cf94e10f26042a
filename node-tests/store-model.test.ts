// Property test: random operation sequences — puts, deletes, batches, reads, close/reopen and torn
// commits (crashes) — run against the store and against a plain Map; they always agree. On memory,
// node-fs and IndexedDB over fake-indexeddb, each wrapped in the fault-injecting page store.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { generateRecipient, type Store } from '../src/index';
import { faulty, type Faults } from './support/faulty-page-store';
import { STORE_FIXTURES, perTest } from './support/store-fixtures';

const schema = { n: 'integer', s: 'string' } as const;
const r = generateRecipient('classical');
const key = fc.constantFrom('a', 'b', 'c', 'd', 'e', 'f', 'g');
const value = fc.record({ n: fc.integer(), s: fc.string({ maxLength: 40 }) });
const op = fc.oneof(
  fc.record({ t: fc.constant('put' as const), k: key, v: value }),
  fc.record({ t: fc.constant('delete' as const), k: key }),
  fc.record({ t: fc.constant('get' as const), k: key }),
  fc.record({
    t: fc.constant('batch' as const),
    ops: fc.array(fc.record({ k: key, v: fc.option(value, { nil: undefined }) }), { maxLength: 5 }),
  }),
  fc.constant({ t: 'reopen' as const }),
  fc.constant({ t: 'crash' as const }),
);

describe.each(STORE_FIXTURES)('store against a Map model (%s)', (_name, factory) => {
  const fresh = perTest(factory); // one location per run, all disposed after the test

  it('random operation sequences with reopens and torn commits', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(op, { maxLength: 40 }), async (ops) => {
        const f = await fresh();
        const faults: Faults = {};
        const model = new Map<string, { n: number; s: string }>();
        const openIt = (create = false): Promise<Store> =>
          f.open({ create, recipients: [r.publicKey], unlock: r.secretKey }, (pages) => faulty(pages, faults));
        let store = await openIt(true);
        let c = store.collection('m', { schema });
        for (const o of ops) {
          if (o.t === 'put') {
            await c.put(o.k, o.v);
            model.set(o.k, o.v);
          } else if (o.t === 'delete') {
            expect(await c.delete(o.k)).toBe(model.delete(o.k));
          } else if (o.t === 'get') {
            expect(await c.get(o.k)).toEqual(model.get(o.k));
          } else if (o.t === 'batch') {
            await store.batch((tx) => {
              for (const b of o.ops) {
                if (b.v === undefined) tx.delete(c, b.k);
                else tx.put(c, b.k, b.v);
              }
            });
            for (const b of o.ops) {
              if (b.v === undefined) model.delete(b.k);
              else model.set(b.k, b.v);
            }
          } else if (o.t === 'reopen' || o.t === 'crash') {
            if (o.t === 'crash') {
              // A commit torn by a crash: its write fails and must leave no trace.
              faults.tearNextCommit = true;
              await expect(c.put('torn', { n: -1, s: 'lost' })).rejects.toMatchObject({ code: 'IO_ERROR' });
            }
            await store.close();
            store = await openIt();
            c = store.collection('m', { schema });
          }
        }
        const seen = new Map<string, unknown>();
        for await (const { id, value: v } of c.scan()) seen.set(id, v);
        expect(seen).toEqual(model);
        await store.close();
      }),
      { numRuns: 60 },
    );
  }, 120_000);
});
