// The browser bench's wa-sqlite peer (bench/browser.mjs): wa-sqlite's synchronous build on OPFS
// through its AccessHandlePoolVFS (sync access handles, no Asyncify, no SharedArrayBuffer), in a
// dedicated worker as that VFS requires, answering the page by message; values sealed or not by
// peer-seal.js. The files are the npm package's, as published (no build step).
import SQLiteESMFactory from '/vendor/wa-sqlite/dist/wa-sqlite.mjs';
import * as SQLite from '/vendor/wa-sqlite/src/sqlite-api.js';
import { AccessHandlePoolVFS } from '/vendor/wa-sqlite/src/examples/AccessHandlePoolVFS.js';
import { serveOps, valueSealer } from './peer-seal.js';

const UPSERT = 'INSERT OR REPLACE INTO kv VALUES (?, ?)';
let sqlite3;
let db;
let values;

/** Runs `sql` once per row of `rows` through one prepared statement. */
async function eachRow(sql, rows, onRow) {
  for await (const stmt of sqlite3.statements(db, sql)) {
    for (const row of rows) {
      sqlite3.bind_collection(stmt, row);
      while ((await sqlite3.step(stmt)) === SQLite.SQLITE_ROW) onRow?.(stmt);
      sqlite3.reset(stmt);
    }
  }
}

serveOps({
  async open({ name, encrypted }) {
    values = await valueSealer(encrypted);
    sqlite3 = SQLite.Factory(await SQLiteESMFactory());
    const vfs = new AccessHandlePoolVFS(`/bench-wa-${name}`);
    await vfs.isReady;
    sqlite3.vfs_register(vfs, true);
    db = await sqlite3.open_v2(`${name}.db`);
    // Its defaults: a rollback journal, synchronous = FULL (every COMMIT flushed, as pqdb's).
    await sqlite3.exec(db, 'CREATE TABLE IF NOT EXISTS kv (id TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID');
    let version = '';
    await sqlite3.exec(db, 'SELECT sqlite_version()', (row) => (version = row[0]));
    return version;
  },
  async putOne({ id, value }) {
    await eachRow(UPSERT, [[id, await values.seal(value)]]);
  },
  async putBatch({ rows }) {
    const sealed = await Promise.all(rows.map(([, value]) => values.seal(value)));
    await sqlite3.exec(db, 'BEGIN');
    try {
      await eachRow(
        UPSERT,
        rows.map(([id], i) => [id, sealed[i]]),
      );
      await sqlite3.exec(db, 'COMMIT');
    } catch (e) {
      await sqlite3.exec(db, 'ROLLBACK');
      throw e;
    }
  },
  async get({ id }) {
    let v;
    // A copy: the column's bytes are a view into the module's memory, valid until the next step.
    await eachRow('SELECT v FROM kv WHERE id = ?', [[id]], (stmt) => (v = sqlite3.column_blob(stmt, 0).slice()));
    return values.open(v);
  },
  async close() {
    await sqlite3.close(db);
  },
});
