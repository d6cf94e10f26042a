// The browser side of the shared store cases (node-tests/cases/proofs.ts, search.ts and tamper.ts): the same
// checks the Node tests run, against the bundled dist/browser.js and dist/crypto.js exactly as users
// load them, on Chromium's real IndexedDB. Only the value decoder for opened exports comes from
// src/ (bundled by browser-tests/server.mjs): pqdb does not export it. Playwright drives
// window.pqdbStore.

import { deleteDB } from 'idb';
import * as pqdb from 'pqdb';
import * as crypto from 'pqdb/crypto';
import { decodeValue, compileSchema, type Schema } from '../../src/engine/codec';
import type { Store } from '../../src/engine/store';
import { runStoreCases, type StoreCase, type StoreFixtureFactory } from '../../node-tests/cases/_store';
import { proofsCases, type ProofsApi } from '../../node-tests/cases/proofs';
import { searchCases } from '../../node-tests/cases/search';
import { tamperCases, type TamperFixtureFactory } from '../../node-tests/cases/tamper';
import { indexedDbRaw } from '../../node-tests/cases/_idb-raw';
import { authorityCases } from '../../node-tests/cases/authority';
import { copiesCases, type CopiesApi } from '../../node-tests/cases/copies';
import type { Summary } from '../../node-tests/cases/_util';
import { engineName } from './_engine';

const run = Math.random().toString(36).slice(2, 8);
let n = 0;
/** The storage kind of every store the cases opened (each must be 'indexeddb'). */
const storages: string[] = [];
/** The IndexedDB databases the cases used. */
const names: string[] = [];

const factory: TamperFixtureFactory = async () => {
  const name = `pqdb-store-case-${run}-${n++}`;
  names.push(name);
  return {
    open: async (options) => {
      const store = (await pqdb.openStore({ ...options, location: name, storage: 'indexeddb' })) as unknown as Store;
      storages.push(store.info().storage);
      return store;
    },
    pages: () =>
      pqdb.openIndexedDbPageStore(name) as unknown as ReturnType<Awaited<ReturnType<StoreFixtureFactory>>['pages']>,
    dispose: () => deleteDB(name),
    raw: indexedDbRaw(name),
    name,
  } as Awaited<ReturnType<TamperFixtureFactory>>;
};

/** Backups, copies and restore targets go by database name, as users name them. */
const where: CopiesApi['where'] = async (f) => (f as unknown as { name: string }).name;

const api: ProofsApi = {
  generateRecipient: pqdb.generateRecipient,
  generateSigner: pqdb.generateSigner,
  verifySealed: pqdb.verifySealed as ProofsApi['verifySealed'],
  openSealed: pqdb.openSealed as ProofsApi['openSealed'],
  merkle: crypto.merkle,
  ml_dsa87: crypto.ml_dsa87,
  sha384: crypto.sha384,
  verifyStore: pqdb.verifyStore as unknown as ProofsApi['verifyStore'],
  decodeValue: (schema: Schema, plaintext: Uint8Array) => decodeValue(compileSchema(schema), plaintext),
};

const suites: Record<string, () => StoreCase[]> = {
  proofs: () => proofsCases(factory, api),
  search: () => searchCases(factory, api),
  tamper: () => tamperCases(factory, api),
  authority: () => authorityCases(factory, { ...api, signPolicy: pqdb.signPolicy }),
  copies: () =>
    copiesCases(factory, {
      ...api,
      signPolicy: pqdb.signPolicy,
      restoreStore: pqdb.restoreStore as unknown as CopiesApi['restoreStore'],
      where,
    }),
};

/** Runs one suite; returns its summary, the storage of every store it opened and the databases it used. */
async function runSuite(name: string): Promise<{ summary: Summary; storages: string[]; databases: string[] }> {
  storages.length = 0;
  names.length = 0;
  const summary = await runStoreCases(`${name} (indexeddb, ${engineName}, ${crypto.wasmFlavor()})`, suites[name]());
  return { summary, storages: [...storages], databases: [...names] };
}

/**
 * A store on IndexedDB through its lifecycle, its CBOM taken at each step for the spec to validate
 * in Node: with a policy, records under two suites, a quarantine, a backup to a second database, its
 * retirement. The databases are removed after.
 */
async function postures(): Promise<{ boms: Record<string, unknown>; copyId: string; storage: string }> {
  const [name, copy] = [`pqdb-posture-${run}-a`, `pqdb-posture-${run}-b`];
  const recipient = pqdb.generateRecipient();
  const signer = pqdb.generateSigner();
  const authority = pqdb.generateSigner();
  const store = await pqdb.openStore({
    location: name,
    create: true,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    authorityPublicKey: authority.publicKey,
    authorityDomain: 'posture',
  });
  const boms: Record<string, unknown> = {};
  try {
    await store.setPolicy(
      pqdb.signPolicy(
        { version: 1, rules: [{ scope: '*', allow: ['read', 'write', 'migrate', 'restore'] }], domain: 'posture' },
        authority.secretKey,
        authority.publicKey,
      ),
    );
    const a = store.collection('a', { schema: { t: 'string' } });
    const b = store.collection('b', { schema: { t: 'string' }, suite: 'cnsa2-gcm-hkdf384-commit' });
    for (let i = 0; i < 5; i++) await a.put(`a${i}`, { t: 'x' });
    for (let i = 0; i < 3; i++) await b.put(`b${i}`, { t: 'y' });
    boms.written = store.posture();
    await store.registry.setState('gcmsiv-hkdf256', 'quarantined');
    boms.quarantined = store.posture();
    const { copy: c } = await store.backup(copy);
    boms.backedUp = store.posture();
    await store.retireCopy(c.id);
    boms.retired = store.posture();
    return { boms, copyId: c.id, storage: store.info().storage };
  } finally {
    await store.close();
    await deleteDB(name);
    await deleteDB(copy);
  }
}

(globalThis as unknown as { pqdbStore: unknown }).pqdbStore = { run: runSuite, names: Object.keys(suites), postures };
