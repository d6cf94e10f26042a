// The managed-copy cases of node-tests/cases/copies.ts on memory, node-fs (directories by name) and
// IndexedDB (fake-indexeddb); Playwright runs them on Chromium's real IndexedDB
// (browser-tests/proofs.spec.mjs). Here too, on node-fs: a forked copy (the store's files copied,
// written on their own and backed up) and an altered copy are refused.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, signPolicy, verifyStore, restoreStore, openStore } from '../src/node';
import { engineOf as partsOf } from '../src/engine/store';
import { copiesCases } from './cases/copies';
import { STORE_FIXTURES, nodeFsStoreFixture, type NodeFsStoreFixture } from './support/store-fixtures';
import type { StoreFixture } from './cases/_store';

const where = async (f: StoreFixture, mode: 'create' | 'read') =>
  'dir' in f
    ? (f as NodeFsStoreFixture).dir
    : mode === 'create'
      ? (f as NodeFsStoreFixture).writablePages()
      : (f as NodeFsStoreFixture).writablePages();

describe.each(STORE_FIXTURES)('managed copies and restore (%s)', (_name, factory) => {
  for (const c of copiesCases(factory, {
    generateRecipient,
    generateSigner,
    signPolicy,
    verifyStore,
    restoreStore,
    where,
  }))
    it(c.name, c.run);
});

/** The keys of the node-fs stores below. */
const r = generateRecipient();
const s = generateSigner();
const options = {
  create: true,
  recipients: [r.publicKey],
  unlock: r.secretKey,
  signer: s.secretKey,
  signerPublicKey: s.publicKey,
};

