// The store manifest's checks (DESIGN §11): every field read from the medium is checked before use —
// the readable header before anything is unwrapped, the body once it authenticates (types, ranges,
// page ids below the page counter, known suites, states, copy kinds and migration phases). A field
// that fails is CORRUPTION: such a manifest is not one pqdb wrote.

import { PqdbError } from '../../errors';
import { unb64 } from '../../_encoding';
import { suites } from '../../crypto/suites';
import { compileSchema, type Schema } from '../codec';
import {
  COPY_KINDS,
  COPY_STATES,
  MANIFEST_VERSION,
  REQUESTS_KEPT,
  REQUEST_ID,
  type KeyringEntry,
  type Manifest,
  type ManifestHeader,
} from './schema';

/** Bounds on what a manifest may hold (a manifest past them is not one pqdb wrote). */
const MAX_GENERATION = 2 ** 32 - 1;
const MAX_PAGE_ID = 0xffff_ffff;
const dec = new TextDecoder('utf-8', { fatal: true });

function corrupt(what: string): never {
  throw new PqdbError('CORRUPTION', `the manifest ${what}`);
}

export function parseJson(bytes: Uint8Array, part: string): unknown {
  try {
    return JSON.parse(dec.decode(bytes));
  } catch (cause) {
    throw new PqdbError('CORRUPTION', `the manifest ${part} does not parse`, { cause });
  }
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const int = (x: unknown, min: number, max: number, what: string): number =>
  Number.isSafeInteger(x) && (x as number) >= min && (x as number) <= max
    ? (x as number)
    : corrupt(`has a bad ${what}`);
const str = (x: unknown, what: string): string => (typeof x === 'string' ? x : corrupt(`has a bad ${what}`));
const list = (x: unknown, what: string): unknown[] => (Array.isArray(x) ? x : corrupt(`has a bad ${what}`));
/** Base64 text of a manifest field, decoded. */
export const base64 = (x: unknown, what: string): Uint8Array => {
  const s = str(x, what);
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 !== 0) corrupt(`has a bad ${what}`);
  return unb64(s);
};
const suiteId = (x: unknown, what: string): number => {
  const id = int(x, 0, 255, what);
  if (!suites().some((s) => s.id === id)) corrupt(`names an unknown suite (${what})`);
  return id;
};

export function checkHeader(h: unknown): ManifestHeader {
  if (!isObject(h)) corrupt('header is not an object');
  if (h.v !== MANIFEST_VERSION) corrupt('header has a bad version');
  if (!/^[0-9a-f]{32}$/.test(str(h.storeId, 'store id'))) corrupt('has a bad store id');
  int(h.commit, 0, Number.MAX_SAFE_INTEGER, 'commit counter');
  const seen = new Set<number>();
  for (const e of list(h.envelopes, 'envelope list')) {
    const [g, envs] = list(e, 'envelope list');
    const generation = int(g, 0, MAX_GENERATION, 'generation');
    if (seen.has(generation)) corrupt('lists a generation twice');
    seen.add(generation);
    if (list(envs, 'envelope list').length === 0) corrupt(`has no envelope for generation ${generation}`);
    for (const x of envs as unknown[]) base64(x, 'envelope');
  }
  return h as unknown as ManifestHeader;
}

