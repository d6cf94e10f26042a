// The lexical index through a store, against a brute-force oracle: random queries (mode 'all' and
// 'any', with and without prefix, with limits) return exactly the ids, values and order a scan of
// the model gives, through puts, updates, deletes and reopen, with the index built from the records
// or loaded from the sealed copy a checkpoint keeps. Platform-neutral: vitest runs it in
// Node (cases/_store.ts fixtures) and Playwright inside Chromium on real IndexedDB through the
// bundled dist/browser.js.
//
// The oracle follows the documented behaviour, not the index's code: tokens are NFKC, lower-cased
// words of letters, numbers and marks (src/engine/lexical/tokenizer.ts header); ranking is more distinct query
// terms matched, then a higher total term frequency, then id in UTF-16 order; with `prefix` the
// last token matches every term starting with it and counts as a term of its own.

import type { Store, Collection } from '../../src/engine/store';
import { Rng } from './_util';
import { ok, sameValue, rejection, withStore, type StoreCase, type StoreFixtureFactory } from './_store';

type KeyPair = { publicKey: Uint8Array; secretKey: Uint8Array };

export interface SearchApi {
  generateRecipient(type?: 'hybrid' | 'classical'): KeyPair;
  generateSigner(): KeyPair;
}

const SCHEMA = { title: 'string', body: 'string', tag: 'string', n: 'integer' } as const;
const INDEXED = ['title', 'body'] as const;
type Doc = { title: string; body: string; tag: string; n: number };

// Shared prefixes (cat/catalog/category/cater), case and compatibility variants (Café/café,
// the ﬁ ligature, ï precomposed and as i + U+0308), numbers, and words that appear only in the
// unindexed `tag`.
const VOCAB = [
  'cat',
  'catalog',
  'category',
  'cater',
  'dog',
  'dogma',
  'large',
  'lark',
  'larch',
  'feline',
  'fern',
  'ferry',
  'stone',
  'stones',
  'storm',
  'story',
  'blue',
  'blur',
  'river',
  'rivet',
  'Café',
  'café',
  'ﬁnder',
  'finder',
  'straße',
  'ÉCOLE',
  'école',
  'naïve',
  'nai\u0308ve',
  '42',
  '4x4',
  'x1',
  'alpha',
  'alphabet',
  'beta',
  'gamma',
  'delta',
];
const TAG_ONLY = ['quokka', 'wombat'];
const QUERY_EXTRA = ['unicorn', 'ca', 'st', 'é', 'ÉCO', 'Fin'];
const SEPARATORS = [' ', ', ', '-', '. ', ' (', '/', '\t'];

const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;
/** The oracle's tokenizer, from the documented rules (NFKC, lower case, words; ≤ 64 code points). */
function tokens(text: string): string[] {
  const s = text.normalize('NFKC').toLowerCase().normalize('NFKC');
  return [...s.matchAll(WORD)].map((m) => Array.from(m[0]).slice(0, 64).join(''));
}

function termCounts(d: Doc): Map<string, number> {
  const counts = new Map<string, number>();
  for (const f of INDEXED) for (const t of tokens(d[f])) counts.set(t, (counts.get(t) ?? 0) + 1);
  return counts;
}

