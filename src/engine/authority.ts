// Current authority in the store (DESIGN §9, docs/authority.md): the authority keys pinned at
// creation (with, optionally, a threshold for the first policy and a domain) and the signed policy
// in force, all in the sealed manifest body. A new policy is accepted only if the pinned keys signed
// it to its own threshold and to the threshold in force, it has not expired, it names this store
// (or the domain it pins), and its version is exactly the current one + 1; an older signed policy
// put back cannot replace a newer one, and the manifest that names the current one is itself sealed
// and rollback-pinned.

import { PqdbError } from '../errors';
import { equalBytes } from '../_bytes';
import { checkSuccessor, compilePolicy, verifyPolicy, type Policy, type PolicyDecider } from '../crypto/policy';
import type { PolicyOperation } from '../crypto/policy';
import { type Manifest } from './manifest';
import type { CommitPipeline } from './commit';
import { b64, unb64 } from '../_encoding';

/** The pinned keys given to openStore, as a list (undefined: none given). */
export function authorityKeysOf(option: Uint8Array | readonly Uint8Array[] | undefined): Uint8Array[] | undefined {
  if (option === undefined) return undefined;
  const keys = option instanceof Uint8Array ? [option] : [...option];
  if (keys.length === 0 || keys.length > 16 || keys.some((k) => !(k instanceof Uint8Array) || k.length !== 2592))
    throw new TypeError('"authorityPublicKey" expected 1 to 16 ML-DSA-87 public keys (Uint8Array of length 2592)');
  return keys;
}

/** The pinned threshold and domain given to openStore at creation, checked. */
export function pinnedOptions(
  keys: Uint8Array[] | undefined,
  threshold: unknown,
  domain: unknown,
): { threshold?: number; domain?: string } {
  if (threshold === undefined && domain === undefined) return {};
  if (keys === undefined)
    throw new TypeError(
      '"authorityThreshold" and "authorityDomain" need "authorityPublicKey" (the keys they apply to)',
    );
  if (
    threshold !== undefined &&
    (!Number.isSafeInteger(threshold) || (threshold as number) < 1 || (threshold as number) > keys.length)
  )
    throw new RangeError(`"authorityThreshold" expected an integer from 1 to ${keys.length} (the pinned keys)`);
  if (domain !== undefined && (typeof domain !== 'string' || domain.length === 0 || domain.length > 256))
    throw new TypeError('"authorityDomain" expected a non-empty string of at most 256 characters');
  return {
    ...(threshold !== undefined ? { threshold: threshold as number } : {}),
    ...(domain !== undefined ? { domain: domain as string } : {}),
  };
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

/** The threshold the store pins for its first policy (default 1), checked as read. */
function pinnedThresholdOf(a: NonNullable<Manifest['authority']>): number {
  const t = a.threshold ?? 1;
  if (!Number.isSafeInteger(t) || t < 1 || t > a.keys.length)
    throw new PqdbError('CORRUPTION', 'the manifest has a bad authority threshold');
  return t;
}

/**
 * Whether `policy` names the store of `manifest`: its id in `stores`, or the domain the store pins.
 * A policy naming neither governs no store (policies signed before stores were named are kept
 * where they are installed, never installed anew).
 */
export function policyGoverns(policy: Pick<Policy, 'stores' | 'domain'>, manifest: Manifest): boolean {
  const domain = manifest.authority?.domain;
  return (
    (policy.stores?.includes(manifest.storeId) ?? false) ||
    (policy.domain !== undefined && typeof domain === 'string' && policy.domain === domain)
  );
}

const notGoverned = (policy: Policy, manifest: Manifest) => {
  const domain = manifest.authority?.domain;
  return new PqdbError(
    'AUTHORITY_DENIED',
    `policy version ${policy.version} does not govern this store: it names ${
      policy.stores === undefined && policy.domain === undefined
        ? 'no store'
        : [
            ...(policy.stores !== undefined ? [`stores ${policy.stores.join(', ')}`] : []),
            ...(policy.domain !== undefined ? [`domain ${JSON.stringify(policy.domain)}`] : []),
          ].join(' and ')
    }; this store is ${manifest.storeId}${domain !== undefined ? `, domain ${JSON.stringify(domain)}` : ', no domain'}`,
  );
};

/**
 * The policy in force of a store being opened: its signatures verified, and bound to this store. A
 * policy that names stores or a domain must name this one — unless the store was made by a restore,
 * which applies the live store's policy (docs/authority.md). One that names none was installed
 * before policies named stores and stays in force where it is.
 * @throws PqdbError AUTHORITY_DENIED for a policy of other stores, AUTH_FAILED, CORRUPTION
 */
export function openedPolicy(manifest: Manifest): Policy | undefined {
  const inForce = currentPolicy(manifest);
  if (inForce === undefined) return undefined;
  const p = inForce.policy;
  const named = p.stores !== undefined || p.domain !== undefined;
  const restored = (manifest.copies ?? []).some((c) => c.kind === 'restore');
  if (named && !restored && !policyGoverns(p, manifest)) throw notGoverned(p, manifest);
  return p;
}

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
 * Verifies `signed` as the successor of the policy in force and writes it into the draft manifest:
 * signed by the pinned keys to its own threshold and to the one in force (the store's pinned
 * threshold for the first), naming this store or the domain it pins, version current + 1.
 * @throws PqdbError AUTHORITY_DENIED (no pinned key, expired, or not naming this store),
 * AUTH_FAILED, ROLLBACK, CONFLICT, CORRUPTION
 */
export function installPolicy(manifest: Manifest, signed: Uint8Array, now = Date.now()): Policy {
  const a = manifest.authority;
  if (a === undefined)
    throw new PqdbError(
      'AUTHORITY_DENIED',
      'this store pins no authority key: it was created without authorityPublicKey',
    );
  const next = verifyPolicy(signed, a.keys.map(unb64), now);
  checkSuccessor(currentPolicy(manifest)?.policy, next, pinnedThresholdOf(a));
  if (!policyGoverns(next, manifest)) throw notGoverned(next, manifest);
  manifest.authority = { ...a, policy: b64(signed) };
  return next;
}

/** Installs signed policy `signed` in a commit of its own (installPolicy); resolves with it. */
export async function setPolicy(pipeline: Pick<CommitPipeline, 'run'>, signed: Uint8Array): Promise<Policy> {
  let installed!: Policy;
  await pipeline.run((draft) => void (installed = installPolicy(draft.manifest, signed)));
  return installed;
}

/** The manifest entry a new store starts with. */
export const pinnedAuthority = (
  keys: Uint8Array[] | undefined,
  pinned: { threshold?: number; domain?: string } = {},
): Manifest['authority'] => (keys === undefined ? undefined : { keys: keys.map(b64), ...pinned });

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
 * newer one is installed). Asked through the registered gates only (src/engine/gates.ts).
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
