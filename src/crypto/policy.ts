// Signed authority policies (DESIGN §9; docs/authority.md): which governance scopes, and within a
// scope which purposes, may be read, written, migrated and restored. A policy is a JSON document
// signed with ML-DSA-87 under its own FIPS 204 context by one or more authority keys; a store pins
// the authority's public keys at creation and accepts a policy only with version exactly previous
// + 1 (TUF's rule), before its expiry, signed by at least `threshold` of the pinned keys — its own
// threshold and that of the version in force — and naming the store (or the domain it pins).
//
// Signed form (all integers big-endian):
//   "PQAP" ‖ u8 version 1 ‖ be32 body length ‖ body (UTF-8 JSON, canonical: keys in a fixed order,
//   exactly the bytes signPolicy writes; any other spelling of the same document is refused)
//   ‖ u8 signature count ‖ count × (key id 16 = SHA-384(public key)[0, 16) ‖ ML-DSA-87 signature 4627)
// Each signature covers "PQAP" ‖ version ‖ length ‖ body, with context "pqdb authority policy v1".
//
// Decisions are compiled once per policy into a map from scope to a bit mask (and, for rules that
// name purposes, a map from purpose to a mask), so a decision per record is a Map lookup and a bit
// test. A scope no rule names gets the rule for "*", or nothing.

import { PqdbError } from '../errors';
import { bytes } from '../_args';
import { equalBytes } from '../_bytes';
import { utf8 } from '../_utf8';
import { hex } from '../_encoding';
import { ml_dsa87 } from '../kernels/mldsa';
import { signerKeyId, KEY_ID_BYTES } from './proofs';

/** The operations a policy governs. */
export const POLICY_OPERATIONS = ['read', 'write', 'migrate', 'restore'] as const;
export type PolicyOperation = (typeof POLICY_OPERATIONS)[number];

export interface PolicyRule {
  /** A governance scope, or "*" for every scope no other rule names. */
  scope: string;
  /** When given, the rule applies only to records whose governance purpose is one of these. */
  purposes?: readonly string[];
  /** What the rule allows. */
  allow: readonly PolicyOperation[];
}

export interface PolicyDocument {
  /** 1 for the first policy, then exactly the previous version + 1. */
  version: number;
  rules: readonly PolicyRule[];
  /**
   * Expiry as an RFC 3339 date-time with `Z` or an offset (signed in UTC, with milliseconds); an
   * expired policy is refused and stops deciding.
   */
  expires?: string;
  /** How many distinct pinned authority keys must sign this version and the next one (default 1). */
  threshold?: number;
  /** The ids (32 hex digits, `store.info().storeId`) of the stores this policy governs. */
  stores?: readonly string[];
  /** A domain name: the policy governs every store that pins this domain (`authorityDomain`). */
  domain?: string;
}

/** A policy verified against the pinned authority keys. */
export interface Policy extends PolicyDocument {
  /** The signed bytes, as persisted. */
  readonly signed: Uint8Array;
  /** The key ids (hex) of the pinned keys whose signatures verified. */
  readonly signers: readonly string[];
}

const MAGIC = [0x50, 0x51, 0x41, 0x50]; // "PQAP"
const FORMAT = 1;
const HEAD_BYTES = 9;
const SIGNATURE_BYTES = 4627;
const CONTEXT = utf8('pqdb authority policy v1');
/** Bounds on what a policy may hold: it is parsed before its signatures are trusted. */
const MAX_BODY_BYTES = 1 << 20;
const MAX_RULES = 4096;
const MAX_NAME_CHARS = 256;
const MAX_SIGNATURES = 16;
const MAX_STORES = 1024;
const FIELDS = ['version', 'rules', 'expires', 'threshold', 'stores', 'domain'];
const dec = new TextDecoder('utf-8', { fatal: true });

const BIT: Record<PolicyOperation, number> = { read: 1, write: 2, migrate: 4, restore: 8 };

