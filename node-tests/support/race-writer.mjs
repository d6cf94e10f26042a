// A writer process for the two-writer race of writers.test.ts, run in a network namespace of its
// own (`unshare -n`), out of reach of the host lock of the other writer's namespace, as a container
// sharing the volume would be. On {op: 'open', dir} it opens the store; on {op: 'go', n, tag} it
// puts n records one commit each, as fast as it can, stops at the first error and reports what was
// acknowledged; {op: 'exit'} ends it.
//   node race-writer.mjs <recipient public hex> <recipient secret hex>
import { readlinkSync } from 'node:fs';
import { openStore } from '../../dist/node.js';

const [pubHex, secHex] = process.argv.slice(2);
const unhex = (h) => Uint8Array.from(h.match(/../g), (x) => parseInt(x, 16));
let store;
let c;
process.on('message', async (m) => {
  try {
    if (m.op === 'open') {
      store = await openStore({ location: m.dir, recipients: [unhex(pubHex)], unlock: unhex(secHex) });
      c = store.collection('race', { schema: { w: 'string', i: 'integer' } });
      process.send({ opened: true });
    } else if (m.op === 'go') {
      const acked = [];
      let error;
      let message;
      for (let i = 0; i < m.n; i++) {
        try {
          await c.put(`${m.tag}-${i}`, { w: m.tag, i });
          acked.push(i);
        } catch (e) {
          error = e?.code ?? String(e);
          message = String(e?.message ?? e);
          break;
        }
      }
      await store.close().catch(() => undefined);
      process.send({ acked, error, message });
    } else if (m.op === 'exit') process.exit(0);
  } catch (e) {
    process.send({ fatal: e?.code ?? 'ERROR', message: String(e?.message ?? e) });
  }
});
process.send({ ready: true, netns: readlinkSync('/proc/self/ns/net') });
