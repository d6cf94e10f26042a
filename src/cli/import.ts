// `pqdb import <location> <collection> <file> --format jsonl|csv|wordnet`: loads records from a
// file in batched commits (each batch one atomic commit), with a progress bar. The whole file is
// read and every row checked against the schema before the first commit, so a bad row writes
// nothing. Formats:
//   jsonl    one JSON object a line: { "id": …, "value": {…} } (what `pqdb export` writes), or the
//            value itself with its id in the field --id names (default "id")
//   csv      RFC 4180 with a header row; the column --id names (default "id") is the record id;
//            cells are converted to the schema's types (without --schema on a new collection,
//            every other column is a string field)
//   wordnet  a WordNet 3.x data file (data.noun, data.verb, …): one record per synset, id
//            pos ‖ offset, value { lemma, pos, gloss, offset } (the first word is the lemma)
// An id field that is not in the schema is left out of the value. Node only.

/// <reference types="node" />
import { io } from './_io';
import { readFileSync } from 'node:fs';
import { encodeValueInto, ValueWriter, type Schema, type Value } from '../engine/codec';
import { PqdbError } from '../errors';
import { countProgress } from './_progress';
import { UsageError } from './_report';
import { collectionOf, openCliStore, requireSigner, requireUnlock, splitList } from './_store';
import { PIN_HELP, PIN_OPTIONS } from './_pin';
import { csvRows, parseSchema, valueFromCsv, valueFromJson } from './_values';
import { KEY_OPTIONS, str, whole, type Verb } from './_verb';

/** Records per commit unless --batch says otherwise. */
const DEFAULT_BATCH = 1000;

/** The schema of `--format wordnet` records. */
export const WORDNET_SCHEMA: Schema = Object.freeze({
  lemma: 'string',
  pos: 'string',
  gloss: 'string',
  offset: 'integer',
});

interface Row {
  id: string;
  value: Value;
}

/**
 * The synsets of a WordNet data file: lines "offset lex_filenum ss_type w_cnt word lex_id … | gloss"
 * (wndb(5WN)); the license header's lines start with two spaces. Yields { id, value }.
 * @throws PqdbError SCHEMA_MISMATCH for a line that is not a synset.
 */
export function* wordnetRows(text: string): Generator<Row> {
  let start = 0;
  let line = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl + 1;
    const s = text.slice(start, nl < 0 ? text.length : nl).replace(/\r$/, '');
    line++;
    start = end;
    if (s.length === 0 || s.startsWith('  ')) continue;
    const bar = s.indexOf(' | ');
    const head = s.slice(0, bar < 0 ? s.length : bar).split(' ');
    if (head.length < 6 || !/^\d{8}$/.test(head[0]) || !/^[nvasr]$/.test(head[2]))
      throw new PqdbError('SCHEMA_MISMATCH', `line ${line}: not a WordNet synset line`);
    yield {
      id: `${head[2]}${head[0]}`,
      value: {
        lemma: head[4].replace(/_/g, ' '),
        pos: head[2],
        gloss: bar < 0 ? '' : s.slice(bar + 3).trim(),
        offset: Number(head[0]),
      },
    };
  }
}

/** The id of a row from the field `idField`, taken out of the value unless the schema has it. */
function takeId(value: Value, idField: string, schema: Schema | undefined, where: string): string {
  const id = value[idField];
  if (typeof id !== 'string' && typeof id !== 'number')
    throw new PqdbError('SCHEMA_MISMATCH', `${where}: no "${idField}" field to take the record id from`);
  if (schema === undefined || !(idField in schema)) delete value[idField];
  return String(id);
}

