// A storage attacker who holds only public keys (DESIGN §11): forged manifests, generations wrapped
// to the recipient by someone else, and a wholly substituted store. Each case is written as the
// attack — bytes an attacker can produce from what the medium shows — and must end in a PqdbError
// (or, for a substituted store, be caught by the store id pin), never in a store that opens.
import { describe, it, expect } from 'vitest';
import { openStore, generateRecipient, openMemoryPageStore, verifyStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { KeyRing } from '../src/engine/keys';
import { Registry } from '../src/engine/registry';
import { CommitPipeline } from '../src/engine/commit';
import { wrapRoot } from '../src/crypto/envelope';
import { encodeManifest, hex, newManifest, readManifest, b64, STORE_ID_LABEL } from '../src/engine/manifest';

const victim = generateRecipient('hybrid');
const schema = { text: 'string' } as const;
const enc = new TextEncoder();

async function victimStore() {
  const medium = new MemoryMedium();
  const store = await openStore({
    storage: await openMemoryPageStore({ medium }),
    create: true,
    recipients: [victim.publicKey],
    unlock: victim.secretKey,
  });
  await store.collection('notes', { schema }).put('n1', { text: 'secret' });
  const { storeId } = store.info();
  await store.close();
  return { medium, storeId };
}

/** Opens the victim's store on `medium`; closing the store closes its page store too. */
const openVictim = async (medium: MemoryMedium, extra: { storeId?: string } = {}) => {
  const storage = await openMemoryPageStore({ medium });
  try {
    const store = await openStore({ storage, unlock: victim.secretKey, ...extra });
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

/** The manifest bytes with a new header (the sealed body kept as it is). */
function reframe(raw: Uint8Array, edit: (header: Record<string, unknown>) => void): Uint8Array {
  const len = new DataView(raw.buffer, raw.byteOffset).getUint32(5);
  const header = JSON.parse(new TextDecoder().decode(raw.subarray(9, 9 + len)));
  edit(header);
  const head = enc.encode(JSON.stringify(header));
  const out = new Uint8Array(9 + head.length + raw.length - 9 - len);
  out.set(raw.subarray(0, 9));
  new DataView(out.buffer).setUint32(5, head.length);
  out.set(head, 9);
  out.set(raw.subarray(9 + len), 9 + head.length);
  return out;
}

describe('a storage attacker with public keys only', () => {
  it('cannot add a generation wrapped to the recipient, nor change the readable header', async () => {
    const { medium } = await victimStore();
    const raw = medium.manifest!.bytes;
    const root = new Uint8Array(32).fill(7); // the attacker's root, wrapped to the victim
    const envelope = b64(wrapRoot(root, victim.publicKey, 2, 2));
    for (const edit of [
      (h: Record<string, unknown>) => (h.envelopes as unknown[]).push([2, [envelope]]),
      (h: Record<string, unknown>) => (h.commit = (h.commit as number) + 1),
    ]) {
      const forged = new MemoryMedium();
      for (const [id, p] of medium.pages) forged.pages.set(id, p);
      const bytes = reframe(raw, edit);
      forged.manifest = { ...medium.manifest!, bytes, crc: await crcOf(bytes) };
      await expect(openVictim(forged)).rejects.toMatchObject({ code: 'AUTH_FAILED' });
      const report = await verifyStore(await openMemoryPageStore({ medium: forged }), { unlock: victim.secretKey });
      expect(report.ok).toBe(false);
      expect(report.problems[0]).toMatchObject({ where: 'manifest', code: 'AUTH_FAILED' });
    }
  });

  it('cannot keep the real generations under a store secret of its own', async () => {
    const { medium } = await victimStore();
    const real = readManifest(medium.manifest!.bytes).header;
    // The attacker's store secret, wrapped to the victim, seals a body it writes itself; the real
    // generations' envelopes are copied over (their roots stay unknown to it, so it cannot bind them).
    const ring = new KeyRing();
    ring.createGeneration(2, [victim.publicKey]);
    const registry = new Registry({ active: 2 });
    const records = ring.records().filter((r) => r.generation === 0);
    for (const [generation, envelopes] of real.envelopes)
      if (generation > 0)
        records.push({
          generation,
          suite: 2,
          salt: new Uint8Array(32),
          bind: new Uint8Array(32),
          envelopes: envelopes.map((e) => Uint8Array.from(atob(e), (c) => c.charCodeAt(0))),
        });
    const manifest = newManifest(hex(ring.storeKey(STORE_ID_LABEL, 16)), records, registry.records(), 2, []);
    manifest.nextPageId = 1_000;
    const bytes = encodeManifest(manifest, ring.storeKey('pqdb manifest key v2'));
    medium.manifest = { ...medium.manifest!, bytes, crc: await crcOf(bytes) };
    await expect(openVictim(medium)).rejects.toMatchObject({
      code: 'AUTH_FAILED',
      message: expect.stringMatching(/not bound to this store/),
    });
  });

  it('a wholly substituted store opens only without a store id pin', async () => {
    const { medium, storeId } = await victimStore();
    // A fresh store made for the victim's public key alone, put in place of the real one.
    const ring = new KeyRing();
    ring.createGeneration(2, [victim.publicKey]);
    const registry = new Registry({ active: 2 });
    const fake = newManifest(hex(ring.storeKey(STORE_ID_LABEL, 16)), ring.records(), registry.records(), 2, []);
    const other = new MemoryMedium();
    const pages = await openMemoryPageStore({ medium: other });
    await new CommitPipeline(pages, ring, fake, registry).run(() => undefined);
    await pages.close();
    const unpinned = await openVictim(other);
    expect(unpinned.info().storeId).not.toBe(storeId); // it is another store, and says so
    await unpinned.close();
    await expect(openVictim(other, { storeId })).rejects.toMatchObject({ code: 'AUTH_FAILED' });
    const pinned = await openVictim(medium, { storeId });
    expect(await pinned.collection('notes', { schema }).get('n1')).toEqual({ text: 'secret' });
    await pinned.close();
  });
});

async function crcOf(bytes: Uint8Array): Promise<number> {
  const { crc32c } = await import('../src/storage/page-store');
  return crc32c(bytes);
}
