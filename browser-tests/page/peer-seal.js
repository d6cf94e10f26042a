// What an app adds to a peer of the browser bench (bench/browser.mjs) to get its records encrypted
// at rest: with `encrypted`, each value is sealed with WebCrypto AES-256-GCM under a key made for
// the run (a random 96-bit IV stored before the ciphertext) before it is written, and opened after
// it is read; without, the value's JSON as bytes.
const enc = new TextEncoder();
const dec = new TextDecoder();

/** `seal(value) → bytes` and `open(bytes | undefined) → value | undefined`. */
export async function valueSealer(encrypted) {
  const key = encrypted
    ? await crypto.subtle.generateKey({ name: 'AES-GCM', length: 256 }, false, ['encrypt', 'decrypt'])
    : undefined;
  return {
    async seal(value) {
      const bytes = enc.encode(JSON.stringify(value));
      if (key === undefined) return bytes;
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const ct = new Uint8Array(await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, key, bytes));
      const out = new Uint8Array(12 + ct.length);
      out.set(iv);
      out.set(ct, 12);
      return out;
    },
    async open(bytes) {
      if (bytes === undefined || bytes === null) return undefined;
      const plain =
        key === undefined
          ? bytes
          : new Uint8Array(
              await crypto.subtle.decrypt({ name: 'AES-GCM', iv: bytes.subarray(0, 12) }, key, bytes.subarray(12)),
            );
      return JSON.parse(dec.decode(plain));
    },
  };
}

/** Answers the page's `{ id, op, arg }` messages with `ops[op](arg)`: `{ id, value }` or `{ id, error }`. */
export function serveOps(ops) {
  onmessage = async (e) => {
    const { id, op, arg } = e.data;
    try {
      postMessage({ id, value: await ops[op](arg) });
    } catch (err) {
      postMessage({ id, error: String(err?.stack ?? err) });
    }
  };
}
