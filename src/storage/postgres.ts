// PostgreSQL PageStore (Node only, through the `pg` driver, a peer dependency the application
// installs): sealed pages in a table, the manifest in a row replaced by compare-and-swap in the
// same transaction as the commit's pages. DESIGN.md §6; tables, GRANTs and operations are in
// docs/postgres.md, the statements in postgres-sql.ts.
//
// A commit is one transaction on the writer's own connection: the manifest row's version goes
// from the one this writer last read or wrote to the next (0 rows updated: another writer got in,
// CONFLICT, rolled back), the deleted ids go, the new pages are INSERTed (create-only: an id that
// exists fails the statement and the whole transaction), and pg_notify tells followers the new
// version when the transaction commits. The view of the store (manifest, version, page ids and
// lengths) is changed only after COMMIT succeeded.
//
// One writer: a claim held by that connection's session (postgres-claim.ts): a session-level
// advisory lock on a random key, named in the store's claim row, which only a role that may UPDATE
// the manifest table can write; a second writer gets LOCKED, and a role that can merely connect
// cannot keep the writer out. If the connection drops, PostgreSQL releases the lock and so the
// claim: the writer then refuses every further commit (IO_ERROR, reopen the store), and a commit
// cut by it has an unknown outcome, which a reopen settles. Read-only openers take no claim; they
// read a consistent snapshot of the manifest and page list (one statement), refreshed on demand or
// on NOTIFY (`watch`); a refresh brings the bytes of the first new pages with it, which a following
// Store reads next.
//
// Security caveats: the server sees only sealed bytes and may do anything with them (DESIGN.md
// §11). Every page carries a CRC-32C column against accidents, not attackers; the engine's MACs
// detect tampering; a ranged read (`readRange`, a `substring` of the page) cannot check that column.
// Values from the server are checked for shape and give CORRUPTION otherwise.

/// <reference types="node" />
// (tsconfig.json sets "types": []; this Node-only file opts in to the Node typings.)
import type { Client, ClientConfig, Notification, Pool } from 'pg';
import { PqdbError } from '../errors';
import { integer } from '../_args';
import {
  MAX_PAGE_ID,
  type CheckedBatch,
  type CommitBatch,
  type PageStoreStats,
  type PageStoreSupports,
  type PageStoreView,
} from './page-store';
import { BasePageStore, checkRangeInPage, corruption } from './page-store-base';
import { crc32c, crc32cAsync } from '../_crc32c';
import {
  INSERT_ROWS,
  channelOf,
  checkIdentifier,
  connectionLost,
  crcToSql,
  parseBytes,
  parseCrc,
  parseLength,
  parsePageId,
  parseVersion,
  quoteIdent,
  sqlError,
  sqlState,
  statements,
  type Statements,
} from './postgres-sql';
import { claimWriter, type Writer } from './postgres-claim';
import type { ManifestChange, PostgresPageStore, PostgresPageStoreOptions } from './postgres-types';

/** Per-row bytes `stats().storedBytes` adds to each page for the tuple and index (an estimate). */
const ROW_OVERHEAD_BYTES = 64;
/** Default size of the read pool. */
const DEFAULT_MAX_CONNECTIONS = 4;
/** Pages past the largest id a reader knows that a refresh brings with their bytes (a commit's worth). */
const FRESH_PAGES = 64;
/** Reconnect delays of a follower's LISTEN connection (ms): doubling from the first to the last. */
const LISTEN_RETRY_MS = [100, 5000] as const;

type Pg = typeof import('pg').default;
type Queryable = Pick<Client, 'query'>;

export type { ManifestChange, PostgresPageStore, PostgresPageStoreOptions } from './postgres-types';

/**
 * Opens (for writers, creating when allowed) the store `options.name` in PostgreSQL.
 * @throws PqdbError LOCKED when another writer holds the store, NOT_FOUND when it does not exist
 * (and is not to be created), CORRUPTION for malformed rows, IO_ERROR (with `cause`) when the
 * server cannot be reached or a statement fails; TypeError/RangeError for bad options, and an
 * Error naming the package when `pg` is not installed
 * @example
 * import { openStore } from 'pqdb';
 * import { openPostgresPageStore } from 'pqdb/postgres';
 * const storage = await openPostgresPageStore({ connectionString: process.env.DATABASE_URL, name: 'orders' });
 * const store = await openStore({ storage, create: true, recipients, unlock });
 */
