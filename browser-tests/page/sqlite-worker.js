// The browser bench's SQLite peer (bench/browser.mjs): the official SQLite WASM build
// (@sqlite.org/sqlite-wasm) on OPFS through its `opfs-sahpool` VFS, in a dedicated worker as its
// documentation has it, answering the page by message. With `encrypt`, each value is sealed with
// WebCrypto AES-256-GCM (a random 96-bit IV stored beside it) before it is written, and opened
// after it is read: what an app adds to get records encrypted at rest.
import sqlite3InitModule from '/vendor/sqlite-wasm/index.mjs';

let db;
let key;
let encrypt = false;
const enc = new TextEncoder();
const dec = new TextDecoder();

async function seal(value) {
  const bytes = enc.encode(JSON.stringify(value));
  if (!encrypt) return bytes;
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, bytes));
  const out = new Uint8Array(12 + ct.length);
  out.set(iv);
  out.set(ct, 12);
  return out;
}

async function open(bytes) {
  if (bytes === undefined) return undefined;
  const plain = encrypt
    ? new Uint8Array(
        await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, 12) }, key, bytes.subarray(12)),
      )
    : bytes;
  return JSON.parse(dec.decode(plain));
}

const ops = {
  async open({ name, encrypted }) {
    encrypt = encrypted;
    key = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    const sqlite3 = await sqlite3InitModule();
    const pool = await sqlite3.installOpfsSAHPoolVfs({ name: `bench-${name}` });
    db = new pool.OpfsSAHPoolDb(`/${name}.db`);
    // Its defaults, as its documentation leaves them: a rollback journal, synchronous = FULL (every
    // COMMIT synced, as pqdb's). WAL needs shared memory, which the VFS does not have.
    db.exec('CREATE TABLE IF NOT EXISTS kv (id TEXT PRIMARY KEY, v BLOB) WITHOUT ROWID');
    return sqlite3.version.libVersion;
  },
  async putOne({ id, value }) {
    const v = await seal(value);
    db.exec({ sql: 'INSERT OR REPLACE INTO kv VALUES (?, ?)', bind: [id, v] });
  },
  async putBatch({ rows }) {
    const sealed = await Promise.all(rows.map(([, value]) => seal(value)));
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
    const row = db.selectValue('SELECT v FROM kv WHERE id = ?', [id]);
    return open(row);
  },
  async close() {
    db.close();
  },
};

onmessage = async (e) => {
  const { id, op, arg } = e.data;
  try {
    postMessage({ id, value: await ops[op](arg) });
  } catch (err) {
    postMessage({ id, error: String(err?.stack ?? err) });
  }
};
