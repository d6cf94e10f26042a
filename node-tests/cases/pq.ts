// Known-answer cases for the Keccak and ML-KEM kernels, shared by Node, the browser and `npm run kat`:
// ACVP SHA3-256 (AFT, MCT, LDT), SHAKE-128/256 (AFT), ML-KEM keyGen / encapDecap (FIPS203 and
// FIPS203-tr1, with the key checks), and Wycheproof mlkem_1024_*.json.

import type { Summary } from './_util';
import { summary, record, hex, unhex, equalBytes, Rng } from './_util';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Xof {
  (msg: Uint8Array, opts?: { dkLen?: number }): Uint8Array;
}
interface KemLike {
  keygen(seed?: Uint8Array): { publicKey: Uint8Array; secretKey: Uint8Array };
  encapsulate(pk: Uint8Array, msg?: Uint8Array): { cipherText: Uint8Array; sharedSecret: Uint8Array };
  decapsulate(ct: Uint8Array, sk: Uint8Array): Uint8Array;
  checkPublicKey?(pk: Uint8Array): boolean;
  checkSecretKey?(sk: Uint8Array): boolean;
}
export interface PqApi {
  sha3_256(msg: Uint8Array): Uint8Array & unknown;
  shake128: Xof;
  shake256: Xof;
  ml_kem1024: KemLike;
}

const upper = (b: Uint8Array) => hex(b).toUpperCase();

function skip(s: Summary, why: string): void {
  s.skipped++;
  s.note = s.note?.includes(why) ? s.note : [s.note, why].filter(Boolean).join('; ');
}

/** ACVP SHA3-256: byte-aligned AFT cases, the MCT (MD_i = SHA3(MD_{i−1})), LDT with `slow`. */
export function sha3Acvp(json: Json, api: PqApi, slow: boolean): Summary {
  const s = summary('ACVP SHA3-256-2.0');
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const id = `tcId ${t.tcId} (${g.testType})`;
      if (g.testType === 'AFT') {
        const bits = Number(t.len);
        if (bits % 8 !== 0) {
          skip(s, 'bit-oriented messages (len not a multiple of 8) are outside a byte API');
          continue;
        }
        record(s, id, upper(api.sha3_256(unhex(t.msg).subarray(0, bits / 8))) === t.md);
      } else if (g.testType === 'MCT') {
        let md = unhex(t.msg);
        let ok = true;
        for (let j = 0; j < t.resultsArray.length && ok; j++) {
          for (let i = 0; i < 1000; i++) md = api.sha3_256(md);
          ok = upper(md) === t.resultsArray[j].md;
        }
        record(s, id, ok);
      } else if (g.testType === 'LDT') {
        if (!slow) {
          skip(s, 'LDT (1-8 GiB) cases run with SLOW=1');
          continue;
        }
        const content = unhex(t.largeMsg.content);
        const total = t.largeMsg.fullLength / 8;
        const chunk = new Uint8Array(1 << 20);
        for (let i = 0; i < chunk.length; i += content.length)
          chunk.set(content.subarray(0, Math.min(content.length, chunk.length - i)), i);
        const h = (
          api.sha3_256 as unknown as { create(): { update(b: Uint8Array): unknown; digest(): Uint8Array } }
        ).create();
        for (let done = 0; done < total; done += chunk.length)
          h.update(chunk.subarray(0, Math.min(chunk.length, total - done)));
        record(s, id, upper(h.digest()) === t.md);
      }
    }
  }
  return s;
}

/** ACVP SHAKE-128/256 AFT: byte-aligned message and output lengths. */
export function shakeAcvp(json: Json, xof: Xof, name: string): Summary {
  const s = summary(`ACVP ${name}`);
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const bits = Number(t.len);
      const outBits = Number(t.outLen);
      if (bits % 8 !== 0 || outBits % 8 !== 0) {
        skip(s, 'bit-oriented message or output lengths are outside a byte API');
        continue;
      }
      const out = xof(unhex(t.msg).subarray(0, bits / 8), { dkLen: outBits / 8 });
      record(s, `tcId ${t.tcId}`, upper(out) === t.md);
    }
  }
  return s;
}

const throwsRange = (fn: () => unknown) => {
  try {
    fn();
    return false;
  } catch (e) {
    return e instanceof RangeError;
  }
};
const throwsCode = (fn: () => unknown, code: string) => {
  try {
    fn();
    return false;
  } catch (e) {
    return (e as { code?: string }).code === code;
  }
};

