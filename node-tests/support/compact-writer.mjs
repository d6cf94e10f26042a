// A writer process for the compaction crash test: updates the same 200 records over and over
// (each round a commit, which leaves the previous round's page dead) and compacts after every
// round, telling its parent which round was acknowledged. The parent SIGKILLs it.
//   node compact-writer.mjs <dir> <first round> <recipient public hex> <recipient secret hex>
import { openStore } from '../../dist/node.js';

const [dir, firstArg, pubHex, secHex] = process.argv.slice(2);
const unhex = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
const store = await openStore({
  location: dir,
  create: true,
  recipients: [unhex(pubHex)],
  unlock: unhex(secHex),
  autoCompact: false,
});
const c = store.collection('k', { schema: { round: 'integer', payload: 'string' } });
process.send?.({ ready: true });
for (let round = Number(firstArg); ; round++) {
  await store.batch((tx) => {
    for (let j = 0; j < 200; j++) tx.put(c, `k${j}`, { round, payload: 'z'.repeat((j * 7 + round) % 150) });
  });
  process.send?.({ acked: round });
  await store.compact({ minDeadFraction: 0.3 });
  process.send?.({ compacted: round });
}
