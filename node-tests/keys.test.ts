// The key ring: generations, envelopes per recipient, unlock, recipients added and removed without
// re-encryption, data keys derived on demand in a bounded cache, everything wiped on close.
import { describe, it, expect } from 'vitest';
import { KeyRing } from '../src/engine/keys';
import { generateRecipient, sealRecord, openRecord, readEnvelope } from '../src/record-api';
import { isX25519PublicKey } from '../src/crypto/envelope';
import { openStore, openMemoryPageStore } from '../src/index';

const authFailed = expect.objectContaining({ code: 'AUTH_FAILED' });
const address = { collection: 'c', id: 'r', generation: 1, sequence: 1 };

describe('key ring', () => {
  it('creates a generation for several recipients; any of them unlocks it; the data keys agree', () => {
    const alice = generateRecipient('hybrid');
    const bob = generateRecipient('classical');
    const ring = new KeyRing();
    const g = ring.createGeneration('gcmsiv-hkdf384', [alice.publicKey, bob.publicKey]);
    expect(g).toBe(1);
    const gov = { scope: 'public' };
    const k = ring.aeadFor(2, g, gov);
    const sealed = sealRecord(2, k, address, new Uint8Array([1, 2, 3]));
    // Only envelopes and salts are persisted.
    const records = ring.records();
    expect(records[0].envelopes.map((e) => readEnvelope(e).type)).toEqual(['hybrid', 'classical']);
    for (const who of [alice, bob]) {
      const reopened = new KeyRing(records);
      expect(() => reopened.aeadFor(2, g, gov)).toThrow(authFailed);
      expect(reopened.unlock(who.secretKey)).toBe(1);
      const k2 = reopened.aeadFor(2, g, gov);
      expect(k2.key).toEqual(k.key);
      expect(openRecord(sealed, 'c', 'r', () => k2).plaintext).toEqual(new Uint8Array([1, 2, 3]));
      reopened.close();
    }
    expect(() => new KeyRing(records).unlock(generateRecipient('hybrid').secretKey)).toThrow(authFailed);
    ring.close();
  });

  it('adds and removes recipients by rewrapping, never re-encrypting', () => {
    const alice = generateRecipient('hybrid');
    const carol = generateRecipient('hybrid');
    const ring = new KeyRing();
    ring.createGeneration(2, [alice.publicKey]);
    ring.createGeneration(3, [alice.publicKey]);
    const before = ring.aeadFor(2, 1).key.slice();
    ring.addRecipient(carol.publicKey);
    const viaCarol = new KeyRing(ring.records());
    expect(viaCarol.unlock(carol.secretKey)).toBe(2);
    expect(viaCarol.aeadFor(2, 1).key).toEqual(before);
    ring.removeRecipient(alice.publicKey);
    expect(() => new KeyRing(ring.records()).unlock(alice.secretKey)).toThrow(authFailed);
    expect(() => ring.removeRecipient(carol.publicKey)).toThrow(RangeError);
    const locked = new KeyRing(ring.records());
    expect(() => locked.addRecipient(alice.publicKey)).toThrow(authFailed);
  });

  it('caches a bounded number of data keys and wipes them on eviction and close', () => {
    const r = generateRecipient('classical');
    const ring = new KeyRing([], 2);
    const g = ring.createGeneration(2, [r.publicKey]);
    const a = ring.aeadFor(2, g, { scope: 'a' });
    ring.aeadFor(2, g, { scope: 'b' });
    expect(ring.aeadFor(2, g, { scope: 'a' })).toEqual(a); // hit, refreshed
    ring.aeadFor(2, g, { scope: 'c' }); // evicts b
    expect(ring.cachedKeys).toBe(2);
    const c = ring.aeadFor(2, g, { scope: 'c' });
    ring.close();
    expect(c.key.every((x) => x === 0)).toBe(true);
    expect(() => c.aead.encrypt(new Uint8Array(12), new Uint8Array(1))).toThrow(TypeError);
    expect(() => ring.aeadFor(2, g)).toThrow(expect.objectContaining({ code: 'NOT_OPEN' }));
  });

  it('refuses a recipient secret key given for a public key, and writes nothing then', async () => {
    const invalidKey = expect.objectContaining({ code: 'INVALID_KEY' });
    const alice = generateRecipient('hybrid');
    // Seeds whose secret key, read as an X25519 u-coordinate, is not a public key (31 in 32 are),
    // and one that is (so only knowing its owner tells it apart).
    const seeds = Array.from({ length: 200 }, (_, i) => new Uint8Array(32).fill(i + 1));
    const shaped = (yes: boolean) => seeds.find((s) => isX25519PublicKey(s) === yes)!;
    const bob = generateRecipient('classical', shaped(false));
    const carol = generateRecipient('classical', shaped(true));
    const dave = generateRecipient('hybrid', shaped(true));
    for (const r of [alice, bob, carol, dave]) expect(isX25519PublicKey(r.publicKey.subarray(-32))).toBe(true);
    expect(isX25519PublicKey(new Uint8Array(32))).toBe(false); // u = 0, a low-order point
    expect(isX25519PublicKey(new Uint8Array(32).fill(0xff))).toBe(false); // not below p
    // A secret key of a recipient the call names, or of none it knows (refused by its shape).
    for (const recipients of [
      [alice.publicKey, alice.secretKey],
      [carol.publicKey, carol.secretKey],
      [alice.publicKey, bob.secretKey],
      [dave.secretKey, dave.publicKey],
    ]) {
      expect(() => new KeyRing().createGeneration(2, recipients)).toThrow(invalidKey);
      const storage = await openMemoryPageStore();
      await expect(openStore({ storage, create: true, recipients, unlock: alice.secretKey })).rejects.toThrow(
        invalidKey,
      );
      expect(await storage.readManifest()).toBeUndefined();
    }
    // addRecipient: the secret key of a recipient of the store, or one of the wrong shape.
    const storage = await openMemoryPageStore();
    const store = await openStore({
      storage,
      create: true,
      recipients: [alice.publicKey, carol.publicKey],
      unlock: alice.secretKey,
    });
    const before = store.info().commit;
    for (const k of [alice.secretKey, carol.secretKey, bob.secretKey])
      await expect(store.addRecipient(k)).rejects.toThrow(invalidKey);
    expect(store.info().commit).toBe(before);
    await store.addRecipient(bob.publicKey);
    await store.close();
  });
});
