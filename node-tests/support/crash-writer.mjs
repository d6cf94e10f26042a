// A writer process for the crash tests: opens (or creates) a store in a directory and puts records
// forever, telling its parent after each commit is acknowledged. The parent SIGKILLs it.
//   node crash-writer.mjs <dir> <round> <recipient public hex> <recipient secret hex> <batch size>
import { openStore } from '../../dist/node.js';

const [dir, round, pubHex, secHex, batchArg] = process.argv.slice(2);
const unhex = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
const batch = Number(batchArg);
const store = await openStore({ location: dir, create: true, recipients: [unhex(pubHex)], unlock: unhex(secHex) });
const c = store.collection('crash', { schema: { round: 'integer', i: 'integer', payload: 'string' } });
process.send?.({ ready: true });
for (let i = 0; ; i += batch) {
  if (batch === 1) await c.put(`r${round}-${i}`, { round: Number(round), i, payload: 'x'.repeat(i % 300) });
  else {
    await store.batch((tx) => {
      for (let j = i; j < i + batch; j++)
        tx.put(c, `r${round}-${j}`, { round: Number(round), i: j, payload: 'y'.repeat(j % 200) });
    });
  }
  process.send?.({ acked: i, count: batch });
}
