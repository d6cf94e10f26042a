// Writes the key files of a new store into DIR (default ./keys): recipient.pub, recipient.key,
// signer.pub, signer.key, raw bytes, the secret ones with mode 0600 in a 0700 directory. Keep DIR
// away from the store's directory and its backups.
// Usage: node keygen.mjs [DIR]
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { generateRecipient, generateSigner } from 'pqdb';

const dir = process.argv[2] ?? './keys';
mkdirSync(dir, { recursive: true, mode: 0o700 });
const recipient = generateRecipient();
const signer = generateSigner();
// flag 'wx': never overwrite a key that may already protect a store.
writeFileSync(join(dir, 'recipient.pub'), recipient.publicKey, { flag: 'wx' });
writeFileSync(join(dir, 'recipient.key'), recipient.secretKey, { flag: 'wx', mode: 0o600 });
writeFileSync(join(dir, 'signer.pub'), signer.publicKey, { flag: 'wx' });
writeFileSync(join(dir, 'signer.key'), signer.secretKey, { flag: 'wx', mode: 0o600 });
recipient.secretKey.fill(0);
signer.secretKey.fill(0);
console.log(`keys written to ${dir}`);
