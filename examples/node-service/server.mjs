// A small JSON service over a pqdb file store (node:http, no framework):
//   PUT    /notes/:id      body { "title": string, "body": string }  → 204
//   GET    /notes/:id      → 200 { "title", "body" } or 404
//   DELETE /notes/:id      → 204 or 404
//   GET    /notes?q=words  → 200 [{ "id", "title", "body" }] (all words, the last one as a prefix)
//   POST   /checkpoint     → 200 { "size", "hash" }: signs the log now
// The keys are read from files (see keygen.mjs); the store lives in its own directory.
// Usage: node server.mjs --store DIR --keys DIR [--port N]   (port 0 picks a free one)
// It prints `listening on http://127.0.0.1:PORT` and closes the store on SIGINT or SIGTERM.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openStore, PqdbError } from 'pqdb';

const { values } = parseArgs({
  options: { store: { type: 'string' }, keys: { type: 'string' }, port: { type: 'string', default: '8080' } },
});
if (values.store === undefined || values.keys === undefined) {
  console.error('usage: node server.mjs --store DIR --keys DIR [--port N]');
  process.exit(2);
}

const key = (name) => new Uint8Array(readFileSync(join(values.keys, name)));
const unlock = key('recipient.key');
let store;
try {
  store = await openStore({
    location: values.store,
    create: true,
    recipients: [key('recipient.pub')],
    unlock,
    signer: key('signer.key'),
    signerPublicKey: key('signer.pub'),
  });
} catch (e) {
  // LOCKED: another process serves this store; AUTH_FAILED: these keys do not open it.
  console.error(`cannot open ${values.store}: ${e instanceof PqdbError ? `[${e.code}] ` : ''}${e.message}`);
  process.exit(1);
} finally {
  unlock.fill(0);
}
const notes = store.collection('notes', {
  schema: { title: 'string', body: 'string' },
  index: { text: ['title', 'body'] },
});

const MAX_BODY_BYTES = 64 * 1024;

async function readJson(req) {
  let size = 0;
  const parts = [];
  for await (const part of req) {
    size += part.length;
    if (size > MAX_BODY_BYTES) throw Object.assign(new Error('body too large'), { status: 413 });
    parts.push(part);
  }
  try {
    return JSON.parse(Buffer.concat(parts).toString('utf8'));
  } catch {
    throw Object.assign(new Error('body is not JSON'), { status: 400 });
  }
}

function send(res, status, body) {
  if (body === undefined) return res.writeHead(status).end();
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://localhost');
  const match = /^\/notes\/([^/]+)$/.exec(url.pathname);
  const id = match && decodeURIComponent(match[1]);
  if (id !== null && req.method === 'PUT') {
    const { title, body } = await readJson(req);
    await notes.put(id, { title, body }); // a value that does not fit the schema: SCHEMA_MISMATCH
    return send(res, 204);
  }
  if (id !== null && req.method === 'GET') {
    const value = await notes.get(id);
    return value === undefined ? send(res, 404, { error: 'not found' }) : send(res, 200, value);
  }
  if (id !== null && req.method === 'DELETE') return send(res, (await notes.delete(id)) ? 204 : 404);
  if (url.pathname === '/notes' && req.method === 'GET') {
    const hits = await notes.search(url.searchParams.get('q') ?? '', { prefix: true, limit: 20 });
    return send(
      res,
      200,
      hits.map(({ id, value }) => ({ id, ...value })),
    );
  }
  if (url.pathname === '/checkpoint' && req.method === 'POST') {
    const { size } = await store.checkpoint();
    return send(res, 200, { size, hash: store.info().checkpoint.hash });
  }
  send(res, 404, { error: 'no such route' });
}

const server = createServer((req, res) => {
  handle(req, res).catch((e) => {
    // Bad input is the client's fault (400); pqdb's own failures are reported by code, never a stack.
    const status =
      e.status ??
      (e instanceof PqdbError && e.code === 'SCHEMA_MISMATCH'
        ? 400
        : e instanceof TypeError || e instanceof RangeError
          ? 400
          : 500);
    send(res, status, { error: e instanceof PqdbError ? e.code : e.message });
  });
});
server.listen(Number(values.port), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${server.address().port}`);
});

async function stop() {
  server.close();
  await store.close(); // waits for pending commits, wipes the keys
  process.exit(0);
}
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
