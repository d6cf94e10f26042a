// Managed copies and restore (DESIGN §9, docs/authority.md): a backup taken while writes go on is
// a consistent prefix of the store that verifies on its own and opens only read-only; the
// inventory lists it and records its retirement; a restore verifies the copy, checks it against the
// live store and makes a new store under new keys in which nothing comes back that current
// authority took away since the copy — a revoked scope, a deleted record, a removed recipient, a
// quarantined suite — and a retired, foreign, forked or altered copy is refused. Platform-neutral:
// vitest runs these in Node (memory, node-fs, IndexedDB over fake-indexeddb) and Playwright inside
// Chromium on real IndexedDB.

import type { Store } from '../../src/engine/store';
import type { PageStore } from '../../src/storage/page-store';
import type { verifyStore as VerifyStore } from '../../src/engine/verify';
import type { signPolicy as SignPolicy, PolicyDocument } from '../../src/crypto/policy';
import type { RestoreOptions, RestoreResult } from '../../src/engine/restore';
import { governedKeys, ok, rejection, type StoreCase, type StoreFixture, type StoreFixtureFactory } from './_store';

type KeyPair = { publicKey: Uint8Array; secretKey: Uint8Array };

export interface CopiesApi {
  generateRecipient(type?: 'hybrid' | 'classical'): KeyPair;
  generateSigner(): KeyPair;
  signPolicy: typeof SignPolicy;
  verifyStore: typeof VerifyStore;
  restoreStore(copy: string | PageStore, options: RestoreOptions): Promise<RestoreResult>;
  /**
   * How a case names fixture `f` as a backup destination, a copy to restore or a restore target:
   * a location name (directory, database) or a PageStore on it (which the case closes after use).
   */
  where(f: StoreFixture, mode: 'create' | 'read'): Promise<string | PageStore>;
}

const SCHEMA = { title: 'string', n: 'integer' } as const;
const ALL = ['read', 'write', 'migrate', 'restore'] as const;