/** The body checked field by field and joined with its header into a Manifest. */
export function checkManifest(h: ManifestHeader, b: unknown): Manifest {
  if (!isObject(b)) corrupt('body is not an object');
  const nextPageId = int(b.nextPageId, 1, MAX_PAGE_ID + 1, 'page counter');
  const pageId = (x: unknown) => {
    const id = int(x, 1, MAX_PAGE_ID, 'page id');
    return id < nextPageId ? id : corrupt('names a page beyond its page counter');
  };
  int(b.nextSequence, 1, Number.MAX_SAFE_INTEGER, 'sequence counter');
  const envelopes = new Map(h.envelopes);
  const keyring: KeyringEntry[] = list(b.keyring, 'key ring').map((k) => {
    if (!isObject(k)) corrupt('has a bad key ring entry');
    const generation = int(k.generation, 0, MAX_GENERATION, 'generation');
    const envs = envelopes.get(generation) ?? corrupt(`has no envelopes for generation ${generation}`);
    envelopes.delete(generation);
    suiteId(k.suite, 'key generation suite');
    const salt = base64(k.salt, 'salt');
    if (generation > 0 && (salt.length !== 32 || k.bind === undefined || base64(k.bind, 'binding').length !== 32))
      corrupt(`has a bad salt or binding for generation ${generation}`);
    return { ...(k as unknown as KeyringEntry), envelopes: envs };
  });
  if (envelopes.size > 0) corrupt('has envelopes for a generation it does not list');
  if (!keyring.some((k) => k.generation > 0)) corrupt('has no key generation');
  const registry = list(b.registry, 'registry');
  for (const r of registry) {
    if (!isObject(r)) corrupt('has a bad registry entry');
    suiteId(r.suite, 'registry suite');
    if (!['active', 'decrypt-only', 'quarantined', 'retired'].includes(str(r.state, 'registry state')))
      corrupt('has an unknown registry state');
    str(r.since, 'registry date');
  }
  if (!isObject(b.collections)) corrupt('has a bad collection list');
  for (const c of Object.values(b.collections)) {
    if (!isObject(c) || !isObject(c.schema)) corrupt('has a bad collection');
    suiteId(c.suite, 'collection suite');
    try {
      compileSchema(c.schema as Schema, (c.versions ?? []) as Schema[]);
      if (c.text !== undefined && (!Array.isArray(c.text) || c.text.some((f: unknown) => typeof f !== 'string')))
        throw new TypeError('bad text fields');
      if (
        c.by !== undefined &&
        (!Array.isArray(c.by) ||
          c.by.some(
            (f: unknown) => !Array.isArray(f) || f.length === 0 || f.some((x: unknown) => typeof x !== 'string'),
          ))
      )
        throw new TypeError('bad index fields');
      if (
        c.upgrade !== undefined &&
        (!isObject(c.upgrade) || !Number.isSafeInteger(c.upgrade.to) || (c.upgrade.to as number) < 2)
      )
        throw new TypeError('bad upgrade');
    } catch {
      corrupt('has a bad collection schema');
    }
  }
  suiteId(b.defaultSuite, 'default suite');
  if (b.checkpointPages !== undefined) list(b.checkpointPages, 'checkpoint list').forEach(pageId);
  if (b.lastCheckpoint !== undefined && base64(b.lastCheckpoint, 'checkpoint hash').length !== 48)
    corrupt('has a bad checkpoint hash');
  if (b.logs !== undefined) {
    if (!isObject(b.logs)) corrupt('has a bad log list');
    for (const [g, refs] of Object.entries(b.logs)) {
      int(Number(g), 1, MAX_GENERATION, 'log generation');
      for (const ref of list(refs, 'log list')) {
        if (!isObject(ref)) corrupt('has a bad log page entry');
        pageId(ref.pageId);
        const from = int(ref.from, 0, Number.MAX_SAFE_INTEGER, 'log range');
        if (int(ref.to, from + 1, Number.MAX_SAFE_INTEGER, 'log range') <= from) corrupt('has a bad log range');
      }
    }
  }
  if (b.fieldIndexes !== undefined) {
    if (!isObject(b.fieldIndexes)) corrupt('has a bad secondary index list');
    for (const f of Object.values(b.fieldIndexes)) {
      if (!isObject(f)) corrupt('has a bad secondary index entry');
      pageId(f.pageId);
      int(f.afterPage, 0, Number.MAX_SAFE_INTEGER, 'secondary index range');
      if (
        !Array.isArray(f.specs) ||
        f.specs.length === 0 ||
        f.specs.some(
          (s: unknown) => !Array.isArray(s) || s.length === 0 || s.some((x: unknown) => typeof x !== 'string'),
        )
      )
        corrupt('has a bad secondary index entry');
    }
  }
  if (b.floors !== undefined) {
    if (!isObject(b.floors)) corrupt('has a bad history floor list');
    for (const [g, f] of Object.entries(b.floors)) {
      int(Number(g), 1, MAX_GENERATION, 'floor generation');
      if (!isObject(f)) corrupt('has a bad history floor');
      pageId(f.pageId);
      int(f.size, 1, Number.MAX_SAFE_INTEGER, 'floor size');
      if (base64(f.hash, 'floor hash').length !== 48) corrupt('has a bad floor hash');
      const first = (b.logs as Record<string, { from: number }[]> | undefined)?.[g]?.[0];
      if (first !== undefined && first.from !== f.size) corrupt('has log pages that do not start at the history floor');
    }
  }
  if (b.heads !== undefined) {
    if (!isObject(b.heads)) corrupt('has a bad log head list');
    for (const [g, head] of Object.entries(b.heads)) {
      int(Number(g), 1, MAX_GENERATION, 'log generation');
      if (!isObject(head)) corrupt('has a bad log head');
      int(head.size, 1, Number.MAX_SAFE_INTEGER, 'log size');
      if (base64(head.root, 'log root').length !== 48) corrupt('has a bad log root');
    }
  }
  if (b.indexes !== undefined) {
    if (!isObject(b.indexes)) corrupt('has a bad index list');
    for (const ref of Object.values(b.indexes)) {
      if (!isObject(ref)) corrupt('has a bad index entry');
      pageId(ref.pageId);
      int(ref.afterPage, 0, MAX_PAGE_ID, 'index coverage');
      if (ref.fields !== undefined) list(ref.fields, 'index fields').forEach((f) => str(f, 'index field'));
    }
  }
  if (b.directory !== undefined) {
    const d = b.directory;
    if (!isObject(d)) corrupt('has a bad directory entry');
    int(d.afterPage, 0, nextPageId - 1, 'directory coverage');
    const snapshots = list(d.snapshots, 'directory snapshots');
    if (snapshots.length === 0) corrupt('has a directory without a snapshot');
    snapshots.forEach((x, i) => {
      if (!isObject(x) || x.kind !== (i === 0 ? 'base' : 'run')) corrupt('has a bad directory snapshot');
      if (list(x.pages, 'directory pages').length === 0) corrupt('has a directory snapshot without pages');
      (x.pages as unknown[]).forEach(pageId);
      int(x.rows, 0, Number.MAX_SAFE_INTEGER, 'directory rows');
      if (x.bytes !== undefined) int(x.bytes, 1, Number.MAX_SAFE_INTEGER, 'directory bytes');
    });
    if (d.dropped !== undefined) list(d.dropped, 'directory drops').forEach(pageId);
  }
  if (b.recipients !== undefined) list(b.recipients, 'recipient list').forEach((x) => base64(x, 'recipient'));
  if (b.retired !== undefined) list(b.retired, 'retired list').forEach((g) => int(g, 1, MAX_GENERATION, 'generation'));
  if (b.authority !== undefined) {
    if (!isObject(b.authority)) corrupt('has a bad authority entry');
    const keys = list(b.authority.keys, 'authority key list');
    if (keys.length === 0 || keys.length > 16) corrupt('has a bad authority key list');
    keys.forEach((k) => base64(k, 'authority key'));
    if (b.authority.policy !== undefined) base64(b.authority.policy, 'authority policy');
    if (b.authority.threshold !== undefined) int(b.authority.threshold, 1, keys.length, 'authority threshold');
    if (b.authority.domain !== undefined && str(b.authority.domain, 'authority domain') === '')
      corrupt('has a bad authority domain');
  }
  if (b.copies !== undefined) list(b.copies, 'copy list').forEach(checkCopy);
  if (b.heldPages !== undefined) list(b.heldPages, 'held page list').forEach(pageId);
  if (b.requests !== undefined) {
    const ids = list(b.requests, 'request id list');
    if (ids.length > REQUESTS_KEPT || ids.some((x) => typeof x !== 'string' || !REQUEST_ID.test(x)))
      corrupt('has a bad request id list');
  }
  if (b.copy !== undefined) {
    if (!isObject(b.copy) || !/^[0-9a-f]{32}$/.test(str(b.copy.id, 'copy marker')) || b.copy.of !== h.storeId)
      corrupt('has a bad copy marker');
    str(b.copy.time, 'copy marker');
  }
  for (const m of [...(b.migration !== undefined ? [b.migration] : []), ...list(b.migrations ?? [], 'migration list')])
    checkMigration(m);
  return {
    ...(b as unknown as Omit<Manifest, 'v' | 'storeId' | 'commit'>),
    v: h.v,
    storeId: h.storeId,
    commit: h.commit,
    keyring,
  };
}

