// pqdb notes: encrypted notes with search, kept by pqdb's engine in a dedicated worker
// (db-worker.js) on OPFS, IndexedDB where OPFS is missing. Open it in several tabs: one tab's
// worker serves the store to all of them, each tab sees the others' notes as they are saved, and
// when the serving tab closes another takes over. The page holds no secret key and runs none of
// pqdb's cryptography: it imports only pqdb/client, and its one key is a non-extractable
// key-encryption key the worker unwraps the store's keys with.
import { openStore, restoreStore, requestPersistence, PqdbError } from 'pqdb/client';
import { idb } from './idb.js';

const WORKER = new URL('./db-worker.js', import.meta.url);
const schema = { title: 'string', body: 'string', created: 'number' };
const index = { text: ['title', 'body'] };
/** Other tabs hear here that the store moved to a new location (a restore). */
const app = new BroadcastChannel('pqdb-notes-app');

const $ = (id) => document.getElementById(id);
const status = (text) => ($('status').textContent = text);
const errorText = (e) => `${e instanceof PqdbError ? `[${e.code}] ` : ''}${e?.message ?? e}`;

/** This device's key-encryption key: made once, non-extractable, kept as a CryptoKey in IndexedDB. */
async function deviceKey() {
  let kek = await idb('readonly', (s) => s.get('device'));
  if (kek === undefined) {
    kek = await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt']);
    // Another tab may store its own first: the first one stored is the device's.
    await idb('readwrite', (s) => s.add(kek, 'device')).catch((e) => {
      if (e?.name !== 'ConstraintError') throw e; // only another tab's key stored first is fine
    });
    kek = await idb('readonly', (s) => s.get('device'));
    if (kek === undefined) throw new Error('the device key could not be stored');
  }
  return kek;
}

/** Note ids sort newest first, so the newest notes are the first of a scan. */
function newId() {
  const t = (Number.MAX_SAFE_INTEGER - Date.now()).toString(36).padStart(11, '0');
  const r = crypto.getRandomValues(new Uint32Array(1))[0].toString(36).padStart(7, '0');
  return `n${t}${r}`;
}

function item(id, note, onPick) {
  const li = document.createElement('li');
  li.dataset.id = id;
  const b = document.createElement('b');
  b.textContent = note.title;
  li.append(b, note.body);
  li.addEventListener('click', () => onPick(id, note));
  return li;
}

const WORDS = (
  'apple river cloud stone garden winter letter market window bread candle harbor mountain ' +
  'silver paper lantern orchard meadow journey signal anchor thunder violet copper forest ' +
  'island pepper ribbon saddle timber velvet whisper yellow zephyr basket castle dragon'
).split(' ');

/** `n` sample notes, written in batches of 1,000 (each batch one commit). */
async function addSamples(store, notes, n, onStep) {
  let seed = Date.now() >>> 0;
  const word = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return WORDS[seed % WORDS.length];
  };
  for (let done = 0; done < n;) {
    const k = Math.min(1000, n - done);
    await store.batch((tx) => {
      for (let i = 0; i < k; i++) {
        const body = Array.from({ length: 12 }, word).join(' ');
        tx.put(notes, newId(), { title: `${word()} ${word()}`, body, created: Date.now() });
      }
    });
    done += k;
    onStep(done);
  }
}

/** The CBOM (store.posture()) summarised: suites with their state and records, the copies held. */
function summarise(cbom) {
  const prop = (c, name) => c.properties?.find((p) => p.name === name)?.value;
  const store = cbom.metadata.component;
  const suites = cbom.components
    .filter((c) => c['bom-ref'].startsWith('suite/'))
    .map((c) => ({
      name: c.name,
      state: prop(c, 'pqdb:registry-state'),
      records: Number(prop(c, 'pqdb:records') ?? 0),
      default: prop(c, 'pqdb:default-suite') === 'true',
    }));
  const copies = cbom.components.filter((c) => c['bom-ref'].startsWith('copy/'));
  return {
    suites,
    defaultSuite: prop(store, 'pqdb:default-suite'),
    copies: copies.length,
    backups: copies.filter((c) => prop(c, 'pqdb:copy-kind') === 'backup').length,
    checkpoints: Number(prop(store, 'pqdb:checkpoints') ?? 0),
  };
}

