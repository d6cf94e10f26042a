// Every known-answer suite pqdb has, in one list: used by `npm run kat`, the browser KAT page and
// the test suites. `load` reads a file under the vectors folder (fs in Node, fetch in a browser).

import type { Summary } from './_util';
import type { Api } from './api';
import { allVectorSuites } from './vectors';
import { aeadWycheproof, type AeadApi } from './aead';
import { allPqSuites, PQ_TOTALS, type PqApi } from './pq';
import { allMldsaSuites, MLDSA_TOTALS, type DsaApi } from './mldsa';
import { X25519_TOTALS } from './x25519';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export async function allKatSuites(
  load: (path: string) => Promise<Json>,
  api: unknown,
  slow: boolean,
): Promise<Summary[]> {
  return [
    ...(await allVectorSuites(load, api as Api, slow)),
    aeadWycheproof(await load('wycheproof/aes_gcm_test.json'), api as AeadApi, 'gcm', 'aes_gcm_test.json'),
    aeadWycheproof(await load('wycheproof/aes_gcm_siv_test.json'), api as AeadApi, 'gcmsiv', 'aes_gcm_siv_test.json'),
    ...(await allPqSuites(load, api as PqApi, slow)),
    ...(await allMldsaSuites(load, api as DsaApi)),
  ];
}

/** Cases each suite must have run (+ skipped), so a truncated or filtered file fails. */
export const KAT_TOTALS: Record<string, number> = {
  'ACVP SHA2-384-1.0 AFT': 132,
  'ACVP SHA2-384-1.0 MCT': 1,
  'ACVP SHA2-384-1.0 LDT': 4,
  'Wycheproof hmac_sha384_test.json': 174,
  'Wycheproof hkdf_sha256_test.json': 86,
  'Wycheproof hkdf_sha384_test.json': 83,
  'Wycheproof aes_gcm_test.json': 316,
  'Wycheproof aes_gcm_siv_test.json': 202,
  ...PQ_TOTALS,
  ...MLDSA_TOTALS,
  ...X25519_TOTALS,
};

/** Problems with a run: failures, and suites whose run + skipped count differs from the file's. */
export function katProblems(suites: Summary[]): string[] {
  const out: string[] = [];
  for (const s of suites) {
    for (const f of s.failures) out.push(`${s.name}: ${f}`);
    const want = KAT_TOTALS[s.name];
    if (want !== undefined && s.total + s.skipped !== want)
      out.push(`${s.name}: ${s.total + s.skipped} cases, expected ${want}`);
  }
  return out;
}
