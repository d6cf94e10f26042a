// Record writes and reads below the collection façade (collection.ts): a collection's declaration
// in its first commit, the checks and encoding of pending operations (encodeOps) before anything is
// queued, their staging into a commit draft as sealed record writes (stageOps), and a record read
// under the policy in force. The engine (engine.ts) calls these with the context each declares.

import { canonicalGovernanceText, type Governance } from '../crypto/record';
import { utf8Length } from '../_utf8';
import {
  decodeValue,
  encodeValueInto,
  sameSchema,
  ValueWriter,
  type CompiledSchema,
  type Schema,
  type Value,
} from './codec';
import { PqdbError } from '../errors';
import type { RecordIO } from './records';
import type { PageCache } from './page-cache';
import { noteRequest, REQUEST_ID, type Manifest } from './manifest';
import type { Registry } from './registry';
import type { CommitPipeline, Draft } from './commit';
import type { KeyDirectory } from './directory';
import type { KeyRing } from './keys';

/** @internal What a read with `withhold` gives for a record the policy in force keeps from reading. */
export const WITHHELD: unique symbol = Symbol('withheld');

/** Longest record id, in UTF-8 bytes. */
export const MAX_ID_BYTES = 1024;

/** @internal A write a collection hands to its store. */
export type PendingOp =
  | {
      kind: 'put';
      collection: DeclaredCollection;
      id: string;
      value: Value;
      governance?: Governance;
      /** The version the record must have when the commit runs (0: absent), else CONFLICT. */
      ifVersion?: number;
    }
  | { kind: 'delete'; collection: DeclaredCollection; id: string; ifVersion?: number };

/** @internal A transaction that reads, as the engine runs it (Store.transaction checks its collections). */
export interface ReadTransaction {
  get(c: DeclaredCollection, id: string): Promise<Value | undefined>;
  has(c: DeclaredCollection, id: string): boolean;
  version(c: DeclaredCollection, id: string): number | undefined;
  put(c: DeclaredCollection, id: string, value: Value, options?: { governance?: Governance }): void;
  delete(c: DeclaredCollection, id: string): void;
}

/** @internal Checks an `ifVersion` option: a version (a write sequence) or 0 for "absent". @throws TypeError */
export function checkVersion(v: unknown): number | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0)
    throw new TypeError('"ifVersion" expected a version (collection.version(id)) or 0 for an absent record');
  return v;
}

/**
 * @internal In the commit task, before anything is staged: every operation with `ifVersion` finds
 * its record at that version (0: absent).
 * @throws PqdbError CONFLICT naming the first that does not
 */
export function checkVersions(directory: Pick<KeyDirectory, 'get'>, pending: readonly PendingOp[]): void {
  for (const p of pending) {
    if (p.ifVersion === undefined) continue;
    const now = directory.get(p.collection.name, p.id)?.sequence ?? 0;
    if (now !== p.ifVersion)
      throw new PqdbError(
        'CONFLICT',
        `record ${p.collection.name}/${p.id} is at version ${now === 0 ? '0 (absent)' : now}, not ${p.ifVersion}: it changed since it was read`,
      );
  }
}

/** @internal What the engine knows of a collection a store opened: what its first commit declares. */
export interface DeclaredCollection {
  readonly name: string;
  readonly schema: CompiledSchema;
  readonly indexed: readonly string[];
  /** Its secondary indexes' field lists (field-indexes.ts). */
  readonly by?: readonly (readonly string[])[];
  /** Opened with an upgrade (collection.ts): a record of an earlier schema version reads through it. */
  readonly upgrade?: (value: Value, version: number) => Value;
  readonly suite?: number;
}

/** @internal Checks a record id. @throws TypeError, RangeError */
export function checkId(id: unknown): string {
  if (typeof id !== 'string' || id.length === 0) throw new TypeError('"id" expected a non-empty string');
  if (utf8Length(id) > MAX_ID_BYTES) throw new RangeError('"id" is limited to 1,024 UTF-8 bytes');
  return id;
}

/**
 * @internal The suite collection `c` writes with under manifest `m`, and whether its commit must make it
 * active: a new collection that names its suite makes a decrypt-only suite active with its first
 * commit; quarantined and retired suites stay as they are (and refuse the write).
 */
export function writeSuite(
  m: Manifest,
  registry: Registry,
  c: DeclaredCollection,
): { suite: number; activate: boolean } {
  const meta = m.collections[c.name];
  if (meta !== undefined) return { suite: meta.suite, activate: false };
  if (c.suite !== undefined) return { suite: c.suite, activate: registry.state(c.suite) === 'decrypt-only' };
  return { suite: m.defaultSuite, activate: false };
}