async function start() {
  const kek = await deviceKey();
  const location = (await idb('readonly', (s) => s.get('location'))) ?? 'pqdb-notes';
  const store = await openStore({ worker: WORKER, location, create: true, context: { kek } });
  const notes = store.collection('notes', { schema, index });
  let editing; // the id of the note in the form, when one was picked
  let count = 0;
  const shown = () => `${count.toLocaleString('en')} note${count === 1 ? '' : 's'}`;
  const ready = () => status(`ready: ${shown()}`);

  // The newest notes and the count, again after each commit of any tab.
  notes.live(
    { scan: { limit: 50 } },
    (rows) => $('notes').replaceChildren(...rows.map(({ id, value }) => item(id, value, pick))),
    (e) => status(`error: ${errorText(e)}`),
  );
  const recount = async () => {
    count = await notes.count();
    $('count').textContent = `(${shown()})`;
    if (!busy) ready();
  };
  let busy = false;
  notes.watch(() => void recount());
  await recount();

  function pick(id, note) {
    editing = id;
    $('title').value = note.title;
    $('body').value = note.body;
    $('save').textContent = 'Save';
    $('editing').textContent = 'editing a note';
  }
  function clear() {
    editing = undefined;
    $('note').reset();
    $('save').textContent = 'Add';
    $('editing').textContent = '';
  }
  $('new').addEventListener('click', clear);
  $('note').addEventListener('submit', async (event) => {
    event.preventDefault();
    const id = editing ?? newId();
    try {
      await notes.put(id, { title: $('title').value, body: $('body').value, created: Date.now() });
      clear();
    } catch (e) {
      status(`not saved: ${errorText(e)}`);
    }
  });

  // Search as you type: a live search, run again when a commit changes the index.
  let stopSearch;
  $('query').addEventListener('input', () => {
    stopSearch?.();
    stopSearch = undefined;
    const q = $('query').value.trim();
    if (q === '') return $('results').replaceChildren();
    stopSearch = notes.live(
      { search: q, options: { prefix: true, limit: 20 } },
      (hits) => $('results').replaceChildren(...hits.map(({ id, value }) => item(id, value, pick))),
      () => $('results').replaceChildren(),
    );
  });

  // Protection: the posture, a migration to the other suite, backups.
  let target;
  async function posture() {
    const p = summarise(await store.posture());
    const rows = p.suites.map((s) => {
      const tr = document.createElement('tr');
      for (const v of [`${s.name}${s.default ? ' (writes)' : ''}`, s.state, s.records.toLocaleString('en')]) {
        const td = document.createElement('td');
        td.textContent = v;
        tr.append(td);
      }
      return tr;
    });
    $('suites').tBodies[0].replaceChildren(...rows);
    $('copies').textContent =
      `${p.checkpoints} signed checkpoint${p.checkpoints === 1 ? '' : 's'}; ${p.copies} managed cop${p.copies === 1 ? 'y' : 'ies'} holding data (${p.backups} backup${p.backups === 1 ? '' : 's'})`;
    target = p.defaultSuite === 'cnsa2-gcm-hkdf384-commit' ? 'gcmsiv-hkdf384' : 'cnsa2-gcm-hkdf384-commit';
    if (!busy) {
      $('migrate').textContent = `Re-encrypt every note with ${target}`;
      $('migrate').disabled = false;
    }
  }
  let postureTimer;
  notes.watch(() => {
    clearTimeout(postureTimer);
    postureTimer = setTimeout(() => void posture().catch(() => undefined), 250);
  });
  const info = await store.storageInfo();
  $('storage').textContent = `on ${info.pageStore}${info.persisted ? ', persistent' : ''}`;
  await posture();

  $('migrate').addEventListener('click', async () => {
    busy = true;
    $('migrate').disabled = true;
    $('progress').hidden = false;
    $('progress').value = 0;
    const started = performance.now();
    try {
      const done = await store.migrate({
        to: target,
        onProgress: (p) => {
          $('progress').value = p.total === 0 ? 1 : p.copied / p.total;
          $('migration').textContent =
            `${p.phase}: ${p.copied.toLocaleString('en')} of ${p.total.toLocaleString('en')} re-encrypted`;
        },
      });
      $('migration').textContent =
        `done: ${done.copied.toLocaleString('en')} notes re-encrypted with ${done.to} in ${((performance.now() - started) / 1000).toFixed(1)} s`;
    } catch (e) {
      $('migration').textContent = `migration stopped: ${errorText(e)}`;
    } finally {
      busy = false;
      $('progress').hidden = true;
      ready();
      await posture();
    }
  });

  $('backup').addEventListener('click', async () => {
    try {
      $('backups').textContent = 'writing a backup…';
      const { file, copy } = await store.backupFile();
      const a = document.createElement('a');
      a.href = URL.createObjectURL(new Blob([file], { type: 'application/octet-stream' }));
      a.download = `notes-${copy.time.slice(0, 19).replace(/[:T]/g, '-')}.pqdb`;
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10_000);
      $('backups').textContent =
        `backup ${copy.id.slice(0, 8)}: ${copy.records} notes, ${file.length.toLocaleString('en')} bytes`;
      await posture();
    } catch (e) {
      $('backups').textContent = `no backup: ${errorText(e)}`;
    }
  });

  // A restore makes a new store from the file (verified: pages, signatures, chain) and moves
  // every tab of the app to it.
  $('restore').addEventListener('change', async () => {
    const file = $('restore').files[0];
    if (file === undefined) return;
    try {
      $('backups').textContent = `restoring ${file.name}…`;
      const next = `pqdb-notes-${Date.now().toString(36)}`;
      const bytes = new Uint8Array(await file.arrayBuffer());
      const result = await restoreStore(bytes, { worker: WORKER, location: next, context: { kek } });
      await result.store.close();
      await idb('readwrite', (s) => s.put(next, 'location'));
      sessionStorage.setItem('pqdb-notes-restored', `restored ${result.restored} notes from ${file.name}`);
      app.postMessage({ location: next });
      await store.close();
      window.location.reload();
    } catch (e) {
      $('backups').textContent = `not restored: ${errorText(e)}`;
    } finally {
      $('restore').value = '';
    }
  });
  app.onmessage = async (e) => {
    if (typeof e.data?.location !== 'string') return;
    await store.close();
    window.location.reload();
  };
  const restored = sessionStorage.getItem('pqdb-notes-restored');
  if (restored !== null) {
    sessionStorage.removeItem('pqdb-notes-restored');
    $('backups').textContent = restored;
  }

  $('sample').addEventListener('click', async () => {
    const n = Number($('sample-count').value);
    if (!Number.isInteger(n) || n < 1) return;
    busy = true;
    $('sample').disabled = true;
    try {
      await addSamples(store, notes, n, (done) =>
        status(`adding sample notes: ${done.toLocaleString('en')} of ${n.toLocaleString('en')}`),
      );
    } catch (e) {
      status(`sample notes stopped: ${errorText(e)}`);
    } finally {
      busy = false;
      $('sample').disabled = false;
      await recount();
    }
  });

  // Ask the browser to keep the origin's storage (a page's call: workers have no persist()).
  requestPersistence().catch(() => undefined);
  addEventListener('pagehide', () => void store.close());
  ready();
}

start().catch((e) => status(`error: ${errorText(e)}`));
