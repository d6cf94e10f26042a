// Typed record values: a collection's schema names each field's type, and values are encoded in a
// compact, deterministic binary form (the same value always gives the same bytes; there is exactly
// one encoding of each value), so equal plaintexts seal alike and the format is testable byte for byte.
//
// Encoding of a value under schema S (fields taken in S's key order, sorted by UTF-8 code units):
//   version byte 1, then per field: presence byte (0 absent / 1 present), then if present:
//     'string'  varint(byte length) ‖ UTF-8        'bytes'   varint(length) ‖ bytes
//     'number'  IEEE-754 float64 big-endian (−0 and NaN refused)
//     'integer' zigzag varint of a safe integer     'boolean' 0 or 1
// Optional fields are written in the schema as 'string?' etc. Unknown fields are refused.
//
// Schema versions (a collection's schema evolves, docs/api.md "Schema evolution"): a value sealed
// under version 1 starts with the byte 1 as above; under a later version v, with the byte 2 and
// varint(v), then the fields of that version's schema. A value is always decoded through the schema
// it was written under; a version the reader does not know is FORMAT_VERSION, never a misread.

import { PqdbError } from '../errors';
import { utf8Length, writeUtf8 } from '../_utf8';
import { readVarint } from '../_varint';

export type FieldType = 'string' | 'number' | 'integer' | 'boolean' | 'bytes';
export type FieldSpec = FieldType | `${FieldType}?`;
export type Schema = Readonly<Record<string, FieldSpec>>;
export type Value = Record<string, string | number | boolean | Uint8Array | undefined>;

/** The JavaScript type of a field type: 'integer' and 'number' are numbers, 'bytes' a Uint8Array. */
export type FieldValue<T extends FieldType> = T extends 'string'
  ? string
  : T extends 'number' | 'integer'
    ? number
    : T extends 'boolean'
      ? boolean
      : Uint8Array;

type Required_<S extends Schema> = {
  [K in keyof S as S[K] extends FieldType ? K : never]: FieldValue<S[K] & FieldType>;
};
type Optional_<S extends Schema> = {
  [K in keyof S as S[K] extends `${FieldType}?` ? K : never]?: S[K] extends `${infer T extends FieldType}?`
    ? FieldValue<T>
    : never;
};

/**
 * The value type a schema describes (type level only): each field typed by FieldValue, a field
 * written with '?' optional.
 * @example type Synset = InferValue<{ lemma: 'string'; gloss: 'string?' }> // { lemma: string; gloss?: string }
 */
export type InferValue<S extends Schema> = {
  [K in keyof (Required_<S> & Optional_<S>)]: (Required_<S> & Optional_<S>)[K];
};

/** An object type whose fields all have types a schema can describe (interfaces included). */
export type ValueShape<V> = { [K in keyof V]: string | number | boolean | Uint8Array | undefined };

const CODEC_VERSION = 1;
/** The first byte of a value written under a schema version after the first: then varint(version). */
const VERSIONED_CODEC = 2;
const TYPES: readonly FieldType[] = ['string', 'number', 'integer', 'boolean', 'bytes'];
const dec = new TextDecoder('utf-8', { fatal: true });

interface Field {
  name: string;
  type: FieldType;
  optional: boolean;
}

/** A checked, ordered schema: version `version` of its collection's, with the ones before it. */
export interface CompiledSchema {
  readonly fields: readonly Field[];
  readonly source: Schema;
  /** The collection's schema version this is (1 for a schema that never evolved). */
  readonly version: number;
  /** The collection's earlier versions, oldest first (version i is earlier[i - 1]). */
  readonly earlier: readonly CompiledSchema[];
}

/**
 * Checks and orders a schema.
 * @throws TypeError for a schema that is not an object of known field types.
 */
export function compileSchema(schema: Schema, earlier: readonly Schema[] = []): CompiledSchema {
  const before = earlier.map((s, i) => compileOne(s, i + 1, []));
  return compileOne(schema, before.length + 1, before);
}

function compileOne(schema: Schema, version: number, earlier: readonly CompiledSchema[]): CompiledSchema {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema))
    throw new TypeError('"schema" expected an object of field types');
  const names = Object.keys(schema).sort();
  if (names.length === 0) throw new TypeError('"schema" expected at least one field');
  const fields = names.map((name) => {
    if (name === '__proto__') throw new TypeError('"schema" field name "__proto__" is not allowed');
    const spec = schema[name];
    const optional = typeof spec === 'string' && spec.endsWith('?');
    const type = (optional ? spec.slice(0, -1) : spec) as FieldType;
    if (!TYPES.includes(type))
      throw new TypeError(
        `"schema.${name}" expected one of ${TYPES.join(', ')} (optionally with "?"), got ${JSON.stringify(spec)}`,
      );
    return { name, type, optional };
  });
  return Object.freeze({
    fields: Object.freeze(fields),
    source: Object.freeze({ ...schema }),
    version,
    earlier: Object.freeze([...earlier]),
  });
}

