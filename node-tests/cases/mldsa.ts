// ML-DSA-87 known-answer cases shared by Node, the browser and `npm run kat`: ACVP keyGen, sigGen
// (prompt + expectedResults; FIPS204 and FIPS204-tr1, deterministic and hedged, pure, pre-hash,
// internal and external-μ interfaces) and sigVer; Wycheproof mldsa_87_sign_seed / _sign_noseed /
// _verify — every case.

import type { Summary } from './_util';
import { summary, record, hex, unhex } from './_util';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface SignOpts {
  context?: Uint8Array;
  extraEntropy?: Uint8Array | false;
}
export interface DsaApi {
  ml_dsa87: {
    keygen(seed?: Uint8Array): { publicKey: Uint8Array; secretKey: Uint8Array };
    sign(msg: Uint8Array, sk: Uint8Array, opts?: SignOpts): Uint8Array;
    verify(sig: Uint8Array, msg: Uint8Array, pk: Uint8Array, opts?: { context?: Uint8Array }): boolean;
    prehash: {
      sign(msg: Uint8Array, sk: Uint8Array, hashAlg: string, opts?: SignOpts): Uint8Array;
      verify(
        sig: Uint8Array,
        msg: Uint8Array,
        pk: Uint8Array,
        hashAlg: string,
        opts?: { context?: Uint8Array },
      ): boolean;
    };
    internal: {
      sign(
        msg: Uint8Array,
        sk: Uint8Array,
        opts?: { extraEntropy?: Uint8Array | false; externalMu?: boolean },
      ): Uint8Array;
      verify(sig: Uint8Array, msg: Uint8Array, pk: Uint8Array, opts?: { externalMu?: boolean }): boolean;
    };
  };
}

const upper = (b: Uint8Array) => hex(b).toUpperCase();
const truthy = (v: unknown) => v === true || String(v).toLowerCase() === 'true';
const attempt = <T>(fn: () => T): { value?: T; error?: unknown } => {
  try {
    return { value: fn() };
  } catch (error) {
    return { error };
  }
};

export function mldsaKeyGenAcvp(json: Json, api: DsaApi): Summary {
  const s = summary('ACVP ML-DSA-keyGen-FIPS204');
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const { publicKey, secretKey } = api.ml_dsa87.keygen(unhex(t.seed));
      record(s, `tcId ${t.tcId}`, upper(publicKey) === t.pk && upper(secretKey) === t.sk);
    }
  }
  return s;
}

/** Signs one ACVP sigGen case through the interface its group names. */
function acvpSign(api: DsaApi, g: Json, t: Json, sk: Uint8Array): Uint8Array {
  const rnd = truthy(g.deterministic) ? (false as const) : unhex(t.rnd);
  const dsa = api.ml_dsa87;
  if (g.signatureInterface === 'internal') {
    return truthy(g.externalMu)
      ? dsa.internal.sign(unhex(t.mu), sk, { externalMu: true, extraEntropy: rnd })
      : dsa.internal.sign(unhex(t.message), sk, { extraEntropy: rnd });
  }
  const opts = { context: unhex(t.context ?? ''), extraEntropy: rnd };
  return g.preHash === 'preHash'
    ? dsa.prehash.sign(unhex(t.message), sk, t.hashAlg, opts)
    : dsa.sign(unhex(t.message), sk, opts);
}

export function mldsaSigGenAcvp(prompt: Json, expected: Json, api: DsaApi, name: string): Summary {
  const s = summary(`ACVP ${name}`);
  const want = new Map<string, string>();
  for (const g of expected.testGroups) for (const t of g.tests) want.set(String(t.tcId), t.signature);
  for (const g of prompt.testGroups) {
    for (const t of g.tests) {
      const sk = g.keyFormat === 'seed' ? api.ml_dsa87.keygen(unhex(t.seed)).secretKey : unhex(t.sk);
      const r = attempt(() => acvpSign(api, g, t, sk));
      record(
        s,
        `tcId ${t.tcId} (${g.signatureInterface}/${g.preHash ?? (truthy(g.externalMu) ? 'mu' : 'msg')})`,
        r.value !== undefined && upper(r.value) === want.get(String(t.tcId)),
        String(r.error ?? ''),
      );
    }
  }
  return s;
}

