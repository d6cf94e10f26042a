// Lexical index: tokenizer cases, search against a brute-force scan (property tests with updates and
// deletes interleaved), deterministic serialization, corruption detection, argument checks.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { LexicalIndex, tokenize, type LexicalOptions } from '../src/engine/lexical';
import { ValueWriter } from '../src/engine/codec';
import { crc32c } from '../src/_crc32c';
import { PqdbError } from '../src/errors';

type Doc = Record<string, string | undefined>;
interface Query {
  q: string;
  mode?: 'all' | 'any';
  prefix?: boolean;
  limit?: number;
}

const OPTIONS: LexicalOptions = { text: ['lemma', 'gloss'] };

const wordsOf = new WeakMap<Doc, string[]>();

/** The specification of search, by scanning every document. */
function bruteForce(
  docs: Map<string, Doc>,
  fields: readonly string[],
  { q, mode = 'all', prefix = false, limit = 100 }: Query,
): string[] {
  const tokens = tokenize(q);
  if (tokens.length === 0) return [];
  const last = prefix ? tokens.pop() : undefined;
  const terms = [...new Set(tokens)].map((t) => ({ t, prefix: false }));
  if (last !== undefined) terms.push({ t: last, prefix: true });
  const hits: { id: string; matched: number; tf: number }[] = [];
  for (const [id, doc] of docs) {
    let words = wordsOf.get(doc);
    if (words === undefined)
      wordsOf.set(doc, (words = fields.flatMap((f) => (doc[f] === undefined ? [] : tokenize(doc[f]!)))));
    let matched = 0;
    let tf = 0;
    for (const term of terms) {
      const n = words.filter((w) => (term.prefix ? w.startsWith(term.t) : w === term.t)).length;
      if (n > 0) matched++;
      tf += n;
    }
    if (mode === 'all' ? matched === terms.length : matched > 0) hits.push({ id, matched, tf });
  }
  hits.sort((a, b) => b.matched - a.matched || b.tf - a.tf || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return hits.slice(0, limit).map((h) => h.id);
}

function distinctTerms(docs: Map<string, Doc>, fields: readonly string[]): number {
  const s = new Set<string>();
  for (const doc of docs.values())
    for (const f of fields) if (doc[f] !== undefined) for (const t of tokenize(doc[f]!)) s.add(t);
  return s.size;
}

function indexedCount(docs: Map<string, Doc>, fields: readonly string[]): number {
  return [...docs.values()].filter((d) => fields.some((f) => d[f] !== undefined && tokenize(d[f]!).length > 0)).length;
}

const equalBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((x, i) => x === b[i]);
const corruption = expect.objectContaining({ code: 'CORRUPTION' });

// A small vocabulary with shared prefixes, case, accents and compatibility forms, so random
// queries hit, prefixes expand to several terms and ties are common.
const VOCAB = [
  'a',
  'ab',
  'abc',
  'abd',
  'Cat',
  'cart',
  'car',
  'cat',
  'do',
  'dog',
  'dogs',
  'Éclair',
  'eclair',
  'ﬁsh',
  'fish',
  'naïve',
  'ＡＢ',
  'x1',
  '12',
  'über',
  '𠀀ab',
  'ᄀ',
];
const SEPARATORS = [' ', ', ', '-', '. ', '  ', '/', "'"];
const textArb = fc
  .array(fc.tuple(fc.constantFrom(...VOCAB), fc.constantFrom(...SEPARATORS)), { maxLength: 8 })
  .map((ws) => ws.map(([w, s]) => w + s).join(''));
const docArb = fc.record(
  { lemma: fc.option(textArb, { nil: undefined }), gloss: fc.option(textArb, { nil: undefined }) },
  { requiredKeys: [] },
);
const idArb = fc.constantFrom('n1', 'n2', 'n3', 'v1', 'v10', 'a', 'b', 'é', '\u{1F600}', '\uE000');
const queryArb: fc.Arbitrary<Query> = fc.record(
  {
    q: fc.oneof(
      fc.array(fc.constantFrom(...VOCAB), { minLength: 1, maxLength: 3 }).map((ws) => ws.join(' ')),
      fc.tuple(fc.constantFrom(...VOCAB), fc.nat(4)).map(([w, n]) => w.slice(0, n + 1)),
      fc.constantFrom('', '...', 'zzz', 'ca', 'd', 'ab abc'),
    ),
    mode: fc.option(fc.constantFrom<'all' | 'any'>('all', 'any'), { nil: undefined }),
    prefix: fc.option(fc.boolean(), { nil: undefined }),
    limit: fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
  },
  { requiredKeys: ['q'] },
);
type Op = { kind: 'put'; id: string; doc: Doc } | { kind: 'remove'; id: string } | { kind: 'search'; query: Query };
const opArb: fc.Arbitrary<Op> = fc.oneof(
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('put' as const), id: idArb, doc: docArb }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), id: idArb }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('search' as const), query: queryArb }) },
);

