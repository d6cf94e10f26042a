// Signed authority policies (src/crypto/policy.ts): the signed form, signatures under the pinned
// authority keys with a threshold, expiry, the exactly-previous-plus-one rule, strict validation of
// what the medium gives, and compiled decisions checked against a direct reading of the rules.
import { describe, it, expect } from 'vitest';
import { generateSigner, generateRecipient, openStore, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import {
  signPolicy,
  verifyPolicy,
  checkSuccessor,
  compilePolicy,
  rfc3339,
  type PolicyDocument,
} from '../src/crypto/policy';
import { ml_dsa87 } from '../src/kernels/mldsa';
import { signerKeyId } from '../src/crypto/proofs';
import { engineOf as partsOf } from '../src/engine/store';
import { b64 } from '../src/_encoding';
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
    const signers = ['k1'];
    expect(() => checkSuccessor(undefined, { version: 1, signers })).not.toThrow();
    expect(() => checkSuccessor({ version: 3 }, { version: 4, signers })).not.toThrow();
    expect(() => checkSuccessor({ version: 3 }, { version: 3, signers })).toThrow(
      expect.objectContaining({ code: 'ROLLBACK' }),
    );
    expect(() => checkSuccessor({ version: 3 }, { version: 2, signers })).toThrow(
      expect.objectContaining({ code: 'ROLLBACK' }),
    );
    expect(() => checkSuccessor({ version: 3 }, { version: 5, signers })).toThrow(
      expect.objectContaining({ code: 'CONFLICT' }),
    );
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
    signPolicy(
      { version, rules: [{ scope: 'billing', allow: ['read'] }], domain: 'test', ...extra },
      a.secretKey,
      a.publicKey,
    );

  it('accepts policies the pinned key signed, in version order, and keeps the newest across reopen', async () => {
    const medium = new MemoryMedium();
    let store = await open(medium, { create: true, authorityPublicKey: a.publicKey, authorityDomain: 'test' });
    expect(store.policy()).toBeUndefined();
    await expect(store.setPolicy(v(2))).rejects.toMatchObject({ code: 'CONFLICT' });
    expect((await store.setPolicy(v(1))).version).toBe(1);
    await expect(store.setPolicy(v(1))).rejects.toMatchObject({ code: 'ROLLBACK' });
    const wrong = signPolicy({ version: 2, rules: [], domain: 'test' }, b.secretKey, b.publicKey);
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
    let store = await open(medium, { create: true, authorityPublicKey: a.publicKey, authorityDomain: 'test' });
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

/** A signed policy over exactly `body` (any bytes), as signPolicy frames it: for bodies it never writes. */
function signRaw(body: string, ...keys: { secretKey: Uint8Array; publicKey: Uint8Array }[]): Uint8Array {
  const b = new TextEncoder().encode(body);
  const msg = new Uint8Array(9 + b.length);
  msg.set([0x50, 0x51, 0x41, 0x50, 1]);
  new DataView(msg.buffer).setUint32(5, b.length);
  msg.set(b, 9);
  const context = new TextEncoder().encode('pqdb authority policy v1');
  const sigs = keys.map((k) => [...signerKeyId(k.publicKey), ...ml_dsa87.sign(msg, k.secretKey, { context })]);
  return new Uint8Array([...msg, keys.length, ...sigs.flat()]);
}

describe('thresholds follow TUF: the version in force and the new one (#27)', () => {
  const r = generateRecipient('classical');
  const keys = [a.publicKey, b.publicKey, c.publicKey];
  const rules = [{ scope: '*', allow: ['read', 'write'] }] as const;
  const cosign = (d: PolicyDocument, ...by: (typeof a)[]) =>
    by.reduce<Uint8Array | undefined>((s, k) => signPolicy(d, k.secretKey, k.publicKey, s), undefined)!;
  const create = async (extra: Record<string, unknown> = {}) => {
    const storage = await openMemoryPageStore({ medium: new MemoryMedium() });
    const store = await openStore({
      storage,
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey,
      authorityPublicKey: keys,
      authorityDomain: 'prod',
      ...extra,
    });
    return { store, close: () => store.close().then(() => storage.close()) };
  };

  it('one key holder cannot lower a threshold of 2 of 3: v2 needs 2 signers of the pinned keys', async () => {
    const { store, close } = await create();
    await store.setPolicy(cosign({ version: 1, rules, threshold: 2, domain: 'prod' }, a, b));
    // v2 without a threshold (its own: 1), signed by one key: the threshold in force says 2.
    const lowered = { version: 2, rules: [{ scope: '*', allow: ['read'] }], domain: 'prod' } as PolicyDocument;
    await expect(store.setPolicy(cosign(lowered, a))).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    // A second signature by a key the store does not pin does not count toward the old threshold.
    await expect(store.setPolicy(cosign(lowered, a, generateSigner()))).rejects.toMatchObject({
      code: 'AUTH_FAILED',
    });
    expect(store.policy()?.version).toBe(1);
    expect(store.policy()?.threshold).toBe(2);
    // Two pinned keys may lower it; then one key suffices for v3.
    expect((await store.setPolicy(cosign(lowered, b, c))).version).toBe(2);
    expect((await store.setPolicy(cosign({ ...lowered, version: 3 }, c))).version).toBe(3);
    // Raising it needs the new threshold too: v4 of threshold 3 signed by two is refused.
    const raised = { version: 4, rules, threshold: 3, domain: 'prod' } as PolicyDocument;
    await expect(store.setPolicy(cosign(raised, a, b))).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    expect((await store.setPolicy(cosign(raised, a, b, c))).version).toBe(4);
    await close();
  });

  it('the first policy needs the threshold the store pins (authorityThreshold, default 1)', async () => {
    const { store, close } = await create({ authorityThreshold: 2 });
    const v1 = { version: 1, rules, domain: 'prod' } as PolicyDocument;
    await expect(store.setPolicy(cosign(v1, a))).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    expect(store.policy()).toBeUndefined();
    expect((await store.setPolicy(cosign(v1, a, c))).signers).toHaveLength(2);
    await close();
    const plain = await create();
    expect((await plain.store.setPolicy(cosign(v1, b))).version).toBe(1);
    await plain.close();
    // A pinned threshold the sealed manifest holds is checked as it is read.
    const medium = new MemoryMedium();
    let storage = await openMemoryPageStore({ medium });
    const opts = { storage, recipients: [r.publicKey], unlock: r.secretKey };
    const bad = await openStore({ ...opts, create: true, authorityPublicKey: keys });
    await partsOf(bad).pipeline.run((draft) => {
      draft.manifest.authority = { ...draft.manifest.authority!, threshold: 4 };
    });
    await bad.close();
    await storage.close();
    storage = await openMemoryPageStore({ medium });
    await expect(openStore({ ...opts, storage })).rejects.toMatchObject({ code: 'CORRUPTION' });
    await storage.close();
    await expect(create({ authorityThreshold: 4 })).rejects.toThrow(RangeError);
    await expect(create({ authorityThreshold: 0 })).rejects.toThrow(RangeError);
    await expect(create({ authorityPublicKey: undefined, authorityThreshold: 1 })).rejects.toThrow(TypeError);
  });

  it('a co-signature is added only to a body that is checked again', () => {
    const dup = signRaw('{"version":1,"rules":[],"rules":[{"scope":"*","allow":["read"]}]}', a);
    expect(() => signPolicy(doc, b.secretKey, b.publicKey, dup)).toThrow(
      expect.objectContaining({ code: 'CORRUPTION' }),
    );
    const good = signRaw('{"version":1,"rules":[]}', a);
    expect(
      verifyPolicy(signPolicy(doc, b.secretKey, b.publicKey, good), [a.publicKey, b.publicKey]).signers,
    ).toHaveLength(2);
  });
});

describe('policies name the stores they govern (#27)', () => {
  const r = generateRecipient('classical');
  const rules = [{ scope: '*', allow: ['read', 'write'] }] as const;
  const create = async (medium: MemoryMedium, extra: Record<string, unknown> = {}) => {
    const storage = await openMemoryPageStore({ medium });
    try {
      const store = await openStore({ storage, recipients: [r.publicKey], unlock: r.secretKey, ...extra });
      return { store, close: () => store.close().then(() => storage.close()) };
    } catch (e) {
      await storage.close();
      throw e;
    }
  };
  const sign = (d: Partial<PolicyDocument>) =>
    signPolicy({ version: 1, rules, ...d } as PolicyDocument, a.secretKey, a.publicKey);

  it('a policy signed for a test store does not install in production, which pins the same authority', async () => {
    const prod = await create(new MemoryMedium(), {
      create: true,
      authorityPublicKey: a.publicKey,
      authorityDomain: 'prod',
    });
    const test = await create(new MemoryMedium(), {
      create: true,
      authorityPublicKey: a.publicKey,
      authorityDomain: 'test',
    });
    const testId = test.store.info().storeId;
    for (const signed of [sign({ domain: 'test' }), sign({ stores: [testId] }), sign({})])
      await expect(prod.store.setPolicy(signed)).rejects.toMatchObject({ code: 'AUTHORITY_DENIED' });
    expect(prod.store.policy()).toBeUndefined();
    expect((await test.store.setPolicy(sign({ stores: [testId] }))).stores).toEqual([testId]);
    // By id, or by the domain the store pins; a store pinning no domain only by id.
    expect((await prod.store.setPolicy(sign({ domain: 'prod' }))).domain).toBe('prod');
    const bare = await create(new MemoryMedium(), { create: true, authorityPublicKey: a.publicKey });
    await expect(bare.store.setPolicy(sign({ domain: 'prod' }))).rejects.toMatchObject({ code: 'AUTHORITY_DENIED' });
    const id = bare.store.info().storeId;
    expect((await bare.store.setPolicy(sign({ stores: [testId, id] }))).version).toBe(1);
    for (const s of [prod, test, bare]) await s.close();
    expect(() => sign({ stores: ['XYZ'] })).toThrow(TypeError);
    expect(() => sign({ stores: [] })).toThrow(TypeError);
    expect(() => sign({ domain: '' })).toThrow(TypeError);
  });

  it('an installed policy that names no store stays in force; one naming other stores is refused at open', async () => {
    const medium = new MemoryMedium();
    let s = await create(medium, { create: true, authorityPublicKey: a.publicKey });
    const storeId = s.store.info().storeId;
    // As an older release installed it: a policy naming no store, written into the manifest.
    const legacy = sign({});
    await partsOf(s.store).pipeline.run((draft) => {
      draft.manifest.authority = { ...draft.manifest.authority!, policy: b64(legacy) };
    });
    await s.close();
    s = await create(medium);
    expect(s.store.policy()?.version).toBe(1);
    await expect(s.store.setPolicy(sign({ version: 2 }))).rejects.toMatchObject({ code: 'AUTHORITY_DENIED' });
    expect((await s.store.setPolicy(sign({ version: 2, stores: [storeId] }))).version).toBe(2);
    // A policy naming another store, in the manifest, does not govern it: the open refuses.
    await partsOf(s.store).pipeline.run((draft) => {
      draft.manifest.authority = { ...draft.manifest.authority!, policy: b64(sign({ version: 3, domain: 'else' })) };
    });
    await s.close();
    await expect(create(medium)).rejects.toMatchObject({ code: 'AUTHORITY_DENIED' });
  });
});

describe('policy bodies are canonical; expiries are RFC 3339 (#27)', () => {
  it('refuse a repeated key, another key order, other spacing: only the bytes signPolicy writes', () => {
    const canonical = '{"version":1,"rules":[{"scope":"*","allow":["read"]}]}';
    expect(verifyPolicy(signRaw(canonical, a), [a.publicKey]).rules).toEqual([{ scope: '*', allow: ['read'] }]);
    for (const body of [
      '{"version":1,"rules":[],"rules":[{"scope":"*","allow":["read"]}]}', // a first-key reader sees no rule
      '{"version":1,"rules":[{"scope":"*","allow":["read"],"allow":[]}]}',
      '{"rules":[{"scope":"*","allow":["read"]}],"version":1}',
      '{"version":1, "rules":[{"scope":"*","allow":["read"]}]}',
      '{"version":1,"rules":[{"scope":"*","allow":["read","read"]}]}',
      '{"version":1,"rules":[{"scope":"\\u002a","allow":["read"]}]}',
      '{"version":1,"rules":[],"expires":"2035-01-01T00:00:00Z"}',
    ])
      expect(() => verifyPolicy(signRaw(body, a), [a.publicKey]), body).toThrow(
        expect.objectContaining({ code: 'CORRUPTION' }),
      );
  });

  it('read an expiry only as an RFC 3339 date-time with Z or an offset, on the real calendar', () => {
    for (const bad of [
      '1',
      '2030',
      '2030-01-01',
      '2030-02-31T00:00:00Z',
      '2023-02-29T00:00:00Z',
      '1900-02-29T00:00:00Z',
      '2030-04-31T00:00:00Z',
      '2030-13-01T00:00:00Z',
      '2030-01-01T24:00:00Z',
      '2030-01-01T00:60:00Z',
      '2030-01-01T00:00:60Z',
      '2030-01-01T00:00:00',
      '2030-01-01 00:00:00Z',
      '2030-01-01T00:00:00+0200',
      '2030-01-01T00:00:00+24:00',
      'Tue, 01 Jan 2030 00:00:00 GMT',
      ' 2030-01-01T00:00:00Z',
    ]) {
      expect(rfc3339(bad), bad).toBeUndefined();
      expect(() => signPolicy({ version: 1, rules: [], expires: bad }, a.secretKey, a.publicKey), bad).toThrow(
        TypeError,
      );
    }
    expect(rfc3339('2024-02-29T12:00:00Z')).toBe(Date.UTC(2024, 1, 29, 12));
    expect(rfc3339('2000-02-29T00:00:00.5z')).toBe(Date.UTC(2000, 1, 29, 0, 0, 0, 500));
    expect(rfc3339('2030-01-01T02:00:00+02:00')).toBe(Date.UTC(2030, 0, 1));
    expect(rfc3339('2029-12-31T19:30:00-04:30')).toBe(Date.UTC(2030, 0, 1));
    expect(rfc3339('0050-06-01T00:00:00Z')).toBe(new Date('0050-06-01T00:00:00Z').getTime());
    const signed = signPolicy(
      { version: 1, rules: [], expires: '2030-01-01T02:00:00+02:00' },
      a.secretKey,
      a.publicKey,
    );
    expect(verifyPolicy(signed, [a.publicKey], 0).expires).toBe('2030-01-01T00:00:00.000Z');
    // A signed body with a date Date.parse would read ("1": 2001) is refused.
    expect(() => verifyPolicy(signRaw('{"version":1,"rules":[],"expires":"1"}', a), [a.publicKey], 0)).toThrow(
      expect.objectContaining({ code: 'CORRUPTION' }),
    );
  });
});
