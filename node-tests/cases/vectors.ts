// Known-answer cases from test-data/vectors: NIST ACVP SHA2-384 (AFT, MCT, LDT), Wycheproof
// HMAC-SHA384 / HKDF-SHA256 / HKDF-SHA384 / X25519, and the RFC 7748 X25519 vectors. Every case of
// each file is run and counted.

import type { Api, HashName } from './api';
import { type Summary, summary, record, hex, unhex, equalBytes } from './_util';
import { x25519Wycheproof, x25519Rfc7748, X25519_TOTALS } from './x25519';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

const upper = (b: Uint8Array) => hex(b).toUpperCase();

/** ACVP SHA2-384 AFT: every byte-aligned message (the file holds only those). */
export function sha2AcvpAft(json: Json, api: Api): Summary {
  const s = summary('ACVP SHA2-384-1.0 AFT');
  for (const g of json.testGroups.filter((g: Json) => g.testType === 'AFT')) {
    for (const t of g.tests) {
      const bits = Number(t.len);
      if (bits % 8 !== 0) {
        s.skipped++;
        continue;
      }
      const msg = unhex(t.msg).subarray(0, bits / 8);
      const got = upper(api.sha384(msg));
      record(s, `tcId ${t.tcId}`, got === t.md, got);
    }
  }
  return s;
}

/** ACVP SHA2-384 MCT (standard): 100 outer × 1000 inner iterations, M_i = MD_{i-3} ‖ MD_{i-2} ‖ MD_{i-1}. */
export function sha2AcvpMct(json: Json, api: Api): Summary {
  const s = summary('ACVP SHA2-384-1.0 MCT');
  for (const g of json.testGroups.filter((g: Json) => g.testType === 'MCT')) {
    for (const t of g.tests) {
      let seed = unhex(t.msg);
      let ok = true;
      const n = seed.length;
      const m = new Uint8Array(3 * n);
      for (let j = 0; j < t.resultsArray.length && ok; j++) {
        let a = seed,
          b = seed,
          c = seed;
        for (let i = 3; i < 1003; i++) {
          m.set(a, 0);
          m.set(b, n);
          m.set(c, 2 * n);
          const d = api.sha384(m);
          a = b;
          b = c;
          c = d;
        }
        seed = c;
        ok = upper(c) === t.resultsArray[j].md;
      }
      record(s, `tcId ${t.tcId}`, ok);
    }
  }
  return s;
}

/** ACVP SHA2-384 LDT: 1–8 GiB messages by repeating `content`; streamed. Only when `run`. */
export function sha2AcvpLdt(json: Json, api: Api, run: boolean): Summary {
  const s = summary('ACVP SHA2-384-1.0 LDT');
  for (const g of json.testGroups.filter((g: Json) => g.testType === 'LDT')) {
    for (const t of g.tests) {
      if (!run) {
        s.skipped++;
        continue;
      }
      const content = unhex(t.largeMsg.content);
      const total = t.largeMsg.fullLength / 8;
      const chunk = new Uint8Array(1 << 20);
      for (let i = 0; i < chunk.length; i += content.length)
        chunk.set(content.subarray(0, Math.min(content.length, chunk.length - i)), i);
      const h = api.sha384.create();
      for (let done = 0; done < total; done += chunk.length)
        h.update(chunk.subarray(0, Math.min(chunk.length, total - done)));
      record(s, `tcId ${t.tcId}`, upper(h.digest()) === t.md);
    }
  }
  if (!run) s.note = 'LDT (1-8 GiB) cases run with SLOW=1';
  return s;
}

/** Wycheproof MAC file (HMAC): valid cases must match (truncated to tagSize), invalid must not. */
export function hmacWycheproof(json: Json, api: Api, hash: HashName, file: string): Summary {
  const s = summary(`Wycheproof ${file}`);
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      const tag = api.hmac(api[hash], unhex(t.key), unhex(t.msg)).subarray(0, g.tagSize / 8);
      const matches = equalBytes(tag, unhex(t.tag));
      record(s, `tcId ${t.tcId} (${t.result})`, t.result === 'valid' ? matches : !matches);
    }
  }
  return s;
}

/** Wycheproof HKDF file: valid cases must produce okm; invalid (size too large) must throw. */
export function hkdfWycheproof(json: Json, api: Api, hash: HashName, file: string): Summary {
  const s = summary(`Wycheproof ${file}`);
  for (const g of json.testGroups) {
    for (const t of g.tests) {
      let okm: Uint8Array | undefined;
      let error: unknown;
      try {
        okm = api.hkdf(api[hash], unhex(t.ikm), unhex(t.salt), unhex(t.info), t.size);
      } catch (e) {
        error = e;
      }
      const ok =
        t.result === 'valid'
          ? okm !== undefined && hex(okm) === t.okm
          : okm === undefined && error instanceof RangeError;
      record(s, `tcId ${t.tcId} (${t.result})`, ok, error ? String(error) : '');
    }
  }
  return s;
}

/** Every vector suite, given a loader for files under the vectors folder. */
export async function allVectorSuites(
  load: (path: string) => Promise<Json>,
  api: Api,
  slow: boolean,
): Promise<Summary[]> {
  const sha = await load('acvp/SHA2-384-1.0/internalProjection.json');
  const out = [sha2AcvpAft(sha, api), sha2AcvpMct(sha, api), sha2AcvpLdt(sha, api, slow)];
  out.push(hmacWycheproof(await load('wycheproof/hmac_sha384_test.json'), api, 'sha384', 'hmac_sha384_test.json'));
  out.push(hkdfWycheproof(await load('wycheproof/hkdf_sha256_test.json'), api, 'sha256', 'hkdf_sha256_test.json'));
  out.push(hkdfWycheproof(await load('wycheproof/hkdf_sha384_test.json'), api, 'sha384', 'hkdf_sha384_test.json'));
  out.push(x25519Wycheproof(await load('wycheproof/x25519_test.json'), api));
  out.push(x25519Rfc7748(api, slow));
  return out;
}

/** Cases each file must contain (the file's own count), so a truncated file fails. */
export const EXPECTED_TOTALS: Record<string, number> = {
  'Wycheproof hmac_sha384_test.json': 174,
  'Wycheproof hkdf_sha256_test.json': 86,
  'Wycheproof hkdf_sha384_test.json': 83,
  'ACVP SHA2-384-1.0 MCT': 1,
  'Wycheproof x25519_test.json': X25519_TOTALS['Wycheproof x25519_test.json'],
};
