// Current authority at every gate (DESIGN §9, docs/authority.md): a store pins an authority key at
// creation, installs signed policies, and each gate asks the policy in force — a read of a revoked
// scope is AUTHORITY_DENIED, scan and search skip such records and count them, a write to a scope
// that may not be written is refused before anything is sealed, a migration withholds what may not
// be migrated (also when the policy changes while it runs), an expired policy stops deciding, and
// an older signed policy cannot come back. Platform-neutral: vitest runs these in Node (memory,
// node-fs, IndexedDB over fake-indexeddb) and Playwright inside Chromium on real IndexedDB.

import type { Store } from '../../src/engine/store';
import type { signPolicy as SignPolicy, PolicyDocument } from '../../src/crypto/policy';
import { governedKeys, ok, rejection, withStore, type StoreCase, type StoreFixtureFactory } from './_store';

type KeyPair = { publicKey: Uint8Array; secretKey: Uint8Array };

export interface AuthorityApi {
  generateRecipient(type?: 'hybrid' | 'classical'): KeyPair;
  generateSigner(): KeyPair;
  signPolicy: typeof SignPolicy;
}

const SCHEMA = { title: 'string', body: 'string' } as const;
const ALL = ['read', 'write', 'migrate', 'restore'] as const;

/** Records in three scopes (and none): billing, hr with two purposes, archive, and unscoped. */
const RECORDS: [string, { scope?: string; purpose?: string }][] = [
  ['b1', { scope: 'billing' }],
  ['b2', { scope: 'billing', purpose: 'audit' }],
  ['h1', { scope: 'hr', purpose: 'payroll' }],
  ['h2', { scope: 'hr', purpose: 'hiring' }],
  ['a1', { scope: 'archive' }],
  ['n1', {}],
];