/**
 * @internal A collection written for the first time enters the draft's manifest (and registry),
 * with its schema's earlier versions and its indexed fields. One opened with its schema's next
 * version (collectionSpec) records it with its first write: the stored schema joins the earlier
 * versions, and no record is rewritten (each keeps the version it was written under).
 */
export function declareCollection(draft: Draft, c: DeclaredCollection): void {
  const m = draft.manifest;
  const meta = m.collections[c.name];
  const text = {
    ...(c.indexed.length > 0 ? { text: [...c.indexed] } : {}),
    ...(c.by !== undefined && c.by.length > 0 ? { by: c.by.map((f) => [...f]) } : {}),
  };
  if (meta !== undefined) {
    // The versions this handle was opened with must be the store's: another writer may have
    // recorded another next version since (a record written under this one would be misread).
    const chain = [...(meta.versions ?? []), meta.schema];
    const stored = chain.length;
    const mine = [...c.schema.earlier.map((e) => e.source), c.schema.source];
    const agrees = mine.every((s, i) => i >= stored || sameSchema(s, chain[i])) && mine.length <= stored + 1;
    if (!agrees)
      throw new PqdbError(
        'CONFLICT',
        `collection "${c.name}" is at schema version ${stored} as another writer recorded it, not the one it was opened with here: open it again`,
      );
    if (c.schema.version > stored)
      m.collections[c.name] = {
        ...meta,
        schema: c.schema.source as Schema,
        versions: c.schema.earlier.map((e) => e.source as Schema),
        ...text,
        // Until its rewrite ends, older records read only through the upgrade function.
        ...(c.upgrade !== undefined ? { upgrade: { to: c.schema.version } } : {}),
      };
    // Indexes declared anew are what a later `collection(name)` opens with (none declared: kept).
    else if (
      ('text' in text && JSON.stringify(text.text) !== JSON.stringify(meta.text)) ||
      ('by' in text && JSON.stringify(text.by) !== JSON.stringify(meta.by))
    )
      m.collections[c.name] = { ...meta, ...text };
    return;
  }
  const { suite, activate } = writeSuite(m, draft.currentRegistry, c);
  if (activate) draft.registry.setState(suite, 'active');
  const versions = c.schema.earlier.length > 0 ? { versions: c.schema.earlier.map((e) => e.source as Schema) } : {};
  m.collections[c.name] = { schema: c.schema.source as Schema, suite, ...versions, ...text };
}

/** @internal Pending operations checked and encoded, their plaintexts in one shared buffer. */
export interface EncodedOps {
  pending: readonly PendingOp[];
  buf: ValueWriter;
  spans: [number, number][];
  governance: string[];
}

/**
 * @internal Checks and encodes operations before anything is queued: a bad value writes nothing.
 * The plaintexts of the whole commit share one buffer.
 * The façade (Store) has checked that each collection is one of its own.
 * @throws TypeError for a bad id; PqdbError SCHEMA_MISMATCH, SUITE_QUARANTINED, SUITE_RETIRED.
 */
export function encodeOps(pending: readonly PendingOp[], m: Manifest, registry: Registry): EncodedOps {
  const buf = new ValueWriter();
  const spans: [number, number][] = pending.map(() => [0, 0]);
  const governance = pending.map((p, i) => {
    checkId(p.id);
    if (p.kind === 'delete') return '';
    const start = buf.n;
    spans[i] = [start, start + encodeValueInto(p.collection.schema, p.value, buf)];
    const { suite, activate } = writeSuite(m, registry, p.collection);
    if (!activate) registry.checkWrite(suite);
    // The policy in force decides at commit (the write gate, gates.ts), against the commit's own.
    return canonicalGovernanceText(p.governance);
  });
  return { pending, buf, spans, governance };
}

/** @internal Adds encoded operations to a draft as record writes of generation `g`, sealed with its commit. */
export function stageOps(draft: Draft, records: Pick<RecordIO, 'put'>, g: number, e: EncodedOps): void {
  const base = draft.sequences(e.pending.length);
  e.pending.forEach((p, i) => {
    const sequence = base + i;
    const { name: collection } = p.collection;
    if (p.kind === 'delete') {
      draft.write({ kind: 'delete', collection, id: p.id, sequence }, { kind: 'delete', collection, id: p.id });
      return;
    }
    // The suite is read again here: a migration may have changed it since the call.
    const { suite, activate } = writeSuite(draft.manifest, draft.currentRegistry, p.collection);
    if (!activate) draft.currentRegistry.checkWrite(suite);
    const plaintext = e.buf.buf.subarray(e.spans[i][0], e.spans[i][1]);
    const governance = e.governance[i];
    const op = records.put({ collection, id: p.id, suite, generation: g, sequence, governance, plaintext });
    draft.write(op, { kind: 'put', collection, id: p.id, value: p.value });
  });
}