/** Rows of a JSONL file. */
function* jsonlRows(text: string, idField: string, schema: Schema): Generator<Row> {
  let start = 0;
  let line = 0;
  while (start < text.length) {
    const nl = text.indexOf('\n', start);
    const end = nl < 0 ? text.length : nl + 1;
    const s = text.slice(start, nl < 0 ? text.length : nl).trim();
    line++;
    start = end;
    if (s.length === 0) continue;
    const where = `line ${line}`;
    let json: unknown;
    try {
      json = JSON.parse(s);
    } catch (e) {
      throw new PqdbError('SCHEMA_MISMATCH', `${where}: not JSON (${(e as Error).message})`, { cause: e });
    }
    const o = json as Record<string, unknown>;
    const wrapped =
      typeof o === 'object' && o !== null && Object.keys(o).length === 2 && typeof o.id === 'string' && 'value' in o;
    if (wrapped) yield { id: o.id as string, value: valueFromJson(schema, o.value, where) };
    else {
      const value = valueFromJson(schema, json, where);
      yield { id: takeId(value, idField, schema, where), value };
    }
  }
}

/** The schema of a new collection imported from CSV without --schema: every column but the id a string. */
function csvSchema(header: readonly string[], idField: string): Schema {
  const schema: Record<string, 'string'> = {};
  for (const h of header) if (h !== idField) schema[h] = 'string';
  return schema;
}