/** Checks a document's shape; returns it in canonical form (fixed key order, sorted lists). */
function canonical(doc: unknown, what: (m: string) => never): PolicyDocument {
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) what('expected an object');
  const d = doc as Record<string, unknown>;
  for (const k of Object.keys(d)) if (!FIELDS.includes(k)) what(`unknown field "${k}"`);
  if (!Number.isSafeInteger(d.version) || (d.version as number) < 1) what('"version" expected an integer >= 1');
  if (!Array.isArray(d.rules) || d.rules.length > MAX_RULES) what(`"rules" expected an array of at most ${MAX_RULES}`);
  const name = (v: unknown, field: string): string => {
    if (typeof v !== 'string' || v.length === 0 || v.length > MAX_NAME_CHARS)
      what(`${field} expected a non-empty string of at most ${MAX_NAME_CHARS} characters`);
    return v as string;
  };
  const seen = new Set<string>();
  const rules = (d.rules as unknown[]).map((r, i): PolicyRule => {
    if (r === null || typeof r !== 'object' || Array.isArray(r)) what(`rules[${i}] expected an object`);
    const rr = r as Record<string, unknown>;
    for (const k of Object.keys(rr))
      if (!['scope', 'purposes', 'allow'].includes(k)) what(`rules[${i}]: unknown field "${k}"`);
    const scope = name(rr.scope, `rules[${i}].scope`);
    if (!Array.isArray(rr.allow)) what(`rules[${i}].allow expected an array`);
    const allow = [...new Set(rr.allow as unknown[])].map((op) => {
      if (!POLICY_OPERATIONS.includes(op as PolicyOperation))
        what(`rules[${i}].allow: "${String(op)}" is not one of ${POLICY_OPERATIONS.join(', ')}`);
      return op as PolicyOperation;
    });
    allow.sort((a, b) => BIT[a] - BIT[b]);
    let purposes: string[] | undefined;
    if (rr.purposes !== undefined) {
      if (!Array.isArray(rr.purposes) || rr.purposes.length === 0)
        what(`rules[${i}].purposes expected a non-empty array`);
      purposes = [...new Set((rr.purposes as unknown[]).map((p, j) => name(p, `rules[${i}].purposes[${j}]`)))].sort();
    }
    for (const key of purposes === undefined ? [scope] : purposes.map((p) => `${scope}\0${p}`)) {
      if (seen.has(key)) what(`rules[${i}]: scope "${scope}" is ruled twice`);
      seen.add(key);
    }
    return purposes === undefined ? { scope, allow } : { scope, purposes, allow };
  });
  let expires: string | undefined;
  if (d.expires !== undefined) {
    const at = typeof d.expires === 'string' ? rfc3339(d.expires) : undefined;
    if (at === undefined) what('"expires" expected an RFC 3339 date-time with Z or an offset (2030-01-01T00:00:00Z)');
    expires = new Date(at!).toISOString();
  }
  let threshold: number | undefined;
  if (d.threshold !== undefined) {
    if (!Number.isSafeInteger(d.threshold) || (d.threshold as number) < 1 || (d.threshold as number) > MAX_SIGNATURES)
      what(`"threshold" expected an integer from 1 to ${MAX_SIGNATURES}`);
    threshold = d.threshold as number;
  }
  let stores: string[] | undefined;
  if (d.stores !== undefined) {
    if (!Array.isArray(d.stores) || d.stores.length === 0 || d.stores.length > MAX_STORES)
      what(`"stores" expected a non-empty array of at most ${MAX_STORES} store ids`);
    for (const id of d.stores as unknown[])
      if (typeof id !== 'string' || !/^[0-9a-f]{32}$/.test(id)) what('"stores" expected store ids of 32 hex digits');
    stores = [...new Set(d.stores as string[])].sort();
  }
  const domain = d.domain !== undefined ? name(d.domain, '"domain"') : undefined;
  return {
    version: d.version as number,
    rules,
    ...(expires !== undefined ? { expires } : {}),
    ...(threshold !== undefined ? { threshold } : {}),
    ...(stores !== undefined ? { stores } : {}),
    ...(domain !== undefined ? { domain } : {}),
  };
}

const DAYS = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * The instant (ms since 1970) of an RFC 3339 date-time with `Z` or a numeric offset, its calendar
 * checked (month lengths, leap years; no leap second); undefined for anything else (no Date.parse:
 * it reads "1" as 2001, rolls 31 February into March and reads an offset-less time as local).
 */
export function rfc3339(text: string): number | undefined {
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [y, mo, d, h, mi, s] = m.slice(1, 7).map(Number);
  const leap = y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0);
  if (mo < 1 || mo > 12 || d < 1 || d > (mo === 2 && leap ? 29 : DAYS[mo - 1]) || h > 23 || mi > 59 || s > 59)
    return undefined;
  let offset = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return undefined;
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  const ms = m[7] === undefined ? 0 : Math.floor(Number(`0${m[7]}`) * 1000);
  const day = new Date(0);
  day.setUTCFullYear(y, mo - 1, d); // Date.UTC maps years 0-99 to 1900-1999
  day.setUTCHours(h, mi, s, ms);
  return day.getTime() - offset * 60_000;
}

/** The canonical body of a document (signPolicy writes it; verifyPolicy accepts only it). */
const bodyOf = (doc: PolicyDocument): Uint8Array => utf8(JSON.stringify(doc));