function apply(ix: LexicalIndex, model: Map<string, Doc>, op: Op): void {
  if (op.kind === 'put') {
    ix.update(op.id, op.doc);
    model.set(op.id, op.doc);
  } else if (op.kind === 'remove') {
    if (op.id.length % 2 === 0) ix.remove(op.id);
    else ix.update(op.id, undefined);
    model.delete(op.id);
  }
}

describe('tokenize', () => {
  it('normalises with NFKC, lower-cases and splits on everything but letters and numbers', () => {
    expect(tokenize('ﬁnd the ﬂag')).toEqual(['find', 'the', 'flag']);
    expect(tokenize('Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ１２３')).toEqual(['full', 'width', 'abc123']);
    expect(tokenize('Café CAFÉ cafe\u0301')).toEqual(['café', 'café', 'café']); // accents kept, composed
    expect(tokenize("don't-stop,now...ok?(yes)[no]")).toEqual(['don', 't', 'stop', 'now', 'ok', 'yes', 'no']);
    expect(tokenize('HeLLo WORLD')).toEqual(['hello', 'world']);
    expect(tokenize('pi=3.14; x2')).toEqual(['pi', '3', '14', 'x2']);
    expect(tokenize('İstanbul')).toEqual(['i\u0307stanbul']); // locale-independent (not Turkish 'i')
    expect(tokenize('Straße ΟΔΟΣ')).toEqual(['straße', 'οδος']);
    expect(tokenize('日本語 テキスト')).toEqual(['日本語', 'テキスト']);
    expect(tokenize('ｶﾀｶﾅ')).toEqual(['カタカナ']); // half-width katakana
    expect(tokenize('①②')).toEqual(['12']); // compatibility numbers
  });

  it('keeps combining marks inside words but does not start a word with one', () => {
    expect(tokenize('हिन्दी भाषा')).toEqual(['हिन्दी', 'भाषा']);
    expect(tokenize('\u0301abc \u0301')).toEqual(['abc']);
    expect(tokenize('x\u20dd')).toEqual(['x\u20dd']); // enclosing mark
  });

  it('drops empty tokens and caps tokens at 64 code points', () => {
    expect(tokenize('')).toEqual([]);
    expect(tokenize(' ,.;-— \n\t')).toEqual([]);
    expect(tokenize('a'.repeat(100))).toEqual(['a'.repeat(64)]);
    expect(tokenize('A'.repeat(64) + ' b')).toEqual(['a'.repeat(64), 'b']);
    const astral = '\u{20000}'.repeat(70); // 140 UTF-16 code units
    expect(tokenize(astral)).toEqual(['\u{20000}'.repeat(64)]);
  });

  it('property: tokens are non-empty, lower-case words of ≤ 64 code points, and tokenizing them again changes nothing', () => {
    fc.assert(
      fc.property(
        fc.oneof(fc.string({ unit: 'grapheme', maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }), textArb),
        (s) => {
          const tokens = tokenize(s);
          for (const t of tokens) {
            expect(t.length).toBeGreaterThan(0);
            expect(Array.from(t).length).toBeLessThanOrEqual(64);
            expect(tokenize(t)).toEqual([t]);
          }
          expect(tokenize(tokens.join(' '))).toEqual(tokens);
        },
      ),
      { numRuns: 500 },
    );
  });

  it('does not modify its input and refuses non-strings', () => {
    const s = 'Ａb';
    tokenize(s);
    expect(s).toBe('Ａb');
    expect(() => tokenize(1 as unknown as string)).toThrow(new TypeError('"text" expected a string, got number'));
  });
});

