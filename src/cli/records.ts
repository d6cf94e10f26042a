// The record verbs: `pqdb put`, `get`, `delete`, `scan` and `search`, one record or one query per
// run, each needing the recipient secret key. Writers open the store for writing (they take its
// lock); readers open it read-only and can run beside a writer. Values are JSON (a `bytes` field is
// base64: _values.ts); the schema comes from the store, `--schema` names it on a collection's first
// put. Node only.
//
// Exit status: 0 done; 1 get or delete found no such record; 2 a bad argument, a value that does
// not fit the schema, or a store that cannot be opened.

/// <reference types="node" />
import { io } from './_io';
import type { Value } from '../engine/codec';
import type { Collection } from '../engine/collection';
import { PqdbError } from '../errors';
import { UsageError } from './_report';
import { collectionOf, openCliStore, requireUnlock, searchFields, splitList, type OpenedStore } from './_store';
import { parseValue, valueToJson } from './_values';
import { KEY_OPTIONS, str, whole, type Verb, type VerbArgs } from './_verb';
import type { Keys } from './_keys';
import { PIN_HELP, PIN_OPTIONS } from './_pin';

const UNLOCK_HELP = '  --unlock FILE   or PQDB_UNLOCK: the recipient secret key';

/** Runs `fn` on the store at `location`, closing it after. */
async function withStore<T>(
  location: string,
  keys: Keys,
  write: boolean,
  fn: (opened: OpenedStore) => Promise<T>,
): Promise<T> {
  requireUnlock(keys);
  const opened = await openCliStore(location, keys, { write });
  try {
    return await fn(opened);
  } finally {
    await opened.close();
  }
}

const print = (args: VerbArgs, json: unknown, text: string) =>
  io.stdout.write(args.values.json === true ? `${JSON.stringify(json, null, 2)}\n` : `${text}\n`);

export const put: Verb = {
  name: 'put',
  synopsis: '<location> <collection> <id> [<json>|-] --unlock FILE [--schema SCHEMA] [--json]',
  summary: 'stores one record (its value as JSON, or from stdin)',
  help: `  Seals and stores the JSON object <json> (read from stdin when it is "-" or missing) under <id>,
  durably, in one commit.
  --schema SCHEMA   the collection's schema, needed when the store does not have the collection
                    yet: name:type,… (types string, number, integer, boolean, bytes; "?" makes a
                    field optional) or a JSON object; later puts must give the same or none
  --index FIELDS    string fields to keep in the search index while writing (comma-separated)
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 3, max: 4 },
  options: { schema: { type: 'string' }, index: { type: 'string' }, unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location, name, id, json] = args.positionals;
    const text = json === undefined || json === '-' ? io.readStdin().toString('utf8') : json;
    return withStore(location, args.keys, true, async (opened) => {
      const index = str(args.values, 'index');
      const c = collectionOf(
        opened,
        name,
        str(args.values, 'schema'),
        index !== undefined ? splitList(index) : undefined,
      );
      await c.put(id, parseValue(c.schema.source, text, json === undefined || json === '-' ? 'stdin' : '<json>'));
      const { commit } = opened.store.info();
      print(args, { collection: name, id, commit }, `pqdb put: ${name}/${id} (commit ${commit})`);
      return 0;
    });
  },
};

export const get: Verb = {
  name: 'get',
  synopsis: '<location> <collection> <id> --unlock FILE [--json]',
  summary: "prints one record's value as JSON",
  help: `  Prints the value stored under <id> as one line of JSON; exit status 1 when there is none.
  --json   print { collection, id, found, value }
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 3, max: 3 },
  options: { unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location, name, id] = args.positionals;
    return withStore(location, args.keys, false, async (opened) => {
      const value = await collectionOf(opened, name, undefined).get(id);
      const found = value !== undefined;
      if (args.values.json === true)
        print(args, { collection: name, id, found, ...(found && { value: valueToJson(value) }) }, '');
      else if (found) io.stdout.write(`${JSON.stringify(valueToJson(value))}\n`);
      else io.stderr.write(`pqdb get: no record "${id}" in collection "${name}"\n`);
      return found ? 0 : 1;
    });
  },
};

