// The browser bench's SQLite peer (bench/browser.mjs): the official SQLite WASM build
// (@sqlite.org/sqlite-wasm) on OPFS through its `opfs-sahpool` VFS, in a dedicated worker as its
// documentation has it, answering the page by message; values sealed or not by peer-seal.js.
import sqlite3InitModule from '/vendor/sqlite-wasm/index.mjs';
import { serveOps, valueSealer } from './peer-seal.js';

let db;
let values;

serveOps({
  async open({ name, encrypted }) {
    values = await valueSealer(encrypted);
    const sqlite3 = await sqlite3InitModule();
    const pool = await sqlite3.installOpfsSAHPoolVfs({ name: `bench-${name}` });
    db = new pool.OpfsSAHPoolDb(`/${name}.db`);
    // Its defaults, as its documentation leaves them: a rollback journal, synchronous = FULL (every
    // COMMIT synced, as pqdb's). WAL needs shared memory, which the VFS does not have.
    db.exec('CREATE TABLE IF NOT EXISTS kv (id TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID');
    return sqlite3.version.libVersion;
  },
  async putOne({ id, value }) {
    const v = await values.seal(value);
    db.exec({ sql: 'INSERT OR REPLACE INTO kv VALUES (?, ?)', bind: [id, v] });
  },
  async putBatch({ rows }) {
    const sealed = await Promise.all(rows.map(([, value]) => values.seal(value)));
    db.transaction(() => {
      const st = db.prepare('INSERT OR REPLACE INTO kv VALUES (?, ?)');
      try {
        for (let i = 0; i < rows.length; i++) st.bind([rows[i][0], sealed[i]]).stepReset();
      } finally {
        st.finalize();
      }
    });
  },
  async get({ id }) {
    return values.open(db.selectValue('SELECT v FROM kv WHERE id = ?', [id]));
  },
  async close() {
    db.close();
  },
});
