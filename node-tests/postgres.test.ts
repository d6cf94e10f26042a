// What only the postgres page store has, on a throwaway cluster (support/postgres.ts): the
// compare-and-swap of the manifest version against a writer let in past the lock, create-only page
// inserts, the writer's claim, read-only openers following the writer through LISTEN/NOTIFY, tampering
// by the database's superuser, a connection cut in the middle of a commit, name checks, and the
// GRANTs of docs/postgres.md run as written.
import { afterEach, describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { generateRecipient, openStore, type Store } from '../src/node';
import { crc32c } from '../src/_crc32c';
import { openPostgresPageStore, type PostgresPageStore } from '../src/storage/postgres';
import { freshStoreName, usePostgres } from './support/postgres';
import { perTest, postgresStoreFixture } from './support/store-fixtures';

const cluster = usePostgres();
const r = generateRecipient('classical');
const schema = { n: 'integer', s: 'string' } as const;
const bytes = (...xs: number[]): Uint8Array => Uint8Array.from(xs);
const page = (id: number, n = 100) => ({ id, bytes: new Uint8Array(n).fill(id & 0xff) });
const crcSql = (b: Uint8Array): number => crc32c(b) | 0;

/** Opened through this file's helpers; closed after each test. */
const opened: { close(): Promise<void> }[] = [];
afterEach(async () => {
  for (const x of opened.splice(0)) await x.close().catch(() => undefined);
});
const track = <T extends { close(): Promise<void> }>(x: T): T => (opened.push(x), x);
const open = async (name: string, extra: { readOnly?: boolean; create?: boolean } = {}) =>
  track(await openPostgresPageStore({ connectionString: cluster().connectionString, name, ...extra }));
const query = (text: string, values: unknown[] = []) => cluster().admin.query(text, values);
const rowsOf = async (name: string) =>
  (await query('SELECT id FROM pqdb_pages WHERE store = $1 ORDER BY id', [name])).rows.map((x) => Number(x.id));
const manifestRow = async (name: string) =>
  (await query('SELECT version, manifest FROM pqdb_manifest WHERE store = $1', [name])).rows[0] as {
    version: string;
    manifest: Buffer | null;
  };

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

const perTestFixture = perTest(() => postgresStoreFixture(cluster()));

describe('postgres page store', () => {
  it('CAS: a writer overtaken past the lock (the version row moved) gets CONFLICT and writes nothing', async () => {
    const name = freshStoreName('cas');
    const s = await open(name);
    await s.commit({ pages: [page(1)], manifest: bytes(1) });
    expect(s.version).toBe(1);
    // A second writer that got in (the lock bypassed) commits: the version row moves on.
    await query('UPDATE pqdb_manifest SET version = version + 1, manifest = $2 WHERE store = $1', [name, bytes(9)]);
    await expect(s.commit({ pages: [page(2), page(3)], deletes: [1], manifest: bytes(2) })).rejects.toMatchObject({
      name: 'PqdbError',
      code: 'CONFLICT',
    });
    expect(await rowsOf(name)).toEqual([1]); // no page inserted, none deleted
    expect(await manifestRow(name)).toEqual({ version: '2', manifest: Buffer.from([9]) });
    // Its view is unchanged, and it stays overtaken: every later commit is refused too.
    expect(await s.listPages()).toEqual([1]);
    expect(await s.readManifest()).toEqual(bytes(1));
    await expect(s.commit({ manifest: bytes(3) })).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await manifestRow(name)).version).toBe('2');
  });

  it('a page id already in the table (inserted outside the writer) fails the INSERT and rolls the whole commit back', async () => {
    const name = freshStoreName('dup');
    const s = await open(name);
    await s.commit({ pages: [page(1), page(2)], manifest: bytes(1) });
    const foreign = bytes(7, 7, 7);
    await query('INSERT INTO pqdb_pages (store, id, bytes, crc) VALUES ($1, 5, $2, $3)', [
      name,
      Buffer.from(foreign),
      crcSql(foreign),
    ]);
    const err = await s
      .commit({ pages: [page(4), page(5), page(6)], deletes: [1], manifest: bytes(2) })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'PqdbError', code: 'CONFLICT', cause: { code: '23505' } });
    // Nothing of it: page 1 not deleted, 4 and 6 not inserted, 5 not overwritten, the manifest kept.
    expect(await rowsOf(name)).toEqual([1, 2, 5]);
    const five = await query('SELECT bytes FROM pqdb_pages WHERE store = $1 AND id = 5', [name]);
    expect(new Uint8Array(five.rows[0].bytes)).toEqual(foreign);
    expect(await manifestRow(name)).toEqual({ version: '1', manifest: Buffer.from([1]) });
    // The writer goes on: the version did not move.
    await s.commit({ pages: [page(7)], manifest: bytes(3) });
    expect(await s.listPages()).toEqual([1, 2, 7]);
    expect(await manifestRow(name)).toEqual({ version: '2', manifest: Buffer.from([3]) });
  });

  it('one writer: a second one is LOCKED (another store name is not), and opens once the first closed', async () => {
    const name = freshStoreName('lock');
    const a = await open(name);
    await a.commit({ pages: [page(1)] });
    await expect(open(name)).rejects.toMatchObject({ name: 'PqdbError', code: 'LOCKED' });
    await expect(open(name)).rejects.toMatchObject({ code: 'LOCKED' });
    const other = await open(freshStoreName('lock'));
    expect(other.isOpen).toBe(true);
    const reader = await open(name, { readOnly: true }); // readers take no lock
    expect(await reader.listPages()).toEqual([1]);
    const held = await query("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND granted");
    expect(held.rows[0].n).toBe(2); // one per writer
    await a.close();
    const b = await open(name);
    expect(await b.readPage(1)).toEqual(page(1).bytes);
    await b.commit({ pages: [page(2)] });
  });

  it('read-only: no lock, commits and deletes are READ_ONLY, reads are a snapshot until refresh()', async () => {
    const name = freshStoreName('ro');
    await expect(open(name, { readOnly: true })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(open(name, { create: false })).rejects.toMatchObject({ code: 'NOT_FOUND' });
    const w = await open(name);
    await w.commit({ pages: [page(1), page(2)], manifest: bytes(1) });
    const ro = await open(name, { readOnly: true });
    expect(ro.readOnly).toBe(true);
    await expect(ro.commit({ pages: [page(3)] })).rejects.toMatchObject({ code: 'READ_ONLY' });
    await expect(ro.commit({})).rejects.toMatchObject({ code: 'READ_ONLY' });
    await expect(ro.deletePages([1])).rejects.toMatchObject({ code: 'READ_ONLY' });
    expect(() => w.watch(() => undefined)).toThrow(TypeError);
    await w.commit({ pages: [page(3)], deletes: [1], manifest: bytes(2) });
    // As of opening: page 3 is not there yet; page 1, deleted since, reads as absent.
    expect(await ro.listPages()).toEqual([1, 2]);
    expect(await ro.readPage(3)).toBeUndefined();
    expect(await ro.readPage(1)).toBeUndefined();
    expect(await ro.readManifest()).toEqual(bytes(1));
    expect(await ro.refresh()).toBe(true);
    expect(await ro.refresh()).toBe(false);
    expect(ro.version).toBe(w.version);
    expect(await ro.listPages()).toEqual([2, 3]);
    expect(await ro.readPage(3)).toEqual(page(3).bytes);
    expect(await ro.readManifest()).toEqual(bytes(2));
    expect((await ro.stats()).pageCount).toBe(2);
  });

  it('a reader follows the writer through LISTEN/NOTIFY, also after its LISTEN connection was cut', async () => {
    const name = freshStoreName('follow');
    const w = await open(name);
    await w.commit({ pages: [page(1)], manifest: bytes(1) });
    const ro = await open(name, { readOnly: true });
    const seen: number[] = [];
    const errors: Error[] = [];
    const stop = ro.watch(
      ({ version }) => seen.push(version),
      (e) => errors.push(e),
    );
    await ro.ready();
    await w.commit({ pages: [page(2)], manifest: bytes(2) });
    await within(5000, () => (seen.includes(2) ? true : undefined));
    expect(await ro.readManifest()).toEqual(bytes(2)); // refreshed before the listener was called
    expect(await ro.readPage(2)).toEqual(page(2).bytes);
    // The server drops the follower's connection; it reconnects and catches up on what it missed.
    await query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      `pqdb follower ${name}`,
    ]);
    await w.commit({ pages: [page(3)], manifest: bytes(3) });
    await within(10_000, () => (seen.includes(3) ? true : undefined));
    expect(errors.length).toBeGreaterThan(0);
    expect(errors[0]).toMatchObject({ name: 'PqdbError', code: 'IO_ERROR' });
    await within(10_000, async () =>
      (await query('SELECT 1 FROM pg_stat_activity WHERE application_name = $1', [`pqdb follower ${name}`]))
        .rowCount === 1
        ? true
        : undefined,
    );
    await w.commit({ pages: [page(4)], manifest: bytes(4) });
    await within(5000, () => (seen.includes(4) ? true : undefined));
    expect(await ro.listPages()).toEqual([1, 2, 3, 4]);
    stop();
    await w.commit({ manifest: bytes(5) });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(seen).not.toContain(5); // unsubscribed (the view still follows while the connection lives)
  });

  it('tampering by the superuser: a changed page is CORRUPTION below the checksum column, AUTH_FAILED above it', async () => {
    const f = await perTestFixture();
    const options = { recipients: [r.publicKey], unlock: r.secretKey };
    const store = await f.open({ ...options, create: true });
    const c = store.collection('c', { schema });
    await c.put('a', { n: 1, s: 'x'.repeat(100) });
    await c.put('b', { n: 2, s: 'y'.repeat(100) });
    await store.close();
    const flip = 'set_byte(bytes, 60, get_byte(bytes, 60) # 1)';
    await query(`UPDATE pqdb_pages SET bytes = ${flip} WHERE store = $1 AND id = 2`, [f.name]);
    await expect(f.open(options)).rejects.toMatchObject({ code: 'CORRUPTION' });
    await query(`UPDATE pqdb_pages SET bytes = ${flip} WHERE store = $1 AND id = 2`, [f.name]); // repaired
    const open1 = await f.open(options);
    expect(await open1.collection('c', { schema }).get('b')).toEqual({ n: 2, s: 'y'.repeat(100) });
    await open1.close();
    // Now with the checksum column fixed up as well: the engine's MAC is what catches it.
    const open2 = await f.open(options);
    const stored = (await query('SELECT bytes FROM pqdb_pages WHERE store = $1 AND id = 2', [f.name])).rows[0].bytes;
    const altered = new Uint8Array(stored);
    altered[altered.length >> 1] ^= 0x10; // inside the sealed record
    await query('UPDATE pqdb_pages SET bytes = $2, crc = $3 WHERE store = $1 AND id = 2', [
      f.name,
      Buffer.from(altered),
      crcSql(altered),
    ]);
    const c2 = open2.collection('c', { schema });
    expect(await c2.get('a')).toEqual({ n: 1, s: 'x'.repeat(100) });
    await expect(c2.get('b')).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await open2.close();
    await expect(f.open(options)).rejects.toMatchObject({ code: expect.stringMatching(/^(AUTH_FAILED|CORRUPTION)$/) });
  });

  it('a connection cut in the middle of a commit is IO_ERROR; the store reopens with every acknowledged record', async () => {
    const f = await perTestFixture();
    const options = { recipients: [r.publicKey], unlock: r.secretKey };
    let store: Store = await f.open({ ...options, create: true });
    const c = store.collection('c', { schema });
    const acked = new Map<string, { n: number; s: string }>();
    for (let i = 0; i < 20; i++) {
      const v = { n: i, s: `record ${i}` };
      await c.put(`k${i}`, v);
      acked.set(`k${i}`, v);
    }
    // Hold the manifest row, so the next commit waits inside its transaction, then cut its session.
    const blocker = new pg.Client({ connectionString: cluster().connectionString });
    await blocker.connect();
    try {
      await blocker.query('BEGIN');
      await blocker.query('SELECT version FROM pqdb_manifest WHERE store = $1 FOR UPDATE', [f.name]);
      const pending = c.put('lost', { n: -1, s: 'never acknowledged' }).catch((e: unknown) => e);
      const pid = await within(5000, async () => {
        const q = await blocker.query(
          "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
          [`pqdb writer ${f.name}`],
        );
        return q.rows[0]?.pid as number | undefined;
      });
      await blocker.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(await pending).toMatchObject({ name: 'PqdbError', code: 'IO_ERROR' });
      await blocker.query('ROLLBACK');
    } finally {
      await blocker.end();
    }
    // The lock went with the session: this writer refuses to go on.
    await expect(c.put('after', { n: 0, s: 'x' })).rejects.toMatchObject({ code: 'IO_ERROR' });
    await store.close();
    store = await f.open(options);
    const again = store.collection('c', { schema });
    for (const [id, v] of acked) expect(await again.get(id)).toEqual(v);
    expect(await again.get('lost')).toBeUndefined();
    await again.put('next', { n: 99, s: 'after reopen' });
    expect(await again.get('next')).toEqual({ n: 99, s: 'after reopen' });
    await store.close();
  });

  it('a writer whose idle connection dropped (the lock gone with it) refuses to commit; a new writer takes over', async () => {
    const name = freshStoreName('idle');
    const a = await open(name);
    await a.commit({ pages: [page(1)], manifest: bytes(1) });
    await query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      `pqdb writer ${name}`,
    ]);
    await within(5000, async () => ((await rowsOf(name)).length === 1 ? true : undefined));
    const b = await within(5000, () => open(name).catch(() => undefined)); // the lock is free again
    await expect(a.commit({ pages: [page(2)] })).rejects.toMatchObject({ name: 'PqdbError', code: 'IO_ERROR' });
    await b.commit({ pages: [page(3)], manifest: bytes(3) });
    await a.close(); // must not release the new writer's lock
    await expect(open(name)).rejects.toMatchObject({ code: 'LOCKED' });
    expect(await b.listPages()).toEqual([1, 3]);
    expect(await rowsOf(name)).toEqual([1, 3]);
  });

  it('store names and schemas are checked identifiers; SQL never sees them unchecked', async () => {
    const connectionString = cluster().connectionString;
    for (const name of ['', '1abc', 'a-b', 'a;drop table pqdb_pages', '"x"', 'a'.repeat(49), 'é'])
      await expect(openPostgresPageStore({ connectionString, name })).rejects.toThrow(RangeError);
    await expect(openPostgresPageStore({ connectionString, name: 7 as unknown as string })).rejects.toThrow(TypeError);
    await expect(openPostgresPageStore({ connectionString, name: 'ok', schema: 'x y' })).rejects.toThrow(RangeError);
    await expect(openPostgresPageStore({ connectionString, name: 'ok', maxConnections: 0 })).rejects.toThrow(
      RangeError,
    );
    // A schema that does not exist: no store there, and the tables cannot be made there.
    await expect(openPostgresPageStore({ connectionString, name: 'ok', schema: 'nowhere' })).rejects.toMatchObject({
      code: 'NOT_FOUND',
      cause: { code: '3F000' },
    });
    await expect(
      openPostgresPageStore({ connectionString, name: 'ok', schema: 'nowhere', readOnly: true }),
    ).rejects.toMatchObject({ code: 'NOT_FOUND' });
    // An unreachable server is IO_ERROR with the driver's error as cause.
    const dead = `postgresql://pqdb@localhost:1/none?host=${encodeURIComponent(cluster().socketDir)}/missing`;
    const err = await openPostgresPageStore({ connectionString: dead, name: 'ok' }).catch((e: unknown) => e);
    expect(err).toMatchObject({ name: 'PqdbError', code: 'IO_ERROR' });
    expect((err as Error).cause).toBeInstanceOf(Error);
  });

  it('docs/postgres.md: its SQL block, run as written, gives an application role that works and cannot UPDATE pages, and a reader role that only reads', async () => {
    const docs = readFileSync(new URL('../docs/postgres.md', import.meta.url), 'utf8');
    const block = /<!-- grants -->\s*```sql\n([\s\S]*?)```/.exec(docs)?.[1];
    expect(block).toBeDefined();
    const boot = new pg.Client({ connectionString: cluster().connectionString });
    await boot.connect();
    await boot.query('CREATE DATABASE pqdb_grants');
    await boot.end();
    const owner = new pg.Client({ connectionString: cluster().connectionFor({ database: 'pqdb_grants' }) });
    await owner.connect();
    try {
      await owner.query(block!);
      const app = cluster().connectionFor({ database: 'pqdb_grants', user: 'pqdb_app' });
      const s = track(await openPostgresPageStore({ connectionString: app, name: 'orders', schema: 'pqdb' }));
      await s.commit({ pages: [page(1), page(2)], manifest: bytes(1) });
      await s.deletePages([1]);
      expect(await s.readPage(2)).toEqual(page(2).bytes);
      const ro = track(
        await openPostgresPageStore({ connectionString: app, name: 'orders', schema: 'pqdb', readOnly: true }),
      );
      expect(await ro.listPages()).toEqual([2]);
      // The reader role reads, and only that.
      const reader = cluster().connectionFor({ database: 'pqdb_grants', user: 'pqdb_reader' });
      const r2 = track(
        await openPostgresPageStore({ connectionString: reader, name: 'orders', schema: 'pqdb', readOnly: true }),
      );
      expect(await r2.readPage(2)).toEqual(page(2).bytes);
      await expect(
        openPostgresPageStore({ connectionString: reader, name: 'orders', schema: 'pqdb' }),
      ).rejects.toMatchObject({ code: 'READ_ONLY' });
      await expect(
        openPostgresPageStore({ connectionString: reader, name: 'other', schema: 'pqdb' }),
      ).rejects.toMatchObject({ code: 'READ_ONLY' });
      const as = new pg.Client({ connectionString: app });
      await as.connect();
      try {
        for (const sql of [
          "UPDATE pqdb.pqdb_pages SET bytes = '\\x00' WHERE store = 'orders'",
          "DELETE FROM pqdb.pqdb_manifest WHERE store = 'orders'",
          'TRUNCATE pqdb.pqdb_pages',
          'DROP TABLE pqdb.pqdb_pages',
          'CREATE TABLE pqdb.other (x int)',
        ])
          await expect(as.query(sql), sql).rejects.toMatchObject({ code: '42501' });
      } finally {
        await as.end();
      }
    } finally {
      await owner.end();
    }
  });
});

describe('postgres page store under openStore', () => {
  it('info().storage is postgres; a second Store on the same name is LOCKED; a read-only Store opens beside the writer', async () => {
    const f = await perTestFixture();
    const options = { recipients: [r.publicKey], unlock: r.secretKey };
    const store = await f.open({ ...options, create: true });
    await store.collection('c', { schema }).put('a', { n: 1, s: 'x' });
    expect(store.info().storage).toBe('postgres');
    const second = await openPostgresPageStore({ connectionString: cluster().connectionString, name: f.name }).catch(
      (e: unknown) => e,
    );
    expect(second).toMatchObject({ code: 'LOCKED' });
    const reader = await openStore({
      ...options,
      readOnly: true,
      storage: await openPostgresPageStore({
        connectionString: cluster().connectionString,
        name: f.name,
        readOnly: true,
      }),
    });
    expect(await reader.collection('c', { schema }).get('a')).toEqual({ n: 1, s: 'x' });
    await reader.close();
    const pages = (await f.pages()) as PostgresPageStore;
    expect(pages.kind).toBe('postgres');
    expect(pages.version).toBeGreaterThan(0);
  });
});
