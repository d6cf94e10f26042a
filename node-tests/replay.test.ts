// Replay on open (src/engine/replay.ts): a log, index or checkpoint page that the manifest does not
// name, below its page counter (as a restore or a replica may leave), is reported and left alone;
// the store opens with every record, its index and its checkpoints as they were. And a commit is
// acknowledged once durable, whatever an `applied` hook meets after it.
import { describe, it, expect } from 'vitest';
import { openStore, generateRecipient, generateSigner, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { pageKind } from '../src/engine/page-format';
import type { PageStore } from '../src/storage/page-store';
import { faulty, type Faults } from './support/faulty-page-store';
import { docsOpener } from './support/memory-docs';

const r = generateRecipient('classical');
const signer = generateSigner();
const schema = { text: 'string' } as const;

describe('replay', () => {
  it('ignores log, index and checkpoint pages the manifest does not name, and says so', async () => {
    const medium = new MemoryMedium();
    const open = docsOpener(medium, { recipient: r, signer }, schema);
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
      '1 page(s) the manifest and the key directory do not name (log, index, checkpoint or deleted pages) are ignored',
    );
    expect(again.docs.size).toBe(21);
    expect((await again.docs.search('word9')).map((x) => x.id)).toEqual(['late']);
    expect((await again.docs.search('common', { limit: 100 })).length).toBe(21);
    expect(again.store.checkpoints().length).toBe(checkpoints);
    await again.store.close();
  });
});

describe('commits whose hooks meet a failure', () => {
  it('a put is acknowledged when the index it would update fails to load meanwhile; the index is rebuilt with it', async () => {
    const medium = new MemoryMedium();
    const faults: Faults = {};
    const handles: PageStore[] = [];
    // Reads of one page can be held until released, so the index load is still under way when the
    // put's hooks run.
    let gated = -1;
    let release = () => {};
    const gate = new Promise<void>((resolve) => (release = resolve));
    const open = async (create = false) => {
      const inner = faulty(await openMemoryPageStore({ medium }), faults);
      const storage = new Proxy(inner, {
        get(target, key) {
          if (key === 'readPage')
            return async (id: number) => {
              if (id === gated) await gate;
              return target.readPage(id);
            };
          const v = Reflect.get(target, key) as unknown;
          return typeof v === 'function' ? v.bind(target) : v;
        },
      });
      handles.push(storage);
      const store = await openStore({
        storage,
        create,
        recipients: [r.publicKey],
        unlock: r.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
      });
      return { store, docs: store.collection('docs', { schema, index: { text: ['text'] } }) };
    };
    const first = await open(true);
    for (let i = 0; i < 10; i++) await first.docs.put(`d${i}`, { text: `alpha ${i}` });
    await first.store.checkpoint();
    await first.store.close();
    await handles.pop()!.close();
    const [indexPage] = [...medium.pages].find(([, p]) => pageKind(p.bytes) === 'index')!;
    faults.alterPages = new Set([indexPage]); // the sealed index no longer opens
    const { store, docs } = await open();
    gated = indexPage;
    const search = docs.search('alpha');
    const put = docs.put('late', { text: 'alpha late' }); // its applied hook waits for that load
    setTimeout(release, 50);
    await expect(search).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    await put; // durable, so acknowledged
    expect((await docs.search('alpha', { limit: 100 })).length).toBe(11); // built from the records
    await store.close();
    await handles.pop()!.close();
  });
});