/**
 * The document of a signed body, accepted only in its canonical form: a repeated key (JSON.parse
 * keeps the last, other readers the first), another key order, spacing or spelling of a value is
 * refused, so every reader sees the one document that was signed.
 */
function documentOf(body: Uint8Array, what: (m: string) => never): PolicyDocument {
  let json: unknown;
  try {
    json = JSON.parse(dec.decode(body));
  } catch {
    what('the body is not JSON');
  }
  const doc = canonical(json, what);
  if (!equalBytes(bodyOf(doc), body)) what('the body is not in canonical form');
  return doc;
}

function signedPart(body: Uint8Array): Uint8Array {
  const out = new Uint8Array(HEAD_BYTES + body.length);
  out.set(MAGIC);
  out[4] = FORMAT;
  new DataView(out.buffer).setUint32(5, body.length);
  out.set(body, HEAD_BYTES);
  return out;
}

/**
 * Signs a policy document with an authority's ML-DSA-87 key (from `generateSigner()`); with
 * `previous`, adds a signature to an already signed policy (for a threshold of signers), after
 * checking its body again (`doc` is then not used).
 * @throws TypeError for a malformed document; PqdbError CORRUPTION for a malformed `previous`
 * @example
 * const signed = signPolicy({ version: 2, rules: [{ scope: 'billing', allow: ['read', 'write'] }] }, authority.secretKey, authority.publicKey);
 */
export function signPolicy(
  doc: PolicyDocument,
  secretKey: Uint8Array,
  publicKey: Uint8Array,
  previous?: Uint8Array,
): Uint8Array {
  let body: Uint8Array;
  let sigs: Uint8Array[] = [];
  if (previous !== undefined) {
    // The body is checked again before anything is added to it: a co-signer signs only a
    // document that verifyPolicy will read the same way.
    const p = parse(bytes('previous', previous));
    documentOf(p.body, (m) => {
      throw new PqdbError('CORRUPTION', `signed policy: ${m}`);
    });
    body = p.body;
    sigs = p.signatures.map((s) => s.raw);
  } else {
    body = bodyOf(
      canonical(doc, (m) => {
        throw new TypeError(`policy: ${m}`);
      }),
    );
  }
  const id = signerKeyId(publicKey);
  if (sigs.some((s) => equalBytes(s.subarray(0, KEY_ID_BYTES), id)))
    throw new TypeError('policy: this key has signed it already');
  if (sigs.length >= MAX_SIGNATURES) throw new RangeError(`policy: at most ${MAX_SIGNATURES} signatures`);
  const msg = signedPart(body);
  const sig = new Uint8Array(KEY_ID_BYTES + SIGNATURE_BYTES);
  sig.set(id);
  sig.set(ml_dsa87.sign(msg, bytes('secretKey', secretKey), { context: CONTEXT }), KEY_ID_BYTES);
  sigs.push(sig);
  const out = new Uint8Array(msg.length + 1 + sigs.length * sig.length);
  out.set(msg);
  out[msg.length] = sigs.length;
  sigs.forEach((s, i) => out.set(s, msg.length + 1 + i * sig.length));
  return out;
}

interface Parsed {
  body: Uint8Array;
  message: Uint8Array;
  signatures: { keyId: Uint8Array; signature: Uint8Array; raw: Uint8Array }[];
}

function parse(signed: Uint8Array): Parsed {
  const bad = (m: string): never => {
    throw new PqdbError('CORRUPTION', `signed policy: ${m}`);
  };
  if (signed.length < HEAD_BYTES + 1 || MAGIC.some((m, i) => signed[i] !== m)) bad('not a pqdb policy');
  if (signed[4] !== FORMAT) throw new PqdbError('FORMAT_VERSION', `signed policy: format ${signed[4]}`);
  const len = new DataView(signed.buffer, signed.byteOffset).getUint32(5);
  if (len > MAX_BODY_BYTES || HEAD_BYTES + len + 1 > signed.length) bad('body length out of range');
  const count = signed[HEAD_BYTES + len];
  const each = KEY_ID_BYTES + SIGNATURE_BYTES;
  if (count === 0 || count > MAX_SIGNATURES || signed.length !== HEAD_BYTES + len + 1 + count * each)
    bad('signature block does not match its count');
  const at = HEAD_BYTES + len + 1;
  const signatures = Array.from({ length: count }, (_, i) => {
    const raw = signed.subarray(at + i * each, at + (i + 1) * each);
    return { keyId: raw.subarray(0, KEY_ID_BYTES), signature: raw.subarray(KEY_ID_BYTES), raw };
  });
  return {
    body: signed.subarray(HEAD_BYTES, HEAD_BYTES + len),
    message: signed.subarray(0, HEAD_BYTES + len),
    signatures,
  };
}

