// The postgres page store among other roles of the same database (support/postgres.ts starts one
// throwaway cluster for the file): a role that can only connect, or only read, cannot keep the
// owner's writer out (the writer's claim, docs/postgres.md "One writer"); a store made before the
// claim existed opens; hostile manifest rows and the server's errors give typed PqdbErrors.
import { afterEach, beforeAll, describe, it, expect } from 'vitest';
import pg from 'pg';
import { crc32c } from '../src/_crc32c';
import { openPostgresPageStore, type PostgresPageStoreOptions } from '../src/storage/postgres';
import { freshStoreName, usePostgres } from './support/postgres';

const cluster = usePostgres();
const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const page = (id: number, n = 100) => ({ id, bytes: new Uint8Array(n).fill(id & 0xff) });
const crcSql = (b: Uint8Array): number => crc32c(b) | 0;
const SCHEMA = 'roles';

/** Opened here; closed (stores) or ended (clients) after each test. */
const opened: { close?(): Promise<void>; end?(): Promise<void> }[] = [];
afterEach(async () => {
  for (const x of opened.splice(0).reverse()) await (x.close ?? x.end)!.call(x).catch(() => undefined);
});

/** A store opened as `user` (default: the superuser) in `schema` (default SCHEMA). */
async function openAs(user: string | undefined, name: string, extra: Partial<PostgresPageStoreOptions> = {}) {
  const s = await openPostgresPageStore({
    connectionString: cluster().connectionFor(user === undefined ? {} : { user }),
    name,
    schema: SCHEMA,
    ...extra,
  });
  opened.push(s);
  return s;
}

/** A plain connection as `user`. */
async function clientAs(user: string): Promise<pg.Client> {
  const c = new pg.Client({ connectionString: cluster().connectionFor({ user }) });
  c.on('error', () => undefined);
  await c.connect();
  opened.push(c);
  return c;
}

const admin = (text: string, values: unknown[] = []) => cluster().admin.query(text, values);

/** The advisory lock keys (bigint, as text) granted to the session named `application`. */
async function advisoryKeysOf(c: pg.Client, application: string): Promise<string[]> {
  const r = await c.query(
    `SELECT ((l.classid::bigint << 32) | l.objid::bigint)::text AS key
       FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
      WHERE a.application_name = $1 AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 1`,
    [application],
  );
  return r.rows.map((x: { key: string }) => x.key);
}