describe('copies that are not of the live history (node-fs)', () => {
  it('a forked copy (its newest checkpoint is not in the live chain) and an altered copy are refused', async () => {
    const live = await nodeFsStoreFixture();
    const places = [await nodeFsStoreFixture(), await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    try {
      const store = await live.open(options);
      const docs = store.collection('d', { schema: { v: 'string' } });
      await docs.put('a', { v: 'a' });
      await store.checkpoint();
      await store.close();
      // A fork: the files copied, then written and checkpointed on their own, then backed up.
      const fork = await live.copy();
      places.push(fork);
      const forked = await fork.open(options);
      await forked.collection('d', { schema: { v: 'string' } }).put('b', { v: 'forked' });
      await forked.backup(places[0].dir);
      await forked.close();
      const again = await live.open({ ...options, create: false });
      await again.collection('d', { schema: { v: 'string' } }).put('b', { v: 'live' });
      await again.checkpoint();
      await expect(
        restoreStore(places[0].dir, { location: places[1].dir, unlock: r.secretKey, live: again }),
      ).rejects.toMatchObject({ code: 'CORRUPTION', message: expect.stringMatching(/not in the live store's chain/) });
      // An altered copy: one stored byte of a page flipped.
      await again.backup(places[2].dir);
      await places[2].flipStoredByte(1, 40);
      await expect(
        restoreStore(places[2].dir, { location: places[1].dir, unlock: r.secretKey, live: again }),
      ).rejects.toMatchObject({ code: 'CORRUPTION' });
      await again.close();
    } finally {
      for (const p of [live, ...places]) await p.dispose();
    }
  });
});

describe('restore edge cases (node-fs)', () => {
  it('an empty store backs up and restores; a failed restore leaves the target free and empty', async () => {
    const [live, copy, target] = [await nodeFsStoreFixture(), await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    try {
      const store = await live.open(options);
      await store.checkpoint(); // a checkpoint of the empty log
      await store.backup(copy.dir);
      const stranger = generateRecipient();
      await expect(
        restoreStore(copy.dir, {
          location: target.dir,
          unlock: r.secretKey,
          live: store,
          recipients: [stranger.publicKey],
        }),
      ).rejects.toMatchObject({ code: 'AUTH_FAILED' }); // the unlock key would not be a recipient
      const restored = await restoreStore(copy.dir, { location: target.dir, unlock: r.secretKey, live: store });
      expect(restored).toMatchObject({ restored: 0, withheld: 0, deleted: 0, verify: { ok: true } });
      await restored.store.close();
      await store.close();
    } finally {
      for (const p of [live, copy, target]) await p.dispose();
    }
  });

  it('a backup refused because its destination holds a store leaves that store unlocked', async () => {
    const [live, other] = [await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    try {
      const held = await other.open(options);
      await held.close();
      const store = await live.open(options);
      await expect(store.backup(other.dir)).rejects.toMatchObject({ code: 'CONFLICT' });
      // The destination the refused backup opened was closed: its writer lock is free.
      const again = await other.open({ ...options, create: false });
      await again.close();
      await store.close();
    } finally {
      for (const p of [live, other]) await p.dispose();
    }
  });
});

describe('a fork written past the last signed checkpoint (node-fs)', () => {
  // A removed recipient still holds the store secret: it copies the store's files from a commit
  // both share, writes forged values and widens a record's scope past the last checkpoint (it
  // cannot sign one), and offers its fork as a copy. Nothing it wrote may enter the new store.
  const policyKey = generateSigner();
  const sign = (version: number, rules: { scope: string; allow: string[] }[]) =>
    signPolicy({ version, rules, domain: 'pqdb-tests' } as never, policyKey.secretKey, policyKey.publicKey);
  const gov = { authorityPublicKey: [policyKey.publicKey], authorityDomain: 'pqdb-tests' };
  const schema = { v: 'string' } as const;

  async function forked() {
    const live = await nodeFsStoreFixture();
    const store = await live.open({ ...options, ...gov });
    await store.setPolicy(
      sign(1, [
        { scope: 'hr', allow: ['read', 'write'] },
        { scope: '*', allow: ['read', 'write', 'migrate', 'restore'] },
      ]),
    );
    const docs = store.collection('d', { schema });
    await docs.put('a', { v: 'a1' });
    await docs.put('s', { v: 'secret' }, { governance: { scope: 'hr' } });
    await store.checkpoint();
    await store.close();
    const fork = await live.copy();
    const attacker = await fork.open({ ...options, create: false, signer: undefined, signerPublicKey: undefined });
    const fd = attacker.collection('d', { schema });
    await fd.put('a', { v: 'forged' });
    await fd.put('s', { v: 'secret' }, { governance: { scope: 'ops' } }); // past the restore gate
    await fd.put('n', { v: 'planted' });
    await attacker.close();
    return { live, fork };
  }

  it('with the live store: the forged records come from the live store or stay out', async () => {
    const { live, fork } = await forked();
    const target = await nodeFsStoreFixture();
    try {
      const store = await live.open({ ...options, ...gov, create: false });
      // The live store goes on writing (its commit number passes the fork's).
      for (let i = 0; i < 5; i++) await store.collection('d', { schema }).put('z', { v: `z${i}` });
      const r2 = await restoreStore(fork.dir, { location: target.dir, unlock: r.secretKey, live: store });
      const back = r2.store.collection('d', { schema });
      expect((await back.get('a'))?.v).toBe('a1'); // the live value, not the forged one
      expect(back.has('s')).toBe(false); // hr may not be restored: the widened scope is not signed
      expect(back.has('n')).toBe(false); // not in the live store: deleted (never there)
      expect(r2).toMatchObject({ restored: 0, fromLive: 1, withheld: 1, unsigned: 0 });
      await r2.store.close();
      await store.close();
    } finally {
      for (const p of [live, fork, target]) await p.dispose();
    }
  });

  it('with the live store: a copy pointing a record at an earlier signed version restores the live one', async () => {
    const live = await nodeFsStoreFixture();
    const target = await nodeFsStoreFixture();
    let fork: NodeFsStoreFixture | undefined;
    try {
      const store = await live.open({ ...options, ...gov });
      await store.setPolicy(
        sign(1, [
          { scope: 'hr', allow: ['read', 'write'] },
          { scope: '*', allow: ['read', 'write', 'migrate', 'restore'] },
        ]),
      );
      const docs = store.collection('d', { schema });
      await docs.put('x', { v: 'v1' }, { governance: { scope: 'ops' } });
      const v1 = { ...partsOf(store).directory.get('d', 'x')! };
      await docs.put('x', { v: 'v2' }, { governance: { scope: 'hr' } }); // hr may not be restored
      await docs.put('y', { v: 'y1' });
      const y1 = { ...partsOf(store).directory.get('d', 'y')! };
      await docs.put('y', { v: 'y2' });
      await store.checkpoint(); // signs v1, v2, y1 and y2 alike
      await store.close();
      // The removed recipient points the copy's directory back at the earlier signed versions.
      fork = await live.copy();
      const attacker = await fork.open({ ...options, create: false, signer: undefined, signerPublicKey: undefined });
      partsOf(attacker).directory.set('d', 'x', v1);
      partsOf(attacker).directory.set('d', 'y', y1);
      await partsOf(attacker).checkpoints.persist();
      await attacker.close();
      const reopened = await live.open({ ...options, ...gov, create: false });
      for (let i = 0; i < 3; i++) await reopened.collection('d', { schema }).put('z', { v: `z${i}` }); // past the fork
      const r2 = await restoreStore(fork.dir, { location: target.dir, unlock: r.secretKey, live: reopened });
      const back = r2.store.collection('d', { schema });
      expect((await back.get('y'))?.v).toBe('y2'); // the live version, not the one put back
      expect(back.has('x')).toBe(false); // its live scope (hr) may not be restored: not widened to ops
      expect(r2).toMatchObject({ restored: 0, fromLive: 1, withheld: 1 });
      await r2.store.close();
      await reopened.close();
    } finally {
      for (const p of [live, target, ...(fork ? [fork] : [])]) await p.dispose();
    }
  });

  it('without the live store: recipients the copy lists are not taken, nor a copy whose policy was dropped', async () => {
    const { live, fork } = await forked();
    const [t1, t2] = [await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    const stranger = generateRecipient();
    try {
      // The removed recipient lists a key of its own in the copy's manifest and drops its policy.
      const attacker = await fork.open({ ...options, create: false, signer: undefined, signerPublicKey: undefined });
      await attacker.addRecipient(stranger.publicKey);
      await attacker.close();
      const alone = { unlock: r.secretKey, trustedSigner: s.publicKey, authorityPublicKey: [policyKey.publicKey] };
      const r2 = await restoreStore(fork.dir, { ...alone, location: t1.dir });
      expect(partsOf(r2.store).pipeline.manifest.recipients).toHaveLength(1); // the caller's own key, not the copy's list
      await r2.store.close();
      await expect(openStore({ location: t1.dir, unlock: stranger.secretKey, readOnly: true })).rejects.toMatchObject({
        code: 'AUTH_FAILED',
      });
      const m = await fork.open({ ...options, ...gov, create: false, signer: undefined, signerPublicKey: undefined });
      partsOf(m).pipeline.manifest.authority!.policy = undefined; // as a forged manifest would hold
      await partsOf(m).pipeline.run(() => undefined);
      await m.close();
      await expect(restoreStore(fork.dir, { ...alone, location: t2.dir })).rejects.toMatchObject({
        code: 'AUTHORITY_DENIED',
      });
    } finally {
      for (const p of [live, fork, t1, t2]) await p.dispose();
    }
  });

  it('without the live store: records past the last signed checkpoint are refused and counted', async () => {
    const { live, fork } = await forked();
    const target = await nodeFsStoreFixture();
    try {
      const r2 = await restoreStore(fork.dir, {
        location: target.dir,
        unlock: r.secretKey,
        trustedSigner: s.publicKey,
      });
      const back = r2.store.collection('d', { schema });
      expect(back.has('a') || back.has('s') || back.has('n')).toBe(false);
      expect(r2).toMatchObject({ restored: 0, fromLive: 0, unsigned: 3 });
      expect(r2.refused.map((x) => `${x.id}:${x.reason}`).sort()).toEqual([
        'a:past-checkpoint',
        'n:past-checkpoint',
        's:past-checkpoint',
      ]);
      await r2.store.close();
    } finally {
      for (const p of [live, fork, target]) await p.dispose();
    }
  });
});

describe('the policy a restore takes (node-fs)', () => {
  it('without the live store, a policy older than the copy’s own, or of other stores, is refused', async () => {
    const policyKey = generateSigner();
    const sign = (version: number, domain = 'pqdb-tests') =>
      signPolicy(
        { version, domain, rules: [{ scope: '*', allow: ['read', 'write', 'migrate', 'restore'] }] } as never,
        policyKey.secretKey,
        policyKey.publicKey,
      );
    const [live, copy, target] = [await nodeFsStoreFixture(), await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    try {
      const store = await live.open({
        ...options,
        authorityPublicKey: [policyKey.publicKey],
        authorityDomain: 'pqdb-tests',
      });
      await store.setPolicy(sign(1));
      await store.setPolicy(sign(2));
      await store.collection('d', { schema: { v: 'string' } }).put('a', { v: 'a' });
      await store.backup(copy.dir);
      await store.close();
      const base = { location: target.dir, unlock: r.secretKey, trustedSigner: s.publicKey };
      await expect(restoreStore(copy.dir, { ...base, policy: sign(1) })).rejects.toMatchObject({ code: 'ROLLBACK' });
      // Signed by the same authority for another domain: it governs other stores, not this one.
      await expect(restoreStore(copy.dir, { ...base, policy: sign(3, 'elsewhere') })).rejects.toMatchObject({
        code: 'AUTHORITY_DENIED',
      });
      const ok = await restoreStore(copy.dir, { ...base, policy: sign(3) });
      expect(ok.store.policy()?.version).toBe(3);
      // The restored store pins the same domain: the next version for it installs there too.
      await ok.store.setPolicy(sign(4));
      expect(ok.store.policy()?.version).toBe(4);
      await ok.store.close();
    } finally {
      for (const p of [live, copy, target]) await p.dispose();
    }
  });
});

describe('what a restore takes after compaction and migration (node-fs)', () => {
  const schema = { v: 'string' } as const;
  // The whole history kept: the compaction then signs no checkpoint of its own (history-floor.ts).
  const quiet = { ...options, autoCheckpoint: false as const, keepHistory: true };

  it('records compaction re-sealed after the last checkpoint come from the live store, or are refused', async () => {
    const [live, target, again] = [await nodeFsStoreFixture(), await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    let raw: NodeFsStoreFixture | undefined;
    try {
      const store = await live.open(quiet);
      const docs = store.collection('d', { schema });
      await store.batch((tx) => {
        for (let i = 0; i < 10; i++) tx.put(docs, `k${i}`, { v: `v${i}` });
      });
      for (let i = 0; i < 8; i++) await docs.put(`k${i}`, { v: `w${i}` }); // the first page is mostly dead
      await store.checkpoint();
      const moved = await store.compact({ minDeadFraction: 0.5 });
      expect(moved.recordsMoved).toBeGreaterThan(0);
      await store.close();
      raw = await live.copy(); // the store's files as they are: no checkpoint since the compaction
      const reopened = await live.open({ ...quiet, create: false });
      const withLive = await restoreStore(raw.dir, { location: target.dir, unlock: r.secretKey, live: reopened });
      expect(withLive).toMatchObject({ fromLive: moved.recordsMoved, unsigned: 0 });
      expect(withLive.restored + withLive.fromLive).toBe(10);
      const back = withLive.store.collection('d', { schema });
      for (let i = 0; i < 10; i++) expect((await back.get(`k${i}`))?.v).toBe(i < 8 ? `w${i}` : `v${i}`);
      await withLive.store.close();
      await reopened.close();
      const alone = await restoreStore(raw.dir, {
        location: again.dir,
        unlock: r.secretKey,
        trustedSigner: s.publicKey,
      });
      expect(alone).toMatchObject({ restored: 10 - moved.recordsMoved, fromLive: 0, unsigned: moved.recordsMoved });
      expect(alone.refused.every((x) => x.reason === 'past-checkpoint')).toBe(true);
      await alone.store.close();
    } finally {
      for (const p of [live, target, again, ...(raw ? [raw] : [])]) await p.dispose();
    }
  });

  it('records a migration leaves in the old generation stay covered: a copy restores them without the live store', async () => {
    const policyKey = generateSigner();
    const policy = signPolicy(
      {
        version: 1,
        domain: 'pqdb-tests',
        rules: [
          { scope: 'hr', allow: ['read', 'write', 'restore'] },
          { scope: '*', allow: ['read', 'write', 'migrate', 'restore'] },
        ],
      } as never,
      policyKey.secretKey,
      policyKey.publicKey,
    );
    const [live, copy, target] = [await nodeFsStoreFixture(), await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    try {
      const store = await live.open({
        ...quiet,
        authorityPublicKey: [policyKey.publicKey],
        authorityDomain: 'pqdb-tests',
      });
      await store.setPolicy(policy);
      const docs = store.collection('d', { schema });
      await store.checkpoint();
      // Written after the old generation's last checkpoint; hr may not migrate: it stays there.
      for (let i = 0; i < 6; i++)
        await docs.put(`k${i}`, { v: `v${i}` }, { governance: { scope: i < 3 ? 'hr' : 'ops' } });
      const status = await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
      expect(status).toMatchObject({ withheld: 3, copied: 3 });
      await store.backup(copy.dir);
      await store.close();
      const r2 = await restoreStore(copy.dir, {
        location: target.dir,
        unlock: r.secretKey,
        trustedSigner: s.publicKey,
      });
      expect(r2).toMatchObject({ restored: 6, unsigned: 0, fromLive: 0 });
      const back = r2.store.collection('d', { schema });
      for (let i = 0; i < 6; i++) expect((await back.get(`k${i}`))?.v).toBe(`v${i}`);
      await r2.store.close();
    } finally {
      for (const p of [live, copy, target]) await p.dispose();
    }
  });
});