/** ACVP ML-KEM keyGen: (d, z) → (ek, dk). */
export function mlkemKeyGenAcvp(json: Json, api: PqApi): Summary {
  const s = summary('ACVP ML-KEM-keyGen-FIPS203');
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const seed = unhex(t.d + t.z);
      const { publicKey, secretKey } = api.ml_kem1024.keygen(seed);
      record(s, `tcId ${t.tcId}`, upper(publicKey) === t.ek && upper(secretKey) === t.dk);
    }
  }
  return s;
}

/** ACVP ML-KEM encapDecap (FIPS203 or FIPS203-tr1): encapsulation, decapsulation, key checks. */
export function mlkemEncapDecapAcvp(json: Json, api: PqApi, name: string): Summary {
  const s = summary(`ACVP ${name}`);
  const kem = api.ml_kem1024;
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const id = `tcId ${t.tcId} (${g.function}${g.keyFormat ? ', ' + g.keyFormat : ''})`;
      if (g.function === 'encapsulation') {
        const r = kem.encapsulate(unhex(t.ek), unhex(t.m));
        record(s, id, upper(r.cipherText) === t.c && upper(r.sharedSecret) === t.k);
      } else if (g.function === 'decapsulation') {
        // Seed-format keys are regenerated from (d, z); expanded keys are used as given.
        const dk = g.keyFormat === 'seed' ? kem.keygen(unhex(t.d + t.z)).secretKey : unhex(t.dk);
        if (g.keyFormat === 'seed' && upper(dk) !== t.dk) {
          record(s, id, false, 'seed does not reproduce dk');
          continue;
        }
        record(s, id, upper(kem.decapsulate(unhex(t.c), dk)) === t.k);
      } else if (g.function === 'encapsulationKeyCheck') {
        const want = String(t.testPassed) === 'true' || t.testPassed === true;
        const got = kem.checkPublicKey
          ? kem.checkPublicKey(unhex(t.ek))
          : !throwsCode(() => kem.encapsulate(unhex(t.ek)), 'INVALID_KEY');
        record(s, id, got === want);
      } else if (g.function === 'decapsulationKeyCheck') {
        const want = String(t.testPassed) === 'true' || t.testPassed === true;
        const got = kem.checkSecretKey ? kem.checkSecretKey(unhex(t.dk)) : true;
        record(s, id, got === want);
      } else {
        skip(s, `function ${g.function} not covered`);
      }
    }
  }
  return s;
}

/** Wycheproof mlkem_1024_test.json: seed → ek; decapsulate(c) = K; wrong lengths refused. */
export function mlkemWycheproof(json: Json, api: PqApi): Summary {
  const s = summary('Wycheproof mlkem_1024_test.json');
  const kem = api.ml_kem1024;
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const id = `tcId ${t.tcId} (${t.result})`;
      const seed = unhex(t.seed);
      const c = unhex(t.c);
      if (t.result === 'valid') {
        const { publicKey, secretKey } = kem.keygen(seed);
        record(s, id, hex(publicKey) === t.ek && hex(kem.decapsulate(c, secretKey)) === t.K);
      } else {
        // Too short/long seeds or ciphertexts: refused with RangeError, never a key.
        const ok =
          seed.length !== 64
            ? throwsRange(() => kem.keygen(seed))
            : throwsRange(() => kem.decapsulate(c, kem.keygen(seed).secretKey));
        record(s, id, ok);
      }
    }
  }
  return s;
}

/** Wycheproof mlkem_1024_encaps_test.json: (ek, m) → (c, K); unreduced or mis-sized keys refused. */
export function mlkemEncapsWycheproof(json: Json, api: PqApi): Summary {
  const s = summary('Wycheproof mlkem_1024_encaps_test.json');
  const kem = api.ml_kem1024;
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const id = `tcId ${t.tcId} (${t.result})`;
      const ek = unhex(t.ek);
      const m = unhex(t.m);
      if (t.result === 'valid') {
        const r = kem.encapsulate(ek, m);
        record(s, id, hex(r.cipherText) === t.c && hex(r.sharedSecret) === t.K);
      } else if (ek.length !== 1568) {
        record(
          s,
          id,
          throwsRange(() => kem.encapsulate(ek, m)),
        );
      } else {
        record(
          s,
          id,
          throwsCode(() => kem.encapsulate(ek, m), 'INVALID_KEY'),
        );
      }
    }
  }
  return s;
}

