// classic-level's two read forms side by side: 100,000 random `await db.get()` against
// `db.getSync()` (classic-level 3: "blocks the event loop but can be significantly faster"), on
// 100,000 150-byte values written in synced batches of 1,000, three rounds. bench/store.mjs and
// bench/scale.mjs read classic-level with getSync().
//
//   node bench/level-forms.mjs
import { ClassicLevel } from 'classic-level';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
const dir = mkdtempSync(join(tmpdir(), 'b2-lvl-'));
const db = new ClassicLevel(dir, { keyEncoding: 'utf8', valueEncoding: 'buffer' });
await db.open();
const N = 100000;
const v = Buffer.alloc(150, 7);
for (let i = 0; i < N; i += 1000) {
  const ops = [];
  for (let j = i; j < i + 1000; j++) ops.push({ type: 'put', key: `k${j}`, value: v });
  await db.batch(ops, { sync: true });
}
const ids = Array.from({ length: N }, (_, i) => `k${(i * 7919) % N}`);
for (let round = 0; round < 3; round++) {
  let t = performance.now();
  for (const id of ids) await db.get(id);
  const a = performance.now() - t;
  t = performance.now();
  for (const id of ids) db.getSync(id);
  const b = performance.now() - t;
  console.log(
    `round ${round}: await get ${((N / a) * 1000).toFixed(0)}/s, getSync ${((N / b) * 1000).toFixed(0)}/s, ${(a / b).toFixed(2)}x`,
  );
}
await db.close();
rmSync(dir, { recursive: true, force: true });
