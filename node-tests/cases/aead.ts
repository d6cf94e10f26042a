// AEAD cases shared by Node and the browser: Wycheproof AES-GCM / AES-GCM-SIV (every AES-256 case;
// AES-128/192 counted as unsupported after checking they are refused with RangeError), differential
// tests against oracles on seeded random inputs (one-shot, keyed and batch forms), and tampering.

import type { Summary } from './_util';
import { summary, record, hex, unhex, Rng, equalBytes } from './_util';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export type AeadName = 'gcm' | 'gcmsiv';

/** The slice of pqdb/crypto these cases use. */
export interface AeadApi {
  gcm: AeadFactoryLike;
  gcmsiv: AeadFactoryLike;
}
interface CipherLike {
  encrypt(p: Uint8Array): Uint8Array;
  decrypt(c: Uint8Array): Uint8Array;
}
interface KeyedLike {
  encrypt(n: Uint8Array, p: Uint8Array, a?: Uint8Array): Uint8Array;
  decrypt(n: Uint8Array, c: Uint8Array, a?: Uint8Array): Uint8Array;
  encryptBatch(r: { nonce: Uint8Array; data: Uint8Array; aad?: Uint8Array }[]): Uint8Array[];
  decryptBatch(r: { nonce: Uint8Array; data: Uint8Array; aad?: Uint8Array }[]): Uint8Array[];
  encryptInto(r: { nonce: Uint8Array; data: Uint8Array; aad?: Uint8Array; out: Uint8Array }[]): void;
  destroy(): void;
}
interface AeadFactoryLike {
  (key: Uint8Array, nonce: Uint8Array, aad?: Uint8Array): CipherLike;
  withKey(key: Uint8Array): KeyedLike;
}

/** An independent implementation: returns ciphertext ‖ tag. */
export interface AeadOracle {
  name: string;
  seal(mode: AeadName, key: Uint8Array, nonce: Uint8Array, aad: Uint8Array, pt: Uint8Array): Uint8Array;
}

const isAuthFailure = (e: unknown) => (e as { code?: string })?.code === 'AUTH_FAILED';

function attempt<T>(fn: () => T): { value?: T; error?: unknown } {
  try {
    return { value: fn() };
  } catch (error) {
    return { error };
  }
}

/** Every case of a Wycheproof AEAD file. */
export function aeadWycheproof(json: Json, api: AeadApi, mode: AeadName, file: string): Summary {
  const s = summary(`Wycheproof ${file}`);
  let unsupported = 0;
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const key = unhex(t.key);
      const iv = unhex(t.iv);
      const aad = unhex(t.aad);
      const msg = unhex(t.msg);
      const sealed = unhex(t.ct + t.tag);
      const id = `tcId ${t.tcId} (${t.result}, key ${g.keySize}, iv ${g.ivSize})`;
      if (g.keySize !== 256) {
        // AES-128/192 are not offered: refusing the key with RangeError is the required behaviour.
        const r = attempt(() => api[mode](key, iv.length ? iv : new Uint8Array(12), aad));
        if (r.error instanceof RangeError) unsupported++;
        else record(s, id, false, 'a non-256-bit key was accepted');
        continue;
      }
      const made = attempt(() => api[mode](key, iv, aad));
      if (made.error !== undefined) {
        // Only nonces the specification forbids (an empty GCM IV) may be refused.
        record(s, id, t.result === 'invalid' && made.error instanceof RangeError, String(made.error));
        continue;
      }
      const c = made.value!;
      const enc = attempt(() => c.encrypt(msg));
      const dec = attempt(() => c.decrypt(sealed));
      if (t.result === 'valid') {
        record(
          s,
          id,
          enc.value !== undefined &&
            equalBytes(enc.value, sealed) &&
            dec.value !== undefined &&
            equalBytes(dec.value, msg),
        );
      } else {
        record(s, id, dec.value === undefined && isAuthFailure(dec.error), String(dec.error ?? 'decrypted'));
      }
    }
  }
  s.skipped = unsupported;
  if (unsupported) s.note = `${unsupported} AES-128/192 cases unsupported (refused with RangeError)`;
  return s;
}

/** Plaintext lengths 0..4096 around every 16-byte boundary (±1), plus random ones. */
export function aeadLengths(rng: Rng, max = 4096, stride = 16): number[] {
  const set = new Set<number>();
  for (let b = 0; b <= max; b += stride) for (const d of [-1, 0, 1]) if (b + d >= 0 && b + d <= max) set.add(b + d);
  for (let i = 0; i < 16; i++) set.add(rng.int(max + 1));
  return [...set].sort((a, b) => a - b);
}

