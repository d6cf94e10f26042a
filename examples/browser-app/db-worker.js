// The notes app's database worker: pqdb's engine runs here, on OPFS where the browser gives this
// worker a sync access handle (IndexedDB elsewhere), and serves the page of this tab and, when this
// tab holds the store's lock, the other tabs' (docs/tabs.md). Nothing of pqdb's cryptography runs
// on the page.
//
// The keys: a recipient key pair (it unlocks the store) and a signer key pair (it signs the
// checkpoints that backups carry and restores trust). They are made here on the first visit and
// kept only wrapped, AES-256-GCM under the page's key-encryption key (a non-extractable CryptoKey
// the page keeps in IndexedDB and sends with each open), in the database pqdb-notes-keys. The page
// never holds a secret key.
import { serveWorkerEngine } from 'pqdb/worker';
import { generateRecipient, generateSigner, PqdbError } from 'pqdb';
import { idb } from './idb.js';

/** The wrapped keyring's associated data: a keyring of another app or format does not unwrap as this one. */
const AAD = new TextEncoder().encode('pqdb-notes keyring v1');

async function wrap(kek, bytes) {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: AAD }, kek, bytes);
  return { iv, sealed: new Uint8Array(sealed) };
}

async function unwrap(kek, { iv, sealed }) {
  try {
    return new Uint8Array(await crypto.subtle.decrypt({ name: 'AES-GCM', iv, additionalData: AAD }, kek, sealed));
  } catch {
    throw new PqdbError(
      'AUTH_FAILED',
      'the keyring does not open under this key (another device key, or a changed keyring)',
    );
  }
}

/** The keyring, made and stored wrapped when there is none and `create` is set. */
async function keyring(kek, create) {
  let saved = await idb('readonly', (s) => s.get('keyring'));
  if (saved === undefined) {
    if (!create) throw new PqdbError('NOT_FOUND', 'no keyring on this device');
    const recipient = generateRecipient();
    const signer = generateSigner();
    const secrets = new Uint8Array(recipient.secretKey.length + signer.secretKey.length);
    secrets.set(recipient.secretKey);
    secrets.set(signer.secretKey, recipient.secretKey.length);
    saved = {
      recipientPublicKey: recipient.publicKey,
      recipientSecretBytes: recipient.secretKey.length,
      signerPublicKey: signer.publicKey,
      wrapped: await wrap(kek, secrets),
    };
    for (const b of [recipient.secretKey, signer.secretKey, secrets]) b.fill(0);
    // A second tab's worker may have made one meanwhile: the first stored is the keyring.
    const added = await idb('readwrite', (s) => s.add(saved, 'keyring')).then(
      () => true,
      (e) => {
        if (e?.name !== 'ConstraintError') throw e; // a full quota, say: not another tab's keyring
        return false;
      },
    );
    if (!added) saved = await idb('readonly', (s) => s.get('keyring'));
    if (saved === undefined) throw new PqdbError('NOT_FOUND', 'the keyring could not be stored');
  }
  const secrets = await unwrap(kek, saved.wrapped);
  return {
    recipientPublicKey: saved.recipientPublicKey,
    signerPublicKey: saved.signerPublicKey,
    unlock: secrets.slice(0, saved.recipientSecretBytes),
    signer: secrets.slice(saved.recipientSecretBytes),
    wipe: () => secrets.fill(0),
  };
}

serveWorkerEngine({
  // Each open and restore from the page: its options completed with the keys unwrapped here.
  options: async (requested, context) => {
    if (!(context?.kek instanceof CryptoKey))
      throw new TypeError('the page sends its key-encryption key as context.kek');
    const keys = await keyring(context.kek, requested.create === true);
    keys.wipe();
    return {
      ...requested,
      recipients: [keys.recipientPublicKey],
      unlock: keys.unlock,
      signer: keys.signer,
      signerPublicKey: keys.signerPublicKey,
      trustedSigner: keys.signerPublicKey, // a restore takes only what this device's signer signed
    };
  },
});
