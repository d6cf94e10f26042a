// A replica in its own process, for the kill-and-resume tests: follows the primary named on the
// command line into directory argv[2] and prints one JSON line per applied commit with its status
// and the number of records it reads; the test SIGKILLs it and starts it again on the same
// directory. Keys come base64 in the environment.
import { openReplica } from '../../dist/node.js';

const [location, host, port] = process.argv.slice(2);
const key = (name) => new Uint8Array(Buffer.from(process.env[name], 'base64'));
const started = performance.now();
const replica = await openReplica({
  location,
  unlock: key('PQDB_TEST_UNLOCK'),
  identity: { publicKey: key('PQDB_TEST_ID_PUB'), secretKey: key('PQDB_TEST_ID_SEC') },
  primary: { host, port: Number(port), publicKey: key('PQDB_TEST_PRIMARY_PUB') },
  backoffMs: [20, 50, 100],
});
const schema = { lemma: 'string', n: 'integer' };
const words = replica.collection('words', { schema });
let seen = replica.status().appliedWatermark;
process.stdout.write(JSON.stringify({ event: 'open', ms: performance.now() - started, ...replica.status() }) + '\n');
for (;;) {
  await replica.applied(seen + 1);
  const s = replica.status();
  seen = s.appliedWatermark;
  const records = words.size;
  process.stdout.write(JSON.stringify({ event: 'applied', ms: performance.now() - started, records, ...s }) + '\n');
}