/** @internal What committing and reading records use of the engine (engine.ts builds it). */
export interface RecordContext {
  readonly pipeline: Pick<CommitPipeline, 'manifest' | 'registry' | 'run'>;
  readonly keys: Pick<KeyRing, 'current'>;
  readonly records: Pick<RecordIO, 'put' | 'read' | 'readIn'>;
  readonly directory: Pick<KeyDirectory, 'get'>;
}

/** @internal Encodes checked operations, then seals and commits them as one page (versions checked in the task). */
export function commitOps(ctx: RecordContext, pending: readonly PendingOp[], requestId?: string): Promise<void> {
  const { pipeline, keys, records } = ctx;
  if (requestId !== undefined && (typeof requestId !== 'string' || !REQUEST_ID.test(requestId)))
    throw new TypeError('"requestId" expected 16 bytes in base64');
  const encoded = encodeOps(pending, pipeline.manifest, pipeline.registry);
  // Sealing happens in commit order, so write sequences (and so nonces) are unique and ordered.
  return pipeline.run((draft) => {
    // A write given again with the id of one the store committed (a call retried after a handover): done already.
    if (requestId !== undefined && pipeline.manifest.requests?.includes(requestId) === true) return draft.discard();
    checkVersions(ctx.directory, pending);
    stageOps(draft, records, keys.current(), encoded);
    if (requestId !== undefined) noteRequest(draft.manifest, requestId);
  });
}

/** Reads of one query that land in a commit page at least this many times take the page whole. */
const READS_PER_PAGE = 4;

/**
 * @internal The values of records `ids` of `c`, in order, as readRecord gives each (undefined for
 * an id gone, WITHHELD for one the read gate withholds): records sharing a commit page with enough
 * others are opened out of the page, read once through the page cache; the rest one by one.
 */
export async function readRecords(
  ctx: Omit<RecordContext, 'keys'> & { readonly cache: Pick<PageCache, 'get'> },
  c: DeclaredCollection,
  ids: readonly string[],
  decode: (plaintext: Uint8Array) => Value = (plaintext) => decodeValue(c.schema, plaintext),
): Promise<(Value | undefined | typeof WITHHELD)[]> {
  const locs = ids.map((id) => ctx.directory.get(c.name, id));
  const perPage = new Map<number, number>();
  for (const loc of locs) if (loc !== undefined) perPage.set(loc.pageId, (perPage.get(loc.pageId) ?? 0) + 1);
  const pages = new Map<number, Uint8Array>();
  const out: (Value | undefined | typeof WITHHELD)[] = [];
  for (let i = 0; i < ids.length; i++) {
    const loc = locs[i];
    if (loc === undefined) {
      out.push(undefined);
      continue;
    }
    if ((perPage.get(loc.pageId) ?? 0) < READS_PER_PAGE) {
      out.push(await ctx.records.read(c.name, ids[i], loc, decode, WITHHELD));
      continue;
    }
    let page = pages.get(loc.pageId);
    if (page === undefined && !perPage.has(-loc.pageId - 1))
      page = await ctx.cache.get(loc.pageId).then(
        (p) => (pages.set(loc.pageId, p), p),
        () => (perPage.set(-loc.pageId - 1, 0), undefined), // gone meanwhile (a compaction): one by one
      );
    if (page === undefined) {
      const now = ctx.directory.get(c.name, ids[i]);
      out.push(now === undefined ? undefined : await ctx.records.read(c.name, ids[i], now, decode, WITHHELD));
      continue;
    }
    // The directory may have moved on while the page was read (a write, a compaction): read the
    // id again then, as one read.
    const now = ctx.directory.get(c.name, ids[i]);
    if (now === undefined || now.pageId !== loc.pageId || now.offset !== loc.offset)
      out.push(now === undefined ? undefined : await ctx.records.read(c.name, ids[i], now, decode, WITHHELD));
    else out.push(ctx.records.readIn(page, c.name, ids[i], loc, decode, WITHHELD));
  }
  return out;
}

/**
 * @internal The value of record `id` of `c`, opened for reading through the read gate: a record the
 * policy in force does not allow reading is AUTHORITY_DENIED, or, with `withhold`, WITHHELD.
 */
export async function readRecord(
  ctx: Omit<RecordContext, 'keys'>,
  c: DeclaredCollection,
  id: string,
  withhold: boolean,
  decode: (plaintext: Uint8Array) => Value = (plaintext) => decodeValue(c.schema, plaintext),
): Promise<Value | undefined | typeof WITHHELD> {
  const loc = ctx.directory.get(c.name, id);
  if (loc === undefined) return undefined;
  // The read gate (gates.ts) refuses a scope the policy in force keeps from reading: WITHHELD for
  // scans and searches, AUTHORITY_DENIED for a get.
  return ctx.records.read(c.name, id, loc, decode, withhold ? WITHHELD : undefined);
}
