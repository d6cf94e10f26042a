// Typed record values: deterministic, canonical binary encoding; property tests with fast-check.
import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { compileSchema, encodeValue, decodeValue, type Schema, type FieldSpec } from '../src/engine/codec';

const synset = compileSchema({ lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer', note: 'string?' });

describe('record value codec', () => {
  it('encodes a WordNet-like record compactly and decodes it', () => {
    const v = {
      lemma: 'entity',
      pos: 'n',
      gloss: 'that which is perceived or known or inferred to have its own distinct existence',
      offset: 1740,
    };
    const b = encodeValue(synset, v);
    expect(decodeValue(synset, b)).toEqual(v);
    // version, gloss, lemma, note (absent), offset (zigzag varint, 2 bytes), pos
    expect(b.length).toBe(1 + (1 + 1 + v.gloss.length) + (1 + 1 + 6) + 1 + (1 + 2) + (1 + 1 + 1));
    // Field order in the object does not matter: one value, one encoding.
    expect(encodeValue(synset, { offset: 1740, pos: 'n', gloss: v.gloss, lemma: 'entity' })).toEqual(b);
  });

  it('refuses values that do not match the schema with SCHEMA_MISMATCH', () => {
    const bad = [
      { lemma: 'a', pos: 'n', gloss: 'g' },
      { lemma: 'a', pos: 'n', gloss: 'g', offset: 1.5 },
      { lemma: 1, pos: 'n', gloss: 'g', offset: 1 },
      { lemma: 'a', pos: 'n', gloss: 'g', offset: 1, extra: true },
      null,
    ];
    for (const v of bad)
      expect(() => encodeValue(synset, v as never)).toThrow(expect.objectContaining({ code: 'SCHEMA_MISMATCH' }));
    expect(() => compileSchema({ x: 'date' as FieldSpec })).toThrow(TypeError);
    expect(() => compileSchema({})).toThrow(TypeError);
  });

  it('fields named like Object.prototype members are absent unless the value owns them; "__proto__" is refused', () => {
    const c = compileSchema({ toString: 'string?', constructor: 'integer?', x: 'string' });
    expect(decodeValue(c, encodeValue(c, { x: 'a' }))).toEqual({ x: 'a' });
    expect(decodeValue(c, encodeValue(c, { x: 'a', toString: 't', constructor: 3 }))).toEqual({
      x: 'a',
      toString: 't',
      constructor: 3,
    });
    expect(() => compileSchema({ ['__proto__']: 'string' } as never)).toThrow(TypeError);
    expect(() => compileSchema(JSON.parse('{"__proto__": "string"}'))).toThrow(TypeError);
  });

  it('detects truncated, extended and non-canonical bytes as CORRUPTION', () => {
    const b = encodeValue(synset, { lemma: 'a', pos: 'n', gloss: 'g', offset: 300 });
    expect(() => decodeValue(synset, b.subarray(0, b.length - 1))).toThrow(
      expect.objectContaining({ code: 'CORRUPTION' }),
    );
    expect(() => decodeValue(synset, new Uint8Array([...b, 0]))).toThrow(
      expect.objectContaining({ code: 'CORRUPTION' }),
    );
    const nc = new Uint8Array([...b.subarray(0, b.length - 2), 0x80 | (600 & 0x7f), 0x80 | 4, 0]);
    expect(() => decodeValue(synset, nc)).toThrow(expect.objectContaining({ code: 'CORRUPTION' }));
  });

  it('property: random schemas and values round-trip, and equal values encode equally', () => {
    const spec = fc.constantFrom<FieldSpec>(
      'string',
      'number',
      'integer',
      'boolean',
      'bytes',
      'string?',
      'integer?',
      'bytes?',
    );
    const schemaArb = fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), spec, { minKeys: 1, maxKeys: 6 });
    const valueFor = (t: FieldSpec): fc.Arbitrary<unknown> => {
      const base = t.replace('?', '');
      const arb =
        base === 'string'
          ? fc.string({ unit: 'binary' })
          : base === 'number'
            ? fc.double({ noNaN: true }).filter((x) => !Object.is(x, -0))
            : base === 'integer'
              ? fc.maxSafeInteger()
              : base === 'boolean'
                ? fc.boolean()
                : fc.uint8Array({ maxLength: 40 });
      return t.endsWith('?') ? fc.option(arb, { nil: undefined }) : arb;
    };
    fc.assert(
      fc.property(
        schemaArb.chain((s: Schema) =>
          fc.tuple(
            fc.constant(s),
            fc.record(Object.fromEntries(Object.entries(s).map(([k, t]) => [k, valueFor(t)])) as never),
          ),
        ),
        ([s, v]) => {
          const c = compileSchema(s);
          const clean = Object.fromEntries(Object.entries(v as object).filter(([, x]) => x !== undefined));
          const b = encodeValue(c, clean as never);
          expect(decodeValue(c, b)).toEqual(clean);
          expect(encodeValue(c, decodeValue(c, b))).toEqual(b);
        },
      ),
      { numRuns: Number(process.env.PQDB_CODEC_RUNS ?? 300) },
    );
  });
});