export async function openPostgresPageStore(options: PostgresPageStoreOptions): Promise<PostgresPageStore> {
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const name = checkIdentifier('name', options.name);
  const schema = checkIdentifier('schema', options.schema ?? 'public');
  const max = integer('maxConnections', options.maxConnections ?? DEFAULT_MAX_CONNECTIONS, 1, 1000);
  if (options.connectionString !== undefined && typeof options.connectionString !== 'string')
    throw new TypeError(`"connectionString" expected a string, got ${typeof options.connectionString}`);
  if (options.connection !== undefined && (typeof options.connection !== 'object' || options.connection === null))
    throw new TypeError('"connection" expected an object');
  const config: ClientConfig = {
    ...(options.connection as ClientConfig | undefined),
    ...(options.connectionString !== undefined ? { connectionString: options.connectionString } : {}),
  };
  const readOnly = options.readOnly === true;
  const pg = await loadPg();
  const sql = statements(schema);
  const pool = new pg.Pool({ ...config, max });
  pool.on('error', () => undefined); // an idle connection that died: the pool replaces it on next use
  let writer: Writer | undefined;
  try {
    if (!readOnly) writer = await claimWriter(pg, config, sql, name, options.create !== false);
    const store = new PgPageStore(pg, config, pool, sql, schema, name, writer);
    await store.load();
    return store;
  } catch (e) {
    await writer?.client.end().catch(() => undefined);
    await pool.end().catch(() => undefined);
    throw sqlError(`postgres page store ${name}: open`, e);
  }
}

async function loadPg(): Promise<Pg> {
  try {
    const mod = (await import('pg')) as unknown as { default?: Pg } & Pg;
    return mod.default ?? mod;
  } catch (e) {
    throw new Error('pqdb/postgres needs the "pg" package (node-postgres): npm install pg', { cause: e });
  }
}

interface Snapshot extends PageStoreView {
  readonly pages: Map<number, number>; // id → length; never changed once the view holds it
  /** The largest page id (-1: none). */
  readonly maxId: number;
  /** Rows of new pages the snapshot brought (readers), served before asking the server. */
  readonly fresh?: ReadonlyMap<number, { bytes: unknown; crc: unknown }>;
}

/**
 * What every postgres page store declares (`follow` is added per store: true when read-only):
 * ranged reads are one `substring` query; readRangeSync always answers -1; a deleted row is gone.
 */
const RANGED = Object.freeze({
  readPages: true,
  readRange: true,
  partialRanges: true,
  readRangeSync: true,
  blockingReads: false,
  reclaim: false,
}) satisfies Omit<PageStoreSupports, 'follow'>;

class PgPageStore extends BasePageStore implements PostgresPageStore {
  readonly kind = 'postgres' as const;
  readonly supports: PageStoreSupports;
  readonly name: string;
  readonly readOnly: boolean;
  readonly #pg: Pg;
  readonly #config: ClientConfig;
  readonly #pool: Pool;
  readonly #sql: Statements;
  readonly #schema: string;
  /** The writer's connection, whose session holds the claim (undefined: read-only). */
  readonly #lock: Client | undefined;
  /** The claim's advisory lock key (a bigint as text). */
  readonly #key: string;
  #view: Snapshot = { version: 0, manifest: undefined, pages: new Map(), maxId: -1 };
  /** Ids the commit in flight deletes: a read that finds one gone is not CORRUPTION. */
  #deleting: ReadonlySet<number> = new Set();
  /** Why commits are refused (the lock connection was lost, or a commit's outcome is unknown). */
  #failed: unknown;
  readonly #listeners = new Set<{ change: (c: ManifestChange) => void; error?: (e: Error) => void }>();
  #listen: Client | undefined;
  #listening: Promise<void> = Promise.resolve();
  #retry: ReturnType<typeof setTimeout> | undefined;
  #backoff: number = LISTEN_RETRY_MS[0];
  #refreshing: Promise<boolean> | undefined;
  #refreshAgain = false;