export const del: Verb = {
  name: 'delete',
  synopsis: '<location> <collection> <id> --unlock FILE [--json]',
  summary: 'deletes one record',
  help: `  Deletes the record stored under <id> (a delete is a leaf of the Merkle log too); exit status 1
  when there is none.
  --json   print { collection, id, deleted }
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 3, max: 3 },
  options: { unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location, name, id] = args.positionals;
    return withStore(location, args.keys, true, async (opened) => {
      const deleted = await collectionOf(opened, name, undefined).delete(id);
      if (args.values.json === true) print(args, { collection: name, id, deleted }, '');
      else if (deleted) io.stdout.write(`pqdb delete: ${name}/${id}\n`);
      else io.stderr.write(`pqdb delete: no record "${id}" in collection "${name}"\n`);
      return deleted ? 0 : 1;
    });
  },
};

/** Records as `id<TAB>json` lines, or with --json one document { collection, …, records }. */
function printRecords(args: VerbArgs, head: Record<string, unknown>, records: { id: string; value: Value }[]): void {
  if (args.values.json === true) {
    const out = {
      ...head,
      count: records.length,
      records: records.map((r) => ({ id: r.id, value: valueToJson(r.value) })),
    };
    io.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
    return;
  }
  io.stdout.write(records.map((r) => `${r.id}\t${JSON.stringify(valueToJson(r.value))}\n`).join(''));
}

export const scan: Verb = {
  name: 'scan',
  synopsis: '<location> <collection> --unlock FILE [--prefix P] [--limit N] [--json]',
  summary: 'lists records in id order',
  help: `  Prints the records in id order, one per line: id, a tab, the value as JSON.
  --prefix P   only ids starting with P
  --limit N    at most N records
  --json       print { collection, prefix, count, records: [{ id, value }] }
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 2, max: 2 },
  options: { prefix: { type: 'string' }, limit: { type: 'string' }, unlock: KEY_OPTIONS.unlock, ...PIN_OPTIONS },
  async run(args) {
    const [location, name] = args.positionals;
    const limit = whole(args.values, 'limit', 0);
    const prefix = str(args.values, 'prefix') ?? '';
    return withStore(location, args.keys, false, async (opened) => {
      const records: { id: string; value: Value }[] = [];
      for await (const r of collectionOf(opened, name, undefined).scan({ prefix, limit })) records.push(r);
      printRecords(args, { collection: name, prefix }, records);
      return 0;
    });
  },
};

/** `text` as a value of `field` of `schema` (integer, number, boolean, bytes as base64, else the string). */
function fieldValue(
  schema: Record<string, string>,
  field: string,
  text: string,
  flag: string,
): string | number | boolean | Uint8Array {
  const type = schema[field]?.replace(/\?$/, '');
  if (type === undefined) throw new UsageError(`${flag}: "${field}" is not a field of the collection`);
  if (type === 'integer' || type === 'number') {
    const n = Number(text);
    if (text.trim() === '' || !Number.isFinite(n) || (type === 'integer' && !Number.isSafeInteger(n)))
      throw new UsageError(
        `${flag}: "${text}" is not ${type === 'integer' ? 'an integer' : 'a number'} (field "${field}")`,
      );
    return n;
  }
  if (type === 'boolean') {
    if (text !== 'true' && text !== 'false')
      throw new UsageError(`${flag}: "${text}" is not true or false (field "${field}")`);
    return text === 'true';
  }
  if (type === 'bytes') return Uint8Array.from(Buffer.from(text, 'base64'));
  return text;
}