export function mldsaSigVerAcvp(json: Json, api: DsaApi): Summary {
  const s = summary('ACVP ML-DSA-sigVer-FIPS204');
  const dsa = api.ml_dsa87;
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const pk = unhex(t.pk);
      const sig = unhex(t.signature);
      const r = attempt(() => {
        if (g.signatureInterface === 'internal') {
          return truthy(g.externalMu)
            ? dsa.internal.verify(sig, unhex(t.mu), pk, { externalMu: true })
            : dsa.internal.verify(sig, unhex(t.message), pk);
        }
        if (g.preHash === 'preHash')
          return dsa.prehash.verify(sig, unhex(t.message), pk, t.hashAlg, { context: unhex(t.context ?? '') });
        return dsa.verify(sig, unhex(t.message), pk, { context: unhex(t.context ?? '') });
      });
      record(s, `tcId ${t.tcId} (${t.reason})`, r.value === truthy(t.testPassed), String(r.error ?? ''));
    }
  }
  return s;
}

/** Wycheproof signing files: from a seed (`seed` true) or an expanded private key. */
export function mldsaSignWycheproof(json: Json, api: DsaApi, seeded: boolean, file: string): Summary {
  const s = summary(`Wycheproof ${file}`);
  const dsa = api.ml_dsa87;
  for (const g of json.testGroups) {
    let sk: Uint8Array | undefined;
    let keyError: unknown;
    try {
      if (seeded) {
        const kp = dsa.keygen(unhex(g.privateSeed));
        if (g.publicKey && hex(kp.publicKey) !== g.publicKey)
          keyError = new Error('seed does not give the group public key');
        sk = kp.secretKey;
      } else sk = unhex(g.privateKey);
    } catch (e) {
      keyError = e;
    }
    for (const t of g.tests) {
      const id = `tcId ${t.tcId} (${t.result})`;
      const rnd = t.rnd ? unhex(t.rnd) : (false as const);
      const r = attempt(() => {
        if (keyError) throw keyError;
        if (t.msg !== undefined)
          return dsa.sign(unhex(t.msg), sk!, { context: t.ctx ? unhex(t.ctx) : undefined, extraEntropy: rnd });
        return dsa.internal.sign(unhex(t.mu), sk!, { externalMu: true, extraEntropy: rnd });
      });
      if (t.result === 'valid') record(s, id, r.value !== undefined && hex(r.value) === t.sig, String(r.error ?? ''));
      else record(s, id, r.value === undefined, 'a signature was produced');
    }
  }
  return s;
}

export function mldsaVerifyWycheproof(json: Json, api: DsaApi): Summary {
  const s = summary('Wycheproof mldsa_87_verify_test.json');
  for (const g of json.testGroups) {
    const pk = unhex(g.publicKey);
    for (const t of g.tests) {
      const r = attempt(() =>
        api.ml_dsa87.verify(unhex(t.sig), unhex(t.msg), pk, { context: t.ctx ? unhex(t.ctx) : undefined }),
      );
      record(s, `tcId ${t.tcId} (${t.result})`, r.value === (t.result === 'valid'), String(r.error ?? ''));
    }
  }
  return s;
}

export async function allMldsaSuites(load: (path: string) => Promise<Json>, api: DsaApi): Promise<Summary[]> {
  return [
    mldsaKeyGenAcvp(await load('acvp/ML-DSA-keyGen-FIPS204/internalProjection.json'), api),
    mldsaSigGenAcvp(
      await load('acvp/ML-DSA-sigGen-FIPS204/prompt.json'),
      await load('acvp/ML-DSA-sigGen-FIPS204/expectedResults.json'),
      api,
      'ML-DSA-sigGen-FIPS204',
    ),
    mldsaSigGenAcvp(
      await load('acvp/ML-DSA-sigGen-FIPS204-tr1/prompt.json'),
      await load('acvp/ML-DSA-sigGen-FIPS204-tr1/expectedResults.json'),
      api,
      'ML-DSA-sigGen-FIPS204-tr1',
    ),
    mldsaSigVerAcvp(await load('acvp/ML-DSA-sigVer-FIPS204/internalProjection.json'), api),
    mldsaSignWycheproof(
      await load('wycheproof/mldsa_87_sign_seed_test.json'),
      api,
      true,
      'mldsa_87_sign_seed_test.json',
    ),
    mldsaSignWycheproof(
      await load('wycheproof/mldsa_87_sign_noseed_test.json'),
      api,
      false,
      'mldsa_87_sign_noseed_test.json',
    ),
    mldsaVerifyWycheproof(await load('wycheproof/mldsa_87_verify_test.json'), api),
  ];
}

export const MLDSA_TOTALS: Record<string, number> = {
  'ACVP ML-DSA-keyGen-FIPS204': 25,
  'ACVP ML-DSA-sigGen-FIPS204': 120,
  'ACVP ML-DSA-sigGen-FIPS204-tr1': 120,
  'ACVP ML-DSA-sigVer-FIPS204': 60,
  'Wycheproof mldsa_87_sign_seed_test.json': 96,
  'Wycheproof mldsa_87_sign_noseed_test.json': 69,
  'Wycheproof mldsa_87_verify_test.json': 241,
};