/** Resolves with the first value `poll` gives that is not undefined, or rejects after `ms`. */
async function within<T>(ms: number, poll: () => T | undefined | Promise<T | undefined>): Promise<T> {
  const until = Date.now() + ms;
  for (;;) {
    const v = await poll();
    if (v !== undefined) return v;
    if (Date.now() > until) throw new Error(`nothing within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** What `p` rejects with. */
const failure = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => new Error('expected a rejection'),
    (e: unknown) => e,
  );

beforeAll(async () => {
  // The owner makes (and writes) the tables; another writer role may write them; the reader may
  // only SELECT them; the squatter may only connect (every role may CONNECT to a database by
  // default) and look into the schema.
  await admin(`CREATE ROLE pqdb_owner LOGIN;
CREATE ROLE pqdb_reader LOGIN;
CREATE ROLE pqdb_squatter LOGIN;
CREATE ROLE pqdb_writer LOGIN;
CREATE SCHEMA ${SCHEMA} AUTHORIZATION pqdb_owner;
GRANT USAGE ON SCHEMA ${SCHEMA} TO pqdb_reader, pqdb_squatter;
GRANT USAGE ON SCHEMA ${SCHEMA} TO pqdb_writer;
ALTER DEFAULT PRIVILEGES FOR ROLE pqdb_owner IN SCHEMA ${SCHEMA} GRANT SELECT ON TABLES TO pqdb_reader;
ALTER DEFAULT PRIVILEGES FOR ROLE pqdb_owner IN SCHEMA ${SCHEMA} GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO pqdb_writer;`);
});

describe('postgres page store: other roles of the database', () => {
  it('a role that can only connect cannot keep the owner writer out: not by advisory locks, nor by the tables', async () => {
    const name = freshStoreName('squat');
    const squatter = await clientAs('pqdb_squatter');
    // The keys an older writer locked: the store's, and the one table creation waited on.
    await squatter.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`pqdb:${SCHEMA}.${name}`]);
    await squatter.query("SELECT pg_advisory_lock(hashtextextended('pqdb:ddl', 0))");
    const w = await openAs('pqdb_owner', name);
    await w.commit({ pages: [page(1)], manifest: bytes(1) });
    // Nothing the squatter may do to the tables: no row lock, no table lock, no write.
    const table = `${SCHEMA}.pqdb_manifest`;
    for (const sql of [
      `SELECT version FROM ${table}`,
      `SELECT version FROM ${table} FOR UPDATE`,
      `SELECT version FROM ${table} FOR KEY SHARE`,
      `UPDATE ${table} SET version = 0`,
      `INSERT INTO ${table} (store, version) VALUES ('${name}:writer', 1)`,
      `DELETE FROM ${table}`,
      `TRUNCATE ${table}`,
      `SELECT id FROM ${SCHEMA}.pqdb_pages FOR UPDATE`,
    ])
      await expect(squatter.query(sql), sql).rejects.toMatchObject({ code: '42501' });
    await squatter.query('BEGIN');
    await expect(squatter.query(`LOCK TABLE ${table} IN SHARE MODE`)).rejects.toMatchObject({ code: '42501' });
    await squatter.query('ROLLBACK');
    // The writer's own lock key is in pg_locks for all to see: the squatter queues for it.
    const keys = await advisoryKeysOf(squatter, `pqdb writer ${name}`);
    expect(keys).toHaveLength(1);
    const queued = await clientAs('pqdb_squatter');
    const waiting = queued.query('SELECT pg_advisory_lock($1::bigint)', [keys[0]]);
    // One writer still: a second writer, of this role or another one that may write, is LOCKED;
    // readers need no claim.
    await expect(openAs('pqdb_owner', name)).rejects.toMatchObject({ name: 'PqdbError', code: 'LOCKED' });
    await expect(openAs('pqdb_writer', name)).rejects.toMatchObject({ name: 'PqdbError', code: 'LOCKED' });
    const reader = await openAs('pqdb_reader', name, { readOnly: true });
    expect(await reader.listPages()).toEqual([1]);
    // The writer closes: the squatter now holds the key the claim row names, to no avail.
    await w.close();
    await waiting;
    const w2 = await openAs('pqdb_owner', name);
    expect(await w2.readManifest()).toEqual(bytes(1));
    await w2.commit({ pages: [page(2)], manifest: bytes(2) });
    await expect(openAs('pqdb_owner', name)).rejects.toMatchObject({ code: 'LOCKED' });
    // A writer whose session dies releases the claim, squatter queued or not.
    const [key2] = await advisoryKeysOf(squatter, `pqdb writer ${name}`);
    expect(key2).not.toBe(keys[0]);
    const queued2 = await clientAs('pqdb_squatter');
    const waiting2 = queued2.query('SELECT pg_advisory_lock($1::bigint)', [key2]);
    await admin('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      `pqdb writer ${name}`,
    ]);
    await waiting2;
    const w3 = await within(5000, () => openAs('pqdb_writer', name).catch(() => undefined));
    await expect(w2.commit({ pages: [page(3)] })).rejects.toMatchObject({ code: 'IO_ERROR' });
    await w3.commit({ pages: [page(4)], manifest: bytes(4) });
    expect(await w3.listPages()).toEqual([1, 2, 4]);
    await expect(openAs('pqdb_owner', name)).rejects.toMatchObject({ code: 'LOCKED' });
    await expect(openAs('pqdb_writer', name)).rejects.toMatchObject({ code: 'LOCKED' });
    // Writers racing for a free claim: exactly one gets it.
    await w3.close();
    const raced = await Promise.allSettled(
      ['pqdb_owner', 'pqdb_writer', 'pqdb_owner', 'pqdb_writer'].map((user) => openAs(user, name)),
    );
    expect(raced.filter((x) => x.status === 'fulfilled')).toHaveLength(1);
    for (const x of raced) if (x.status === 'rejected') expect(x.reason).toMatchObject({ code: 'LOCKED' });
  });

  it('a SELECT-only role opens a store made before the claim read-only and follows it, cannot write it (READ_ONLY) nor keep the writer out', async () => {
    const name = freshStoreName('old');
    const first = await openAs('pqdb_owner', freshStoreName('tables')); // makes the tables, if no test did
    await first.close();
    // A store as the older code left it: its manifest row and pages, no claim row.
    const owner = await clientAs('pqdb_owner');
    const m = bytes(5, 6, 7);
    await owner.query(`INSERT INTO ${SCHEMA}.pqdb_manifest (store, version, manifest, crc) VALUES ($1, 3, $2, $3)`, [
      name,
      Buffer.from(m),
      crcSql(m),
    ]);
    for (const p of [page(1), page(2)])
      await owner.query(`INSERT INTO ${SCHEMA}.pqdb_pages (store, id, bytes, crc) VALUES ($1, $2, $3, $4)`, [
        name,
        p.id,
        Buffer.from(p.bytes),
        crcSql(p.bytes),
      ]);
    const readerClient = await clientAs('pqdb_reader');
    await readerClient.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`pqdb:${SCHEMA}.${name}`]);
    const reader = await openAs('pqdb_reader', name, { readOnly: true });
    expect(reader.version).toBe(3);
    expect(await reader.readManifest()).toEqual(m);
    expect(await reader.readPage(2)).toEqual(page(2).bytes);
    const seen: number[] = [];
    reader.watch(({ version }) => seen.push(version));
    await reader.ready();
    // As a writer: typed, and it leaves nothing behind that keeps the owner out.
    const err = await failure(openAs('pqdb_reader', name));
    expect(err).toMatchObject({ name: 'PqdbError', code: 'READ_ONLY', cause: { code: '42501' } });
    const w = await openAs('pqdb_owner', name, { create: false });
    expect(w.version).toBe(3);
    await w.commit({ pages: [page(3)], manifest: bytes(8) });
    await within(5000, () => (seen.includes(4) ? true : undefined));
    expect(await reader.listPages()).toEqual([1, 2, 3]);
    // The claim row names the lock the writer's session holds; the reader cannot lock or change it.
    const claim = await readerClient.query(
      `SELECT version::text AS key FROM ${SCHEMA}.pqdb_manifest WHERE store = $1`,
      [`${name}:writer`],
    );
    expect(await advisoryKeysOf(readerClient, `pqdb writer ${name}`)).toEqual([claim.rows[0].key]);
    for (const sql of [
      `SELECT version FROM ${SCHEMA}.pqdb_manifest WHERE store = '${name}:writer' FOR UPDATE`,
      `UPDATE ${SCHEMA}.pqdb_manifest SET version = 1 WHERE store = '${name}:writer'`,
    ])
      await expect(readerClient.query(sql), sql).rejects.toMatchObject({ code: '42501' });
  });

  it('hostile manifest rows (negative, NULL, non-integer or oversized versions, bytes and checksums of other types) are CORRUPTION', async () => {
    const schema = 'hostile';
    await admin(`CREATE SCHEMA ${schema}`);
    const make = async (name: string) => {
      const w = await openAs(undefined, name, { schema });
      await w.commit({ pages: [page(1)], manifest: bytes(1) });
      await w.close();
    };
    const expectCorrupt = async (name: string, what: string) => {
      for (const extra of [{ readOnly: true }, {}, { create: false }])
        expect(
          await failure(openAs(undefined, name, { schema, ...extra })),
          `${what} ${JSON.stringify(extra)}`,
        ).toMatchObject({
          name: 'PqdbError',
          code: 'CORRUPTION',
        });
    };
    const names = ['neg', 'nul', 'big', 'edge', 'text', 'bytes', 'crc'].map((x) => freshStoreName(x));
    const [neg, nul, big, edge, text, asText, crcText] = names;
    for (const n of names) await make(n);
    const m = `${schema}.pqdb_manifest`;
    // A table whose constraints someone dropped.
    await admin(`ALTER TABLE ${m} DROP CONSTRAINT pqdb_manifest_version_check, ALTER COLUMN version DROP NOT NULL`);
    await admin(`UPDATE ${m} SET version = -1 WHERE store = $1`, [neg]);
    await expectCorrupt(neg, 'version -1');
    await admin(`UPDATE ${m} SET version = NULL WHERE store = $1`, [nul]);
    await expectCorrupt(nul, 'version NULL');
    await admin(`UPDATE ${m} SET version = 9223372036854775807 WHERE store = $1`, [big]);
    await expectCorrupt(big, 'version 2^63 - 1');
    // The largest version the page store takes: a commit would go past it, so it is refused whole.
    await admin(`UPDATE ${m} SET version = 999999999999999 WHERE store = $1`, [edge]);
    const w = await openAs(undefined, edge, { schema });
    await expect(w.commit({ pages: [page(2)], manifest: bytes(2) })).rejects.toMatchObject({ code: 'CORRUPTION' });
    await w.close();
    expect((await admin(`SELECT version::text AS v FROM ${m} WHERE store = $1`, [edge])).rows[0].v).toBe(
      '999999999999999',
    );
    // Columns of other types: text versions, a text manifest, a bigint checksum.
    await admin(`ALTER TABLE ${m} ALTER COLUMN version TYPE text`);
    await admin(`UPDATE ${m} SET version = 'abc' WHERE store = $1`, [text]);
    await expectCorrupt(text, "version 'abc'");
    await admin(`UPDATE ${m} SET version = '1.5' WHERE store = $1`, [text]);
    await expectCorrupt(text, "version '1.5'");
    await admin(`ALTER TABLE ${m} ALTER COLUMN version TYPE bigint USING NULLIF(version, 'abc')::numeric::bigint`);
    await admin(`ALTER TABLE ${m} ALTER COLUMN manifest TYPE text USING encode(manifest, 'hex')`);
    await expectCorrupt(asText, 'manifest as text');
    await admin(`ALTER TABLE ${m} ALTER COLUMN manifest TYPE bytea USING decode(manifest, 'hex')`);
    await admin(`ALTER TABLE ${m} ALTER COLUMN crc TYPE bigint`);
    await admin(`UPDATE ${m} SET crc = crc + 4294967296 WHERE store = $1`, [crcText]);
    await expectCorrupt(crcText, 'checksum as bigint');
    // Pages whose bytes became text.
    await admin(`ALTER TABLE ${m} ALTER COLUMN crc TYPE integer USING (crc - 4294967296 * (crc >= 2147483648)::int)`);
    await admin(`ALTER TABLE ${schema}.pqdb_pages ALTER COLUMN bytes TYPE text USING encode(bytes, 'hex')`);
    await expectCorrupt(asText, 'pages as text');
  });

  it("the server's errors are PqdbErrors with fitting codes: no database, schema or table NOT_FOUND, no privilege IO_ERROR, a lock timeout LOCKED", async () => {
    const schema = 'missing';
    await admin(`CREATE SCHEMA ${schema}`);
    const name = freshStoreName('err');
    const w = await openAs(undefined, name, { schema });
    await w.commit({ pages: [page(1)], manifest: bytes(1) });
    await w.close();
    // No such database, schema or table.
    const nowhere = cluster().connectionFor({ database: 'no_such_database' });
    expect(await failure(openPostgresPageStore({ connectionString: nowhere, name }))).toMatchObject({
      code: 'NOT_FOUND',
      cause: { code: '3D000' },
    });
    expect(await failure(openAs(undefined, name, { schema: 'no_such_schema' }))).toMatchObject({
      code: 'NOT_FOUND',
      cause: { code: '3F000' },
    });
    expect(await failure(openAs(undefined, name, { schema: 'no_such_schema', readOnly: true }))).toMatchObject({
      code: 'NOT_FOUND',
    });
    await admin(`DROP TABLE ${schema}.pqdb_pages`);
    for (const extra of [{ readOnly: true }, { create: false }])
      expect(await failure(openAs(undefined, name, { schema, ...extra }))).toMatchObject({
        code: 'NOT_FOUND',
        cause: { code: '42P01' },
      });
    // A role without SELECT: IO_ERROR, the server's error as cause; as a writer READ_ONLY.
    const first = await openAs('pqdb_owner', freshStoreName('tables'));
    await first.close();
    const other = freshStoreName('err');
    await (await openAs('pqdb_owner', other)).close();
    expect(await failure(openAs('pqdb_squatter', other, { readOnly: true }))).toMatchObject({
      name: 'PqdbError',
      code: 'IO_ERROR',
      cause: { code: '42501' },
    });
    expect(await failure(openAs('pqdb_squatter', other))).toMatchObject({
      code: 'READ_ONLY',
      cause: { code: '42501' },
    });
    // A commit that waits past lock_timeout for a row another session holds: LOCKED, nothing
    // written, and the writer goes on once the row is free.
    const s = await openAs('pqdb_owner', other, { connection: { lock_timeout: 300 } });
    const holder = await clientAs('pqdb_owner');
    await holder.query('BEGIN');
    await holder.query(`SELECT version FROM ${SCHEMA}.pqdb_manifest WHERE store = $1 FOR UPDATE`, [other]);
    expect(await failure(s.commit({ pages: [page(1)], manifest: bytes(1) }))).toMatchObject({
      code: 'LOCKED',
      cause: { code: '55P03' },
    });
    await holder.query('ROLLBACK');
    await s.commit({ pages: [page(1)], manifest: bytes(1) });
    expect(await s.listPages()).toEqual([1]);
  });
});