/** Differential: one-shot, keyed and batch forms against the oracle, both directions. */
export function aeadDifferential(api: AeadApi, oracle: AeadOracle, mode: AeadName, seed: number, max = 4096): Summary {
  const s = summary(`${mode} vs ${oracle.name} (seed ${seed})`);
  const rng = new Rng(seed);
  const key = rng.bytes(32);
  const keyed = api[mode].withKey(key);
  const batch: { nonce: Uint8Array; data: Uint8Array; aad: Uint8Array; want: Uint8Array }[] = [];
  for (const len of aeadLengths(rng, max)) {
    const k = rng.int(4) === 0 ? rng.bytes(32) : key;
    const nonce = rng.bytes(12);
    const aad = rng.bytes(rng.int(301));
    const pt = rng.bytes(len);
    const want = oracle.seal(mode, k, nonce, aad, pt);
    const got = api[mode](k, nonce, aad).encrypt(pt);
    record(s, `one-shot encrypt len=${len} aad=${aad.length}`, hex(got) === hex(want));
    const back = attempt(() => api[mode](k, nonce, aad).decrypt(want));
    record(s, `one-shot decrypt len=${len}`, back.value !== undefined && equalBytes(back.value, pt));
    if (k === key) {
      record(s, `keyed encrypt len=${len}`, hex(keyed.encrypt(nonce, pt, aad)) === hex(want));
      const kb = attempt(() => keyed.decrypt(nonce, want, aad));
      record(s, `keyed decrypt len=${len}`, kb.value !== undefined && equalBytes(kb.value, pt));
      batch.push({ nonce, data: pt, aad, want });
    }
  }
  // encryptInto: the same bytes, each into its own slot of one buffer (a commit page's shape).
  const slots = new Uint8Array(batch.reduce((n, r) => n + r.want.length, 0));
  let at = 0;
  const into = batch.map(({ nonce, data, aad, want }) => {
    const out = slots.subarray(at, at + want.length);
    at += want.length;
    return { nonce, data, aad, out };
  });
  keyed.encryptInto(into);
  record(
    s,
    `encryptInto of ${batch.length}`,
    into.every((r, i) => equalBytes(r.out, batch[i].want)),
  );
  const sealed = keyed.encryptBatch(batch.map(({ nonce, data, aad }) => ({ nonce, data, aad })));
  record(
    s,
    `encryptBatch of ${batch.length}`,
    sealed.every((c, i) => equalBytes(c, batch[i].want)),
  );
  const opened = attempt(() => keyed.decryptBatch(batch.map(({ nonce, want, aad }) => ({ nonce, data: want, aad }))));
  record(
    s,
    `decryptBatch of ${batch.length}`,
    opened.value !== undefined && opened.value.every((p, i) => equalBytes(p, batch[i].data)),
  );
  // One corrupted record fails the whole batch with AUTH_FAILED and returns nothing.
  const corrupt = batch.map(({ nonce, want, aad }, i) => ({ nonce, data: i === 3 ? flipBit(want, 5) : want, aad }));
  const failed = attempt(() => keyed.decryptBatch(corrupt));
  record(
    s,
    'decryptBatch with one corrupted record',
    failed.value === undefined && isAuthFailure(failed.error) && String(failed.error).includes('records[3]'),
  );
  keyed.destroy();
  return s;
}

export function flipBit(b: Uint8Array, bit: number): Uint8Array {
  const c = b.slice();
  c[bit >> 3] ^= 1 << (bit & 7);
  return c;
}

/** Flipping any single bit of tag, ciphertext, nonce or AAD fails with AUTH_FAILED. */
export function aeadTampering(api: AeadApi, mode: AeadName, seed: number): Summary {
  const s = summary(`${mode} tampering (seed ${seed})`);
  const rng = new Rng(seed);
  for (const len of [0, 1, 15, 16, 17, 40]) {
    const key = rng.bytes(32);
    const nonce = rng.bytes(12);
    const aad = rng.bytes(20);
    const pt = rng.bytes(len);
    const ct = api[mode](key, nonce, aad).encrypt(pt);
    const rejects = (n: Uint8Array, c: Uint8Array, a: Uint8Array) => {
      const r = attempt(() => api[mode](key, n, a).decrypt(c));
      return r.value === undefined && isAuthFailure(r.error);
    };
    let ok = true;
    for (let bit = 0; bit < ct.length * 8; bit++) ok &&= rejects(nonce, flipBit(ct, bit), aad);
    record(s, `len=${len}: every ciphertext and tag bit`, ok);
    ok = true;
    for (let bit = 0; bit < 96; bit++) ok &&= rejects(flipBit(nonce, bit), ct, aad);
    record(s, `len=${len}: every nonce bit`, ok);
    ok = true;
    for (let bit = 0; bit < aad.length * 8; bit++) ok &&= rejects(nonce, ct, flipBit(aad, bit));
    record(s, `len=${len}: every AAD bit`, ok);
    record(
      s,
      `len=${len}: truncated`,
      rejects(nonce, ct.subarray(0, ct.length - 1), aad) && rejects(nonce, ct.subarray(0, 15), aad),
    );
    record(s, `len=${len}: extended`, rejects(nonce, new Uint8Array([...ct, 0]), aad));
  }
  return s;
}