  constructor(
    pg: Pg,
    config: ClientConfig,
    pool: Pool,
    sql: Statements,
    schema: string,
    name: string,
    writer: Writer | undefined,
  ) {
    super();
    this.#pg = pg;
    this.#config = config;
    this.#pool = pool;
    this.#sql = sql;
    this.#schema = schema;
    this.name = name;
    const lock = writer?.client;
    this.readOnly = lock === undefined;
    // Ranged reads are one `substring` query; a read-only one follows its writer (LISTEN/NOTIFY).
    this.supports = Object.freeze({ ...RANGED, follow: this.readOnly });
    this.#lock = lock;
    this.#key = writer?.key ?? '';
    const lost = (e?: unknown): void => {
      this.#failed ??= e ?? new Error('connection ended');
    };
    lock?.removeAllListeners('error');
    lock?.on('error', lost);
    lock?.on('end', lost);
  }

  get version(): number {
    return this.#view.version;
  }

  view(): PageStoreView {
    return this.#view;
  }

  /** Takes the first snapshot. */
  async load(): Promise<void> {
    const snap = await this.#snapshot(this.#lock ?? (this.#pool as Queryable), null);
    if (snap === undefined || snap === null)
      throw new PqdbError('NOT_FOUND', `no pqdb store ${this.#schema}.${this.name} in this database`);
    this.#view = snap;
  }

  /**
   * The manifest and page list in one statement (so one snapshot); undefined when the store has no
   * manifest row, `null` when its version is still `known` (null: none known). Readers also get the bytes of the first
   * pages past the largest id they know (FRESH_PAGES of them): the pages of the commits that woke
   * them, which a following Store reads next, without another round trip.
   */
  async #snapshot(on: Queryable, known: number | null): Promise<Snapshot | undefined | null> {
    const after = known === null || !this.readOnly ? MAX_PAGE_ID : this.#view.maxId;
    const r = await on.query(this.#sql.snapshot, [this.name, known, String(after), String(FRESH_PAGES)]);
    const row = r.rows.find((x) => x.id === null);
    if (row === undefined) return undefined;
    if (row.same === true) return null;
    const version = parseVersion(row.version);
    let manifest: Uint8Array | undefined;
    if (row.bytes !== null) {
      const bytes = parseBytes(row.bytes, 'manifest');
      if (crc32c(bytes) !== parseCrc(row.crc, 'manifest'))
        throw corruption(`postgres: manifest of ${this.name}: checksum mismatch`);
      manifest = new Uint8Array(bytes);
    }
    const ids = arrayOf(row.ids, 'page ids');
    const lengths = arrayOf(row.lengths, 'page lengths');
    if (ids.length !== lengths.length) throw corruption(`postgres: page list of ${this.name} is malformed`);
    const pages = new Map<number, number>();
    let maxId = -1;
    for (let i = 0; i < ids.length; i++) {
      const n = parsePageId(ids[i]);
      pages.set(n, parseLength(lengths[i], `page ${n}`));
      if (n > maxId) maxId = n;
    }
    const fresh = new Map<number, { bytes: unknown; crc: unknown }>();
    for (const x of r.rows) if (x !== row) fresh.set(parsePageId(x.id), x);
    return { version, manifest, pages, maxId, fresh };
  }

