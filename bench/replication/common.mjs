// Shared by the replication evaluation (bench/replication.mjs) and its two processes: the typed
// record schema and its checks, a wall clock every process reads alike, and the key encoding. The
// replica process imports only this (not the WordNet reader), so its restart costs only its own.

import { createHash } from 'node:crypto';

export const COLLECTION = 'synsets';
/** Typed records: four strings-or-integers from WordNet and the record's place in the schedule. */
export const SCHEMA = Object.freeze({
  lemma: 'string',
  pos: 'string',
  gloss: 'string',
  offset: 'integer',
  seq: 'integer',
});
export const SUITE = 'cnsa2-gcm-hkdf384-commit';

/** Milliseconds since the epoch on a clock shared by the processes (process start + monotonic time). */
export const wallMs = () => performance.timeOrigin + performance.now();

/** A child's report to the evaluating process (over the IPC channel). */
export const send = (m) => process.send?.(m);

/** Reports a child's failure and ends it. */
export const fail = (e) => {
  send({ failed: String(e?.stack ?? e) });
  process.exit(1);
};

/** What the evaluating process hands a child: keys, addresses and schedule (PQDB_REPL_HELLO). */
export const hello = () => JSON.parse(process.env.PQDB_REPL_HELLO);

/** SHA-256 of the value's fields in schema order, each with its type (a typed, order-fixed digest). */
export function typedHash(value) {
  const h = createHash('sha256');
  for (const k of Object.keys(SCHEMA)) h.update(`${k}\u0000${typeof value?.[k]}\u0000${String(value?.[k])}\u0001`);
  h.update(String(Object.keys(value ?? {}).length));
  return h.digest('base64');
}

/**
 * Whether `got` is exactly `expected` under SCHEMA: the same keys, strings as strings, integers
 * as safe integers, equal values.
 */
export function typedEqual(got, expected) {
  if (got === null || typeof got !== 'object') return false;
  const keys = Object.keys(SCHEMA);
  if (Object.keys(got).length !== keys.length) return false;
  for (const k of keys) {
    const v = got[k];
    if (SCHEMA[k] === 'integer' ? !Number.isSafeInteger(v) : typeof v !== 'string') return false;
    if (v !== expected[k]) return false;
  }
  return true;
}

export const toB64 = (b) => Buffer.from(b).toString('base64');
export const fromB64 = (s) => new Uint8Array(Buffer.from(s, 'base64'));