export function copiesCases(factory: StoreFixtureFactory, api: CopiesApi): StoreCase[] {
  const keys = governedKeys<PolicyDocument>(api, true);
  const { recipient, options, sign } = keys;
  const signer = keys.signer!;
  const docsOf = (store: Store) => store.collection('docs', { schema: SCHEMA });

  /** Runs `body` with `n` fresh fixtures (the first is the live store's), disposing them all after. */
  const withPlaces =
    (n: number, body: (places: StoreFixture[], opened: Store[]) => Promise<void>) => async (): Promise<void> => {
      const places: StoreFixture[] = [];
      const opened: Store[] = [];
      try {
        for (let i = 0; i < n; i++) places.push(await factory());
        await body(places, opened);
      } finally {
        for (const s of opened) await s.close().catch(() => undefined);
        for (const p of places) await p.dispose().catch(() => undefined);
      }
    };
  const done = async (x: string | PageStore) => {
    if (typeof x !== 'string') await x.close();
  };
  /** A backup of `store` into place `f`. */
  const backup = async (store: Store, f: StoreFixture) => {
    const dest = await api.where(f, 'create');
    try {
      return await store.backup(dest);
    } finally {
      await done(dest);
    }
  };
  /** A restore of the copy at `from` into `to`; the new store is closed when the case ends. */
  const restore = async (
    from: StoreFixture,
    to: StoreFixture,
    opened: Store[],
    extra: Partial<RestoreOptions> = {},
  ) => {
    const copy = await api.where(from, 'read');
    const target = await api.where(to, 'create');
    try {
      const r = await api.restoreStore(copy, {
        unlock: recipient.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        ...(typeof target === 'string' ? { location: target } : { storage: target }),
        ...extra,
      });
      opened.push(r.store);
      return r;
    } catch (e) {
      await done(target); // a restore that failed leaves the target to its owner
      throw e;
    } finally {
      await done(copy);
    }
  };
  const code = async (p: Promise<unknown>, expected: string, what: string) => {
    const e = await rejection(p, what);
    ok(e.code === expected, `${what}: expected ${expected}, got ${e.code ?? e.name}: ${e.message}`);
  };
  async function seed(store: Store, n = 60): Promise<void> {
    await store.setPolicy(sign({ version: 1, rules: [{ scope: '*', allow: [...ALL] }] }));
    const docs = docsOf(store);
    await store.batch((tx) => {
      for (let i = 0; i < n; i++)
        tx.put(
          docs,
          `d${String(i).padStart(3, '0')}`,
          { title: `t${i}`, n: i },
          { governance: { scope: i % 3 === 0 ? 'hr' : 'ops' } },
        );
    });
  }

  return [
    {
      name: 'a backup taken while writes go on verifies on its own, holds a prefix of the commits and opens only read-only',
      run: withPlaces(2, async ([live, copy], opened) => {
        const store = await live.open(options);
        opened.push(store);
        await seed(store);
        const docs = docsOf(store);
        let writing = true;
        let written = 0;
        const writer = (async () => {
          while (writing && written < 5000) {
            await docs.put(`w${String(written++).padStart(4, '0')}`, { title: 'w', n: written });
            await new Promise((r) => setTimeout(r, 0)); // timers and other work get in
          }
        })();
        await new Promise((r) => setTimeout(r, 20));
        const b = await backup(store, copy);
        const after = written;
        while (written < after + 3) await new Promise((r) => setTimeout(r, 1)); // writes go on after it
        writing = false;
        await writer;
        ok(b.copy.state === 'retained' && b.copy.kind === 'backup' && b.copy.checkpoint !== undefined, 'inventoried');
        ok(
          store.copies().some((c) => c.id === b.copy.id && c.records === b.copy.records),
          'listed by copies()',
        );
        const pages = await copy.pages();
        const report = await api.verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
        await pages.close();
        ok(report.ok && report.complete, `the copy verifies: ${JSON.stringify(report.problems)} ${report.skipped}`);
        ok(report.counts.signaturesVerified >= 1, 'with a signed checkpoint');
        // Its newest checkpoint covers every record it holds: a restore takes each of them.
        ok(report.counts.uncheckpointed === 0, `${report.counts.uncheckpointed} records past the copy's checkpoint`);
        // A prefix: the records written before the copy's commit, in write order, and no later one.
        const held = report.counts.collections.docs;
        ok(held === b.copy.records && held >= 60 && held < 60 + written, `a prefix (${held} of ${60 + written})`);
        const e = await rejection(copy.open({ unlock: recipient.secretKey }), 'opening the copy for writing');
        ok(e.code === 'READ_ONLY', `a copy opens read-only (${e.code})`);
        const ro = await copy.open({ unlock: recipient.secretKey, readOnly: true });
        opened.push(ro);
        const roDocs = docsOf(ro);
        const ids: string[] = [];
        for await (const x of roDocs.scan({ prefix: 'w' })) ids.push(x.id);
        ok(
          ids.every((id, i) => id === `w${String(i).padStart(4, '0')}`),
          'the copy holds the first writes, in order',
        );
        ok(ro.info().commit === b.copy.commit, 'at the commit the inventory names');
      }),
    },
    {
      name: 'a restore re-seals under new keys; the records decrypt; both inventories record it',
      run: withPlaces(3, async ([live, copy, next], opened) => {
        const store = await live.open(options);
        opened.push(store);
        await seed(store);
        const b = await backup(store, copy);
        const r = await restore(copy, next, opened, { live: store });
        ok(r.restored === 60 && r.withheld === 0 && r.deleted === 0, `restored ${r.restored}`);
        ok(r.verify.ok && r.copyId === b.copy.id, 'the copy was verified');
        const info = r.store.info();
        ok(info.storeId !== store.info().storeId, 'a new store id (new store secret)');
        const a = store.dataKeyFor(2, 1, '{"scope":"ops"}').key;
        const c = r.store.dataKeyFor(2, info.generations.at(-1)!, '{"scope":"ops"}').key;
        ok(
          a.some((x, i) => x !== c[i]),
          'new data keys',
        );
        const docs = docsOf(r.store);
        for (let i = 0; i < 60; i++) {
          const v = await docs.get(`d${String(i).padStart(3, '0')}`);
          ok(v?.n === i && v.title === `t${i}`, `record ${i} decrypts`);
        }
        const mine = r.store.copies();
        ok(
          mine.length === 1 && mine[0].kind === 'restore' && mine[0].state === 'restored-from',
          'the new store names its copy',
        );
        ok(mine[0].sourceStoreId === store.info().storeId, 'and the store it came from');
        const theirs = store.copies().find((x) => x.id === b.copy.id)!;
        ok(
          theirs.state === 'restored-from' && theirs.restores?.[0].storeId === info.storeId,
          'the live inventory records it',
        );
        ok(r.store.policy()?.version === 1 && r.store.checkpoints().length >= 1, 'current policy, and a checkpoint');
      }),
    },
    {
      name: 'a restore after revocation, deletion, removeRecipient and quarantine brings none of them back',
      run: withPlaces(3, async ([live, copy, next], opened) => {
        const other = api.generateRecipient();
        const store = await live.open({ ...options, recipients: [recipient.publicKey, other.publicKey] });
        opened.push(store);
        await seed(store);
        await backup(store, copy);
        const docs = docsOf(store);
        // Since the copy: hr may no longer be restored, two records are deleted, a recipient is
        // removed, and the suite the records are sealed with is quarantined (writes move on).
        await store.setPolicy(
          sign({
            version: 2,
            rules: [
              { scope: 'hr', allow: ['read'] },
              { scope: '*', allow: [...ALL] },
            ],
          }),
        );
        await docs.delete('d001');
        await docs.delete('d002');
        await store.removeRecipient(other.publicKey);
        await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
        await store.registry.setState('gcmsiv-hkdf384', 'quarantined');
        const r = await restore(copy, next, opened, { live: store });
        ok(
          r.withheld === 20 && r.deleted === 2 && r.restored === 38,
          `withheld ${r.withheld}, deleted ${r.deleted}, restored ${r.restored}`,
        );
        const back = docsOf(r.store);
        ok(!back.has('d000') && !back.has('d003') && back.has('d004'), 'no hr record came back');
        ok(!back.has('d001') && !back.has('d002'), 'no deleted record came back');
        ok(r.store.policy()?.version === 2, 'the current policy, not the copy’s');
        const q = r.store.registry.list().find((e) => e.suite.name === 'gcmsiv-hkdf384');
        ok(q?.state === 'quarantined', `the quarantined suite stays quarantined (${q?.state})`);
        const active = r.store.registry.list().find((e) => e.state === 'active')!.suite.name;
        ok(active === 'cnsa2-gcm-hkdf384-commit', `records are sealed with the live suite (${active})`);
        const exported = await back.exportSealed('d004');
        ok(exported.length > 0, 'a restored record exports');
        await r.store.close();
        opened.splice(opened.indexOf(r.store), 1);
        await code(
          next.open({ unlock: other.secretKey }),
          'AUTH_FAILED',
          'the removed recipient opening the restored store',
        );
        const again = await next.open({ unlock: recipient.secretKey });
        opened.push(again);
        ok(docsOf(again).size === 38, 'the kept recipient opens it');
      }),
    },
    {
      name: 'a retired copy, a copy of another store and a copy signed by another key are refused',
      run: withPlaces(5, async ([live, copy, next, foreign, forked], opened) => {
        const store = await live.open(options);
        opened.push(store);
        await seed(store);
        const b = await backup(store, copy);
        // Another store's copy, offered as this store's.
        const stranger = await foreign.open({ ...options });
        opened.push(stranger);
        await seed(stranger, 3);
        await backup(stranger, forked);
        await code(restore(forked, next, opened, { live: store }), 'AUTH_FAILED', 'a copy of another store');
        // Retired: refused next to the live store.
        const retired = await store.retireCopy(b.copy.id);
        ok(retired.copy.state === 'retired' && store.copies()[0].retiredAt !== undefined, 'the retirement is recorded');
        await code(store.retireCopy(b.copy.id), 'CONFLICT', 'retiring twice');
        if (!retired.deleted)
          await code(restore(copy, next, opened, { live: store }), 'AUTHORITY_DENIED', 'a retired copy');
        else await code(restore(copy, next, opened, { live: store }), 'NOT_FOUND', 'a deleted copy');
        // Without the trusted signer key nothing is restored.
        await code(
          restore(forked, next, opened, { trustedSigner: api.generateSigner().publicKey }),
          'CORRUPTION',
          'a copy whose checkpoints another key signed',
        );
      }),
    },
    {
      name: 'a migration’s kept generation is inventoried and retired with retireGenerations; a held suite cannot be retired',
      run: withPlaces(1, async ([live], opened) => {
        const store = await live.open(options);
        opened.push(store);
        await seed(store);
        await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' });
        const kept = store.copies().filter((c) => c.kind === 'generation');
        ok(
          kept.length === 1 && kept[0].state === 'retained' && kept[0].generations.join() === '1',
          'the old generation',
        );
        ok(kept[0].suites.join() === 'gcmsiv-hkdf384' && kept[0].records === 60, 'its suite and records');
        await store.registry.setState('gcmsiv-hkdf384', 'decrypt-only').catch(() => undefined);
        const e = await rejection(store.registry.setState('gcmsiv-hkdf384', 'retired'), 'retiring a held suite');
        ok(/copies|live records/.test(e.message ?? ''), `refused while the copy holds it: ${e.message}`);
        const { copy, deleted } = await store.retireCopy(kept[0].id);
        ok(copy.state === 'retired' && deleted, 'retired with its generation');
        ok(store.info().generations.join() === '2', 'generation 1 is gone');
        await store.registry.setState('gcmsiv-hkdf384', 'retired');
      }),
    },
  ];
}
