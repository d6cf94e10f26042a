// The PostgreSQL page store's SQL (postgres.ts; docs/postgres.md): table layout, the statements of
// open, commit and read, identifier checks, and the checks of what comes back from the server.
//
// Nothing here builds SQL from a caller's text beyond two identifiers that are validated first and
// then quoted: the schema (a quoted identifier) and the LISTEN channel (LISTEN takes no parameter).
// Every value (store name, ids, bytes, versions) travels as a bind parameter. What the server
// returns is checked for shape (bytea, ids in range, integer counters) and gives CORRUPTION
// otherwise; whether the bytes are the store's own is for the engine's MACs to say.

import { PqdbError, type PqdbErrorCode } from '../errors';
import { MAX_PAGE_ID } from './page-store';
import { corruption } from './page-store-base';

/** Store names and schemas: a letter or `_`, then letters, digits and `_`, at most 48 characters. */
export const IDENTIFIER_RE = /^[A-Za-z_][A-Za-z0-9_]{0,47}$/;
/** The pages table (in the chosen schema). */
export const PAGES_TABLE = 'pqdb_pages';
/** The manifest table: one row per store. */
export const MANIFEST_TABLE = 'pqdb_manifest';
/** Rows per INSERT statement: 4 parameters a row stays well below PostgreSQL's 65,535. */
export const INSERT_ROWS = 1000;

/** Throws unless `value` is an identifier pqdb accepts (IDENTIFIER_RE). */
export function checkIdentifier(what: string, value: unknown): string {
  if (typeof value !== 'string') throw new TypeError(`"${what}" expected a string, got ${typeof value}`);
  if (!IDENTIFIER_RE.test(value)) {
    throw new RangeError(
      `"${what}" expected 1-48 letters, digits or "_" not starting with a digit, got ${JSON.stringify(value)}`,
    );
  }
  return value;
}

/** `"ident"`, with embedded quotes doubled (identifiers are validated before they get here). */
export const quoteIdent = (ident: string): string => `"${ident.replace(/"/g, '""')}"`;

/** The NOTIFY channel of store `name` (one per store name). */
export const channelOf = (name: string): string => `pqdb_${name}`;

/**
 * The key of store `name`'s writer claim in the manifest table: a row no store can have (`:` is not
 * in IDENTIFIER_RE), whose `version` holds the advisory lock key of the writer that claimed it.
 */
export const claimRowOf = (name: string): string => `${name}:writer`;

/** The statements of one schema; every value is a parameter. */
export interface Statements {
  readonly pages: string;
  readonly manifest: string;
  /** Creates both tables; run under the DDL lock, by an owner. */
  readonly create: readonly string[];
  /** $1 store: inserts the store's manifest row (version 0, no manifest) unless it exists. */
  readonly insertManifestRow: string;
  /** $1 claim row, $2 store: inserts the claim row (key 0) when the store exists and it does not. */
  readonly insertClaimRow: string;
  /**
   * $1 claim row → version (the claim's key), the row locked until the transaction ends; 55P03
   * when another opener is claiming the store right now (so no opener ever waits for another).
   */
  readonly lockClaim: string;
  /**
   * $1 claim row, $2 the new key, $3 the manifest table's name → one row when the claim was free
   * and is now $2's: no session of a role that may UPDATE the manifest table (or of no role we can
   * see) holds the advisory lock named by the row (anyone can take an advisory lock; only such a
   * role can write this row).
   */
  readonly takeClaim: string;
  /** $1 store → version, manifest, crc. */
  readonly selectManifest: string;
  /** $1 store → id, length, in ascending id order. */
  readonly listPages: string;
  /**
   * A view in one statement (one snapshot): $1 store, $2 the version known (NULL: none), $3 the
   * largest page id known, $4 how many ids past it to return with their bytes. The row whose id is
   * NULL has the version, same (the version is $2: the lists are NULL), the manifest (as bytes), its
   * crc, and the ids and lengths of the pages (bigint[], int[] by id); each other row is a page with
   * an id in ($3, $3 + $4] (id, bytes, crc). No row: no store.
   */
  readonly snapshot: string;
  /** $1 store, $2 id → bytes, crc. */
  readonly readPage: string;
  /** $1 store, $2 ids (bigint[]) → id, bytes, crc. */
  readonly readPages: string;
  /**
   * $1 store, $2 id, $3 offset (0-based), $4 length → bytes (that range), length (of the whole
   * page). With the column's EXTERNAL storage both read only what they need: `substring` fetches
   * the TOAST chunks holding the range, `length` reads the size in the TOAST pointer.
   */
  readonly readRange: string;
  /**
   * The compare-and-swap: $1 store, $2 expected version, $3 replace the manifest?, $4 manifest,
   * $5 crc, $6 channel → the new version (no row when the version was not $2), notified to $6.
   */
  readonly swapManifest: string;
  /** $1 store, $2 bigint[] ids. */
  readonly deletePages: string;
  /** INSERT of `rows` pages: $1 store, then id, bytes, crc per row. */
  insertPages(rows: number): string;
}

