// Shipped pages are opened before a replica keeps them (src/replication/_check.ts). Opening a store
// on a staged catch-up does not read the commit pages its persisted key directory covers, so a
// primary that is trusted but misbehaves could plant a damaged copy of one: the replica would keep
// it, and reads of its records would fail even after it follows the honest primary again. Every
// shipped page now opens under the verified keys first: the damaged catch-up is refused, the
// replica reconnects, the page is sent again and every record reads.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, openStore, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { engineOf as partsOf } from '../src/engine/store';
import { pageKind } from '../src/engine/page-format';
import { Primary } from '../src/replication/primary';
import { Replica } from '../src/replication/replica';
import { decodeMessage, encodeMessage, MSG_COMMIT, MSG_PAGES } from '../src/replication/messages';
import { sessionPair } from './support/sessions';

const pair = (tap: (bytes: Uint8Array) => Uint8Array) => sessionPair({ tap });

const recipient = generateRecipient();
const signer = generateSigner();
const schema = { lemma: 'string', n: 'integer' } as const;

describe('replication: shipped pages open before they are kept', () => {
  it('a catch-up carrying a damaged commit page the directory covers is refused; the page comes again whole', async () => {
    const store = await openStore({
      storage: 'memory',
      create: true,
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    });
    const words = store.collection('w', { schema });
    for (let b = 0; b < 4; b++)
      await store.batch((tx) => {
        for (let i = 0; i < 20; i++) tx.put(words, `k${b}-${i}`, { lemma: `word ${b} ${i}`, n: i });
      });
    await store.checkpoint(); // persists the key directory: it covers the commit pages above
    await words.put('after', { lemma: 'after', n: 0 });
    const primary = new Primary(partsOf(store));
    let damaged = 0;
    let armed = true;
    const tap = (bytes: Uint8Array): Uint8Array => {
      const m = decodeMessage(bytes);
      if (!armed || (m.type !== MSG_COMMIT && m.type !== MSG_PAGES)) return bytes;
      const page = m.pages.find((p) => pageKind(p.bytes) === 'commit');
      if (page === undefined) return bytes;
      armed = false;
      damaged = page.id;
      page.bytes[page.bytes.length - 3] ^= 0x10; // inside the last record's sealed bytes
      return encodeMessage(m);
    };
    let sessions = 0;
    const replica = await Replica.open(await openMemoryPageStore({ medium: new MemoryMedium() }), {
      unlock: recipient.secretKey,
      backoffMs: [10],
      connect: async () => {
        sessions++;
        const [p, r] = pair(tap);
        void primary.accept(p);
        return r;
      },
    });
    await replica.applied(store.info().commit);
    const rw = replica.collection<{ lemma: string; n: number }>('w', { schema });
    for (let b = 0; b < 4; b++)
      for (let i = 0; i < 20; i++) expect(await rw.get(`k${b}-${i}`)).toEqual({ lemma: `word ${b} ${i}`, n: i });
    expect(damaged).toBeGreaterThan(0);
    expect(sessions).toBe(2); // the damaged catch-up was refused, the next one applied
    expect(replica.status().lastError).toMatch(new RegExp(`^AUTH_FAILED: shipped page ${damaged} does not open`));
    await replica.close();
    await primary.close();
    await store.close();
  });
});
