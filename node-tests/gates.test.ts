// The registered current-authority gates (src/engine/gates.ts) at the purposes the cases of
// node-tests/cases/authority.ts and copies.ts do not reach: the copy gate in compaction (a scope
// that may not migrate keeps its page), the write gate as a prepare hook (the policy the commit runs
// under decides, not the one in force at the call), and the restore gate's second look (the scope
// the live store holds a record under now, when the copy's version names another).
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, signPolicy, restoreStore, openMemoryPageStore } from '../src/node';
import { MemoryMedium } from '../src/storage/memory';
import { docsOpener } from './support/memory-docs';
import { nodeFsStoreFixture } from './support/store-fixtures';

const r = generateRecipient('classical');
const signer = generateSigner();
const authority = generateSigner();
const DOMAIN = 'pqdb-tests';
const ALL = ['read', 'write', 'migrate', 'restore'];
const sign = (version: number, rules: { scope: string; allow: string[] }[]) =>
  signPolicy({ version, domain: DOMAIN, rules } as never, authority.secretKey, authority.publicKey);
const governed = { authorityPublicKey: [authority.publicKey], authorityDomain: DOMAIN };
const schema = { text: 'string', round: 'integer' } as const;

async function governedStore() {
  const medium = new MemoryMedium();
  const open = docsOpener(medium, { recipient: r, signer }, schema, governed);
  const { store, docs } = await open(true);
  await store.setPolicy(sign(1, [{ scope: '*', allow: ALL }]));
  return { medium, open, store, docs };
}

describe('the copy gate in compaction', () => {
  it('keeps a mostly dead page whose live records the policy does not let migrate; compacts the others', async () => {
    const { store, docs } = await governedStore();
    // Two pages of 50 records each, one all in scope hr; 45 of each then written again.
    const fill = (prefix: string, scope: string, round: number, n: number) =>
      store.batch((tx) => {
        for (let k = 0; k < n; k++) tx.put(docs, `${prefix}${k}`, { text: `t${k}`, round }, { governance: { scope } });
      });
    await fill('h', 'hr', 0, 50);
    await fill('o', 'ops', 0, 50);
    await fill('h', 'hr', 1, 45);
    await fill('o', 'ops', 1, 45);
    await store.setPolicy(
      sign(2, [
        { scope: 'hr', allow: ['read', 'write'] },
        { scope: '*', allow: ALL },
      ]),
    );
    const done = await store.compact({ minDeadFraction: 0.5 });
    expect(done).toMatchObject({ pagesRewritten: 1, recordsMoved: 5, pagesKept: 1 });
    for (let k = 0; k < 50; k++) {
      expect((await docs.get(`h${k}`))?.round).toBe(k < 45 ? 1 : 0);
      expect((await docs.get(`o${k}`))?.round).toBe(k < 45 ? 1 : 0);
    }
    // Once hr may migrate again, its page goes too.
    await store.setPolicy(sign(3, [{ scope: '*', allow: ALL }]));
    const again = await store.compact({ minDeadFraction: 0.5 });
    expect(again.pagesKept).toBe(0);
    expect(again.recordsMoved).toBeGreaterThanOrEqual(5);
    expect((await docs.get('h49'))?.round).toBe(0);
    await store.close();
  });
});