describe('LexicalIndex search', () => {
  it('ranks by distinct terms matched, then term frequency, then id', () => {
    const ix = new LexicalIndex(OPTIONS);
    ix.update('n3', { lemma: 'dog', gloss: 'a domesticated dog, a dog of the hunting kind' });
    ix.update('n1', { lemma: 'cat', gloss: 'a small domesticated feline' });
    ix.update('n2', { lemma: 'dog house', gloss: 'a shelter for a dog' });
    ix.update('n4', { lemma: 'wolf', gloss: 'a wild dog-like animal' });
    expect(ix.size).toBe(4);
    expect(ix.search('dog')).toEqual(['n3', 'n2', 'n4']);
    expect(ix.search('domesticated dog')).toEqual(['n3']);
    expect(ix.search('domesticated dog', { mode: 'any' })).toEqual(['n3', 'n2', 'n1', 'n4']); // n2 has 'dog' twice
    expect(ix.search('DOM', { prefix: true })).toEqual(['n1', 'n3']); // tie on tf → id order
    expect(ix.search('dog do', { prefix: true })).toEqual(['n3', 'n2', 'n4']);
    expect(ix.search('dog', { limit: 1 })).toEqual(['n3']);
    expect(ix.search('  ...  ')).toEqual([]);
    expect(ix.search('unicorn')).toEqual([]);
    ix.update('n3', { lemma: 'puppy', gloss: 'a young dog' });
    expect(ix.search('hunting')).toEqual([]);
    ix.update('n2', undefined);
    ix.remove('n4');
    ix.remove('nothing');
    expect(ix.search('dog')).toEqual(['n3']);
    expect(ix.size).toBe(2);
    expect(ix.terms).toBe(new Set(tokenize('cat a small domesticated feline puppy a young dog')).size);
  });

  it('does not index ids without tokens and skips absent fields', () => {
    const ix = new LexicalIndex(OPTIONS);
    ix.update('x', { lemma: '—', pos: 'n' });
    ix.update('y', { gloss: 'only gloss', other: 42 });
    expect(ix.size).toBe(1);
    expect(ix.search('gloss')).toEqual(['y']);
    ix.update('y', {});
    expect(ix.size).toBe(0);
    expect(ix.terms).toBe(0);
  });

  it('property: search equals a brute-force scan, with updates and deletes interleaved', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 60 }),
        fc.array(queryArb, { minLength: 1, maxLength: 8 }),
        (ops, finalQueries) => {
          const ix = new LexicalIndex(OPTIONS);
          const model = new Map<string, Doc>();
          for (const op of ops) {
            if (op.kind === 'search')
              expect(ix.search(op.query.q, op.query)).toEqual(bruteForce(model, OPTIONS.text, op.query));
            else apply(ix, model, op);
          }
          for (const query of finalQueries)
            expect(ix.search(query.q, query)).toEqual(bruteForce(model, OPTIONS.text, query));
          expect(ix.size).toBe(indexedCount(model, OPTIONS.text));
          expect(ix.terms).toBe(distinctTerms(model, OPTIONS.text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('property: ties in matched terms and frequency are broken by id in UTF-16 order, whatever prefix the ids share', () => {
    // Ids of up to 9 parts from an alphabet with NUL, U+FFFF and a surrogate pair, so that ids share
    // the first six units (which ranking compares as packed numbers) or differ only past them or in
    // length; two words, so most documents tie; removals let doc numbers be reused by other ids.
    const unitArb = fc.constantFrom('a', 'b', '\0', '\uffff', '\u{1F600}', 'é');
    const longIdArb = fc
      .tuple(fc.constantFrom('', 'aa', 'aaa', 'aaaaa', 'aaaaaa'), fc.array(unitArb, { minLength: 1, maxLength: 5 }))
      .map(([shared, u]) => shared + u.join(''));
    const tieOpArb = fc.oneof(
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constant('put' as const),
          id: longIdArb,
          doc: fc.record({ lemma: fc.constantFrom('x', 'y', 'x y', 'x x', 'y y x', 'xa', 'x xa') }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('remove' as const), id: longIdArb }) },
    );
    const tieQueryArb = fc.record({
      q: fc.constantFrom('x', 'y', 'x y', 'xa', 'x', 'x x'),
      mode: fc.constantFrom<'all' | 'any'>('all', 'any'),
      prefix: fc.boolean(),
      limit: fc.integer({ min: 1, max: 6 }),
    });
    fc.assert(
      fc.property(
        fc.array(tieOpArb, { maxLength: 80 }),
        fc.array(tieQueryArb, { minLength: 1, maxLength: 6 }),
        (ops, queries) => {
          const ix = new LexicalIndex(OPTIONS);
          const model = new Map<string, Doc>();
          for (const op of ops) apply(ix, model, op);
          for (const q of queries) expect(ix.search(q.q, q)).toEqual(bruteForce(model, OPTIONS.text, q));
          const back = LexicalIndex.deserialize(ix.serialize(), OPTIONS);
          for (const q of queries) expect(back.search(q.q, q)).toEqual(bruteForce(model, OPTIONS.text, q));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('agrees with the brute-force scan at scale, across rebuilds of the sorted term list (timing-free)', () => {
    // 20,000 WordNet-like documents (a lemma and a ~12-word gloss from a 3,000-word vocabulary),
    // more than FRESH_SCAN_MAX new terms between prefix searches, deletes and re-puts.
    let x = 7;
    const rnd = (n: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), (x >>> 8) % n);
    const syll = ['ka', 'lo', 'mi', 'ne', 'ru', 'sa', 'ti', 'vo', 'ze', 'qu', 'an', 'el'];
    const vocab = Array.from(
      { length: 3000 },
      (_, i) =>
        syll[i % 12] + syll[(i >> 2) % 12] + (i % 7 === 0 ? '' : syll[rnd(12)]) + (i % 5 === 0 ? String(i) : ''),
    );
    const word = () => vocab[Math.min(rnd(3000), rnd(3000), rnd(3000))]; // skewed: a few words are common
    const ix = new LexicalIndex(OPTIONS);
    const model = new Map<string, Doc>();
    const queries: Query[] = [];
    for (let i = 0; i < 20_000; i++) {
      const doc = { lemma: word(), gloss: Array.from({ length: 6 + rnd(12) }, word).join(' ') };
      ix.update(`n${i}`, doc);
      model.set(`n${i}`, doc);
      if (i % 3000 === 2999) {
        for (let k = 0; k < 300; k++) {
          const id = `n${rnd(i)}`;
          ix.remove(id);
          model.delete(id);
        }
        const w = word();
        queries.push({ q: `${word()} ${w.slice(0, 1 + rnd(w.length))}`, prefix: true, mode: i % 2 ? 'all' : 'any' });
        expect(ix.search(queries.at(-1)!.q, queries.at(-1))).toEqual(bruteForce(model, OPTIONS.text, queries.at(-1)!));
      }
    }
    for (let k = 0; k < 20; k++) {
      const w = word();
      queries.push({ q: w.slice(0, 1 + rnd(3)), prefix: true, limit: 50 });
      queries.push({ q: `${word()} ${word()}`, mode: k % 2 ? 'all' : 'any' });
    }
    for (const q of queries) expect(ix.search(q.q, q)).toEqual(bruteForce(model, OPTIONS.text, q));
    expect(ix.size).toBe(model.size);
  });
  it('stays exact through heavy churn (the postings and term-list arenas compact many times)', () => {
    // 300 ids rewritten 30,000 times: freed regions outgrow live ones again and again.
    let x = 11;
    const rnd = (n: number) => ((x = (Math.imul(x, 1103515245) + 12345) >>> 0), (x >>> 8) % n);
    const vocab = Array.from({ length: 400 }, (_, i) => `w${i.toString(36)}`);
    const ix = new LexicalIndex(OPTIONS);
    const model = new Map<string, Doc>();
    for (let i = 0; i < 30_000; i++) {
      const id = `n${rnd(300)}`;
      if (rnd(10) === 0) {
        ix.remove(id);
        model.delete(id);
        continue;
      }
      const doc = {
        lemma: vocab[rnd(400)],
        gloss: Array.from({ length: 1 + rnd(20) }, () => vocab[Math.min(rnd(400), rnd(400))]).join(' '),
      };
      ix.update(id, doc);
      model.set(id, doc);
      if (i % 5000 === 4999) {
        const q: Query = { q: `${vocab[rnd(40)]} w${rnd(36).toString(36)}`, prefix: true, mode: i % 2 ? 'all' : 'any' };
        expect(ix.search(q.q, q)).toEqual(bruteForce(model, OPTIONS.text, q));
      }
    }
    const fresh = new LexicalIndex(OPTIONS);
    for (const [id, doc] of model) fresh.update(id, doc);
    expect(equalBytes(ix.serialize(), fresh.serialize())).toBe(true);
    expect(ix.terms).toBe(distinctTerms(model, OPTIONS.text));
    for (const w of vocab.slice(0, 50))
      expect(ix.search(w, { mode: 'any', limit: 400 })).toEqual(
        bruteForce(model, OPTIONS.text, { q: w, mode: 'any', limit: 400 }),
      );
  });
});

describe('LexicalIndex serialization', () => {
  const build = (ops: Op[]) => {
    const ix = new LexicalIndex(OPTIONS);
    const model = new Map<string, Doc>();
    for (const op of ops) apply(ix, model, op);
    return { ix, model };
  };

  it('property: round trip gives identical search results and identical bytes, whatever the update order', () => {
    fc.assert(
      fc.property(
        fc.array(opArb, { maxLength: 40 }),
        fc.array(queryArb, { minLength: 1, maxLength: 6 }),
        (ops, queries) => {
          const { ix, model } = build(ops);
          const bytes = ix.serialize();
          const copy = bytes.slice();
          const back = LexicalIndex.deserialize(bytes, OPTIONS);
          expect(bytes).toEqual(copy); // input unchanged
          expect(equalBytes(back.serialize(), bytes)).toBe(true);
          expect(back.size).toBe(ix.size);
          expect(back.terms).toBe(ix.terms);
          for (const q of queries) expect(back.search(q.q, q)).toEqual(ix.search(q.q, q));
          // The same content put in reverse order, through a detour, serializes to the same bytes.
          const other = new LexicalIndex({ text: ['gloss', 'lemma'] });
          const entries = [...model.entries()].reverse();
          for (const [id] of entries) other.update(id, { lemma: 'detour words' });
          for (const [id, doc] of entries) other.update(id, doc);
          expect(equalBytes(other.serialize(), bytes)).toBe(true);
          // The deserialized index stays a working index.
          back.update('zz', { lemma: 'cart abd' });
          ix.update('zz', { lemma: 'cart abd' });
          expect(back.search('ca', { prefix: true, mode: 'any' })).toEqual(
            ix.search('ca', { prefix: true, mode: 'any' }),
          );
          expect(equalBytes(back.serialize(), ix.serialize())).toBe(true);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('prefix search after deserialize, for terms whose code point order differs from their UTF-16 order', () => {
    // U+FA0E (a CJK letter NFKC keeps) sorts before U+20000 by code point, after it in UTF-16.
    const model = new Map<string, Doc>([
      ['n1', { lemma: '\uFA0E \uFA0Ea', gloss: 'a' }],
      ['n2', { lemma: '\u{20000} \u{20000}b' }],
      ['n3', { lemma: 'ab \uFA0E' }],
    ]);
    const ordered = new Map<string, Doc>([
      ['n1', { lemma: 'ab abc b' }],
      ['n2', { lemma: 'a b ba' }],
    ]);
    for (const docs of [model, ordered]) {
      const ix = new LexicalIndex(OPTIONS);
      for (const [id, doc] of docs) ix.update(id, doc);
      const back = LexicalIndex.deserialize(ix.serialize(), OPTIONS);
      const queries: Query[] = ['\uFA0E', '\u{20000}', 'a', 'b', '\uD840', 'ab \uFA0E'].flatMap((q) => [
        { q, prefix: true },
        { q, prefix: true, mode: 'any' as const },
      ]);
      for (const q of queries) expect(back.search(q.q, q)).toEqual(bruteForce(docs, OPTIONS.text, q));
      back.update('n4', { lemma: '\u{20000}c \uFA0Eb' });
      docs.set('n4', { lemma: '\u{20000}c \uFA0Eb' });
      back.remove('n2');
      docs.delete('n2');
      for (const q of queries) expect(back.search(q.q, q)).toEqual(bruteForce(docs, OPTIONS.text, q));
    }
  });

  it('serializeParts gives the bytes of serialize() in parts of the size asked for', async () => {
    const ix = new LexicalIndex(OPTIONS);
    for (let i = 0; i < 3000; i++)
      ix.update(`n${i}`, { lemma: `w${i % 97}`, gloss: `g${i % 1013} h${(i * 7) % 389} common words here` });
    const whole = ix.serialize();
    let pauses = 0;
    const parts = await ix.serializeParts(1024, async () => void pauses++);
    expect(parts.length).toBe(Math.ceil(whole.length / 1024));
    for (const p of parts.slice(0, -1)) expect(p.length).toBe(1024);
    const joined = new Uint8Array(whole.length);
    let at = 0;
    for (const p of parts) (joined.set(p, at), (at += p.length));
    expect(at).toBe(whole.length);
    expect(equalBytes(joined, whole)).toBe(true);
    expect(pauses).toBeGreaterThan(0);
    await expect(ix.serializeParts(10, async () => undefined)).rejects.toThrow(RangeError);
  });

  it('reads bytes at an unaligned offset of a larger buffer', () => {
    const ix = new LexicalIndex(OPTIONS);
    ix.update('n1', { lemma: 'entity', gloss: 'that which is perceived' });
    const bytes = ix.serialize();
    for (let off = 0; off < 8; off++) {
      const big = new Uint8Array(bytes.length + 16);
      big.set(bytes, off);
      expect(LexicalIndex.deserialize(big.subarray(off, off + bytes.length), OPTIONS).search('perceived')).toEqual([
        'n1',
      ]);
    }
    const empty = new LexicalIndex(OPTIONS).serialize();
    expect(LexicalIndex.deserialize(empty, OPTIONS).size).toBe(0);
  });

  it('detects flipped bits and truncation as CORRUPTION', () => {
    const ix = new LexicalIndex(OPTIONS);
    ix.update('n1', { lemma: 'entity', gloss: 'that which is perceived or known' });
    ix.update('n2', { lemma: 'thing', gloss: 'an entity' });
    const bytes = ix.serialize();
    for (let i = 0; i < bytes.length; i++) {
      for (const bit of [0x01, 0x80]) {
        const bad = bytes.slice();
        bad[i] ^= bit;
        expect(() => LexicalIndex.deserialize(bad, OPTIONS)).toThrow(corruption);
      }
    }
    for (let n = 0; n < bytes.length; n++)
      expect(() => LexicalIndex.deserialize(bytes.subarray(0, n), OPTIONS)).toThrow(corruption);
    expect(() => LexicalIndex.deserialize(new Uint8Array([...bytes, 0]), OPTIONS)).toThrow(corruption);
  });

  // Hand-built blobs with a correct CRC: the structure checks must catch them.
  const blob = (body: (w: ValueWriter) => void, version = 1) => {
    const w = new ValueWriter();
    w.bytes(new Uint8Array([0x50, 0x51, 0x4c, 0x58, version]));
    w.varint(1);
    w.str('gloss');
    body(w);
    const crc = crc32c(w.buf.subarray(0, w.n));
    w.bytes(Uint8Array.of(crc & 0xff, (crc >>> 8) & 0xff, (crc >>> 16) & 0xff, crc >>> 24));
    return w.done();
  };
  const terms = (list: [number, string][]) => (w: ValueWriter) => {
    w.varint(list.length);
    for (const [shared, suffix] of list) {
      w.varint(shared);
      w.str(suffix);
    }
  };
  const doc = (id: string, entries: [number, number][]) => (w: ValueWriter) => {
    w.str(id);
    w.varint(entries.length);
    for (const [d, tf] of entries) {
      w.varint(d);
      w.varint(tf);
    }
  };
  const opts = { text: ['gloss'] };
  /** Blobs with a correct CRC that the structure checks must refuse, by what is wrong in each. */
  const notCanonical: [string, Uint8Array][] = [
    [
      'terms out of order',
      blob((w) => {
        terms([
          [0, 'b'],
          [0, 'a'],
        ])(w);
        w.varint(1);
        doc('n1', [
          [0, 1],
          [1, 1],
        ])(w);
      }),
    ],
    [
      'duplicate term',
      blob((w) => {
        terms([
          [0, 'a'],
          [0, 'a'],
        ])(w);
        w.varint(1);
        doc('n1', [
          [0, 1],
          [1, 1],
        ])(w);
      }),
    ],
    [
      'shared prefix not coded',
      blob((w) => {
        terms([
          [0, 'a'],
          [0, 'ab'],
        ])(w);
        w.varint(1);
        doc('n1', [
          [0, 1],
          [1, 1],
        ])(w);
      }),
    ],
    [
      'shared > previous',
      blob((w) => {
        terms([
          [0, 'a'],
          [2, 'b'],
        ])(w);
        w.varint(1);
        doc('n1', [
          [0, 1],
          [1, 1],
        ])(w);
      }),
    ],
    [
      'term without postings',
      blob((w) => {
        terms([
          [0, 'a'],
          [1, 'b'],
        ])(w);
        w.varint(1);
        doc('n1', [[0, 1]])(w);
      }),
    ],
    [
      'tf 0',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(1);
        doc('n1', [[0, 0]])(w);
      }),
    ],
    [
      'term index out of range',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(1);
        doc('n1', [[1, 1]])(w);
      }),
    ],
    [
      'repeated term in a doc',
      blob((w) => {
        terms([
          [0, 'a'],
          [1, 'b'],
        ])(w);
        w.varint(1);
        doc('n1', [
          [0, 1],
          [0, 1],
        ])(w);
      }),
    ],
    [
      'doc without terms',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(1);
        doc('n1', [])(w);
      }),
    ],
    [
      'ids out of order',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(2);
        doc('n2', [[0, 1]])(w);
        doc('n1', [[0, 1]])(w);
      }),
    ],
    [
      'duplicate id',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(2);
        doc('n1', [[0, 1]])(w);
        doc('n1', [[0, 1]])(w);
      }),
    ],
    [
      'empty id',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(1);
        doc('', [[0, 1]])(w);
      }),
    ],
    [
      'term too long',
      blob((w) => {
        terms([[0, 'a'.repeat(65)]])(w);
        w.varint(1);
        doc('n1', [[0, 1]])(w);
      }),
    ],
    [
      'id not UTF-8',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(1);
        w.bytes(Uint8Array.of(2, 0xff, 0xfe, 1, 0, 1));
      }),
    ],
    [
      'trailing byte',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.varint(1);
        doc('n1', [[0, 1]])(w);
        w.byte(0);
      }),
    ],
    [
      'non-canonical varint',
      blob((w) => {
        terms([[0, 'a']])(w);
        w.bytes(Uint8Array.of(0x81, 0x00));
        doc('n1', [[0, 1]])(w);
      }),
    ],
    [
      'count larger than the data',
      blob((w) => {
        w.varint(1_000_000);
      }),
    ],
  ];

  it('a hand-built canonical blob deserializes; a later format version is FORMAT_VERSION', () => {
    const good = blob((w) => {
      terms([
        [0, 'a'],
        [1, 'b'],
      ])(w);
      w.varint(1);
      doc('n1', [
        [0, 1],
        [1, 2],
      ])(w);
    });
    expect(LexicalIndex.deserialize(good, opts).search('ab')).toEqual(['n1']);
    const v2 = blob((w) => {
      terms([])(w);
      w.varint(0);
    }, 2);
    expect(() => LexicalIndex.deserialize(v2, opts)).toThrow(expect.objectContaining({ code: 'FORMAT_VERSION' }));
  });

  it.each(notCanonical)('refuses well-checksummed bytes that are not canonical: %s', (_, bad) => {
    expect(() => LexicalIndex.deserialize(bad, opts)).toThrow(corruption);
  });
});

