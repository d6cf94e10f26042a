// What checkpoints persist besides the signed root: the lexical index of each searched collection,
// sealed (no token in the clear), loaded on reopen and brought up to date with later commits; and
// automatic checkpoints by record count and by time. On every page store (memory, node-fs,
// IndexedDB over fake-indexeddb, PostgreSQL).
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, PqdbError } from '../src/index';
import { tokenize } from '../src/engine/lexical';
import { pageKind } from '../src/engine/page-format';
import { Rng } from './cases/_util';
import {
  STORE_FIXTURES,
  perTest,
  postgresStoreFixture,
  replacePage,
  type NodeStoreFixture,
} from './support/store-fixtures';
import { usePostgres } from './support/postgres';

const schema = { lemma: 'string', gloss: 'string', n: 'integer' } as const;
type Doc = { lemma: string; gloss: string; n: number };
const r = generateRecipient('classical');
const signer = generateSigner();
const WORDS = [
  'amber',
  'basalt',
  'cobalt',
  'dune',
  'ember',
  'fjord',
  'glacier',
  'harbor',
  'iris',
  'jade',
  'kelp',
  'lagoon',
  'zanzibarite',
];

function brute(model: Map<string, Doc>, query: string, mode: 'all' | 'any', fields: (keyof Doc)[]): string[] {
  const q = [...new Set(tokenize(query))];
  return [...model.entries()]
    .filter(([, v]) => {
      const toks = new Set(fields.flatMap((f) => tokenize(String(v[f]))));
      return mode === 'all' ? q.every((t) => toks.has(t)) : q.some((t) => toks.has(t));
    })
    .map(([id]) => id)
    .sort();
}

async function indexPages(f: NodeStoreFixture): Promise<number[]> {
  return [...(await f.storedPages()).entries()].filter(([, bytes]) => pageKind(bytes) === 'index').map(([id]) => id);
}

const cluster = usePostgres();
/** The Node adapters, and a store in a throwaway PostgreSQL cluster. */
const FIXTURES: [string, () => Promise<NodeStoreFixture>][] = [
  ...STORE_FIXTURES,
  ['postgres', () => postgresStoreFixture(cluster())],
];

describe.each(FIXTURES)('persisted lexical index (%s)', (_name, factory) => {
  const fresh = perTest(factory);

  it('is sealed at checkpoints, loaded on reopen, and follows later commits', async () => {
    const f = await fresh();
    const open = async (create = false, text: (keyof Doc)[] = ['lemma', 'gloss']) => {
      const store = await f.open({
        create,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
      });
      return { store, words: store.collection('w', { schema, index: { text } }) };
    };
    const g = new Rng(42);
    const next = () => g.u32();
    const doc = (): Doc => ({
      lemma: WORDS[next() % WORDS.length],
      gloss: Array.from({ length: 1 + (next() % 5) }, () => WORDS[next() % WORDS.length]).join(' '),
      n: next() % 1000,
    });
    const model = new Map<string, Doc>();
    let { store, words } = await open(true);
    await store.batch((tx) => {
      for (let i = 0; i < 150; i++) {
        const d = doc();
        tx.put(words, `d${i}`, d);
        model.set(`d${i}`, d);
      }
    });
    const check = async (fields: (keyof Doc)[] = ['lemma', 'gloss']) => {
      const rq = new Rng(7);
      const q = () => rq.u32();
      for (let k = 0; k < 40; k++) {
        const query = Array.from({ length: 1 + (q() % 3) }, () => WORDS[q() % WORDS.length]).join(' ');
        for (const mode of ['all', 'any'] as const) {
          const got = (await words.search(query, { mode, limit: 1000 })).map((x) => x.id).sort();
          expect(got, `${query} (${mode})`).toEqual(brute(model, query, mode, fields));
        }
      }
    };
    await check();
    expect(await indexPages(f)).toEqual([]);
    await store.checkpoint();
    expect(await indexPages(f)).toHaveLength(1);
    // Later commits: an update, a delete, an insert, after the persisted index.
    await words.put('d1', { lemma: 'zanzibarite', gloss: 'kelp', n: 1 });
    model.set('d1', { lemma: 'zanzibarite', gloss: 'kelp', n: 1 });
    await words.delete('d2');
    model.delete('d2');
    await words.put('new', { lemma: 'iris', gloss: 'amber dune', n: 2 });
    model.set('new', { lemma: 'iris', gloss: 'amber dune', n: 2 });
    await store.close();

    // No page holds a token in the clear (commit pages and the index page are sealed).
    const token = new TextEncoder().encode('zanzibarite');
    for (const [id, bytes] of await f.storedPages()) {
      const text = Buffer.from(bytes);
      expect(text.indexOf(Buffer.from(token)), `page ${id}`).toBe(-1);
    }

    ({ store, words } = await open());
    await check();
    // The next checkpoint replaces the index page (one per collection).
    const before = await indexPages(f);
    await store.checkpoint();
    const after = await indexPages(f);
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    await store.close();

    // The index page is read on reopen: an altered one (checksum recomputed) does not authenticate.
    const [pageId] = await indexPages(f);
    const stored = (await f.storedPages()).get(pageId)!;
    const altered = new Uint8Array(stored);
    altered[altered.length - 5] ^= 0x10;
    await replacePage(f, pageId, altered);
    ({ store, words } = await open());
    const err = await words.search('amber').catch((e) => e);
    expect(err).toBeInstanceOf(PqdbError);
    expect(err.code).toBe('AUTH_FAILED');
    await store.close();
    await replacePage(f, pageId, stored);

    // Other indexed fields than persisted: built anew from the records.
    ({ store, words } = await open(false, ['lemma']));
    await check(['lemma']);
    await store.close();
  });
});

describe.each(FIXTURES)('automatic checkpoints (%s)', (_name, factory) => {
  const fresh = perTest(factory);
  const openWith = async (autoCheckpoint?: { records?: number; ms?: number } | false, withSigner = true) => {
    const f = await fresh();
    const store = await f.open({
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey,
      ...(withSigner ? { signer: signer.secretKey, signerPublicKey: signer.publicKey } : {}),
      ...(autoCheckpoint !== undefined ? { autoCheckpoint } : {}),
    });
    return { store, c: store.collection('c', { schema }) };
  };
  const write = async (
    c: ReturnType<Awaited<ReturnType<typeof openWith>>['store']['collection']>,
    from: number,
    n: number,
  ) => {
    for (let i = from; i < from + n; i += 10) {
      await c.store.batch((tx) => {
        for (let k = i; k < i + 10; k++) tx.put(c, `k${k}`, { lemma: 'a', gloss: 'b', n: k });
      });
    }
  };

  it('by record count', async () => {
    const { store, c } = await openWith({ records: 50, ms: 3_600_000 });
    await write(c, 0, 120);
    await store.close(); // waits for queued checkpoints
    expect(store.checkpoints().map((x) => x.size)).toEqual([50, 100]);
  });

  it('by time, once a record was written', async () => {
    const { store, c } = await openWith({ records: 1_000_000, ms: 0 });
    await write(c, 0, 30);
    await store.close();
    expect(store.checkpoints().map((x) => x.size)).toEqual([10, 20, 30]);
  });

  it('off with false, or without a signer; bad options are refused', async () => {
    for (const [auto, withSigner] of [
      [false, true],
      [undefined, false],
    ] as const) {
      const { store, c } = await openWith(auto, withSigner);
      await write(c, 0, 20);
      await store.close();
      expect(store.checkpoints()).toEqual([]);
    }
    await expect(openWith({ records: 0 })).rejects.toThrow(RangeError);
  });
});