export function authorityCases(factory: StoreFixtureFactory, api: AuthorityApi): StoreCase[] {
  const { options, sign } = governedKeys<PolicyDocument>(api, false);
  const open = (store: Store) => store.collection('docs', { schema: SCHEMA, index: { text: ['title'] } });

  async function seed(store: Store): Promise<void> {
    await store.setPolicy(sign({ version: 1, rules: [{ scope: '*', allow: [...ALL] }] }));
    const docs = open(store);
    await store.batch((tx) => {
      for (const [id, g] of RECORDS) tx.put(docs, id, { title: `report ${id}`, body: id }, { governance: g });
    });
  }

  const code = async (p: Promise<unknown>, expected: string, what: string) => {
    const e = await rejection(p, what);
    ok(e.code === expected, `${what}: expected ${expected}, got ${e.code ?? e.name}: ${e.message}`);
  };

  return [
    {
      name: 'a revoked scope is AUTHORITY_DENIED on get; scan and search skip it and count it; after reopen too',
      run: withStore(factory, async (openStore) => {
        let store = await openStore(options);
        await seed(store);
        const revoke = sign({
          version: 2,
          rules: [
            { scope: 'billing', allow: ['write'] },
            { scope: 'hr', purposes: ['payroll'], allow: ['read'] },
            { scope: 'hr', allow: [] },
            { scope: '*', allow: [...ALL] },
          ],
        });
        ok((await store.setPolicy(revoke)).version === 2, 'policy 2 in force');
        for (let round = 0; round < 2; round++) {
          const docs = open(store);
          for (const id of ['b1', 'b2', 'h2']) await code(docs.get(id), 'AUTHORITY_DENIED', `get ${id}`);
          for (const id of ['h1', 'a1', 'n1']) ok((await docs.get(id))?.body === id, `get ${id} is allowed`);
          ok(docs.has('b1') && docs.size === RECORDS.length, 'the directory still holds every record');
          const seen: string[] = [];
          const withheld: string[] = [];
          const it = docs.scan({ onWithheld: (id) => withheld.push(id) });
          let r = await it.next();
          while (r.done !== true) {
            seen.push(r.value.id);
            r = await it.next();
          }
          ok(seen.join() === 'a1,h1,n1', `scan returns the readable records (got ${seen.join()})`);
          ok(r.value.withheld === 3 && withheld.sort().join() === 'b1,b2,h2', 'scan counts the withheld');
          const hits = await docs.search('report');
          ok(
            hits
              .map((h) => h.id)
              .sort()
              .join() === 'a1,h1,n1',
            'search returns the readable records',
          );
          ok(hits.withheld === 3, `search counts the withheld (${hits.withheld})`);
          const limited = [];
          for await (const x of docs.scan({ limit: 2 })) limited.push(x.id);
          ok(limited.join() === 'a1,h1', 'a limit counts returned records only');
          await store.close();
          store = await openStore({ ...options, create: false });
          ok(store.policy()?.version === 2, 'the policy persists');
        }
      }),
    },
    {
      name: 'a write to a scope that may not be written is refused before anything is sealed',
      run: withStore(factory, async (openStore) => {
        const store = await openStore(options);
        await seed(store);
        await store.setPolicy(
          sign({
            version: 2,
            rules: [
              { scope: 'hr', allow: ['read'] },
              { scope: '*', allow: [...ALL] },
            ],
          }),
        );
        const docs = open(store);
        const before = store.info().commit;
        await code(
          docs.put('h9', { title: 't', body: 'b' }, { governance: { scope: 'hr' } }),
          'AUTHORITY_DENIED',
          'put hr',
        );
        await code(
          store.batch((tx) => {
            tx.put(docs, 'x1', { title: 't', body: 'b' }, { governance: { scope: 'billing' } });
            tx.put(docs, 'x2', { title: 't', body: 'b' }, { governance: { scope: 'hr', purpose: 'payroll' } });
          }),
          'AUTHORITY_DENIED',
          'a batch with one refused write',
        );
        ok(store.info().commit === before, 'nothing was committed');
        ok(!docs.has('x1') && !docs.has('h9') && docs.size === RECORDS.length, 'nothing was written');
        await docs.put('x3', { title: 't', body: 'b' }, { governance: { scope: 'billing' } });
        ok((await docs.get('x3'))?.body === 'b', 'an allowed write is written');
        ok(await docs.delete('h1'), 'deleting is not gated: a revoked record can always be erased');
      }),
    },
    {
      name: 'a migration withholds what the policy does not let migrate, also when it is revoked mid-way',
      run: withStore(factory, async (openStore) => {
        const store = await openStore(options);
        await seed(store);
        const docs = open(store);
        await store.batch((tx) => {
          for (let i = 0; i < 40; i++)
            tx.put(
              docs,
              `m${String(i).padStart(2, '0')}`,
              { title: 'm', body: String(i) },
              { governance: { scope: 'ops' } },
            );
        });
        await store.setPolicy(
          sign({
            version: 2,
            rules: [
              { scope: 'archive', allow: ['read'] },
              { scope: '*', allow: [...ALL] },
            ],
          }),
        );
        let revoked: Promise<unknown> | undefined;
        const status = await store.migrate({
          to: 'cnsa2-gcm-hkdf384-commit',
          chunkRecords: 5,
          onProgress: (p) => {
            // Once some ops records are copied, ops may no longer migrate: the chunks that commit after the
            // new policy withhold the rest.
            if (p.copied < 10) return;
            revoked ??= store.setPolicy(
              sign({
                version: 3,
                rules: [
                  { scope: 'archive', allow: ['read'] },
                  { scope: 'ops', allow: ['read', 'write'] },
                  { scope: '*', allow: [...ALL] },
                ],
              }),
            );
          },
        });
        await revoked;
        const c = status;
        ok(
          c.copied + c.superseded + c.deleted + c.withheld + c.failed + c.inserted === c.total,
          'the accounting adds up',
        );
        ok(
          c.withheld >= 1 + 20 && c.withheld < 1 + 40,
          `archive and the ops records after the revocation (${c.withheld})`,
        );
        ok(c.failed === 0, 'nothing failed');
        await code(store.retireGenerations(), 'GENERATION_IN_USE', 'retiring the generation still holding them');
        ok((await docs.get('a1'))?.body === 'a1', 'a withheld record stays readable where it was');
      }),
    },
    {
      name: 'an expired policy stops deciding until a newer one is installed',
      run: withStore(factory, async (openStore) => {
        const store = await openStore(options);
        await seed(store);
        const expires = new Date(Date.now() + 800).toISOString();
        await store.setPolicy(sign({ version: 2, rules: [{ scope: '*', allow: [...ALL] }], expires }));
        const docs = open(store);
        ok((await docs.get('b1'))?.body === 'b1', 'readable before the expiry');
        await new Promise((r) => setTimeout(r, 900));
        const e = await rejection(docs.get('b1'), 'a read after the expiry');
        ok(e.code === 'AUTHORITY_DENIED' && /expired/.test(e.message ?? ''), `expired: ${e.message}`);
        await code(docs.put('z', { title: 't', body: 'b' }), 'AUTHORITY_DENIED', 'a write after the expiry');
        await store.setPolicy(sign({ version: 3, rules: [{ scope: '*', allow: [...ALL] }] }));
        ok((await docs.get('b1'))?.body === 'b1', 'readable again under version 3');
      }),
    },
    {
      name: 'an older or equal signed policy, a skipping one, or one by another key is refused',
      run: withStore(factory, async (openStore) => {
        const store = await openStore(options);
        await seed(store);
        const v2 = sign({
          version: 2,
          rules: [
            { scope: 'billing', allow: [] },
            { scope: '*', allow: [...ALL] },
          ],
        });
        await store.setPolicy(v2);
        await code(store.setPolicy(v2), 'ROLLBACK', 'the same policy again');
        await code(
          store.setPolicy(sign({ version: 1, rules: [{ scope: '*', allow: [...ALL] }] })),
          'ROLLBACK',
          'an older version',
        );
        await code(
          store.setPolicy(sign({ version: 4, rules: [{ scope: '*', allow: [...ALL] }] })),
          'CONFLICT',
          'a skipped version',
        );
        const other = api.generateSigner();
        await code(
          store.setPolicy(
            api.signPolicy({ version: 3, rules: [{ scope: '*', allow: [...ALL] }] }, other.secretKey, other.publicKey),
          ),
          'AUTH_FAILED',
          'a policy signed by a key that is not pinned',
        );
        ok(store.policy()?.version === 2, 'version 2 stays in force');
        await code(open(store).get('b1'), 'AUTHORITY_DENIED', 'billing stays revoked');
      }),
    },
    {
      name: 'a policy names the stores it governs: one for another store or domain is refused, after reopen too',
      run: withStore(factory, async (openStore) => {
        let store = await openStore(options);
        const rules = [{ scope: '*', allow: [...ALL] }];
        const elsewhere = 'f'.repeat(32);
        await code(
          store.setPolicy(sign({ version: 1, rules, domain: 'elsewhere' })),
          'AUTHORITY_DENIED',
          'another domain',
        );
        await code(
          store.setPolicy(sign({ version: 1, rules, stores: [elsewhere] })),
          'AUTHORITY_DENIED',
          'another store',
        );
        ok(store.policy() === undefined, 'no policy installed');
        const { storeId } = store.info();
        await store.setPolicy(sign({ version: 1, rules, stores: [elsewhere, storeId] }));
        await store.setPolicy(sign({ version: 2, rules })); // the domain the store pins
        await store.close();
        store = await openStore({ ...options, create: false });
        ok(store.policy()?.version === 2, 'version 2 in force after reopen');
        await code(
          store.setPolicy(sign({ version: 3, rules, domain: 'elsewhere' })),
          'AUTHORITY_DENIED',
          'after reopen',
        );
      }),
    },
  ];
}
