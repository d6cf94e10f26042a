// What the Chromium spec and the Firefox run ask of the worker page (browser-tests/page/worker.ts):
// one run's options, with keys made here in Node (none is generated on the page's thread), and the
// checks of its result.
import { generateRecipient, generateSigner, verifySealed } from '../dist/node.js';

const recipient = generateRecipient();
const signer = generateSigner();
const keys = (k) => ({ publicKey: Array.from(k.publicKey), secretKey: Array.from(k.secretKey) });

/** The options of `pqdbWorker.run` (or `failure`) for a fresh store on `storage`. */
export function workerRun(storage, records = 3000) {
  return {
    name: `worker-${storage}-${Date.now()}-${Math.random().toString(36).slice(2, 6)}`,
    storage,
    records,
    recipient: keys(recipient),
    signer: keys(signer),
    migrate: true,
    singlePuts: 20,
  };
}

/** True when the sealed export a run returned verifies under the run's signer, for `id`. */
export function sealedVerifies(bytes, id) {
  return verifySealed(new Uint8Array(bytes), signer.publicKey).id === id;
}
