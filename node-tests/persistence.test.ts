// What checkpoints persist besides the signed root: the lexical index of each searched collection,
// sealed (no token in the clear), loaded on reopen and brought up to date with later commits; and
// automatic checkpoints by record count and by time.
import { describe, it, expect } from 'vitest';
import { openStore, generateRecipient, generateSigner, openMemoryPageStore, PqdbError } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { crc32c } from '../src/storage/page-store';
import { tokenize } from '../src/engine/lexical';
import { pageKind } from '../src/engine/page-format';
import { Rng } from './cases/_util';

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

function indexPages(medium: MemoryMedium): number[] {
  return [...medium.pages.entries()].filter(([, p]) => pageKind(p.bytes) === 'index').map(([id]) => id);
}

describe('persisted lexical index', () => {
  it('is sealed at checkpoints, loaded on reopen, and follows later commits', async () => {
    const medium = new MemoryMedium();
    const open = async (create = false, text: (keyof Doc)[] = ['lemma', 'gloss']) => {
      const store = await openStore({
        storage: await openMemoryPageStore({ medium }),
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
    expect(indexPages(medium)).toEqual([]);
    await store.checkpoint();
    expect(indexPages(medium)).toHaveLength(1);
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
    for (const [id, p] of medium.pages) {
      const text = Buffer.from(p.bytes);
      expect(text.indexOf(Buffer.from(token)), `page ${id}`).toBe(-1);
    }

    ({ store, words } = await open());
    await check();
    // The next checkpoint replaces the index page (one per collection).
    const before = indexPages(medium);
    await store.checkpoint();
    const after = indexPages(medium);
    expect(after).toHaveLength(1);
    expect(after[0]).not.toBe(before[0]);
    await store.close();

    // The index page is read on reopen: an altered one (checksum recomputed) does not authenticate.
    const [pageId] = indexPages(medium);
    const stored = medium.pages.get(pageId)!;
    const altered = new Uint8Array(stored.bytes);
    altered[altered.length - 5] ^= 0x10;
    medium.pages.set(pageId, { bytes: altered, crc: crc32c(altered) });
    ({ store, words } = await open());
    const err = await words.search('amber').catch((e) => e);
    expect(err).toBeInstanceOf(PqdbError);
    expect(err.code).toBe('AUTH_FAILED');
    await store.close();
    medium.pages.set(pageId, stored);

    // Other indexed fields than persisted: built anew from the records.
    ({ store, words } = await open(false, ['lemma']));
    await check(['lemma']);
    await store.close();
  });
});

describe('automatic checkpoints', () => {
  const openWith = async (autoCheckpoint?: { records?: number; ms?: number } | false, withSigner = true) => {
    const store = await openStore({
      storage: 'memory',
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
