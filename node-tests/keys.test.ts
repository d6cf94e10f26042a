// The key ring: generations, envelopes per recipient, unlock, recipients added and removed without
// re-encryption, data keys derived on demand in a bounded cache, everything wiped on close.
import { describe, it, expect } from 'vitest';
import { KeyRing } from '../src/engine/keys';
import { generateRecipient, sealRecord, openRecord, readEnvelope } from '../src/record-api';

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
});
