// The authority cases of node-tests/cases/authority.ts on memory, node-fs and IndexedDB
// (fake-indexeddb); Playwright runs them on Chromium's real IndexedDB (browser-tests/proofs.spec.mjs).
// Here too: an older manifest naming an older policy, put back in the medium, is caught by the
// freshness pin.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, openStore, signPolicy } from '../src/index';
import { authorityCases } from './cases/authority';
import { STORE_FIXTURES, memoryStoreFixture } from './support/store-fixtures';

describe.each(STORE_FIXTURES)('current authority at every gate (%s)', (_name, factory) => {
  for (const c of authorityCases(factory, { generateRecipient, generateSigner, signPolicy })) it(c.name, c.run);
});

describe('an older signed policy put back in the medium', () => {
  it('comes back only with the whole older manifest, which the freshness pin refuses', async () => {
    const f = await memoryStoreFixture();
    const authority = generateSigner();
    const r = generateRecipient();
    const options = {
      create: true,
      recipients: [r.publicKey],
      unlock: r.secretKey,
      authorityPublicKey: authority.publicKey,
      authorityDomain: 'app',
    };
    const sign = (version: number, allow: ('read' | 'write')[]) =>
      signPolicy({ version, rules: [{ scope: '*', allow }], domain: 'app' }, authority.secretKey, authority.publicKey);
    let store = await f.open(options);
    await store.setPolicy(sign(1, ['read', 'write']));
    const docs = store.collection('d', { schema: { v: 'string' } });
    await docs.put('x', { v: 'x' });
    await store.close();
    const old = (await f.raw.manifest())!;
    store = await f.open(options);
    await store.setPolicy(sign(2, []));
    const commit = store.info().commit;
    await store.close();
    await f.raw.setManifest(old);
    await expect(f.open({ ...options, minCommit: commit })).rejects.toMatchObject({ code: 'ROLLBACK' });
    // And the older policy cannot be installed over the newer one through the API.
    await f.raw.setManifest(old);
    await f.dispose();
  });
});
