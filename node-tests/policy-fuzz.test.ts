// Thresholds across policy versions, fuzzed against a model (src/crypto/policy.ts,
// src/engine/authority.ts): random pinned key sets, a pinned first-policy threshold, a version in
// force with its threshold or none, and a next version with its own threshold signed by a random
// multiset of keys (pinned ones, a stranger's, repeats, a corrupted signature). installPolicy must
// accept exactly when the distinct pinned keys with a valid signature meet both the new version's
// threshold and the one in force (the store's pinned threshold for a first policy), and then name
// exactly those signers; otherwise refuse with AUTH_FAILED (CORRUPTION for no signature block) and
// leave the manifest as it was.
// Seeded and bounded: PQDB_POLICY_FUZZ_CASES cases (default 150), a few seconds.
import { describe, it, expect } from 'vitest';
import { generateSigner } from '../src/index';
import { signPolicy, type PolicyDocument } from '../src/crypto/policy';
import { installPolicy } from '../src/engine/authority';
import { type Manifest } from '../src/engine/manifest';
import { b64 } from '../src/_encoding';
import { signerKeyId } from '../src/crypto/proofs';
import { PqdbError } from '../src/errors';
import { Rng } from './cases/_util';

const CASES = Number(process.env.PQDB_POLICY_FUZZ_CASES ?? 150);
const SEED = Number(process.env.PQDB_POLICY_FUZZ_SEED ?? 0x27);
const STORE = '0123456789abcdef0123456789abcdef';
const KEYS = 5; // keys 0..4 may be pinned; key 5 never is
const THRESHOLDS = [undefined, 1, 2, 3, 4, 5] as const;
const BLOCK = 16 + 4627;
const hex = (b: Uint8Array) => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

describe('policy thresholds across versions, against a model', () => {
  it(`${CASES} random key sets, thresholds and signature multisets (seed ${SEED})`, () => {
    const keys = Array.from({ length: KEYS + 1 }, () => generateSigner());
    const doc = (version: number, threshold: number | undefined): PolicyDocument => ({
      version,
      rules: [{ scope: '*', allow: ['read'] }],
      stores: [STORE],
      ...(threshold !== undefined ? { threshold } : {}),
    });
    // Versions 1 and 2 of each threshold: the message part and one signature block per key.
    const forms = [1, 2].map((v) =>
      THRESHOLDS.map((t) => {
        const one = keys.map((k) => signPolicy(doc(v, t), k.secretKey, k.publicKey));
        return {
          message: one[0].subarray(0, one[0].length - 1 - BLOCK),
          blocks: one.map((x) => x.subarray(x.length - BLOCK)),
        };
      }),
    );
    /** The message part with these signature blocks (the one at `corrupt` with a bit flipped). */
    const assemble = (form: (typeof forms)[0][0], picks: number[], corrupt: number, rng: Rng) => {
      const out = new Uint8Array(form.message.length + 1 + picks.length * BLOCK);
      out.set(form.message);
      out[form.message.length] = picks.length;
      picks.forEach((k, i) => {
        const b = form.blocks[k].slice();
        if (i === corrupt) b[16 + rng.int(4627)] ^= 1 << rng.int(8);
        out.set(b, form.message.length + 1 + i * BLOCK);
      });
      return out;
    };
    const rng = new Rng(SEED);
    let accepted = 0;
    for (let n = 0; n < CASES; n++) {
      const pinned = [...Array(KEYS).keys()].filter(() => rng.int(2) === 0);
      if (pinned.length === 0) pinned.push(rng.int(KEYS));
      pinned.sort(() => rng.int(3) - 1);
      const pinnedThreshold = rng.int(2) === 0 ? undefined : 1 + rng.int(pinned.length);
      // -1: no policy yet. A version in force could only have been installed with its threshold
      // met by the pinned keys (it is signed by all of them here).
      const ct = rng.int(3) === 0 ? -1 : rng.int(1 + pinned.length);
      const nt = rng.int(THRESHOLDS.length);
      const picks = Array.from({ length: rng.int(8) }, () => rng.int(KEYS + 1));
      const corrupt = picks.length > 0 && rng.int(4) === 0 ? rng.int(picks.length) : -1;
      const version = ct >= 0 ? 2 : 1;
      const signed = assemble(forms[version - 1][nt], picks, corrupt, rng);
      const authority: NonNullable<Manifest['authority']> = {
        keys: pinned.map((k) => b64(keys[k].publicKey)),
        ...(pinnedThreshold !== undefined ? { threshold: pinnedThreshold } : {}),
        ...(ct >= 0 ? { policy: b64(assemble(forms[0][ct], pinned, -1, rng)) } : {}),
      };
      const manifest = { storeId: STORE, authority } as Manifest;

      // The model: the distinct pinned keys with at least one valid signature.
      const valid = new Set(picks.filter((k, i) => i !== corrupt && pinned.includes(k)));
      const own = THRESHOLDS[nt] ?? 1;
      const inForce = ct >= 0 ? (THRESHOLDS[ct] ?? 1) : (pinnedThreshold ?? 1);
      const ok = valid.size >= 1 && valid.size >= own && valid.size >= inForce;
      const what = JSON.stringify({ n, pinned, pinnedThreshold, ct, nt, picks, corrupt });
      if (ok) {
        const p = installPolicy(manifest, signed, 0);
        expect(p.version, what).toBe(version);
        expect([...p.signers].sort(), what).toEqual([...valid].map((k) => hex(signerKeyId(keys[k].publicKey))).sort());
        expect(manifest.authority?.policy, what).toBe(b64(signed));
        accepted++;
      } else {
        expect(() => installPolicy(manifest, signed, 0), what).toThrow(
          // No signature block at all is a framing error.
          expect.objectContaining({ code: picks.length === 0 ? 'CORRUPTION' : 'AUTH_FAILED' }) as unknown as PqdbError,
        );
        expect(manifest.authority, what).toBe(authority); // unchanged
      }
    }
    // Both outcomes were exercised.
    expect(accepted).toBeGreaterThan(CASES / 10);
    expect(accepted).toBeLessThan(CASES - CASES / 10);
  });
});
