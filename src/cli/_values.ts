// Record values on the command line: the `--schema` option's two spellings, JSON to a typed value
// and back (a `bytes` field is base64 in JSON), and CSV (RFC 4180: quoted fields with doubled
// quotes, commas and line breaks inside quotes, CRLF or LF). A value that does not fit its schema is
// a SCHEMA_MISMATCH naming where it came from; the codec (src/engine/codec.ts) checks it again. Node only.

/// <reference types="node" />
import { compileSchema, type Schema, type Value } from '../engine/codec';
import { PqdbError } from '../errors';
import { UsageError } from './_report';

/**
 * A schema from `--schema`: a JSON object (`{"lemma":"string","offset":"integer"}`) or the short
 * form `lemma:string,offset:integer` (a type ending in `?` is optional).
 * @throws UsageError for anything else, or a field type the codec does not know.
 * @example
 * parseSchema('lemma:string,gloss:string?'); // { lemma: 'string', gloss: 'string?' }
 */
export function parseSchema(text: string): Schema {
  let schema: Record<string, string>;
  if (text.trimStart().startsWith('{')) {
    try {
      schema = JSON.parse(text) as Record<string, string>;
    } catch (e) {
      throw new UsageError(`--schema: not JSON: ${(e as Error).message}`, { cause: e });
    }
  } else {
    schema = {};
    for (const part of text.split(',')) {
      const m = /^\s*([^:\s]+)\s*:\s*(\S+)\s*$/.exec(part);
      if (m === null) throw new UsageError(`--schema: expected name:type[,name:type…], got "${part}"`);
      schema[m[1]] = m[2];
    }
  }
  try {
    return compileSchema(schema as Schema).source;
  } catch (e) {
    throw new UsageError(`--schema: ${(e as Error).message}`, { cause: e });
  }
}

/** The schema's field names and types, types without the optional mark. */
function fieldsOf(schema: Schema): [string, string, boolean][] {
  return Object.entries(schema).map(([k, v]) => [k, v.replace(/\?$/, ''), v.endsWith('?')]);
}

/**
 * A typed value from parsed JSON: `bytes` fields from base64 strings, the rest as they are (the
 * codec checks types). `where` names the input in the error.
 * @throws PqdbError SCHEMA_MISMATCH for a non-object or a bytes field that is not base64.
 * @example
 * valueFromJson({ n: 'string' }, { n: 'cat' }, 'argument'); // { n: 'cat' }
 */
export function valueFromJson(schema: Schema, json: unknown, where: string): Value {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new PqdbError('SCHEMA_MISMATCH', `${where}: expected a JSON object`);
  const value: Value = { ...(json as Value) };
  for (const [name, type] of fieldsOf(schema)) {
    const v = value[name];
    if (type !== 'bytes' || v === undefined || v === null) continue;
    if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v))
      throw new PqdbError('SCHEMA_MISMATCH', `${where}: field "${name}" expected base64 bytes`);
    value[name] = new Uint8Array(Buffer.from(v, 'base64'));
  }
  for (const [k, v] of Object.entries(value)) if (v === null) delete value[k];
  return value;
}

/**
 * A JSON-ready copy of a stored value: `bytes` fields as base64, absent optional fields left out.
 * @example
 * valueToJson({ b: new Uint8Array([1]) }); // { b: 'AQ==' }
 */
export function valueToJson(value: Value): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [k, v] of Object.entries(value)) {
    if (v === undefined) continue;
    out[k] = v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v;
  }
  return out;
}

/**
 * Parses JSON text into a typed value (see valueFromJson).
 * @throws PqdbError SCHEMA_MISMATCH for text that is not JSON or not an object.
 */
export function parseValue(schema: Schema, text: string, where: string): Value {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    throw new PqdbError('SCHEMA_MISMATCH', `${where}: not JSON (${(e as Error).message})`, { cause: e });
  }
  return valueFromJson(schema, json, where);
}