describe('LexicalIndex argument checks', () => {
  it('refuses bad options', () => {
    expect(() => new LexicalIndex(undefined as unknown as LexicalOptions)).toThrow(
      new TypeError('"options" expected an object'),
    );
    expect(() => new LexicalIndex({ text: 'gloss' as unknown as string[] })).toThrow(
      new TypeError('"options.text" expected an array of field names'),
    );
    expect(() => new LexicalIndex({ text: [] })).toThrow(RangeError);
    expect(() => new LexicalIndex({ text: ['a', ''] })).toThrow(TypeError);
    expect(() => new LexicalIndex({ text: ['a', 1 as unknown as string] })).toThrow(TypeError);
    expect(() => new LexicalIndex({ text: ['a', 'b', 'a'] })).toThrow(
      new RangeError('"options.text" names field "a" twice'),
    );
  });

  it('refuses bad updates and leaves the index unchanged', () => {
    const ix = new LexicalIndex(OPTIONS);
    ix.update('n1', { lemma: 'entity' });
    const before = ix.serialize();
    expect(() => ix.update('', { lemma: 'x' })).toThrow(new TypeError('"id" expected a non-empty string'));
    expect(() => ix.update(1 as unknown as string, { lemma: 'x' })).toThrow(TypeError);
    expect(() => ix.update('n1', null as unknown as Doc)).toThrow(
      new TypeError('"value" expected an object or undefined'),
    );
    expect(() => ix.update('n1', ['x'] as unknown as Doc)).toThrow(TypeError);
    expect(() => ix.update('n1', { lemma: 'new words', gloss: 7 })).toThrow(
      new TypeError('"value.gloss" expected a string, got number'),
    );
    expect(() => ix.remove('')).toThrow(TypeError);
    expect(equalBytes(ix.serialize(), before)).toBe(true);
    expect(ix.search('entity')).toEqual(['n1']);
  });

  it('refuses bad queries and options', () => {
    const ix = new LexicalIndex(OPTIONS);
    expect(() => ix.search(undefined as unknown as string)).toThrow(
      new TypeError('"query" expected a string, got undefined'),
    );
    expect(() => ix.search('a', null as unknown as Query)).toThrow(TypeError);
    expect(() => ix.search('a', { mode: 'some' as 'all' })).toThrow(
      new RangeError(`"opts.mode" expected 'all' or 'any', got "some"`),
    );
    expect(() => ix.search('a', { prefix: 'yes' as unknown as boolean })).toThrow(TypeError);
    expect(() => ix.search('a', { limit: 0 })).toThrow(RangeError);
    expect(() => ix.search('a', { limit: 1.5 })).toThrow(new TypeError('"opts.limit" expected an integer, got number'));
    expect(() => ix.search('a', { limit: '3' as unknown as number })).toThrow(TypeError);
  });

  it('refuses bad deserialize arguments; fields must match the serialized index', () => {
    const ix = new LexicalIndex(OPTIONS);
    ix.update('n1', { lemma: 'entity' });
    const bytes = ix.serialize();
    expect(() => LexicalIndex.deserialize([1, 2] as unknown as Uint8Array, OPTIONS)).toThrow(
      new TypeError('"bytes" expected Uint8Array, got Array'),
    );
    expect(() => LexicalIndex.deserialize(bytes, { text: [] })).toThrow(RangeError);
    expect(() => LexicalIndex.deserialize(bytes, { text: ['lemma'] })).toThrow(RangeError);
    expect(LexicalIndex.deserialize(bytes, { text: ['gloss', 'lemma'] }).search('entity')).toEqual(['n1']);
    expect(() => LexicalIndex.deserialize(new Uint8Array(3), OPTIONS)).toThrow(PqdbError);
  });
});