/** The statements for the tables in `schema`. */
export function statements(schema: string): Statements {
  const s = quoteIdent(schema);
  const pages = `${s}.${PAGES_TABLE}`;
  const manifest = `${s}.${MANIFEST_TABLE}`;
  const inserts = new Map<number, string>();
  return {
    pages,
    manifest,
    create: [
      `CREATE TABLE IF NOT EXISTS ${pages} (
  store text NOT NULL,
  id bigint NOT NULL CHECK (id BETWEEN 0 AND ${MAX_PAGE_ID}),
  bytes bytea NOT NULL,
  crc integer NOT NULL,
  PRIMARY KEY (store, id)
)`,
      // Sealed pages are ciphertext: compressing them never wins and costs CPU on every write.
      `ALTER TABLE ${pages} ALTER COLUMN bytes SET STORAGE EXTERNAL`,
      `CREATE TABLE IF NOT EXISTS ${manifest} (
  store text PRIMARY KEY,
  version bigint NOT NULL CHECK (version >= 0),
  manifest bytea,
  crc integer
)`,
    ],
    insertManifestRow: `INSERT INTO ${manifest} (store, version) VALUES ($1, 0) ON CONFLICT (store) DO NOTHING`,
    insertClaimRow: `INSERT INTO ${manifest} (store, version)
SELECT $1, 0 WHERE EXISTS (SELECT 1 FROM ${manifest} WHERE store = $2) ON CONFLICT (store) DO NOTHING`,
    lockClaim: `SELECT version FROM ${manifest} WHERE store = $1 FOR UPDATE NOWAIT`,
    // Compared as bigint, so that no value of the row (a negative or NULL key) fails the statement.
    takeClaim: `UPDATE ${manifest} AS c SET version = $2::bigint
 WHERE c.store = $1 AND NOT EXISTS (
   SELECT 1 FROM pg_catalog.pg_locks l JOIN pg_catalog.pg_stat_activity a ON a.pid = l.pid
    WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1 AND l.pid <> pg_backend_pid()
      AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())
      AND l.classid::bigint = c.version >> 32 AND l.objid::bigint = c.version & 4294967295
      AND (a.usesysid IS NULL OR pg_catalog.has_table_privilege(a.usesysid, to_regclass($3::text), 'UPDATE')))
RETURNING version`,
    selectManifest: `SELECT version, manifest, crc FROM ${manifest} WHERE store = $1`,
    listPages: `SELECT id, length(bytes) AS length FROM ${pages} WHERE store = $1 ORDER BY id`,
    snapshot: `WITH m AS (SELECT version, manifest, crc FROM ${manifest} WHERE store = $1)
SELECT NULL::bigint AS id, m.version, $2::bigint IS NOT NULL AND m.version = $2::bigint AS same, m.manifest AS bytes, m.crc, p.ids, p.lengths
  FROM m
  LEFT JOIN LATERAL (
    SELECT array_agg(id ORDER BY id) AS ids, array_agg(length(bytes) ORDER BY id) AS lengths
      FROM ${pages}
     WHERE store = $1 AND m.version IS DISTINCT FROM $2::bigint
  ) p ON true
UNION ALL
SELECT g.id, NULL, NULL, g.bytes, g.crc, NULL, NULL
  FROM ${pages} g, m
 WHERE g.store = $1 AND m.version IS DISTINCT FROM $2::bigint AND g.id > $3::bigint AND g.id <= $3::bigint + $4::bigint`,
    readPage: `SELECT bytes, crc FROM ${pages} WHERE store = $1 AND id = $2`,
    readPages: `SELECT id, bytes, crc FROM ${pages} WHERE store = $1 AND id = ANY($2::bigint[])`,
    readRange: `SELECT substring(bytes from $3::integer + 1 for $4::integer) AS bytes, length(bytes) AS length FROM ${pages} WHERE store = $1 AND id = $2`,
    swapManifest: `WITH swapped AS (
  UPDATE ${manifest}
     SET version = version + 1,
         manifest = CASE WHEN $3::boolean THEN $4::bytea ELSE manifest END,
         crc = CASE WHEN $3::boolean THEN $5::integer ELSE crc END
   WHERE store = $1 AND version = $2::bigint
  RETURNING version
)
SELECT version, pg_notify($6::text, version::text) FROM swapped`,
    deletePages: `DELETE FROM ${pages} WHERE store = $1 AND id = ANY($2::bigint[])`,
    insertPages(rows: number): string {
      let sql = inserts.get(rows);
      if (sql === undefined) {
        const values = Array.from({ length: rows }, (_, i) => `($1, $${3 * i + 2}, $${3 * i + 3}, $${3 * i + 4})`);
        sql = `INSERT INTO ${pages} (store, id, bytes, crc) VALUES ${values.join(', ')}`;
        inserts.set(rows, sql);
      }
      return sql;
    },
  };
}