/**
 * A typed value from one CSV row under `header`: each cell converted to its field's type; an
 * empty cell of an optional field is absent. `where` names the row in the error.
 * @throws PqdbError SCHEMA_MISMATCH for a cell that is not of its field's type or a column the
 * schema does not have.
 */
export function valueFromCsv(schema: Schema, header: readonly string[], row: readonly string[], where: string): Value {
  const types = new Map(fieldsOf(schema).map(([name, type, optional]) => [name, { type, optional }]));
  if (row.length !== header.length)
    throw new PqdbError('SCHEMA_MISMATCH', `${where}: ${row.length} fields, the header has ${header.length}`);
  const value: Value = {};
  header.forEach((name, i) => {
    const cell = row[i];
    const t = types.get(name);
    if (t === undefined) throw new PqdbError('SCHEMA_MISMATCH', `${where}: column "${name}" is not in the schema`);
    if (cell === '' && t.optional) return;
    const bad = () => new PqdbError('SCHEMA_MISMATCH', `${where}: "${name}" expected ${t.type}, got "${cell}"`);
    if (t.type === 'string') value[name] = cell;
    else if (t.type === 'integer' || t.type === 'number') {
      const n = Number(cell);
      if (cell.trim() === '' || !Number.isFinite(n)) throw bad();
      value[name] = n;
    } else if (t.type === 'boolean') {
      if (cell !== 'true' && cell !== 'false') throw bad();
      value[name] = cell === 'true';
    } else {
      if (!/^[A-Za-z0-9+/]*={0,2}$/.test(cell)) throw bad();
      value[name] = new Uint8Array(Buffer.from(cell, 'base64'));
    }
  });
  return value;
}

/** What ends an unquoted CSV field (searched from lastIndex: no copy of the rest of the text). */
const SEPARATOR = /[,\r\n]/g;

/**
 * Splits CSV text into rows (RFC 4180): fields separated by commas, a field in double quotes may
 * hold commas, line breaks and doubled quotes; rows end with LF or CRLF; an empty line is no row.
 * Returns each row with the line it starts on (1-based).
 * @throws PqdbError SCHEMA_MISMATCH for a quote left open or text after a closing quote.
 * @example
 * [...csvRows('a,"b ""c"", d"\n')]; // [{ line: 1, fields: ['a', 'b "c", d'] }]
 */
export function* csvRows(text: string): Generator<{ line: number; fields: string[] }> {
  let i = 0;
  let line = 1;
  const n = text.length;
  while (i < n) {
    const start = line;
    const fields: string[] = [];
    let quoted = false;
    for (;;) {
      let field = '';
      if (text[i] === '"') {
        quoted = true;
        i++;
        for (;;) {
          if (i >= n) throw new PqdbError('SCHEMA_MISMATCH', `CSV line ${start}: a quoted field is not closed`);
          const c = text[i];
          if (c === '"') {
            if (text[i + 1] === '"') {
              field += '"';
              i += 2;
              continue;
            }
            i++;
            break;
          }
          if (c === '\n') line++;
          field += c;
          i++;
        }
        if (i < n && text[i] !== ',' && text[i] !== '\n' && text[i] !== '\r')
          throw new PqdbError('SCHEMA_MISMATCH', `CSV line ${line}: text after a closing quote`);
      } else {
        SEPARATOR.lastIndex = i;
        const end = SEPARATOR.exec(text)?.index ?? n;
        field = text.slice(i, end);
        i = end;
      }
      fields.push(field);
      if (text[i] === ',') {
        i++;
        continue;
      }
      if (text[i] === '\r' && text[i + 1] === '\n') i++;
      if (i < n) {
        i++;
        line++;
      }
      break;
    }
    // An empty line is no row; a lone "" is a row of one empty field.
    if (quoted || fields.length > 1 || fields[0] !== '') yield { line: start, fields };
  }
}