/**
 * Verifies a signed policy against the pinned authority public keys: at least `threshold`
 * (the document's, default 1) distinct pinned keys must have signed it, and it must not have
 * expired at `now`. Nothing of the body is used before the signatures verify.
 * @throws PqdbError AUTH_FAILED (signatures), CORRUPTION (framing or document), FORMAT_VERSION,
 * AUTHORITY_DENIED (expired)
 */
export function verifyPolicy(
  signed: Uint8Array,
  authorityPublicKeys: readonly Uint8Array[],
  now: number = Date.now(),
): Policy {
  const p = parse(bytes('signed', signed));
  const pinned = authorityPublicKeys.map((k) => ({ key: bytes('authorityPublicKey', k), id: signerKeyId(k) }));
  const signers = new Set<string>();
  for (const s of p.signatures) {
    const key = pinned.find((k) => equalBytes(k.id, s.keyId));
    if (key === undefined || signers.has(hex(key.id))) continue;
    if (ml_dsa87.verify(s.signature, p.message, key.key, { context: CONTEXT })) signers.add(hex(key.id));
  }
  if (signers.size === 0) throw new PqdbError('AUTH_FAILED', 'the policy is not signed by a pinned authority key');
  const doc = documentOf(p.body, (m) => {
    throw new PqdbError('CORRUPTION', `signed policy: ${m}`);
  });
  if (signers.size < (doc.threshold ?? 1))
    throw new PqdbError(
      'AUTH_FAILED',
      `the policy needs ${doc.threshold} authority signatures, ${signers.size} of the pinned keys signed it`,
    );
  if (doc.expires !== undefined && Date.parse(doc.expires) <= now)
    throw new PqdbError('AUTHORITY_DENIED', `policy version ${doc.version} expired at ${doc.expires}`);
  return { ...doc, signed: signed.slice(), signers: [...signers].sort() };
}

/**
 * Checks that `next` (verified under the pinned keys) may replace `current` (undefined: no policy
 * yet): its version is exactly the current one + 1 (1 for the first), and the pinned keys that
 * signed it meet the threshold in force — the current policy's, or `pinnedThreshold` (the
 * store's, default 1) for the first — as well as its own (verifyPolicy checked that). So one key
 * holder cannot lower a threshold of several alone: lowering it takes the old threshold.
 * @throws PqdbError ROLLBACK for a version not above the current one, CONFLICT for one that skips,
 * AUTH_FAILED for too few signers
 */
export function checkSuccessor(
  current: Pick<Policy, 'version' | 'threshold'> | undefined,
  next: Pick<Policy, 'version' | 'signers'>,
  pinnedThreshold = 1,
): void {
  const want = (current?.version ?? 0) + 1;
  if (next.version < want)
    throw new PqdbError(
      'ROLLBACK',
      `policy version ${next.version} is not newer than the current version ${current?.version ?? 0}`,
    );
  if (next.version > want)
    throw new PqdbError('CONFLICT', `policy version ${next.version} skips: the current version is ${want - 1}`);
  const needed = current === undefined ? pinnedThreshold : (current.threshold ?? 1);
  if (next.signers.length < needed)
    throw new PqdbError(
      'AUTH_FAILED',
      `policy version ${next.version} needs ${needed} authority signatures (the threshold ${
        current === undefined ? 'the store pins' : `of version ${current.version} in force`
      }), ${next.signers.length} of the pinned keys signed it`,
    );
}

/** A compiled policy: a decision per (operation, scope, purpose) is a Map lookup and a bit test. */
export interface PolicyDecider {
  readonly version: number;
  allows(operation: PolicyOperation, scope: string | undefined, purpose?: string): boolean;
}

/** Compiles a policy's rules into a decider. A scope no rule names gets the "*" rule, or nothing. */
export function compilePolicy(policy: Pick<PolicyDocument, 'version' | 'rules'>): PolicyDecider {
  const scopes = new Map<string, { mask: number; purposes?: Map<string, number> }>();
  for (const r of policy.rules) {
    const mask = r.allow.reduce((m, op) => m | BIT[op], 0);
    let e = scopes.get(r.scope);
    if (e === undefined) scopes.set(r.scope, (e = { mask: 0 }));
    if (r.purposes === undefined) e.mask = mask;
    else for (const p of r.purposes) (e.purposes ??= new Map()).set(p, mask);
  }
  const any = scopes.get('*');
  return {
    version: policy.version,
    allows(operation, scope, purpose) {
      const e = (scope === undefined ? undefined : scopes.get(scope)) ?? any;
      if (e === undefined) return false;
      const m = purpose !== undefined && e.purposes !== undefined ? (e.purposes.get(purpose) ?? e.mask) : e.mask;
      return (m & BIT[operation]) !== 0;
    },
  };
}
