// Replay on open (src/engine/replay.ts): a log, index or checkpoint page that the manifest does not
// name, below its page counter (as a restore or a replica may leave), is reported and left alone;
// the store opens with every record, its index and its checkpoints as they were.
import { describe, it, expect } from 'vitest';
import { openStore, generateRecipient, generateSigner, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { pageKind } from '../src/engine/page-format';

const r = generateRecipient('classical');
const signer = generateSigner();
const schema = { text: 'string' } as const;

describe('replay', () => {
  it('ignores log, index and checkpoint pages the manifest does not name, and says so', async () => {
    const medium = new MemoryMedium();
    const open = async (create = false) => {
      const store = await openStore({
        storage: await openMemoryPageStore({ medium }),
        create,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
      });
      return { store, docs: store.collection('docs', { schema, index: { text: ['text'] } }) };
    };
    const { store, docs } = await open(true);
    for (let i = 0; i < 20; i++) await docs.put(`d${i}`, { text: `word${i % 4} common` });
    await store.checkpoint();
    const firstIndex = [...medium.pages].find(([, p]) => pageKind(p.bytes) === 'index')!;
    await docs.put('late', { text: 'word9 common' });
    await store.checkpoint(); // writes a new index page and deletes the first
    expect(medium.pages.has(firstIndex[0])).toBe(false);
    const checkpoints = store.checkpoints().length;
    await store.close();
    medium.pages.set(firstIndex[0], firstIndex[1]); // the superseded index page comes back

    const again = await open();
    expect(again.store.recovery.actions).toContain(
      '1 log, index or checkpoint page(s) the manifest does not name are ignored',
    );
    expect(again.docs.size).toBe(21);
    expect((await again.docs.search('word9')).map((x) => x.id)).toEqual(['late']);
    expect((await again.docs.search('common', { limit: 100 })).length).toBe(21);
    expect(again.store.checkpoints().length).toBe(checkpoints);
    await again.store.close();
  });
});
