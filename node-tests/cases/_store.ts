// Fixtures and helpers for the platform-neutral store cases (cases/proofs.ts, cases/search.ts):
// run by vitest in Node (memory, node-fs, IndexedDB over fake-indexeddb) and inside a Chromium page
// by Playwright (the bundled dist/browser.js on real IndexedDB). No test-framework imports: a case
// is an async function that throws on failure.

import type { Store, StoreOptions } from '../../src/engine/store';
import type { PageStore } from '../../src/storage/page-store';
import { summary, type Summary } from './_util';

type KeyPair = { publicKey: Uint8Array; secretKey: Uint8Array };

/** The authority domain the stores of governedKeys pin, and their policies name. */
export const TEST_DOMAIN = 'pqdb-tests';

/**
 * A case file's keys: a recipient, an authority whose key the stores pin (and, with `signer`,
 * checkpoint signer keys), the create options naming them (and the authority domain the stores pin),
 * and a signer of policy documents (naming that domain unless the document names stores or one).
 */
export function governedKeys<D>(
  api: {
    generateRecipient(): KeyPair;
    generateSigner(): KeyPair;
    signPolicy(doc: D, secretKey: Uint8Array, publicKey: Uint8Array): Uint8Array;
  },
  signer: boolean,
): { recipient: KeyPair; authority: KeyPair; signer?: KeyPair; options: StoreOptions; sign(doc: D): Uint8Array } {
  const authority = api.generateSigner();
  const recipient = api.generateRecipient();
  const keys = signer ? api.generateSigner() : undefined;
  const options: StoreOptions = {
    create: true,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    ...(keys !== undefined ? { signer: keys.secretKey, signerPublicKey: keys.publicKey } : {}),
    authorityPublicKey: authority.publicKey,
    authorityDomain: TEST_DOMAIN,
  };
  const sign = (doc: D) => {
    const d = doc as { stores?: unknown; domain?: unknown };
    const named = d.stores !== undefined || d.domain !== undefined ? doc : ({ ...doc, domain: TEST_DOMAIN } as D);
    return api.signPolicy(named, authority.secretKey, authority.publicKey);
  };
  return { recipient, authority, ...(keys !== undefined ? { signer: keys } : {}), options, sign };
}

/** One store location. Every case gets a fresh one. */
export interface StoreFixture {
  /** Opens the store at this location with `options` (the same location every call: close + open is a reopen). */
  open(options: StoreOptions): Promise<Store>;
  /** Opens the location's page store for reading (no store open on it), as a verifier does. */
  pages(): Promise<PageStore>;
  /** Removes the location (every store opened on it is closed first). */
  dispose(): Promise<void>;
}

export type StoreFixtureFactory = () => Promise<StoreFixture>;

export interface StoreCase {
  readonly name: string;
  readonly run: () => Promise<void>;
}

export class CheckFailed extends Error {}

export function ok(cond: unknown, what: string): asserts cond {
  if (!cond) throw new CheckFailed(what);
}

/** Equal as JSON with keys sorted (the values these cases store: strings and numbers). */
export function sameValue(a: unknown, b: unknown): boolean {
  const canon = (v: unknown): string =>
    JSON.stringify(v, (_k, x) =>
      x !== null && typeof x === 'object' && !Array.isArray(x)
        ? Object.fromEntries(Object.entries(x).sort(([p], [q]) => (p < q ? -1 : 1)))
        : x,
    );
  return canon(a) === canon(b);
}

/** Awaits `p` and returns what it rejected with, or fails when it resolved. */
export async function rejection(
  p: Promise<unknown>,
  what: string,
): Promise<{ name?: string; code?: string; message?: string }> {
  try {
    await p;
  } catch (e) {
    return e as { name?: string; code?: string; message?: string };
  }
  throw new CheckFailed(`${what}: expected a rejection, but it succeeded`);
}

/** Wraps `body` so that it runs on a fresh fixture and always closes what it opened and disposes it. */
export function withStore(
  factory: StoreFixtureFactory,
  body: (open: (options: StoreOptions) => Promise<Store>, fixture: StoreFixture) => Promise<void>,
) {
  return async (): Promise<void> => {
    const f = await factory();
    const opened: Store[] = [];
    try {
      await body(async (options) => {
        const s = await f.open(options);
        opened.push(s);
        return s;
      }, f);
    } finally {
      for (const s of opened) await s.close().catch(() => undefined);
      await f.dispose();
    }
  };
}

/** Runs every case and returns one Summary (for the browser page and plain runners). */
export async function runStoreCases(name: string, cases: readonly StoreCase[]): Promise<Summary> {
  const s = summary(name);
  for (const c of cases) {
    s.total++;
    try {
      await c.run();
      s.passed++;
    } catch (e) {
      s.failures.push(
        `${c.name}: ${e instanceof Error ? `${e.name === 'Error' || e instanceof CheckFailed ? '' : e.name + ' '}${e.message}` : String(e)}`,
      );
    }
  }
  return s;
}