function checkCopy(c: unknown): void {
  if (!isObject(c)) corrupt('has a bad copy entry');
  if (!/^[0-9a-f]{32}$/.test(str(c.id, 'copy id'))) corrupt('has a bad copy id');
  if (!(COPY_KINDS as string[]).includes(str(c.kind, 'copy kind'))) corrupt('has an unknown copy kind');
  if (!(COPY_STATES as string[]).includes(str(c.state, 'copy state'))) corrupt('has an unknown copy state');
  str(c.time, 'copy date');
  str(c.destination, 'copy destination');
  if (c.location !== undefined) str(c.location, 'copy location');
  list(c.generations, 'copy generations').forEach((g) => int(g, 1, MAX_GENERATION, 'copy generation'));
  list(c.suites, 'copy suites').forEach((x) => suiteId(x, 'copy suite'));
  int(c.records, 0, Number.MAX_SAFE_INTEGER, 'copy record count');
  int(c.commit, 0, Number.MAX_SAFE_INTEGER, 'copy commit');
  if (c.checkpoint !== undefined && !/^[0-9a-f]{96}$/.test(str(c.checkpoint, 'copy checkpoint')))
    corrupt('has a bad copy checkpoint');
  if (c.retiredAt !== undefined) str(c.retiredAt, 'copy retirement date');
  if (c.sourceStoreId !== undefined && !/^[0-9a-f]{32}$/.test(str(c.sourceStoreId, 'copy source')))
    corrupt('has a bad copy source');
  for (const r of list(c.restores ?? [], 'copy restores')) {
    if (!isObject(r)) corrupt('has a bad copy restore');
    str(r.time, 'copy restore date');
    if (!/^[0-9a-f]{32}$/.test(str(r.storeId, 'copy restore store'))) corrupt('has a bad copy restore store');
  }
}

