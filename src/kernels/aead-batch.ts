// The batched AEAD forms (KeyedAead.encryptBatch / decryptBatch / encryptInto): many records packed
// into as few kernel calls as fit, the expanded key placed in the kernel once per call.

import { bytes } from '../_args';
import { PqdbError } from '../errors';
import { aeadKernel, type AeadKernel } from '../wasm/aead';
import {
  MODE_ID,
  NONCE_BYTES,
  TAG_BYTES,
  authFailed,
  checkAad,
  checkNonce,
  checkSeal,
  openWith,
  sealWith,
  withRk,
  type AeadMode,
  type AeadRecord,
} from './_aead-core';

/** A record as the batched kernel calls take it (checked). */
type Packed = { nonce: Uint8Array; data: Uint8Array; aad: Uint8Array };

/**
 * The end j of the group records[i, j) one batched call carries: 12-byte nonces (a record with
 * another goes on its own: j = i), the input and the outputs (plaintexts when `open`) within the
 * kernel's buffers.
 */
function groupEnd(k: AeadKernel, records: readonly Packed[], i: number, open: boolean): number {
  let j = i;
  let inUsed = 0;
  let outUsed = 0;
  while (j < records.length) {
    const r = records[j];
    const outLen = open ? r.data.length - TAG_BYTES : r.data.length + TAG_BYTES;
    const inLen = 8 + NONCE_BYTES + r.aad.length + r.data.length;
    if (r.nonce.length !== NONCE_BYTES) break;
    if (8 * (j - i + 1) + inUsed + inLen > k.IN_BYTES || outUsed + outLen > k.OUT_BYTES) break;
    inUsed += inLen - 8;
    outUsed += outLen;
    j++;
  }
  return j;
}

/** IN = (u32 aadLen, u32 dataLen) × n ‖ (nonce ‖ aad ‖ data) × n for records[i, j), n = j − i. */
function packGroup(k: AeadKernel, records: readonly Packed[], i: number, j: number): void {
  const n = j - i;
  let p = k.IN + 8 * n;
  for (let t = 0; t < n; t++) {
    const r = records[i + t];
    k.dv.setUint32(k.IN + 8 * t, r.aad.length, true);
    k.dv.setUint32(k.IN + 8 * t + 4, r.data.length, true);
    k.mem.set(r.nonce, p);
    k.mem.set(r.aad, p + NONCE_BYTES);
    k.mem.set(r.data, p + NONCE_BYTES + r.aad.length);
    p += NONCE_BYTES + r.aad.length + r.data.length;
  }
}

/**
 * Seals or opens many records in as few kernel calls as fit: IN = u32 (aadLen, dataLen) per record,
 * then nonce ‖ aad ‖ data of each. Records too large for a batch go through the one-record path.
 */
export function batch(mode: AeadMode, rk: Uint8Array, records: readonly AeadRecord[], open: boolean): Uint8Array[] {
  if (!Array.isArray(records)) throw new TypeError('"records" expected an array of { nonce, data, aad? }');
  const checked = records.map((r, i) => {
    if (typeof r !== 'object' || r === null) throw new TypeError(`"records[${i}]" expected { nonce, data, aad? }`);
    const nonce = checkNonce(mode, r.nonce, `records[${i}].nonce`);
    const data = bytes(`records[${i}].data`, r.data);
    const aad = checkAad(mode, r.aad);
    if (open && data.length < TAG_BYTES) throw authFailed();
    return { nonce, data, aad };
  });
  const k = aeadKernel();
  const results: Uint8Array[] = new Array(checked.length);
  // All outputs of the call share one allocation (one per record would cost more than the sealing).
  const outLens = checked.map((r) => (open ? r.data.length - TAG_BYTES : r.data.length + TAG_BYTES));
  const all = new Uint8Array(outLens.reduce((a, b) => a + b, 0));
  const offsets: number[] = [];
  outLens.reduce((at, len) => (offsets.push(at), at + len), 0);
  return withRk(k, rk, () => {
    try {
      batchGroups();
    } catch (e) {
      all.fill(0); // no plaintext of a failed batch outlives the call
      throw e;
    }
    return results;
  });

  function batchGroups(): void {
    for (let i = 0; i < checked.length;) {
      const j = groupEnd(k, checked, i, open);
      if (j === i) {
        const r = checked[i];
        const dst = all.subarray(offsets[i], offsets[i] + outLens[i]);
        results[i] = open
          ? openWith(mode, rk, r.nonce, r.data, r.aad, dst)
          : sealWith(mode, rk, r.nonce, r.data, r.aad, dst);
        k.mem.set(rk, k.AES_RK); // the one-record path cleared it
        i++;
        continue;
      }
      const n = j - i;
      packGroup(k, checked, i, j);
      if (open) {
        const bad = k.x.aead_open_batch(MODE_ID[mode], n);
        if (bad !== 0) throw new PqdbError('AUTH_FAILED', `authentication failed for records[${i + bad - 1}]`);
      } else {
        k.x.aead_seal_batch(MODE_ID[mode], n);
      }
      const groupBytes = offsets[j - 1] + outLens[j - 1] - offsets[i];
      all.set(k.mem.subarray(k.OUT, k.OUT + groupBytes), offsets[i]);
      k.mem.fill(0, k.OUT, k.OUT + groupBytes);
      for (let t = i; t < j; t++) results[t] = all.subarray(offsets[t], offsets[t] + outLens[t]);
      i = j;
    }
  }
}

/** One record for encryptInto: its ciphertext ‖ tag goes into `out` (exactly data.length + 16 bytes). */
export interface AeadIntoRecord extends AeadRecord {
  out: Uint8Array;
}

/**
 * Seals `records` under the expanded key `rk`, each into its own `out`, in as few kernel calls as
 * fit (aead_seal_batch): the key goes into the kernel once for all of them. A record the batch
 * cannot carry (a nonce other than 12 bytes, or too large) is sealed on its own.
 */
export function sealInto(mode: AeadMode, rk: Uint8Array, records: readonly AeadIntoRecord[]): void {
  if (!Array.isArray(records)) throw new TypeError('"records" expected an array of { nonce, data, aad?, out }');
  const checked = records.map((r, i) => {
    if (typeof r !== 'object' || r === null) throw new TypeError(`"records[${i}]" expected { nonce, data, aad?, out }`);
    const data = bytes(`records[${i}].data`, r.data);
    checkSeal(mode, data, r.out);
    return { nonce: checkNonce(mode, r.nonce, `records[${i}].nonce`), data, aad: checkAad(mode, r.aad), out: r.out };
  });
  const k = aeadKernel();
  for (let i = 0; i < checked.length;) {
    const j = groupEnd(k, checked, i, false);
    if (j === i) {
      const r = checked[i];
      sealWith(mode, rk, r.nonce, r.data, r.aad, r.out);
      i++;
      continue;
    }
    packGroup(k, checked, i, j);
    withRk(k, rk, () => k.x.aead_seal_batch(MODE_ID[mode], j - i));
    let q = k.OUT;
    for (let t = i; t < j; t++) {
      const len = checked[t].data.length + TAG_BYTES;
      checked[t].out.set(k.mem.subarray(q, q + len));
      q += len;
    }
    k.mem.fill(0, k.OUT, q);
    i = j;
  }
}
