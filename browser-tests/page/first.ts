// The bench's first read after a page load (bench/browser.mjs): a page that does what an app's first
// screen does, open its store in a dedicated worker and read one record, with the store's name, key
// and the record's id in the URL's fragment (a bench page only). `globalThis.firstRead` holds the
// times, since the navigation began, once the record is there.
import { openStore } from '../../src/client';

const scriptStart = performance.now();
const q = new URLSearchParams(location.hash.slice(1));
const hex = (s: string) => Uint8Array.from(s.match(/../g)!, (h) => parseInt(h, 16));
const store = await openStore({
  worker: '/page/bench-worker.js',
  storage: q.get('storage') as 'opfs' | 'indexeddb',
  location: q.get('name')!,
  unlock: hex(q.get('key')!),
});
const opened = performance.now();
const value = await store
  .collection('synsets', { schema: { lemma: 'string', pos: 'string', gloss: 'string', offset: 'integer' } })
  .get(q.get('id')!);
const ms = performance.now();
(globalThis as unknown as { firstRead: unknown }).firstRead = {
  ms,
  scriptStart,
  openMs: opened - scriptStart,
  getMs: ms - opened,
  found: value !== undefined,
};
await store.close();
