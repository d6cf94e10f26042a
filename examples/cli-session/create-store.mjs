// Creates a small store for the session: key files in KEYS (raw bytes, secret ones mode 0600) and
// a store in STORE with a few notes under gcmsiv-hkdf256 and one signed checkpoint.
// Usage: node create-store.mjs STORE KEYS
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openStore, generateRecipient, generateSigner } from 'pqdb';

const [location, keys] = process.argv.slice(2);
mkdirSync(keys, { recursive: true, mode: 0o700 });
const recipient = generateRecipient();
const signer = generateSigner();
writeFileSync(join(keys, 'recipient.key'), recipient.secretKey, { flag: 'wx', mode: 0o600 });
writeFileSync(join(keys, 'signer.key'), signer.secretKey, { flag: 'wx', mode: 0o600 });
writeFileSync(join(keys, 'signer.pub'), signer.publicKey, { flag: 'wx' });

const store = await openStore({
  location,
  create: true,
  recipients: [recipient.publicKey],
  unlock: recipient.secretKey,
  signer: signer.secretKey,
  signerPublicKey: signer.publicKey,
  suite: 'gcmsiv-hkdf256',
});
const notes = store.collection('notes', { schema: { title: 'string', body: 'string' } });
await store.batch((tx) => {
  for (let i = 1; i <= 20; i++) tx.put(notes, `note-${i}`, { title: `note ${i}`, body: 'x'.repeat(i) });
});
await store.checkpoint();
await store.close();
console.log(`created ${location}: 20 notes, 1 checkpoint; keys in ${keys}`);