/** Ids matching `query` over `model`, best first, by scanning every document. */
export function bruteSearch(model: Map<string, Doc>, query: string, mode: 'all' | 'any', prefix: boolean): string[] {
  const q = tokens(query);
  if (q.length === 0) return [];
  const last = prefix ? q.pop() : undefined;
  const groups = [...new Set(q)].map((t) => ({ term: t, prefix: false }));
  if (last !== undefined) groups.push({ term: last, prefix: true });
  const hits: { id: string; matched: number; tf: number }[] = [];
  for (const [id, d] of model) {
    const counts = termCounts(d);
    let matched = 0;
    let tf = 0;
    for (const g of groups) {
      let f = 0;
      if (g.prefix) {
        for (const [t, c] of counts) if (t.startsWith(g.term)) f += c;
      } else f = counts.get(g.term) ?? 0;
      if (f > 0) {
        matched++;
        tf += f;
      }
    }
    if (mode === 'all' ? matched === groups.length : matched > 0) hits.push({ id, matched, tf });
  }
  hits.sort((a, b) => b.matched - a.matched || b.tf - a.tf || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return hits.map((h) => h.id);
}

function text(rng: Rng, words: number): string {
  let s = '';
  for (let i = 0; i < words; i++)
    s += (i > 0 ? SEPARATORS[rng.int(SEPARATORS.length)] : '') + VOCAB[rng.int(VOCAB.length)];
  return s;
}

function doc(rng: Rng): Doc {
  return {
    title: text(rng, 1 + rng.int(3)),
    body: rng.int(10) === 0 ? '' : text(rng, 2 + rng.int(10)),
    tag: `${TAG_ONLY[rng.int(TAG_ONLY.length)]} ${VOCAB[rng.int(VOCAB.length)]}`,
    n: rng.int(1000),
  };
}

function query(rng: Rng, prefix: boolean): string {
  const n = 1 + rng.int(3);
  const parts: string[] = [];
  for (let i = 0; i < n; i++) {
    const r = rng.int(20);
    let w =
      r === 0
        ? TAG_ONLY[rng.int(TAG_ONLY.length)]
        : r === 1
          ? QUERY_EXTRA[rng.int(QUERY_EXTRA.length)]
          : VOCAB[rng.int(VOCAB.length)];
    if (rng.int(4) === 0) w = w.toUpperCase();
    parts.push(w);
  }
  if (prefix) {
    // Search as you type: the last word cut to 1..all of its code points.
    const cps = Array.from(parts[n - 1]);
    parts[n - 1] = cps.slice(0, 1 + rng.int(cps.length)).join('');
  }
  return parts.join(SEPARATORS[rng.int(SEPARATORS.length)]);
}

/** Random writes: single puts of new ids, updates of existing ones (their old words must go), deletes, a mixed batch. */
async function mutate(
  store: Store,
  c: Collection,
  model: Map<string, Doc>,
  rng: Rng,
  tag: string,
  count: number,
): Promise<void> {
  const ids = () => [...model.keys()];
  for (let i = 0; i < count; i++) {
    const d = doc(rng);
    await c.put(`${tag}${i}`, d);
    model.set(`${tag}${i}`, d);
  }
  for (let k = 0; k < count; k++) {
    const id = ids()[rng.int(model.size)];
    const d = doc(rng);
    await c.put(id, d);
    model.set(id, d);
  }
  for (let k = 0; k < count >> 1; k++) {
    const id = ids()[rng.int(model.size)];
    ok(await c.delete(id), `delete ${id}`);
    model.delete(id);
  }
  await store.batch((tx) => {
    for (let k = 0; k < count >> 1; k++) {
      const id = ids()[rng.int(model.size)];
      if (rng.int(2) === 0) {
        tx.delete(c, id);
        model.delete(id);
      } else {
        const d = doc(rng);
        tx.put(c, id, d);
        model.set(id, d);
      }
    }
  });
}

export function searchCases(factory: StoreFixtureFactory, api: SearchApi, seed = 9162, queries = 40): StoreCase[] {
  const recipient = api.generateRecipient('classical');
  const signer = api.generateSigner();
  const options = (create = false) => ({ create, recipients: [recipient.publicKey], unlock: recipient.secretKey });
  const signing = (create = false) => ({
    ...options(create),
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: false as const,
  });
  const collection = (store: Store) => store.collection('docs', { schema: SCHEMA, index: { text: [...INDEXED] } });

  /** Every query in both modes, with and without prefix, equals the oracle: ids, order and values. */
  const check = async (store: Store, model: Map<string, Doc>, rng: Rng, where: string): Promise<void> => {
    const c = collection(store);
    let nonEmpty = 0;
    for (let i = 0; i < queries; i++) {
      for (const prefix of [false, true]) {
        const q = query(rng, prefix);
        for (const mode of ['all', 'any'] as const) {
          const want = bruteSearch(model, q, mode, prefix);
          const got = await c.search(q, { mode, prefix, limit: 1000 });
          const at = `${where}: search(${JSON.stringify(q)}, { mode: '${mode}', prefix: ${prefix} })`;
          ok(
            got.length === want.length && got.every((x, k) => x.id === want[k]),
            `${at}: got [${got.map((x) => x.id).slice(0, 12)}] (${got.length}), expected [${want.slice(0, 12)}] (${want.length})`,
          );
          for (const x of got)
            ok(sameValue(x.value, model.get(x.id)), `${at}: value of ${x.id} is ${JSON.stringify(x.value)}`);
          if (want.length > 0) nonEmpty++;
          if (want.length > 3) {
            const top = await c.search(q, { mode, prefix, limit: 3 });
            ok(
              top.map((x) => x.id).join() === want.slice(0, 3).join(),
              `${at} with limit 3: got [${top.map((x) => x.id)}], expected [${want.slice(0, 3)}]`,
            );
          }
        }
      }
    }
    // Fixed probes: words only in the unindexed field and queries without tokens find nothing.
    for (const q of [...TAG_ONLY, '', '  ,. ']) {
      for (const mode of ['all', 'any'] as const)
        ok((await c.search(q, { mode })).length === 0, `${where}: search(${JSON.stringify(q)}, ${mode}) is not empty`);
    }
    // At least half the random queries must find something, or the comparison says little.
    ok(nonEmpty >= queries * 2, `${where}: only ${nonEmpty} of ${queries * 4} queries found anything`);
  };

  const firstBatch = async (store: Store, model: Map<string, Doc>, rng: Rng): Promise<void> => {
    const c = collection(store);
    await store.batch((tx) => {
      for (let i = 0; i < 80; i++) {
        const d = doc(rng);
        tx.put(c, `d${String(i).padStart(3, '0')}`, d);
        model.set(`d${String(i).padStart(3, '0')}`, d);
      }
    });
  };

  return [
    {
      name: 'search equals a brute-force scan through puts, updates, deletes and reopen',
      run: withStore(factory, async (open) => {
        const rng = new Rng(seed);
        const model = new Map<string, Doc>();
        let store = await open(options(true));
        await firstBatch(store, model, rng);
        await check(store, model, rng, 'after the first batch');
        await mutate(store, collection(store), model, rng, 'a', 16);
        await check(store, model, rng, 'after updates and deletes');
        await store.close();

        store = await open(options());
        await check(store, model, rng, 'after reopen');
        // The index built on reopening keeps following commits.
        await mutate(store, collection(store), model, rng, 'b', 8);
        await check(store, model, rng, 'after reopen and more writes');
        ok(
          (await rejection(store.collection('plain', { schema: SCHEMA }).search('cat'), 'search without an index'))
            .name === 'TypeError',
          'search on a collection without an index is a TypeError',
        );
      }),
    },
    {
      name: 'search equals a brute-force scan after reopening from an index sealed at a checkpoint, with commits after it',
      run: withStore(factory, async (open) => {
        const rng = new Rng(seed + 1);
        const model = new Map<string, Doc>();
        let store = await open(signing(true));
        await firstBatch(store, model, rng);
        await check(store, model, rng, 'after the first batch');
        await store.checkpoint(); // persists the built index
        await mutate(store, collection(store), model, rng, 'a', 10); // committed after the sealed index
        await store.close();

        store = await open(signing());
        await check(store, model, rng, 'after reopen (sealed index and later commits)');
        await mutate(store, collection(store), model, rng, 'b', 8);
        await store.checkpoint();
        await store.close();

        // Writes before the index is loaded again: they are replayed onto the sealed one.
        store = await open(signing());
        await mutate(store, collection(store), model, rng, 'c', 6);
        await check(store, model, rng, 'after a second reopen and writes before the first search');
      }),
    },
  ];
}
