// deleteStore: a file store's directory goes only when it holds a pqdb store and nothing else, and
// only while no writer holds it; an IndexedDB database (fake-indexeddb here, Chromium in
// browser-tests/delete.spec.mjs) only when it has a pqdb page store's layout and no store holds its
// lock; the universal entry has nothing to delete.
import 'fake-indexeddb/auto';
import { describe, it, expect, afterAll } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { fork } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDB } from 'idb';
import { openStore, deleteStore, generateRecipient } from '../src/node';
import * as universal from '../src/index';
import * as browser from '../src/browser';
import { deleteIndexedDbStore, openIndexedDbPageStore } from '../src/storage/indexeddb';

const root = mkdtempSync(join(tmpdir(), 'pqdb-delete-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));
let n = 0;
const r = generateRecipient('classical');
const schema = { n: 'integer' } as const;
const open = (location: string, create = false) =>
  openStore({ location, create, recipients: [r.publicKey], unlock: r.secretKey });

async function made(location = join(root, `s${n++}`)): Promise<string> {
  const store = await open(location, true);
  const c = store.collection('c', { schema });
  for (let i = 0; i < 5; i++) await c.put(`k${i}`, { n: i });
  await store.close();
  return location;
}

describe('deleteStore (file store)', () => {
  it('removes the store and its directory; afterwards there is no store there', async () => {
    const location = await made();
    expect(readdirSync(location)).toEqual(expect.arrayContaining(['MANIFEST', 'seg-00000001.pqs']));
    await deleteStore(location);
    expect(existsSync(location)).toBe(false);
    await expect(open(location)).rejects.toMatchObject({ code: 'NOT_FOUND' });
    await expect(deleteStore(location)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: `no pqdb store at ${location}: no such directory; nothing was deleted`,
    });
  });

  it('refuses a directory that holds anything but a pqdb store, and leaves it as it was', async () => {
    const location = await made();
    writeFileSync(join(location, 'notes.txt'), 'mine');
    const before = readdirSync(location).sort();
    await expect(deleteStore(location)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: expect.stringMatching(/holds files a pqdb store does not \(notes\.txt\); nothing was deleted$/),
    });
    expect(readdirSync(location).sort()).toEqual(before);
    expect(before).not.toContain('LOCK'); // the refused deleter released its lock
    const store = await open(location); // still a whole store
    expect(await store.collection('c', { schema }).get('k3')).toEqual({ n: 3 });
    await store.close();

    const empty = join(root, `empty${n++}`);
    mkdirSync(empty);
    await expect(deleteStore(empty)).rejects.toMatchObject({ code: 'NOT_FOUND', message: /no pqdb MANIFEST/ });
    expect(existsSync(empty)).toBe(true);
    const fake = join(root, `fake${n++}`);
    mkdirSync(fake);
    writeFileSync(join(fake, 'MANIFEST'), 'not a pqdb manifest, just a file with that name');
    await expect(deleteStore(fake)).rejects.toMatchObject({ code: 'NOT_FOUND', message: /no pqdb MANIFEST/ });
    expect(readdirSync(fake)).toEqual(['MANIFEST']);
    const file = join(root, `file${n++}`);
    writeFileSync(file, 'x');
    await expect(deleteStore(file)).rejects.toMatchObject({ code: 'NOT_FOUND', message: /not a directory/ });
    await expect(deleteStore('')).rejects.toThrow(TypeError);
  });

  it('refuses LOCKED while a writer holds the store, here or in another process', async () => {
    const location = await made();
    const store = await open(location);
    await expect(deleteStore(location)).rejects.toMatchObject({ code: 'LOCKED' });
    expect(await store.collection('c', { schema }).get('k1')).toEqual({ n: 1 });
    await store.close();

    const child = fork(new URL('./support/crash-writer.mjs', import.meta.url), [
      location,
      '0',
      Buffer.from(r.publicKey).toString('hex'),
      Buffer.from(r.secretKey).toString('hex'),
      '1',
    ]);
    await new Promise<void>((resolve) => child.on('message', (m: { acked?: number }) => m.acked === 2 && resolve()));
    await expect(deleteStore(location)).rejects.toMatchObject({ code: 'LOCKED', message: /this host/ });
    const exited = new Promise((resolve) => child.on('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    await deleteStore(location); // the killed writer's stale LOCK file goes with the store
    expect(existsSync(location)).toBe(false);
  });

  it('the universal entry has no persistent store to delete (TypeError); the platform entries do', async () => {
    await expect(universal.deleteStore('./anything')).rejects.toThrow(TypeError);
    expect(deleteStore).not.toBe(universal.deleteStore);
    expect(browser.deleteStore).not.toBe(universal.deleteStore);
  });
});

describe('deleteStore (IndexedDB, fake-indexeddb)', () => {
  const names = async () => (await indexedDB.databases()).map((d) => d.name);

  it('deletes a pqdb database, refuses LOCKED while a store holds it and NOT_FOUND for others', async () => {
    const name = `pqdb-delete-${n++}`;
    const pages = await openIndexedDbPageStore(name);
    await pages.commit({ pages: [{ id: 1, bytes: new Uint8Array([7]) }], manifest: new Uint8Array([1]) });
    await expect(deleteIndexedDbStore(name)).rejects.toMatchObject({
      code: 'LOCKED',
      message: `indexeddb page store "${name}" is held by another writer: another store in this process has it open`,
    });
    await expect(openIndexedDbPageStore(name)).rejects.toMatchObject({ code: 'LOCKED' });
    await pages.close();
    expect(await names()).toContain(name);
    await browser.deleteStore(name);
    expect(await names()).not.toContain(name);
    await expect(browser.deleteStore(name)).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: `no pqdb store in IndexedDB database "${name}": no such database; nothing was deleted`,
    });
    expect(await names()).not.toContain(name); // looking did not create it

    const other = `not-pqdb-${n++}`;
    const db = await openDB(other, 1, { upgrade: (d) => void d.createObjectStore('things') });
    db.close();
    await expect(browser.deleteStore(other)).rejects.toMatchObject({ code: 'NOT_FOUND', message: /object stores/ });
    expect(await names()).toContain(other);
  });
});