/** The schema version a value was written under (1 for the unversioned form); 0 for no pqdb value. */
export function valueVersion(bytes: Uint8Array): number {
  if (bytes[0] === CODEC_VERSION) return 1;
  if (bytes[0] !== VERSIONED_CODEC) return 0;
  try {
    return readVarint(bytes, 1, bytes.length, () => new Error('not a version'))[0];
  } catch {
    return 0;
  }
}

/** The compiled schema history of a stored collection: its current version and the earlier ones. */
export function storedSchema(meta: { readonly schema: Schema; readonly versions?: readonly Schema[] }): CompiledSchema {
  return compileSchema(meta.schema, meta.versions ?? []);
}

/** Whether two compiled schemas have the same fields (key order aside). */
export function sameFields(a: CompiledSchema, b: CompiledSchema): boolean {
  return JSON.stringify(a.fields) === JSON.stringify(b.fields);
}

/** Whether two schemas have the same fields and types (key order aside). */
export function sameSchema(a: Schema, b: Schema): boolean {
  return JSON.stringify(compileSchema(a).fields) === JSON.stringify(compileSchema(b).fields);
}

/**
 * Why `next` cannot follow `stored` as the collection's next schema version without rewriting its
 * records, or undefined when it can: every field kept with its type (or an 'integer' widened to
 * 'number', a required field made optional), and every new field optional. Records written under
 * the older version then read through it as values the new one accepts.
 */
export function evolutionProblem(stored: CompiledSchema, next: CompiledSchema): string | undefined {
  for (const f of stored.fields) {
    const g = next.fields.find((x) => x.name === f.name);
    if (g === undefined) return `field "${f.name}" is gone`;
    const widened = g.type === f.type || (f.type === 'integer' && g.type === 'number');
    if (!widened) return `field "${f.name}" changed from ${f.type} to ${g.type}`;
    if (f.optional && !g.optional) return `optional field "${f.name}" became required`;
  }
  for (const g of next.fields)
    if (!stored.fields.some((f) => f.name === g.name) && !g.optional) return `new field "${g.name}" is required`;
  return undefined;
}

function mismatch(message: string): PqdbError {
  return new PqdbError('SCHEMA_MISMATCH', message);
}