export const query: Verb = {
  name: 'query',
  synopsis:
    "<location> <collection> --unlock FILE [--where 'F=V'…] [--between 'F=A..B'] [--order F] [--reverse] [--limit N] [--offset N] [--json]",
  summary: 'records by the values of their fields, through a secondary index',
  help: `  Answers from a secondary index over the fields named, built in memory from the records for
  this run (nothing of it is stored), and prints the records like scan, in the index's order.
  --where 'F=V'       field F equals V (repeat for a compound index: the fields in that order)
  --between 'F=A..B'  then field F from A (included) to B (excluded)
  --order F           every record with field F, in its order (without --where or --between)
  --reverse           descending order
  --limit N, --offset N
  --json              print { collection, count, withheld, records: [{ id, value }] }
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 2, max: 2 },
  options: {
    where: { type: 'string', multiple: true },
    between: { type: 'string' },
    order: { type: 'string' },
    reverse: { type: 'boolean' },
    limit: { type: 'string' },
    offset: { type: 'string' },
    unlock: KEY_OPTIONS.unlock,
    ...PIN_OPTIONS,
  },
  async run(args) {
    const [location, name] = args.positionals;
    const wheres = (args.values.where as string[] | undefined) ?? [];
    const between = str(args.values, 'between');
    const order = str(args.values, 'order');
    const limit = whole(args.values, 'limit', 0);
    const offset = whole(args.values, 'offset', 0);
    if (order !== undefined && (wheres.length > 0 || between !== undefined))
      throw new UsageError('--order takes no --where or --between (they order by their own fields)');
    if (order === undefined && wheres.length === 0 && between === undefined)
      throw new UsageError('give --where, --between or --order');
    return withStore(location, args.keys, false, async (opened) => {
      const schema = opened.manifest.collections[name]?.schema as Record<string, string> | undefined;
      if (schema === undefined) throw new UsageError(`no collection "${name}" in the store`);
      const split = (text: string, flag: string) => {
        const at = text.indexOf('=');
        if (at <= 0) throw new UsageError(`${flag} expected FIELD=VALUE, got "${text}"`);
        return [text.slice(0, at), text.slice(at + 1)] as const;
      };
      const eq = wheres.map((w) => split(w, '--where'));
      const fields = eq.map(([f]) => f);
      let range: [unknown[], unknown[]] | undefined;
      if (between !== undefined) {
        const [f, span] = split(between, '--between');
        const dots = span.indexOf('..');
        if (dots < 0) throw new UsageError(`--between expected FIELD=A..B, got "${between}"`);
        const prefix = eq.map(([g, v]) => fieldValue(schema, g, v, '--where'));
        range = [
          [...prefix, fieldValue(schema, f, span.slice(0, dots), '--between')],
          [...prefix, fieldValue(schema, f, span.slice(dots + 2), '--between')],
        ];
        fields.push(f);
      }
      const by = order !== undefined ? [order] : fields;
      for (const f of by)
        if (schema[f] === undefined) throw new UsageError(`"${f}" is not a field of collection "${name}"`);
      const c = opened.store.collection(name, { schema, index: { by: [by] } } as never) as Collection;
      const where = c.where(by);
      // One field takes its value, several their list (a compound index's prefix).
      const one = (parts: unknown[]) => (parts.length === 1 ? parts[0] : parts);
      const q =
        order !== undefined
          ? where.all()
          : range !== undefined
            ? where.between(one(range[0]), one(range[1]))
            : where.equals(one(eq.map(([g, v]) => fieldValue(schema, g, v, '--where'))));
      if (args.values.reverse === true) q.reverse();
      if (offset !== undefined && offset > 0) q.offset(offset);
      if (limit !== undefined && limit > 0) q.limit(limit);
      const records = await q.toArray();
      printRecords(args, { collection: name, withheld: q.withheld }, records as { id: string; value: Value }[]);
      return 0;
    });
  },
};

export const search: Verb = {
  name: 'search',
  synopsis:
    '<location> <collection> <query> --unlock FILE [--mode all|any] [--prefix] [--limit N] [--fields F] [--json]',
  summary: "finds records whose text fields hold the query's words",
  help: `  Searches the collection's lexical index (loaded from its sealed page, or built from the
  records when there is none) and prints the matches like scan.
  --mode all|any   every word of the query must match (default) or any one
  --prefix         the last word matches as a prefix (as typed so far)
  --limit N        at most N results (default 100)
  --fields F       the string fields to index (comma-separated); default: those of the
                   persisted index, else every string field of the schema
  --json           print { collection, query, mode, count, records: [{ id, value }] }
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 3, max: 3 },
  options: {
    mode: { type: 'string' },
    prefix: { type: 'boolean' },
    limit: { type: 'string' },
    fields: { type: 'string' },
    unlock: KEY_OPTIONS.unlock,
    ...PIN_OPTIONS,
  },
  async run(args) {
    const [location, name, query] = args.positionals;
    const mode = str(args.values, 'mode') ?? 'all';
    if (mode !== 'all' && mode !== 'any') throw new UsageError(`--mode expected all or any, got "${mode}"`);
    const limit = whole(args.values, 'limit', 1);
    return withStore(location, args.keys, false, async (opened) => {
      const fields = searchFields(opened, name, str(args.values, 'fields'));
      if (fields.length === 0)
        throw new PqdbError('SCHEMA_MISMATCH', `collection "${name}" has no string field to search`);
      const c = collectionOf(opened, name, undefined, fields);
      const records = await c.search(query, { mode, prefix: args.values.prefix === true, ...(limit && { limit }) });
      printRecords(args, { collection: name, query, mode }, records);
      return 0;
    });
  },
};
