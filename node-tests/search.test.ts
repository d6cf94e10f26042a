// Search through the store: a collection's lexical index over chosen string fields agrees with a
// brute-force scan, follows puts, updates and deletes, and is rebuilt after reopening; then the
// shared randomized cases (cases/search.ts, also run in Chromium). All on memory, node-fs and
// IndexedDB over fake-indexeddb.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner } from '../src/index';
import { tokenize } from '../src/engine/lexical';
import { searchCases } from './cases/search';
import { STORE_FIXTURES, perTest } from './support/store-fixtures';

const schema = { lemma: 'string', pos: 'string', gloss: 'string' } as const;
const r = generateRecipient('classical');
const docs: [string, { lemma: string; pos: string; gloss: string }][] = [
  ['n1', { lemma: 'cat', pos: 'n', gloss: 'feline mammal usually having thick soft fur' }],
  ['n2', { lemma: 'lion', pos: 'n', gloss: 'large gregarious predatory feline of Africa and India' }],
  ['n3', { lemma: 'tiger', pos: 'n', gloss: 'large feline of forests in most of Asia' }],
  ['n4', { lemma: 'dog', pos: 'n', gloss: 'a member of the genus Canis' }],
  ['v1', { lemma: 'purr', pos: 'v', gloss: 'indicate pleasure by purring; characteristic of cats' }],
];

function brute(values: Map<string, { lemma: string; gloss: string }>, query: string, mode: 'all' | 'any'): string[] {
  const q = [...new Set(tokenize(query))];
  return [...values.entries()]
    .filter(([, v]) => {
      const toks = new Set([...tokenize(v.lemma), ...tokenize(v.gloss)]);
      return mode === 'all' ? q.every((t) => toks.has(t)) : q.some((t) => toks.has(t));
    })
    .map(([id]) => id)
    .sort();
}

describe.each(STORE_FIXTURES)('search (%s)', (_name, factory) => {
  const fresh = perTest(factory);

  it('agrees with a brute-force scan; follows updates and deletes; survives reopen', async () => {
    const f = await fresh();
    const open = (create = false) => f.open({ create, recipients: [r.publicKey], unlock: r.secretKey });
    let store = await open(true);
    let words = store.collection('w', { schema, index: { text: ['lemma', 'gloss'] } });
    const model = new Map<string, { lemma: string; pos: string; gloss: string }>();
    await store.batch((tx) => docs.forEach(([id, v]) => (tx.put(words, id, v), model.set(id, v))));
    const check = async () => {
      for (const q of ['large feline', 'feline', 'cats purring', 'Canis', 'unicorn']) {
        for (const mode of ['all', 'any'] as const) {
          const got = (await words.search(q, { mode })).map((x) => x.id).sort();
          expect(got, `${q} (${mode})`).toEqual(brute(model, q, mode));
        }
      }
    };
    await check();
    expect((await words.search('lar', { prefix: true })).map((x) => x.id).sort()).toEqual(['n2', 'n3']);
    await words.put('n4', { lemma: 'dog', pos: 'n', gloss: 'a large domesticated canine' });
    model.set('n4', { lemma: 'dog', pos: 'n', gloss: 'a large domesticated canine' });
    await words.delete('n3');
    model.delete('n3');
    await check();
    await store.close();
    store = await open();
    words = store.collection('w', { schema, index: { text: ['lemma', 'gloss'] } });
    await check();
    expect(() => store.collection('x', { schema, index: { text: ['missing'] } })).toThrow(TypeError);
    await expect(store.collection('y', { schema }).search('cat')).rejects.toThrow(TypeError);
    await store.close();
  });
});

describe.each(STORE_FIXTURES)('search, shared cases (%s)', (_name, factory) => {
  for (const c of searchCases(factory, { generateRecipient, generateSigner })) it(c.name, c.run);
});
