// A migrating process for the migration tests: opens a store, starts (or resumes) a migration and
// reports every step to its parent, which SIGKILLs it part-way.
//   node migrator.mjs <dir> <recipient secret hex> <target suite> <chunk records>
import { openStore } from '../../dist/node.js';

const [dir, secHex, to, chunk] = process.argv.slice(2);
const unhex = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
const store = await openStore({ location: dir, unlock: unhex(secHex), autoCheckpoint: false });
store.collection('words', {
  schema: { lemma: 'string', gloss: 'string', n: 'integer' },
  index: { text: ['lemma', 'gloss'] },
});
const result = await store.migrate({
  to,
  chunkRecords: Number(chunk),
  onProgress: (p) => process.send?.({ progress: p }),
});
process.send?.({ done: result });
await store.close();
