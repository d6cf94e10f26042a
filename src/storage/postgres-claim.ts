// The writer's claim on a PostgreSQL store (postgres.ts; docs/postgres.md, "One writer"), and the
// tables it makes first when they are missing.
//
// Anyone who can connect to a database can take any advisory lock, so an advisory lock alone
// cannot say who the writer is: a role with nothing but CONNECT could hold the key first and keep
// the writer out. The claim is a row in the manifest table (claimRowOf: a name no store can have)
// holding the key of the advisory lock its writer's session holds. Writing that row needs UPDATE on
// the table; a key held by a session of a role without that privilege does not count; and a
// session that ends releases its lock, so the claim goes with the writer's session as before. No
// transaction stays open (an open one would hold back VACUUM for the whole database), and the
// tables keep their layout: a store made by older code gets its claim row on the first open.

/// <reference types="node" />
import type { Client, ClientConfig } from 'pg';
import { PqdbError } from '../errors';
import { claimRowOf, sqlState, type Statements } from './postgres-sql';

type Pg = typeof import('pg').default;

/** The writer's connection: its session holds the store's claim (`key`, an advisory lock key). */
export interface Writer {
  readonly client: Client;
  readonly key: string;
}

/**
 * Connects the writer's connection, makes what is missing (the tables and the store's row, with
 * `create`) and claims the store on it: docs/postgres.md, "One writer". The session takes an
 * advisory lock on a fresh random key, then, holding the claim row locked, writes that key to it
 * unless the key already there is held by a session of a role that may UPDATE the manifest
 * table. Anyone who can connect can take an advisory lock, but only such a role can write the row;
 * a session that ends releases its lock, and with it the claim.
 */
export async function claimWriter(
  pg: Pg,
  config: ClientConfig,
  sql: Statements,
  name: string,
  create: boolean,
): Promise<Writer> {
  const client = new pg.Client({ ...config, application_name: `pqdb writer ${name}` });
  client.on('error', () => undefined); // replaced by the store's handler once open
  const held = `postgres page store ${name} is held by another writer`;
  try {
    await client.connect();
    if (create) await createTables(client, sql);
    const claim = claimRowOf(name);
    let key = '';
    for (let attempt = 0; key === ''; attempt++) {
      const random = new BigUint64Array(1);
      globalThis.crypto.getRandomValues(random);
      const candidate = String(random[0] >> 1n); // 0 … 2^63 - 1: a bigint, and ≥ 0 as the column requires
      const r = await client.query('SELECT pg_try_advisory_lock($1::bigint) AS locked', [candidate]);
      if (r.rows[0]?.locked === true) key = candidate;
      else if (attempt >= 3) throw new PqdbError('LOCKED', held); // someone holds every key drawn
    }
    try {
      if (create) await client.query(sql.insertManifestRow, [name]);
      await client.query(sql.insertClaimRow, [claim, name]);
      await client.query('BEGIN');
      const row = await client.query(sql.lockClaim, [claim]);
      if (row.rows.length === 0) throw new PqdbError('NOT_FOUND', `no pqdb store ${name} in ${sql.manifest}`);
      const taken = await client.query(sql.takeClaim, [claim, key, sql.manifest]);
      if (taken.rows.length !== 1) throw new PqdbError('LOCKED', held);
      await client.query('COMMIT');
    } catch (e) {
      await client.query('ROLLBACK').catch(() => undefined);
      if (sqlState(e) === '55P03') throw new PqdbError('LOCKED', held, { cause: e }); // another opener claims it now
      if (sqlState(e) === '42501') {
        throw new PqdbError(
          'READ_ONLY',
          `postgres page store ${name}: this role may not write the store (it needs INSERT and UPDATE on ${sql.manifest}; docs/postgres.md): open it with readOnly: true`,
          { cause: e },
        );
      }
      throw e;
    }
    return { client, key };
  } catch (e) {
    await client.end().catch(() => undefined); // ends the session: its advisory lock goes with it
    throw e;
  }
}

/** Makes the tables when one is missing (needs CREATE on the schema). */
async function createTables(c: Client, sql: Statements): Promise<void> {
  const missing = async (): Promise<boolean> => {
    const r = await c.query('SELECT to_regclass($1) IS NULL OR to_regclass($2) IS NULL AS missing', [
      sql.pages,
      sql.manifest,
    ]);
    return r.rows[0]?.missing === true;
  };
  for (let attempt = 0; await missing(); attempt++) {
    await c.query('BEGIN');
    try {
      for (const statement of sql.create) await c.query(statement);
      await c.query('COMMIT');
    } catch (e) {
      await c.query('ROLLBACK').catch(() => undefined);
      // Two openers making the tables at once: CREATE TABLE IF NOT EXISTS of the one that commits
      // second fails on the catalog's unique index; the tables are there then.
      if (attempt < 3 && (sqlState(e) === '23505' || sqlState(e) === '42P07')) continue;
      throw e;
    }
  }
}