  protected async _readPage(id: number): Promise<Uint8Array | undefined> {
    if (!this.#view.pages.has(id)) return undefined; // not committed as far as this opener knows
    const fresh = this.#view.fresh?.get(id);
    if (fresh !== undefined) return this.#checked(id, fresh);
    let rows: { bytes: unknown; crc: unknown }[];
    try {
      rows = (await this.#pool.query(this.#sql.readPage, [this.name, String(id)])).rows;
    } catch (e) {
      throw sqlError(`postgres: read page ${id}`, e);
    }
    return this.#checked(id, rows[0]);
  }

  /** Pages in one query (opening reads commit pages in runs: one round trip per run, not per page). */
  protected override async _readPages(ids: readonly number[]): Promise<(Uint8Array | undefined)[]> {
    const view = this.#view;
    const asked = [...new Set(ids.filter((id) => view.pages.has(id) && !view.fresh?.has(id)))];
    const found = new Map<number, { bytes: unknown; crc: unknown }>(view.fresh ?? []);
    if (asked.length > 0) {
      let rows: { id: unknown; bytes: unknown; crc: unknown }[];
      try {
        rows = (await this.#pool.query(this.#sql.readPages, [this.name, asked.map(String)])).rows;
      } catch (e) {
        throw sqlError(`postgres: read pages ${asked[0]}…${asked[asked.length - 1]}`, e);
      }
      for (const row of rows) found.set(parsePageId(row.id), row);
    }
    const out: (Uint8Array | undefined)[] = [];
    for (const id of ids) out.push(view.pages.has(id) ? await this.#checked(id, found.get(id), view) : undefined);
    return out;
  }

  /**
   * The range in one query (`substring`, statements.readRange): the server sends only those bytes.
   * The `crc` column cannot be checked — it is the CRC-32C of the whole page, and checking it would
   * mean fetching the page this read exists to avoid; the sealed record's AEAD tag authenticates
   * the range one layer up (PageStore.readRange). What is checked: the range lies inside the length
   * this opener's view committed (CORRUPTION before any query otherwise), the row's stored length
   * is still that length, and the server returned exactly `length` bytes.
   */
  protected override async _readRange(id: number, offset: number, length: number): Promise<Uint8Array | undefined> {
    const committed = this.#view.pages.get(id);
    if (committed === undefined) return undefined; // not committed as far as this opener knows
    checkRangeInPage(this.kind, id, offset, length, committed);
    let rows: { bytes: unknown; length: unknown }[];
    try {
      rows = (await this.#pool.query(this.#sql.readRange, [this.name, String(id), offset, length])).rows;
    } catch (e) {
      throw sqlError(`postgres: read page ${id} [${offset}, ${offset + length})`, e);
    }
    const row = rows[0];
    if (row === undefined) {
      // As #checked: a reader's snapshot may name a page deleted since, the writer's may not.
      if (this.readOnly || this.#deleting.has(id) || !this.#view.pages.has(id)) return undefined;
      throw corruption(`postgres: page ${id} is committed but missing from ${this.#sql.pages}`);
    }
    const stored = parseLength(row.length, `page ${id}`);
    if (stored !== committed) throw corruption(`postgres: page ${id}: ${stored} bytes stored, ${committed} committed`);
    const bytes = parseBytes(row.bytes, `page ${id} [${offset}, ${offset + length})`);
    if (bytes.length !== length)
      throw corruption(`postgres: page ${id}: ${bytes.length} bytes returned for a range of ${length}`);
    return new Uint8Array(bytes); // a copy of pg's Buffer, which may share its memory
  }

  /** A page's row as read (or its absence), checked against the view's length and its checksum. */
  async #checked(
    id: number,
    row: { bytes: unknown; crc: unknown } | undefined,
    view: Snapshot = this.#view,
  ): Promise<Uint8Array | undefined> {
    if (row === undefined) {
      // A reader's snapshot may name a page the writer has deleted since; the writer's own view
      // names every page it committed, unless the commit in flight deletes it.
      if (this.readOnly || this.#deleting.has(id) || !view.pages.has(id)) return undefined;
      throw corruption(`postgres: page ${id} is committed but missing from ${this.#sql.pages}`);
    }
    const bytes = parseBytes(row.bytes, `page ${id}`);
    const length = view.pages.get(id);
    if (length !== undefined && bytes.length !== length)
      throw corruption(`postgres: page ${id}: ${bytes.length} bytes stored, ${length} committed`);
    if ((await crc32cAsync(bytes)) !== parseCrc(row.crc, `page ${id}`))
      throw corruption(`postgres: page ${id}: checksum mismatch`);
    return new Uint8Array(bytes); // a copy of pg's Buffer, which may share its memory
  }

  protected async _readManifest(): Promise<Uint8Array | undefined> {
    const m = this.#view.manifest;
    return m && new Uint8Array(m);
  }

  protected _listPages(): number[] {
    return [...this.#view.pages.keys()].sort((a, b) => a - b);
  }

  protected _has(id: number): boolean {
    return this.#view.pages.has(id);
  }

  override async commit(batch: CommitBatch): Promise<void> {
    if (this.isOpen && this.readOnly) throw this.#readOnlyError();
    return super.commit(batch);
  }

  #readOnlyError(): PqdbError {
    return new PqdbError('READ_ONLY', `postgres page store ${this.name} is open read-only`);
  }

  protected async _commit(batch: CheckedBatch): Promise<void> {
    const c = this.#lock;
    if (c === undefined) throw this.#readOnlyError();
    if (this.#failed !== undefined) {
      throw new PqdbError(
        'IO_ERROR',
        `postgres page store ${this.name}: the writer's connection was lost or a commit's outcome is unknown; reopen the store`,
        { cause: this.#failed },
      );
    }
    const crcs: number[] = [];
    for (const p of batch.pages) crcs.push(await crc32cAsync(p.bytes));
    const m = batch.manifest;
    const view = this.#view;
    let committing = false;
    let version: number;
    try {
      await c.query('BEGIN');
      const swapped = await c.query(this.#sql.swapManifest, [
        this.name,
        String(view.version),
        m !== undefined,
        m === undefined ? null : asBuffer(m),
        m === undefined ? null : crcToSql(crc32c(m)),
        channelOf(this.name),
      ]);
      if (swapped.rows.length !== 1) {
        throw new PqdbError(
          'CONFLICT',
          `postgres page store ${this.name}: another writer committed since version ${view.version}; nothing was written: reopen the store`,
        );
      }
      version = parseVersion(swapped.rows[0].version);
      if (batch.deletes.length > 0) {
        this.#deleting = new Set(batch.deletes);
        await c.query(this.#sql.deletePages, [this.name, batch.deletes.map(String)]);
      }
      for (let at = 0; at < batch.pages.length; at += INSERT_ROWS) {
        const rows = batch.pages.slice(at, at + INSERT_ROWS);
        const values: unknown[] = [this.name];
        rows.forEach((p, i) => values.push(String(p.id), asBuffer(p.bytes), crcToSql(crcs[at + i])));
        await c.query(this.#sql.insertPages(rows.length), values);
      }
      committing = true;
      await c.query('COMMIT');
    } catch (e) {
      this.#deleting = new Set();
      throw await this.#abandon(c, e, committing);
    }
    // Durable: install the new view.
    const pages = new Map(view.pages);
    for (const id of batch.deletes) pages.delete(id);
    let maxId = view.maxId;
    for (const p of batch.pages) {
      pages.set(p.id, p.bytes.length);
      if (p.id > maxId) maxId = p.id;
    }
    this.#view = { version, manifest: m ?? view.manifest, pages, maxId };
    this.#deleting = new Set();
  }

  /** After a failed commit: rolls back when the transaction is still there; the error to throw. */
  async #abandon(c: Client, e: unknown, committing: boolean): Promise<Error> {
    if (connectionLost(e)) {
      // The session is gone, and with it the lock; a cut COMMIT may or may not have landed.
      this.#failed ??= e;
      const what = committing ? 'the connection was lost during COMMIT (outcome unknown)' : 'the connection was lost';
      return new PqdbError('IO_ERROR', `postgres page store ${this.name}: commit: ${what}; reopen the store`, {
        cause: e,
      });
    }
    try {
      await c.query('ROLLBACK');
    } catch (r) {
      this.#failed ??= r;
    }
    if (sqlState(e) === '23505') {
      return new PqdbError(
        'CONFLICT',
        `postgres page store ${this.name}: a page of this commit already exists in ${this.#sql.pages} (written outside this writer); nothing was written`,
        { cause: e },
      );
    }
    return sqlError(`postgres page store ${this.name}: commit`, e);
  }

  protected async _stats(): Promise<PageStoreStats> {
    let pageBytes = 0;
    for (const length of this.#view.pages.values()) pageBytes += length;
    const manifestBytes = this.#view.manifest?.length ?? 0;
    const storedBytes = pageBytes + this.#view.pages.size * ROW_OVERHEAD_BYTES + manifestBytes;
    return { pageCount: this.#view.pages.size, pageBytes, manifestBytes, storedBytes };
  }

  refresh(): Promise<boolean> {
    if (!this.isOpen) return Promise.reject(new PqdbError('NOT_OPEN', 'postgres page store is closed'));
    if (!this.readOnly) return Promise.resolve(false);
    if (this.#refreshing !== undefined) {
      // A refresh is under way but may have read before the change that asks for this one.
      this.#refreshAgain = true;
      return this.#refreshing;
    }
    const run = async (): Promise<boolean> => {
      let changed = false;
      do {
        this.#refreshAgain = false;
        let snap: Snapshot | undefined | null;
        try {
          snap = await this.#snapshot(this.#pool as Queryable, this.#view.version);
        } catch (e) {
          throw sqlError(`postgres page store ${this.name}: refresh`, e);
        }
        if (snap === undefined) throw new PqdbError('NOT_FOUND', `pqdb store ${this.name} no longer exists`);
        if (snap !== null && this.isOpen) {
          this.#view = snap;
          changed = true;
          for (const l of [...this.#listeners]) l.change({ version: snap.version });
        }
      } while (this.#refreshAgain && this.isOpen);
      return changed;
    };
    const p = run().finally(() => {
      this.#refreshing = undefined;
    });
    this.#refreshing = p;
    return p;
  }

  watch(listener: (change: ManifestChange) => void, onError?: (error: Error) => void): () => void {
    if (!this.isOpen) throw new PqdbError('NOT_OPEN', 'postgres page store is closed');
    if (!this.readOnly) throw new TypeError('watch() follows a writer: open the page store with readOnly: true');
    if (typeof listener !== 'function') throw new TypeError(`"listener" expected a function, got ${typeof listener}`);
    const entry = { change: listener, ...(onError !== undefined ? { error: onError } : {}) };
    this.#listeners.add(entry);
    if (this.#listen === undefined && this.#retry === undefined) this.#listening = this.#connectListener();
    return () => void this.#listeners.delete(entry);
  }

  ready(): Promise<void> {
    return this.#listening;
  }

  /** Opens the LISTEN connection; on failure or loss, tries again with backoff. */
  async #connectListener(): Promise<void> {
    const c = new this.#pg.Client({ ...this.#config, application_name: `pqdb follower ${this.name}` });
    const lost = (e?: unknown): void => {
      if (this.#listen !== c) return;
      this.#listen = undefined;
      c.end().catch(() => undefined);
      this.#reportError(sqlError(`postgres page store ${this.name}: LISTEN connection`, e ?? 'ended'));
      this.#scheduleListener();
    };
    c.on('error', lost);
    c.on('end', () => lost());
    c.on('notification', (n: Notification) => {
      if (n.channel === channelOf(this.name)) this.#refreshQuietly();
    });
    this.#listen = c;
    try {
      await c.connect();
      await c.query(`LISTEN ${quoteIdent(channelOf(this.name))}`);
    } catch (e) {
      if (this.#listen === c) lost(e);
      return;
    }
    if (!this.isOpen) return;
    this.#backoff = LISTEN_RETRY_MS[0];
    this.#refreshQuietly(); // commits made before LISTEN was in place
  }

  #scheduleListener(): void {
    if (!this.isOpen || this.#listeners.size === 0 || this.#retry !== undefined) return;
    const delay = this.#backoff;
    this.#backoff = Math.min(delay * 2, LISTEN_RETRY_MS[1]);
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (this.isOpen) this.#listening = this.#connectListener();
    }, delay);
  }

  #refreshQuietly(): void {
    if (!this.isOpen) return;
    this.refresh().catch((e: unknown) => this.#reportError(e as Error));
  }

  #reportError(e: Error): void {
    if (!this.isOpen) return;
    for (const l of [...this.#listeners]) l.error?.(e);
  }

  protected async _close(): Promise<void> {
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    this.#retry = undefined;
    const listen = this.#listen;
    this.#listen = undefined;
    this.#listeners.clear();
    const errors: unknown[] = [];
    await listen?.end().catch(() => undefined);
    await this.#refreshing?.catch(() => undefined);
    if (this.#lock !== undefined) {
      if (this.#failed === undefined) {
        await this.#lock.query('SELECT pg_advisory_unlock($1::bigint)', [this.#key]).catch((e) => errors.push(e));
      }
      await this.#lock.end().catch(() => undefined); // ending the session releases the lock in any case
    }
    await this.#pool.end().catch((e) => errors.push(e));
    if (errors.length > 0) throw sqlError(`postgres page store ${this.name}: close`, errors[0]);
  }
}

/** An array column (NULL: none). @throws PqdbError CORRUPTION for anything else */
function arrayOf(value: unknown, what: string): unknown[] {
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw corruption(`postgres: ${what} is not an array`);
  return value;
}

/** A Buffer over the same memory (pg sends Buffers as binary parameters, without copying). */
function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