function checkMigration(m: unknown): void {
  if (!isObject(m)) corrupt('has a bad migration');
  str(m.id, 'migration id');
  list(m.collections, 'migration collections').forEach((c) => str(c, 'migration collection'));
  suiteId(m.to, 'migration target');
  int(m.generation, 1, MAX_GENERATION, 'migration generation');
  list(m.fromSuites, 'migration suites').forEach((x) => suiteId(x, 'migration suite'));
  if (!['copying', 'indexing', 'verifying', 'activating', 'done'].includes(str(m.phase, 'migration phase')))
    corrupt('has an unknown migration phase');
  if (m.cursor !== null) {
    const [g, leaf] = list(m.cursor, 'migration cursor');
    int(g, 1, MAX_GENERATION, 'migration cursor');
    int(leaf, 0, Number.MAX_SAFE_INTEGER, 'migration cursor');
  }
  if (!isObject(m.counts)) corrupt('has bad migration counts');
  for (const k of ['copied', 'superseded', 'deleted', 'withheld', 'failed', 'inserted', 'total'])
    int(m.counts[k], 0, Number.MAX_SAFE_INTEGER, 'migration count');
  str(m.startedAt, 'migration date');
  if (typeof m.workMs !== 'number' || !isObject(m.phaseMs)) corrupt('has bad migration times');
  for (const f of list(m.failures, 'migration failures')) {
    if (!isObject(f)) corrupt('has a bad migration failure');
    int(f.generation, 1, MAX_GENERATION, 'migration failure');
    int(f.leaf, 0, Number.MAX_SAFE_INTEGER, 'migration failure');
    str(f.code, 'migration failure');
  }
  int(m.chunkRecords, 1, 100_000, 'migration chunk size');
}