describe('the write gate (a prepare hook)', () => {
  it('asks the policy the commit runs under: one installed after the call refuses it, nothing written', async () => {
    const { store, docs } = await governedStore();
    const before = store.info().commit;
    const revoked = store.setPolicy(
      sign(2, [
        { scope: 'hr', allow: ['read'] },
        { scope: '*', allow: ALL },
      ]),
    );
    // Called while policy 1 is in force (hr may be written), committed after policy 2 (it may not).
    const put = docs.put('x', { text: 'x', round: 0 }, { governance: { scope: 'hr' } });
    await revoked;
    await expect(put).rejects.toMatchObject({
      code: 'AUTHORITY_DENIED',
      message: expect.stringContaining('does not allow write for a write to docs/x (scope "hr")'),
    });
    expect(store.info().commit).toBe(before + 1); // the policy's commit only
    expect(docs.has('x')).toBe(false);
    await store.close();
  });

  it('and one installed after the call that allows it lets it through', async () => {
    const { store, docs } = await governedStore();
    await store.setPolicy(
      sign(2, [
        { scope: 'hr', allow: ['read'] },
        { scope: '*', allow: ALL },
      ]),
    );
    const reopened = store.setPolicy(sign(3, [{ scope: '*', allow: ALL }]));
    const put = docs.put('x', { text: 'x', round: 0 }, { governance: { scope: 'hr' } });
    await reopened;
    await put;
    expect((await docs.get('x'))?.text).toBe('x');
    await store.close();
  });

  it('does not gate copies: a migration of a store whose policy refuses writes to a scope copies it', async () => {
    const { store, docs } = await governedStore();
    await docs.put('h', { text: 'h', round: 0 }, { governance: { scope: 'hr' } });
    await store.setPolicy(
      sign(2, [
        { scope: 'hr', allow: ['read', 'migrate'] },
        { scope: '*', allow: ALL },
      ]),
    );
    const status = await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
    expect(status).toMatchObject({ copied: 1, withheld: 0, failed: 0 });
    expect((await docs.get('h'))?.text).toBe('h');
    await store.close();
  });
});

describe('the restore gate', () => {
  it('withholds a record whose copy version may be restored when the live store now holds it in a scope that may not', async () => {
    const [live, copy, target] = [await nodeFsStoreFixture(), await nodeFsStoreFixture(), await nodeFsStoreFixture()];
    try {
      const store = await live.open({
        create: true,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        ...governed,
      });
      await store.setPolicy(
        sign(1, [
          { scope: 'hr', allow: ['read', 'write'] },
          { scope: '*', allow: ALL },
        ]),
      );
      const docs = store.collection('d', { schema: { v: 'string' } });
      await docs.put('a', { v: 'a' }, { governance: { scope: 'ops' } });
      await docs.put('b', { v: 'b' }, { governance: { scope: 'ops' } });
      await store.backup(copy.dir);
      // Since the copy, a is held under hr, which may not be restored.
      await docs.put('a', { v: 'a2' }, { governance: { scope: 'hr' } });
      const done = await restoreStore(copy.dir, { location: target.dir, unlock: r.secretKey, live: store });
      expect(done).toMatchObject({ restored: 1, withheld: 1, fromLive: 0, unsigned: 0 });
      const back = done.store.collection('d', { schema: { v: 'string' } });
      expect(back.has('a')).toBe(false);
      expect((await back.get('b'))?.v).toBe('b');
      await done.store.close();
      await store.close();
    } finally {
      for (const p of [live, copy, target]) await p.dispose();
    }
  });

  it('applies a policy given to a restore without the live store, not the copy’s own', async () => {
    const medium = new MemoryMedium();
    const open = docsOpener(medium, { recipient: r, signer }, schema, governed);
    const { store, docs } = await open(true);
    await store.setPolicy(sign(1, [{ scope: '*', allow: ALL }]));
    for (const [id, scope] of [
      ['h1', 'hr'],
      ['h2', 'hr'],
      ['o1', 'ops'],
    ])
      await docs.put(id, { text: id, round: 0 }, { governance: { scope } });
    const into = new MemoryMedium();
    const copyPages = await openMemoryPageStore({ medium: into });
    await store.backup(copyPages);
    await store.close();
    await copyPages.close().catch(() => undefined);
    const policy = sign(2, [
      { scope: 'hr', allow: ['read'] },
      { scope: '*', allow: ALL },
    ]);
    const from = await openMemoryPageStore({ medium: into });
    const done = await restoreStore(from, {
      storage: await openMemoryPageStore({ medium: new MemoryMedium() }),
      unlock: r.secretKey,
      trustedSigner: signer.publicKey,
      policy,
      authorityPublicKey: [authority.publicKey],
    });
    expect(done).toMatchObject({ restored: 1, withheld: 2, unsigned: 0 });
    const back = done.store.collection('docs', { schema });
    expect(back.has('h1') || back.has('h2')).toBe(false);
    expect((await back.get('o1'))?.text).toBe('o1');
    expect(done.store.policy()?.version).toBe(2);
    await done.store.close();
  });
});
