// The cold-open process of the scale benchmark (bench/scale.mjs): opens one engine's store that the
// parent wrote, reads one record, and reports the time from its start, the open alone and its RSS.
//
//   node open.mjs '{ "engine": "pqdb" | "sqlite" | "level", "dir": …, "id": …, "unlock"?: base64, "key"?: base64 }'

const startAt = performance.now();
const h = JSON.parse(process.argv[2]);
let openMs;
let value;
if (h.engine === 'pqdb') {
  const { openStore } = await import('../../dist/node.js');
  const t = performance.now();
  const store = await openStore({
    location: h.dir,
    unlock: new Uint8Array(Buffer.from(h.unlock, 'base64')),
    readOnly: true,
  });
  openMs = performance.now() - t;
  value = await store.collection('synsets', { schema: JSON.parse(h.schema) }).get(h.id);
} else if (h.engine === 'sqlite') {
  const { default: Database } = await import('better-sqlite3');
  const t = performance.now();
  const db = new Database(`${h.dir}/db.sqlite`, { readonly: true });
  const get = db.prepare('SELECT value FROM synsets WHERE id = ?');
  openMs = performance.now() - t;
  value = get.get(h.id)?.value?.length;
} else {
  const { ClassicLevel } = await import('classic-level');
  const t = performance.now();
  const db = new ClassicLevel(h.dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
  await db.open();
  openMs = performance.now() - t;
  value = (await db.get(h.id))?.length;
}
const totalMs = performance.now() - startAt;
process.stdout.write(
  JSON.stringify({ openMs, totalMs, rssBytes: process.memoryUsage().rss, found: value !== undefined }),
);
process.exit(0);
