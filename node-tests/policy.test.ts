// Signed authority policies (src/crypto/policy.ts): the signed form, signatures under the pinned
// authority keys with a threshold, expiry, the exactly-previous-plus-one rule, strict validation of
// what the medium gives, and compiled decisions checked against a direct reading of the rules.
import { describe, it, expect } from 'vitest';
import { generateSigner, generateRecipient, openStore, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { signPolicy, verifyPolicy, checkSuccessor, compilePolicy, type PolicyDocument } from '../src/crypto/policy';
import { Rng } from './cases/_util';

const a = generateSigner();
const b = generateSigner();
const c = generateSigner();
const doc: PolicyDocument = {
  version: 2,
  rules: [
    { scope: 'billing', allow: ['read', 'write', 'migrate', 'restore'] },
    { scope: 'hr', purposes: ['payroll'], allow: ['read'] },
    { scope: '*', allow: ['read'] },
  ],
};

describe('signed policies', () => {
  it('verify under a pinned key, in canonical form, and say who signed', () => {
    const signed = signPolicy(doc, a.secretKey, a.publicKey);
    const p = verifyPolicy(signed, [b.publicKey, a.publicKey]);
    expect(p.version).toBe(2);
    expect(p.rules).toEqual(doc.rules);
    expect(p.signers).toHaveLength(1);
    expect(p.signed).toEqual(signed);
    // The same document in another key order or with repeats signs the same body.
    const shuffled = { rules: [...doc.rules], version: 2 } as PolicyDocument;
    expect(signPolicy(shuffled, a.secretKey, a.publicKey).subarray(0, 200)).toEqual(signed.subarray(0, 200));
  });

  it('refuse another signer, a flipped byte anywhere, a missing threshold, an expired policy', () => {
    const signed = signPolicy(doc, a.secretKey, a.publicKey);
    expect(() => verifyPolicy(signed, [b.publicKey])).toThrow(expect.objectContaining({ code: 'AUTH_FAILED' }));
    for (const at of [0, 4, 7, 20, signed.length - 100, signed.length - 4700]) {
      const bad = signed.slice();
      bad[at] ^= 1;
      expect(() => verifyPolicy(bad, [a.publicKey])).toThrow(expect.objectContaining({ name: 'PqdbError' }));
    }
    expect(() => verifyPolicy(signed.subarray(0, signed.length - 1), [a.publicKey])).toThrow(
      expect.objectContaining({ code: 'CORRUPTION' }),
    );
    const two = { ...doc, threshold: 2 };
    const once = signPolicy(two, a.secretKey, a.publicKey);
    expect(() => verifyPolicy(once, [a.publicKey, b.publicKey])).toThrow(
      expect.objectContaining({ code: 'AUTH_FAILED' }),
    );
    expect(() => signPolicy(two, a.secretKey, a.publicKey, once)).toThrow(TypeError); // one key counts once
    const twice = signPolicy(two, b.secretKey, b.publicKey, once);
    expect(verifyPolicy(twice, [a.publicKey, b.publicKey]).signers).toHaveLength(2);
    // A signature by a key that is not pinned does not count.
    const third = signPolicy(two, c.secretKey, c.publicKey, once);
    expect(() => verifyPolicy(third, [a.publicKey, b.publicKey])).toThrow(
      expect.objectContaining({ code: 'AUTH_FAILED' }),
    );
    const expired = signPolicy({ ...doc, expires: '2026-01-01T00:00:00Z' }, a.secretKey, a.publicKey);
    expect(() => verifyPolicy(expired, [a.publicKey], Date.parse('2026-06-01'))).toThrow(
      expect.objectContaining({ code: 'AUTHORITY_DENIED' }),
    );
    expect(verifyPolicy(expired, [a.publicKey], Date.parse('2025-06-01')).expires).toBe('2026-01-01T00:00:00.000Z');
  });

  it('refuse malformed documents when signing', () => {
    const bad: unknown[] = [
      { version: 0, rules: [] },
      { version: 1.5, rules: [] },
      { version: 1, rules: {} },
      { version: 1, rules: [{ scope: '', allow: [] }] },
      { version: 1, rules: [{ scope: 'x', allow: ['delete'] }] },
      {
        version: 1,
        rules: [
          { scope: 'x', allow: [] },
          { scope: 'x', allow: ['read'] },
        ],
      },
      { version: 1, rules: [{ scope: 'x', allow: [], extra: 1 }] },
      { version: 1, rules: [], expires: 'soon' },
      { version: 1, rules: [], threshold: 0 },
      { version: 1, rules: [], owner: 'me' },
    ];
    for (const d of bad) expect(() => signPolicy(d as PolicyDocument, a.secretKey, a.publicKey)).toThrow(TypeError);
  });

  it('accept only the next version', () => {
    expect(() => checkSuccessor(undefined, { version: 1 })).not.toThrow();
    expect(() => checkSuccessor({ version: 3 }, { version: 4 })).not.toThrow();
    expect(() => checkSuccessor({ version: 3 }, { version: 3 })).toThrow(expect.objectContaining({ code: 'ROLLBACK' }));
    expect(() => checkSuccessor({ version: 3 }, { version: 2 })).toThrow(expect.objectContaining({ code: 'ROLLBACK' }));
    expect(() => checkSuccessor({ version: 3 }, { version: 5 })).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
  });
});

describe('compiled decisions', () => {
  it('equal a direct reading of the rules on random policies and requests', () => {
    const rng = new Rng(16);
    const ops = ['read', 'write', 'migrate', 'restore'] as const;
    const scopes = ['a', 'b', 'c', '*'];
    const purposes = ['p', 'q', 'r'];
    for (let t = 0; t < 200; t++) {
      const rules: PolicyDocument['rules'][number][] = [];
      for (const scope of scopes) {
        if (rng.int(3) === 0) continue;
        const allow = ops.filter(() => rng.int(2) === 0);
        if (rng.int(2) === 0) rules.push({ scope, allow });
        else rules.push({ scope, purposes: purposes.filter(() => rng.int(2) === 0).concat('p'), allow });
      }
      const d = compilePolicy({ version: 1, rules });
      const oracle = (op: string, scope: string | undefined, purpose?: string): boolean => {
        const ruled = (s: string) => rules.filter((r) => r.scope === s);
        let rs = scope === undefined ? [] : ruled(scope);
        if (rs.length === 0) rs = ruled('*');
        const byPurpose = rs.find(
          (r) => r.purposes !== undefined && purpose !== undefined && r.purposes.includes(purpose),
        );
        const plain = rs.find((r) => r.purposes === undefined);
        const r = byPurpose ?? plain;
        return r !== undefined && (r.allow as readonly string[]).includes(op);
      };
      for (const op of ops)
        for (const scope of [...scopes, 'zzz', undefined])
          for (const purpose of [...purposes, undefined])
            expect(d.allows(op, scope, purpose)).toBe(oracle(op, scope, purpose));
    }
  });
});

describe('a store pins its authority', () => {
  const r = generateRecipient('classical');
  /** Opens the store on `medium`; closing it closes its page store too, and a failed open frees it. */
  const open = async (medium: MemoryMedium, extra: Record<string, unknown> = {}) => {
    const storage = await openMemoryPageStore({ medium });
    try {
      const store = await openStore({ storage, recipients: [r.publicKey], unlock: r.secretKey, ...extra });
      const close = store.close.bind(store);
      store.close = async () => {
        await close();
        await storage.close();
      };
      return store;
    } catch (e) {
      await storage.close();
      throw e;
    }
  };
  const v = (version: number, extra: Partial<PolicyDocument> = {}) =>
    signPolicy({ version, rules: [{ scope: 'billing', allow: ['read'] }], ...extra }, a.secretKey, a.publicKey);

  it('accepts policies the pinned key signed, in version order, and keeps the newest across reopen', async () => {
    const medium = new MemoryMedium();
    let store = await open(medium, { create: true, authorityPublicKey: a.publicKey });
    expect(store.policy()).toBeUndefined();
    await expect(store.setPolicy(v(2))).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await store.setPolicy(v(1))).version).toBe(1);
    await expect(store.setPolicy(v(1))).rejects.toMatchObject({ code: 'ROLLBACK' });
    const wrong = signPolicy({ version: 2, rules: [] }, b.secretKey, b.publicKey);
    await expect(store.setPolicy(wrong)).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await expect(store.setPolicy(v(2, { expires: '2020-01-01T00:00:00Z' }))).rejects.toMatchObject({
      code: 'AUTHORITY_DENIED',
    });
    const commit = store.info().commit;
    await store.setPolicy(v(2));
    expect(store.info().commit).toBe(commit + 1); // one commit through the pipeline
    await store.close();
    store = await open(medium, { authorityPublicKey: a.publicKey });
    expect(store.policy()?.version).toBe(2);
    expect(store.policy()?.rules).toEqual([{ scope: 'billing', allow: ['read'] }]);
    await store.close();
    // Another authority key named on open is refused; none named opens as before.
    await expect(open(medium, { authorityPublicKey: b.publicKey })).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    store = await open(medium);
    expect(store.policy()?.version).toBe(2);
    await store.close();
  });

  it('a store created without an authority key takes no policy and gains no key later', async () => {
    const medium = new MemoryMedium();
    const store = await open(medium, { create: true });
    await expect(store.setPolicy(v(1))).rejects.toMatchObject({ code: 'AUTHORITY_DENIED' });
    await store.close();
    await expect(open(medium, { authorityPublicKey: a.publicKey })).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await expect(open(medium, { authorityPublicKey: new Uint8Array(3) })).rejects.toThrow(TypeError);
  });

  it('an older manifest put back brings back the older policy only without a freshness pin', async () => {
    const medium = new MemoryMedium();
    let store = await open(medium, { create: true, authorityPublicKey: a.publicKey });
    await store.setPolicy(v(1));
    const old = { pages: new Map(medium.pages), manifest: medium.manifest };
    await store.setPolicy(v(2));
    const { commit } = store.info();
    await store.close();
    medium.pages.clear();
    for (const [id, p] of old.pages) medium.pages.set(id, p);
    medium.manifest = old.manifest;
    await expect(open(medium, { minCommit: commit })).rejects.toMatchObject({ code: 'ROLLBACK' });
    store = await open(medium);
    expect(store.policy()?.version).toBe(1); // consistent but older: info().commit says so
    expect(store.info().commit).toBeLessThan(commit);
    await store.close();
  });
});