/** A CRC-32C (u32) as PostgreSQL's signed `integer`, and back. */
export const crcToSql = (crc: number): number => crc | 0;
export const crcFromSql = (value: number): number => value >>> 0;

/** A page id read from the server (`bigint` arrives as text): an integer in [0, MAX_PAGE_ID]. */
export function parsePageId(value: unknown): number {
  const n = typeof value === 'string' && /^[0-9]{1,10}$/.test(value) ? Number(value) : NaN;
  if (!(n <= MAX_PAGE_ID)) throw corruption(`postgres: page id ${String(value).slice(0, 24)} is out of range`);
  return n;
}

/** The manifest version (`bigint` as text): a safe integer ≥ 0. */
export function parseVersion(value: unknown): number {
  const n = typeof value === 'string' && /^[0-9]{1,15}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n)) throw corruption(`postgres: manifest version ${String(value).slice(0, 24)} is invalid`);
  return n;
}

/** A stored checksum (`integer`). */
export function parseCrc(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < -(2 ** 31) || value >= 2 ** 31)
    throw corruption(`postgres: ${what}: checksum column is not an integer`);
  return crcFromSql(value);
}

/** A `bytea` value (pg gives a Buffer). */
export function parseBytes(value: unknown, what: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw corruption(`postgres: ${what} is not bytea`);
  return value;
}

/** A non-negative integer from the server (`length(bytes)`, an int4). */
export function parseLength(value: unknown, what: string): number {
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0)
    throw corruption(`postgres: ${what}: length is not a non-negative integer`);
  return value;
}

/** SQLSTATE of a server error (pg's DatabaseError.code), when there is one. */
export function sqlState(e: unknown): string | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/**
 * True when `e` says the connection is gone or the outcome is unknown (no SQLSTATE: a socket
 * error or "Connection terminated"; class 08 connection exception; class 57 operator
 * intervention, such as pg_terminate_backend or a server shutdown; 40003, statement completion
 * unknown). A commit that fails so may or may not have landed.
 */
export function connectionLost(e: unknown): boolean {
  if (e instanceof PqdbError || e instanceof TypeError || e instanceof RangeError) return false;
  const state = sqlState(e);
  return state === undefined || state.startsWith('08') || state.startsWith('57') || state === '40003';
}

/**
 * The code for a SQLSTATE (undefined: IO_ERROR). What pqdb sends is always well-formed, so a data
 * exception (class 22), an integrity violation other than a duplicate page (class 23) or a column,
 * type or function that does not fit (class 42) means the tables do not have the layout pqdb makes
 * or hold values it never writes: CORRUPTION.
 */
function codeOf(state: string): PqdbErrorCode | undefined {
  if (state === '53100') return 'QUOTA_EXCEEDED'; // disk full
  if (state === '25006') return 'READ_ONLY'; // a read-only server (a standby, default_transaction_read_only)
  if (state === '42P01' || state === '3F000' || state === '3D000') return 'NOT_FOUND'; // no table, schema, database
  if (state === '23505' || state === '40001' || state === '40P01') return 'CONFLICT'; // nothing written
  if (state === '55P03') return 'LOCKED'; // lock_timeout: another session holds a row this one needs
  if (state === '42501') return undefined; // permission denied: IO_ERROR (a writer's claim: READ_ONLY)
  if (state.startsWith('22') || state.startsWith('23') || state.startsWith('42')) return 'CORRUPTION';
  return undefined;
}

/**
 * Maps an error of the server or the driver to a PqdbError (codeOf; IO_ERROR for anything else:
 * connection failures, permission denied, timeouts), with the original as `cause` and the
 * SQLSTATE in the message. PqdbError, TypeError and RangeError pass.
 */
export function sqlError(what: string, e: unknown): Error {
  if (e instanceof PqdbError || e instanceof TypeError || e instanceof RangeError) return e;
  const state = sqlState(e);
  const detail = `${what}: ${e instanceof Error ? e.message : String(e)}${state ? ` (SQLSTATE ${state})` : ''}`;
  return new PqdbError((state && codeOf(state)) || 'IO_ERROR', detail, { cause: e });
}
