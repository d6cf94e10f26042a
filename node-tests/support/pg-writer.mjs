// A writer in its own process on a postgres page store, for the follower tests and the postgres
// benchmark: opens (or creates) store argv[3] at connection string argv[2] and runs the commands its
// parent sends over IPC, answering each with the commit it reached and the time the commit was
// acknowledged (performance.timeOrigin + performance.now(): milliseconds since the epoch, on the
// clock every process of this host shares). Keys come base64 in the environment.
//   fork('pg-writer.mjs', [connectionString, name], { env: { PQDB_TEST_PUB, PQDB_TEST_SEC, PQDB_TEST_SIGNER_SEC?, PQDB_TEST_SIGNER_PUB? } })
// Commands: { op: 'put', id, value } | { op: 'delete', id } | { op: 'batch', puts: [[id, value]…], deletes: [id…] }
// | { op: 'checkpoint' } | { op: 'commits', count, size, prefix } (count commits of size records, one
// answer per commit) | { op: 'close' }.
import { openStore } from '../../dist/node.js';
import { openPostgresPageStore } from '../../dist/postgres.js';

const [connectionString, name] = process.argv.slice(2);
const key = (n) => (process.env[n] ? new Uint8Array(Buffer.from(process.env[n], 'base64')) : undefined);
const signer = key('PQDB_TEST_SIGNER_SEC');
const storage = await openPostgresPageStore({ connectionString, name });
const store = await openStore({
  storage,
  create: true,
  recipients: [key('PQDB_TEST_PUB')],
  unlock: key('PQDB_TEST_SEC'),
  autoCheckpoint: false,
  ...(signer !== undefined ? { signer, signerPublicKey: key('PQDB_TEST_SIGNER_PUB') } : {}),
});
const c = store.collection('c', { schema: { n: 'integer', s: 'string' }, index: { text: ['s'] } });
const clock = () => performance.timeOrigin + performance.now();
const acked = (extra = {}) => process.send({ commit: store.info().commit, acked: clock(), ...extra });

process.on('message', async (m) => {
  try {
    if (m.op === 'put') await c.put(m.id, m.value);
    else if (m.op === 'delete') await c.delete(m.id);
    else if (m.op === 'batch')
      await store.batch((tx) => {
        for (const [id, value] of m.puts ?? []) tx.put(c, id, value);
        for (const id of m.deletes ?? []) tx.delete(c, id);
      });
    else if (m.op === 'checkpoint') await store.checkpoint();
    else if (m.op === 'commits') {
      for (let i = 0; i < m.count; i++) {
        const ids = [];
        await store.batch((tx) => {
          for (let j = 0; j < m.size; j++) {
            const id = `${m.prefix}-${i}-${j}`;
            ids.push(id);
            tx.put(c, id, { n: i * m.size + j, s: `${m.prefix} record ${i} ${j}` });
          }
        });
        acked({ last: ids[ids.length - 1], step: i });
      }
      return void process.send({ done: true, commit: store.info().commit });
    } else if (m.op === 'close') {
      await store.close();
      return void process.send({ closed: true }, () => process.exit(0));
    }
    acked();
  } catch (e) {
    process.send({ error: `${e.code ?? e.name}: ${e.message}` });
  }
});
process.send({ ready: true, commit: store.info().commit });
