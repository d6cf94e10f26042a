// Notes kept in a pqdb store on IndexedDB: add, list, search; they survive a reload.
// The recipient secret key never sits in storage as bytes: it is wrapped under a non-extractable
// AES-GCM key made by WebCrypto, and both live in a small key database apart from the store.
// Caveat: any script running in this origin can still ask WebCrypto for the unwrap; derive the
// wrapping key from a passphrase or a passkey for more (see the README).
import { openStore, generateRecipient, PqdbError } from 'pqdb';

const STORE = 'pqdb-notes';
const KEYS = 'pqdb-notes-keys';
const schema = { title: 'string', body: 'string', created: 'number' };

/** Runs one IndexedDB request on the key database and resolves with its result. */
function keyDb(mode, use) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open(KEYS, 1);
    open.onupgradeneeded = () => open.result.createObjectStore('keys');
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const db = open.result;
      const req = use(db.transaction('keys', mode).objectStore('keys'));
      req.onsuccess = () => resolve(req.result);
      req.onerror = () => reject(req.error);
      req.transaction.oncomplete = () => db.close();
    };
  });
}

/** The recipient key pair: made and wrapped on the first visit, unwrapped on the next ones. */
async function recipientKeys() {
  let saved = await keyDb('readonly', (s) => s.get('recipient'));
  if (saved === undefined) {
    const { publicKey, secretKey } = generateRecipient();
    const wrappingKey = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, [
      'encrypt',
      'decrypt',
    ]);
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const wrapped = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, wrappingKey, secretKey));
    secretKey.fill(0);
    saved = { publicKey, wrappingKey, iv, wrapped };
    await keyDb('readwrite', (s) => s.put(saved, 'recipient'));
  }
  const { publicKey, wrappingKey, iv, wrapped } = saved;
  const secretKey = new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv }, wrappingKey, wrapped));
  return { publicKey, secretKey };
}

function item(id, note) {
  const li = document.createElement('li');
  li.dataset.id = id;
  li.textContent = note.body === '' ? note.title : `${note.title}: ${note.body}`;
  return li;
}

async function start() {
  const keys = await recipientKeys();
  let store;
  try {
    store = await openStore({ location: STORE, create: true, recipients: [keys.publicKey], unlock: keys.secretKey });
  } finally {
    keys.secretKey.fill(0);
  }
  const notes = store.collection('notes', { schema, index: { text: ['title', 'body'] } });
  const status = document.getElementById('status');
  const list = document.getElementById('notes');
  const results = document.getElementById('results');

  async function render() {
    const all = [];
    for await (const { id, value } of notes.scan()) all.push([id, value]);
    all.sort((a, b) => a[1].created - b[1].created);
    list.replaceChildren(...all.map(([id, note]) => item(id, note)));
    status.textContent = `ready: ${all.length} note${all.length === 1 ? '' : 's'}`;
  }

  document.getElementById('add').addEventListener('submit', async (event) => {
    event.preventDefault();
    const form = event.target;
    const id = `${Date.now().toString(36)}-${crypto.getRandomValues(new Uint32Array(1))[0].toString(36)}`;
    await notes.put(id, { title: form.title.value, body: form.body.value, created: Date.now() });
    form.reset();
    await render();
  });
  document.getElementById('find').addEventListener('submit', async (event) => {
    event.preventDefault();
    const hits = await notes.search(event.target.query.value, { prefix: true, limit: 50 });
    results.replaceChildren(...hits.map(({ id, value }) => item(id, value)));
    status.textContent = `${hits.length} found`;
  });
  // The store holds a Web Lock while open; closing on pagehide lets the next page open it at once.
  addEventListener('pagehide', () => store.close());
  await render();
}

start().catch((e) => {
  document.getElementById('status').textContent = `error: ${e instanceof PqdbError ? `[${e.code}] ` : ''}${e.message}`;
});