/** Wycheproof mlkem_1024_semi_expanded_decaps_test.json: expanded dk validation and decapsulation. */
export function mlkemDecapsWycheproof(json: Json, api: PqApi): Summary {
  const s = summary('Wycheproof mlkem_1024_semi_expanded_decaps_test.json');
  const kem = api.ml_kem1024;
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const id = `tcId ${t.tcId} (${t.result})`;
      const dk = unhex(t.dk);
      const c = unhex(t.c);
      if (t.result === 'valid') {
        record(s, id, equalBytes(kem.decapsulate(c, dk), unhex(t.K)));
      } else if (dk.length !== 3168 || c.length !== 1568) {
        record(
          s,
          id,
          throwsRange(() => kem.decapsulate(c, dk)),
        );
      } else {
        record(
          s,
          id,
          throwsCode(() => kem.decapsulate(c, dk), 'INVALID_KEY'),
        );
      }
    }
  }
  return s;
}

/** Every Keccak and ML-KEM vector suite. */
export async function allPqSuites(
  load: (path: string) => Promise<Json>,
  api: PqApi,
  slow: boolean,
): Promise<Summary[]> {
  return [
    sha3Acvp(await load('acvp/SHA3-256-2.0/internalProjection.json'), api, slow),
    shakeAcvp(await load('acvp/SHAKE-128-FIPS202/internalProjection.json'), api.shake128, 'SHAKE-128-FIPS202'),
    shakeAcvp(await load('acvp/SHAKE-256-FIPS202/internalProjection.json'), api.shake256, 'SHAKE-256-FIPS202'),
    mlkemKeyGenAcvp(await load('acvp/ML-KEM-keyGen-FIPS203/internalProjection.json'), api),
    mlkemEncapDecapAcvp(
      await load('acvp/ML-KEM-encapDecap-FIPS203/internalProjection.json'),
      api,
      'ML-KEM-encapDecap-FIPS203',
    ),
    mlkemEncapDecapAcvp(
      await load('acvp/ML-KEM-encapDecap-FIPS203-tr1/internalProjection.json'),
      api,
      'ML-KEM-encapDecap-FIPS203-tr1',
    ),
    mlkemWycheproof(await load('wycheproof/mlkem_1024_test.json'), api),
    mlkemEncapsWycheproof(await load('wycheproof/mlkem_1024_encaps_test.json'), api),
    mlkemDecapsWycheproof(await load('wycheproof/mlkem_1024_semi_expanded_decaps_test.json'), api),
  ];
}

/** Each file's own case count (run + skipped must equal it). */
export const PQ_TOTALS: Record<string, number> = {
  'ACVP ML-KEM-keyGen-FIPS203': 25,
  'ACVP ML-KEM-encapDecap-FIPS203': 55,
  'ACVP ML-KEM-encapDecap-FIPS203-tr1': 65,
  'Wycheproof mlkem_1024_test.json': 193,
  'Wycheproof mlkem_1024_encaps_test.json': 269,
  'Wycheproof mlkem_1024_semi_expanded_decaps_test.json': 9,
  'ACVP SHAKE-128-FIPS202': 269,
  'ACVP SHAKE-256-FIPS202': 237,
  'ACVP SHA3-256-2.0': 1199,
};

/** Differential: ML-KEM-1024 against an oracle KEM on seeded random seeds and messages. */
export function mlkemDifferential(api: PqApi, oracle: KemLike, count: number, seed: number): Summary {
  const s = summary(`ML-KEM-1024 vs oracle, ${count} seeds (seed ${seed})`);
  const rng = new Rng(seed);
  const bytes = (n: number) => rng.bytes(n);
  for (let i = 0; i < count; i++) {
    const kseed = bytes(64);
    const msg = bytes(32);
    const a = api.ml_kem1024.keygen(kseed);
    const b = oracle.keygen(kseed);
    const ea = api.ml_kem1024.encapsulate(a.publicKey, msg);
    const eb = oracle.encapsulate(b.publicKey, msg);
    const bad = ea.cipherText.slice();
    bad[i % 1568] ^= 1;
    record(
      s,
      `seed #${i}`,
      equalBytes(a.publicKey, b.publicKey) &&
        equalBytes(a.secretKey, b.secretKey) &&
        equalBytes(ea.cipherText, eb.cipherText) &&
        equalBytes(ea.sharedSecret, eb.sharedSecret) &&
        equalBytes(api.ml_kem1024.decapsulate(ea.cipherText, a.secretKey), ea.sharedSecret) &&
        equalBytes(api.ml_kem1024.decapsulate(bad, a.secretKey), oracle.decapsulate(bad, b.secretKey)),
    );
  }
  return s;
}