export const importVerb: Verb = {
  name: 'import',
  synopsis: '<location> <collection> <file> --format jsonl|csv|wordnet --unlock FILE [--schema SCHEMA] [--json]',
  summary: 'loads records from a JSONL, CSV or WordNet data file in batched commits',
  help: `  Reads <file> ("-": stdin), checks every row against the collection's schema, then writes the
  records in batches, each one atomic commit; a bad row writes nothing. A progress bar is drawn
  on a terminal (or with --progress).
  --format jsonl|csv|wordnet
      jsonl    one JSON object a line: {"id":…,"value":{…}} (what pqdb export writes), or the
               value itself with its id in the field --id names
      csv      RFC 4180 with a header row; quoted fields may hold commas, quotes ("") and newlines
      wordnet  a WordNet 3.x data file (data.noun, …): id pos+offset, { lemma, pos, gloss, offset }
  --schema SCHEMA   the schema of a collection new to the store (see pqdb put --help); CSV
                    without it: every column but the id a string; WordNet: its own schema
  --id FIELD        the field or column holding the record id (default "id"); it stays in the
                    value only if the schema has it
  --batch N         records per commit (default ${DEFAULT_BATCH})
  --index FIELDS    string fields to keep in the search index (persisted at the checkpoint)
  --signer FILE     sign a checkpoint after the last batch (its public half from FILE.pub)
  --json            print { collection, records, commits, ms, checkpoint? }
  --unlock FILE     or PQDB_UNLOCK: the recipient secret key
${PIN_HELP}`,
  positionals: { min: 3, max: 3 },
  options: {
    format: { type: 'string' },
    schema: { type: 'string' },
    id: { type: 'string' },
    batch: { type: 'string' },
    index: { type: 'string' },
    ...KEY_OPTIONS,
    ...PIN_OPTIONS,
  },
  async run({ positionals: [location, name, file], values, keys, progress }) {
    const format = str(values, 'format');
    if (format === undefined) throw new UsageError('--format jsonl|csv|wordnet is required');
    if (!['jsonl', 'csv', 'wordnet'].includes(format))
      throw new UsageError(`--format expected jsonl, csv or wordnet, got "${format}"`);
    const idField = str(values, 'id') ?? 'id';
    const batch = whole(values, 'batch', 1) ?? DEFAULT_BATCH;
    const index = str(values, 'index');
    requireUnlock(keys);
    if (keys.signer !== undefined) requireSigner(keys);
    let text: string;
    try {
      const encoding = format === 'wordnet' ? 'latin1' : 'utf8';
      text = file === '-' ? io.readStdin().toString(encoding) : readFileSync(file, encoding);
    } catch (e) {
      throw new PqdbError('IO_ERROR', `cannot read ${file}: ${(e as Error).message}`, { cause: e });
    }
    const started = Date.now();
    const opened = await openCliStore(location, keys, { write: true });
    try {
      const stored = opened.manifest.collections[name]?.schema;
      let schemaText = str(values, 'schema');
      let rows: Iterable<Row>;
      if (format === 'wordnet') {
        schemaText ??= stored === undefined ? JSON.stringify(WORDNET_SCHEMA) : undefined;
        rows = wordnetRows(text);
      } else if (format === 'csv') {
        const it = csvRows(text);
        const first = it.next();
        if (first.done === true) throw new PqdbError('SCHEMA_MISMATCH', `${file}: no CSV header row`);
        const header = first.value.fields;
        if (!header.includes(idField)) throw new PqdbError('SCHEMA_MISMATCH', `CSV header has no "${idField}" column`);
        const schema = stored ?? (schemaText !== undefined ? parseSchema(schemaText) : csvSchema(header, idField));
        schemaText ??= stored === undefined ? JSON.stringify(schema) : undefined;
        // The id column is read as a string; it stays in the value only when the schema has it.
        const valueHeader = header.filter((h) => h !== idField || h in schema);
        const idAt = header.indexOf(idField);
        rows = (function* () {
          for (const { line, fields } of it) {
            const where = `CSV line ${line}`;
            const cells = fields.filter((_, i) => i !== idAt || idField in schema);
            if (fields.length !== header.length)
              throw new PqdbError(
                'SCHEMA_MISMATCH',
                `${where}: ${fields.length} fields, the header has ${header.length}`,
              );
            yield { id: fields[idAt], value: valueFromCsv(schema, valueHeader, cells, where) };
          }
        })();
      } else {
        const schema = stored ?? (schemaText !== undefined ? parseSchema(schemaText) : undefined);
        if (schema === undefined)
          throw new UsageError(`no collection "${name}" in the store (its first put or import gives --schema)`);
        rows = jsonlRows(text, idField, schema);
      }
      const c = collectionOf(opened, name, schemaText, index !== undefined ? splitList(index) : undefined);
      // Every row parsed and encoded once before anything is written: a bad row writes nothing.
      const all: Row[] = [];
      const check = c.schema; // its version: what the commit encodes under
      const w = new ValueWriter();
      const seen = new Set<string>();
      for (const row of rows) {
        w.n = 0;
        try {
          encodeValueInto(check, row.value, w);
        } catch (e) {
          if (!(e instanceof PqdbError)) throw e;
          throw new PqdbError(e.code, `record ${all.length + 1} ("${row.id}"): ${e.message}`, { cause: e });
        }
        if (row.id === '') throw new PqdbError('SCHEMA_MISMATCH', `record ${all.length + 1}: empty id`);
        seen.add(row.id);
        all.push(row);
      }
      const step = countProgress(progress, 'import', 'records');
      let commits = 0;
      for (let i = 0; i < all.length; i += batch) {
        const part = all.slice(i, i + batch);
        await opened.store.batch((tx) => {
          for (const r of part) tx.put(c, r.id, r.value);
        });
        commits++;
        step(i + part.length, all.length);
      }
      const cp =
        keys.signer !== undefined ? (await opened.store.checkpoint(), opened.store.info().checkpoint) : undefined;
      const out = {
        collection: name,
        records: all.length,
        ids: seen.size,
        commits,
        ms: Date.now() - started,
        ...(cp && { checkpoint: cp }),
      };
      io.stdout.write(
        values.json === true
          ? `${JSON.stringify(out, null, 2)}\n`
          : `pqdb import: ${out.records.toLocaleString('en-US')} records into ${name} in ${commits} commit(s), ${(out.ms / 1000).toFixed(2)} s${cp ? `; checkpoint ${cp.size} (${cp.hash})` : ''}\n`,
      );
      return 0;
    } finally {
      await opened.close();
    }
  },
};
