// Current authority in the store (DESIGN §9, docs/authority.md): the authority keys pinned at
// creation and the signed policy in force, both in the sealed manifest body. A new policy is
// accepted only if the pinned keys signed it (to its threshold), it has not expired, and its version
// is exactly the current one + 1; an older signed policy put back cannot replace a newer one, and
// the manifest that names the current one is itself sealed and rollback-pinned.

import { PqdbError } from '../errors';
import { equalBytes } from '../_bytes';
import { checkSuccessor, compilePolicy, verifyPolicy, type Policy, type PolicyDecider } from '../crypto/policy';
import type { PolicyOperation } from '../crypto/policy';
import { b64, unb64, type Manifest } from './manifest';

/** The pinned keys given to openStore, as a list (undefined: none given). */
export function authorityKeysOf(option: Uint8Array | readonly Uint8Array[] | undefined): Uint8Array[] | undefined {
  if (option === undefined) return undefined;
  const keys = option instanceof Uint8Array ? [option] : [...option];
  if (keys.length === 0 || keys.length > 16 || keys.some((k) => !(k instanceof Uint8Array) || k.length !== 2592))
    throw new TypeError('"authorityPublicKey" expected 1 to 16 ML-DSA-87 public keys (Uint8Array of length 2592)');
  return keys;
}

/**
 * Checks the keys a caller pins against the store's: a store created with authority keys must be
 * opened with the same ones when the caller names any; a store created without cannot gain them.
 * @throws PqdbError AUTH_FAILED when they differ
 */
export function checkPinnedKeys(manifest: Manifest, given: Uint8Array[] | undefined): void {
  if (given === undefined) return;
  const pinned = (manifest.authority?.keys ?? []).map(unb64);
  const same = pinned.length === given.length && pinned.every((k) => given.some((g) => equalBytes(g, k)));
  if (!same)
    throw new PqdbError(
      'AUTH_FAILED',
      pinned.length === 0
        ? 'this store pins no authority key (authority keys are pinned when a store is created)'
        : 'this store pins other authority keys',
    );
}

type InForce = { policy: Policy; decider: PolicyDecider; expiresMs: number };
/** Per manifest `authority` entry (a commit's manifest is a fresh copy): no key built per call. */
const byEntry = new WeakMap<object, InForce>();
/** Per signed form, with the keys it was verified under: a copied entry is not verified again. */
const bySigned = new Map<string, { keys: readonly string[]; inForce: InForce }>();

/** The policy in force (its signatures verified once per signed form and keys), or undefined. */
export function currentPolicy(manifest: Manifest): InForce | undefined {
  const a = manifest.authority;
  if (a?.policy === undefined) return undefined;
  let hit = byEntry.get(a);
  if (hit !== undefined) return hit;
  const seen = bySigned.get(a.policy);
  if (seen !== undefined && seen.keys.length === a.keys.length && seen.keys.every((k, i) => k === a.keys[i]))
    hit = seen.inForce;
  else {
    // Expiry is for accepting a policy; one in force stays readable (its decisions check expiry).
    const policy = verifyPolicy(unb64(a.policy), a.keys.map(unb64), 0);
    hit = {
      policy,
      decider: compilePolicy(policy),
      expiresMs: policy.expires !== undefined ? Date.parse(policy.expires) : Infinity,
    };
    if (bySigned.size >= 64) bySigned.clear();
    bySigned.set(a.policy, { keys: [...a.keys], inForce: hit });
  }
  byEntry.set(a, hit);
  return hit;
}

/**
 * Verifies `signed` as the successor of the policy in force and writes it into the draft manifest.
 * @throws PqdbError AUTHORITY_DENIED (no pinned key, or expired), AUTH_FAILED, ROLLBACK, CONFLICT, CORRUPTION
 */
export function installPolicy(manifest: Manifest, signed: Uint8Array, now = Date.now()): Policy {
  const a = manifest.authority;
  if (a === undefined)
    throw new PqdbError(
      'AUTHORITY_DENIED',
      'this store pins no authority key: it was created without authorityPublicKey',
    );
  const next = verifyPolicy(signed, a.keys.map(unb64), now);
  checkSuccessor(currentPolicy(manifest)?.policy, next);
  manifest.authority = { keys: a.keys, policy: b64(signed) };
  return next;
}

/** The manifest entry a new store starts with. */
export const pinnedAuthority = (keys: Uint8Array[] | undefined): Manifest['authority'] =>
  keys === undefined ? undefined : { keys: keys.map(b64) };

/** A governance state's scope and purpose, by its canonical text (parsed once per distinct state). */
const fields = new Map<string, { scope?: string; purpose?: string }>();

function scopeOf(governance: string): { scope?: string; purpose?: string } {
  let f = fields.get(governance);
  if (f === undefined) {
    let g: Record<string, unknown> = {};
    try {
      const parsed: unknown = JSON.parse(governance);
      if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed))
        g = parsed as Record<string, unknown>;
    } catch {
      // Not canonical text: it names no scope (the "*" rule decides).
    }
    f = {
      ...(typeof g.scope === 'string' ? { scope: g.scope } : {}),
      ...(typeof g.purpose === 'string' ? { purpose: g.purpose } : {}),
    };
    if (fields.size >= 4096) fields.clear();
    fields.set(governance, f);
  }
  return f;
}

/** True once the policy in force has expired (the clock is read only for a policy with an expiry). */
const expired = (inForce: InForce, now?: number): boolean =>
  inForce.expiresMs !== Infinity && (now ?? Date.now()) >= inForce.expiresMs;

/**
 * Whether the policy in force allows `operation` on a record with this governance state (canonical
 * text): true when no policy is set; false once the policy has expired (it stops deciding until a
 * newer one is installed).
 */
export function authorityAllows(
  manifest: Manifest,
  operation: PolicyOperation,
  governance: string,
  now?: number,
): boolean {
  const inForce = currentPolicy(manifest);
  if (inForce === undefined) return true;
  if (expired(inForce, now)) return false;
  const { scope, purpose } = scopeOf(governance);
  return inForce.decider.allows(operation, scope, purpose);
}

/** The AUTHORITY_DENIED error for `operation` on `what` (a record, or a governance state to write). */
export function authorityDenied(manifest: Manifest, operation: PolicyOperation, governance: string, what: string) {
  const inForce = currentPolicy(manifest)!;
  const { scope } = scopeOf(governance);
  return new PqdbError(
    'AUTHORITY_DENIED',
    expired(inForce)
      ? `authority policy version ${inForce.policy.version} expired at ${inForce.policy.expires}: install a newer one (store.setPolicy)`
      : `authority policy version ${inForce.policy.version} does not allow ${operation} for ${what} (scope ${
          scope === undefined ? 'none' : JSON.stringify(scope)
        })`,
  );
}