/** Growable byte buffer; one can hold the encodings of many values (see encodeValueInto). */
export class ValueWriter {
  buf = new Uint8Array(4096);
  n = 0;
  room(k: number): void {
    if (this.n + k <= this.buf.length) return;
    const b = new Uint8Array(Math.max(this.buf.length * 2, this.n + k));
    b.set(this.buf.subarray(0, this.n));
    this.buf = b;
  }
  byte(b: number): void {
    this.room(1);
    this.buf[this.n++] = b;
  }
  bytes(b: Uint8Array): void {
    this.room(b.length);
    this.buf.set(b, this.n);
    this.n += b.length;
  }
  varint(v: number): void {
    // Unsigned LEB128 of a safe integer.
    while (v >= 0x80) {
      this.byte((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    this.byte(v);
  }
  /** varint(UTF-8 length) ‖ UTF-8, written in place. */
  str(s: string): void {
    const n = utf8Length(s);
    this.varint(n);
    this.room(n);
    this.n = writeUtf8(s, this.buf, this.n);
  }
  /** Zigzag varint of a safe integer (up to 54 bits after zigzag, so BigInt for the large ones). */
  zigzag(v: number): void {
    if (Math.abs(v) < 2 ** 51) {
      this.varint(v >= 0 ? v * 2 : -v * 2 - 1);
      return;
    }
    let z = v >= 0 ? BigInt(v) * 2n : -BigInt(v) * 2n - 1n;
    while (z >= 0x80n) {
      this.byte(Number(z & 0x7fn) | 0x80);
      z >>= 7n;
    }
    this.byte(Number(z));
  }
  done(): Uint8Array {
    return this.buf.slice(0, this.n);
  }
}

/**
 * Encodes `value` under `schema`.
 * @throws PqdbError SCHEMA_MISMATCH when the value does not match the schema.
 */
export function encodeValue(schema: CompiledSchema, value: Value): Uint8Array {
  const w = new ValueWriter();
  encodeValueInto(schema, value, w);
  return w.done();
}

/**
 * Appends the encoding of `value` to `w` (many values can share one buffer); returns its length.
 * On SCHEMA_MISMATCH nothing is appended.
 */
export function encodeValueInto(schema: CompiledSchema, value: Value, w: ValueWriter): number {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw mismatch('a record value must be an object');
  for (const k of Object.keys(value)) {
    if (!schema.fields.some((f) => f.name === k)) throw mismatch(`field "${k}" is not in the schema`);
  }
  const start = w.n;
  try {
    writeFields(schema, value, w);
  } catch (e) {
    w.n = start;
    throw e;
  }
  return w.n - start;
}

function writeFields(schema: CompiledSchema, value: Value, w: ValueWriter): void {
  if (schema.version === 1) w.byte(CODEC_VERSION);
  else {
    w.byte(VERSIONED_CODEC);
    w.varint(schema.version);
  }
  for (const f of schema.fields) {
    // Own properties only: a field named like an Object.prototype member ("toString") is absent
    // unless the value really has it.
    const v = Object.prototype.hasOwnProperty.call(value, f.name) ? value[f.name] : undefined;
    if (v === undefined) {
      if (!f.optional) throw mismatch(`field "${f.name}" (${f.type}) is required`);
      w.byte(0);
      continue;
    }
    w.byte(1);
    switch (f.type) {
      case 'string': {
        if (typeof v !== 'string') throw mismatch(`field "${f.name}" expected a string, got ${typeof v}`);
        w.str(v);
        break;
      }
      case 'bytes': {
        if (!(v instanceof Uint8Array)) throw mismatch(`field "${f.name}" expected a Uint8Array`);
        w.varint(v.length);
        w.bytes(v);
        break;
      }
      case 'number': {
        if (typeof v !== 'number' || Number.isNaN(v) || Object.is(v, -0))
          throw mismatch(`field "${f.name}" expected a number (not NaN or −0)`);
        const b = new Uint8Array(8);
        new DataView(b.buffer).setFloat64(0, v);
        w.bytes(b);
        break;
      }
      case 'integer': {
        if (typeof v !== 'number' || !Number.isSafeInteger(v))
          throw mismatch(`field "${f.name}" expected a safe integer`);
        w.zigzag(v);
        break;
      }
      case 'boolean':
        if (typeof v !== 'boolean') throw mismatch(`field "${f.name}" expected a boolean`);
        w.byte(v ? 1 : 0);
        break;
    }
  }
}

/**
 * Decodes bytes written by encodeValue under `current` or one of its earlier versions (through the
 * schema they were written under).
 * @throws PqdbError CORRUPTION for bytes that are not a canonical encoding under that schema;
 * FORMAT_VERSION for a codec or schema version this collection does not know
 */
export function decodeValue(current: CompiledSchema, bytes: Uint8Array): Value {
  let p = 0;
  const corrupt = (why: string) => new PqdbError('CORRUPTION', `record value does not decode: ${why}`);
  const need = (k: number) => {
    if (p + k > bytes.length) throw corrupt('truncated');
  };
  const varint = () => {
    const [v, next] = readVarint(bytes, p, bytes.length, corrupt);
    p = next;
    return v;
  };
  const zigzag = () => {
    let z = 0n;
    for (let i = 0; ; i++) {
      need(1);
      const b = bytes[p++];
      if (i > 0 && b === 0) throw corrupt('non-canonical varint');
      z |= BigInt(b & 0x7f) << BigInt(7 * i);
      if (b < 0x80) break;
      if (i >= 7) throw corrupt('varint too long');
    }
    const v = z % 2n === 0n ? z / 2n : -(z + 1n) / 2n;
    if (v > BigInt(Number.MAX_SAFE_INTEGER) || v < BigInt(Number.MIN_SAFE_INTEGER))
      throw corrupt('integer out of range');
    return Number(v);
  };
  need(1);
  const codec = bytes[p++];
  let schema = current;
  if (codec === VERSIONED_CODEC) {
    const version = varint();
    const known = version === current.version ? current : current.earlier[version - 1];
    if (version < 2 || known === undefined)
      throw new PqdbError(
        'FORMAT_VERSION',
        `record value written under schema version ${version}; this collection knows versions 1 to ${current.version}`,
      );
    schema = known;
  } else if (codec !== CODEC_VERSION)
    throw new PqdbError('FORMAT_VERSION', `record value codec version ${codec} is not supported`);
  else if (current.version !== 1) schema = current.earlier[0];
  const out: Value = {};
  for (const f of schema.fields) {
    need(1);
    const present = bytes[p++];
    if (present === 0) {
      if (!f.optional) throw corrupt(`required field "${f.name}" absent`);
      continue;
    }
    if (present !== 1) throw corrupt('bad presence byte');
    switch (f.type) {
      case 'string': {
        const n = varint();
        need(n);
        try {
          out[f.name] = dec.decode(bytes.subarray(p, p + n));
        } catch {
          throw corrupt(`field "${f.name}" is not UTF-8`);
        }
        p += n;
        break;
      }
      case 'bytes': {
        const n = varint();
        need(n);
        out[f.name] = bytes.slice(p, p + n);
        p += n;
        break;
      }
      case 'number': {
        need(8);
        const v = new DataView(bytes.buffer, bytes.byteOffset + p, 8).getFloat64(0);
        if (Number.isNaN(v) || Object.is(v, -0)) throw corrupt(`field "${f.name}" holds NaN or −0`);
        out[f.name] = v;
        p += 8;
        break;
      }
      case 'integer': {
        out[f.name] = zigzag();
        break;
      }
      case 'boolean':
        need(1);
        if (bytes[p] > 1) throw corrupt(`field "${f.name}" is not a boolean`);
        out[f.name] = bytes[p++] === 1;
        break;
    }
  }
  if (p !== bytes.length) throw corrupt('trailing bytes');
  return out;
}
