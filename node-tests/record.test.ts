// Suites, data keys, sealed records and key envelopes (the formats of docs/format.md).
import { describe, it, expect } from 'vitest';
import {
  suites,
  suite,
  deriveDataKey,
  canonicalGovernance,
  sealRecord,
  openRecord,
  readHeader,
  sealedLength,
  HEADER_BYTES,
} from '../src/record-api';
import { generateRecipient, wrapRoot, unwrapRoot, readEnvelope } from '../src/record-api';
import { Rng } from './cases/_util';

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const rng = new Rng(615);
const root = rng.bytes(32);
const salt = rng.bytes(32);
const address = { collection: 'synsets', id: 'n00001740', generation: 3, sequence: 2 ** 40 + 7 };
const plaintext = rng.bytes(115);
const authFailed = expect.objectContaining({ code: 'AUTH_FAILED' });

describe('suites and data keys', () => {
  it('registers the three suites by id and name', () => {
    expect(suites().map((s) => [s.id, s.name, s.aead, s.commitment])).toEqual([
      [1, 'gcmsiv-hkdf256', 'gcmsiv', false],
      [2, 'gcmsiv-hkdf384', 'gcmsiv', false],
      [3, 'cnsa2-gcm-hkdf384-commit', 'gcm', true],
    ]);
    expect(suite(2)).toBe(suite('gcmsiv-hkdf384'));
    expect(() => suite('aes-ecb' as 'gcmsiv-hkdf384')).toThrow(RangeError);
    expect(() => suite(9)).toThrow(RangeError);
  });

  it('data keys depend on root, salt, suite, generation and the canonical governance state only', () => {
    const g = { scope: 'public', retention: 30, legalHold: false };
    const k = deriveDataKey(root, salt, 'gcmsiv-hkdf384', 3, g);
    expect(deriveDataKey(root, salt, 2, 3, { legalHold: false, retention: 30, scope: 'public' })).toEqual(k);
    expect(canonicalGovernance(g)).toEqual(
      new TextEncoder().encode('{"legalHold":false,"retention":30,"scope":"public"}'),
    );
    for (const other of [
      deriveDataKey(root, salt, 'gcmsiv-hkdf256', 3, g),
      deriveDataKey(root, salt, 2, 4, g),
      deriveDataKey(root, salt, 2, 3, { ...g, scope: 'private' }),
      deriveDataKey(salt, salt, 2, 3, g),
      deriveDataKey(root, root, 2, 3, g),
    ])
      expect(other).not.toEqual(k);
    expect(() => canonicalGovernance({ nested: {} } as never)).toThrow(TypeError);
    expect(() => canonicalGovernance({ n: NaN })).toThrow(TypeError);
    expect(() => deriveDataKey(root.subarray(1), salt, 2, 3)).toThrow(RangeError);
  });
});

describe('sealed records', () => {
  for (const s of suites()) {
    it(`${s.name}: round trip, size, and every alteration refused`, () => {
      const key = deriveDataKey(root, salt, s.id, address.generation);
      const sealed = sealRecord(s.id, key, address, plaintext);
      expect(sealed.length).toBe(sealedLength(s.id, 115));
      expect(sealed.length).toBe(HEADER_BYTES + (s.commitment ? 32 : 0) + 131);
      const keyFor = () => key;
      const opened = openRecord(sealed, address.collection, address.id, keyFor);
      expect(opened.plaintext).toEqual(plaintext);
      expect(opened.header).toMatchObject({ version: 1, generation: 3, sequence: address.sequence, flags: 0 });
      expect(opened.header.suite).toBe(s);
      // Moved to another id or collection, any flipped bit, a wrong key: AUTH_FAILED.
      expect(() => openRecord(sealed, address.collection, 'n00001741', keyFor)).toThrow(authFailed);
      expect(() => openRecord(sealed, 'other', address.id, keyFor)).toThrow(authFailed);
      for (let bit = 0; bit < sealed.length * 8; bit += 7) {
        const t = sealed.slice();
        t[bit >> 3] ^= 1 << (bit & 7);
        let code = '';
        try {
          openRecord(t, address.collection, address.id, keyFor);
        } catch (e) {
          code = (e as { code: string }).code;
        }
        expect(['AUTH_FAILED', 'FORMAT_VERSION'], `bit ${bit}`).toContain(code);
      }
      expect(() =>
        openRecord(sealed, address.collection, address.id, () => deriveDataKey(salt, salt, s.id, 3)),
      ).toThrow(authFailed);
    });
  }

  for (const s of suites())
    it(`${s.name}: opens into a caller's buffer, a view of its start; too short is a RangeError`, () => {
      const key = deriveDataKey(root, salt, s.id, address.generation);
      const sealed = sealRecord(s.id, key, address, plaintext);
      const output = new Uint8Array(200).fill(0xee);
      const opened = openRecord(sealed, address.collection, address.id, () => key, undefined, output);
      expect(opened.plaintext).toEqual(plaintext);
      expect(opened.plaintext.buffer).toBe(output.buffer);
      expect(opened.plaintext.byteOffset).toBe(0);
      expect(output.subarray(115).every((b) => b === 0xee)).toBe(true); // nothing written past it
      const exact = new Uint8Array(115);
      expect(openRecord(sealed, address.collection, address.id, () => key, undefined, exact).plaintext).toEqual(
        plaintext,
      );
      expect(() =>
        openRecord(sealed, address.collection, address.id, () => key, undefined, new Uint8Array(114)),
      ).toThrow(RangeError);
      const wrong = new Uint8Array(200);
      expect(() => openRecord(sealed, 'other', address.id, () => key, undefined, wrong)).toThrow(authFailed);
      expect(wrong.every((b) => b === 0)).toBe(true); // no plaintext when the tag fails
    });

  it('headers are read and checked', () => {
    const sealed = sealRecord(2, deriveDataKey(root, salt, 2, 3), address, plaintext);
    expect(readHeader(sealed).sequence).toBe(address.sequence);
    const v2 = sealed.slice();
    v2[0] = 2;
    expect(() => readHeader(v2)).toThrow(expect.objectContaining({ code: 'FORMAT_VERSION' }));
    const s9 = sealed.slice();
    s9[1] = 9;
    expect(() => readHeader(s9)).toThrow(expect.objectContaining({ code: 'FORMAT_VERSION' }));
    expect(() => readHeader(sealed.subarray(0, 20))).toThrow(expect.objectContaining({ code: 'CORRUPTION' }));
    expect(() => sealRecord(2, root, { ...address, sequence: -1 }, plaintext)).toThrow(RangeError);
    expect(() => sealRecord(2, root, { ...address, id: 5 as unknown as string }, plaintext)).toThrow(TypeError);
  });
});

describe('key envelopes and the per-record cost of post-quantum keys', () => {
  it('hybrid and classical envelopes wrap and unwrap a root; a wrong key or a flipped bit is AUTH_FAILED', () => {
    for (const type of ['hybrid', 'classical'] as const) {
      const r = generateRecipient(type);
      const other = generateRecipient(type);
      const env = wrapRoot(root, r.publicKey, 'gcmsiv-hkdf384', 3);
      expect(env.length).toBe(type === 'hybrid' ? 24 + 1600 + 48 : 24 + 32 + 48);
      expect(readEnvelope(env)).toMatchObject({ type, suite: 2, generation: 3 });
      expect(unwrapRoot(env, r.secretKey)).toEqual(root);
      expect(() => unwrapRoot(env, other.secretKey)).toThrow(authFailed);
      const t = env.slice();
      t[env.length - 20] ^= 1;
      expect(() => unwrapRoot(t, r.secretKey)).toThrow(authFailed);
      const g = env.slice();
      g[7] ^= 1; // generation
      expect(() => unwrapRoot(g, r.secretKey)).toThrow(authFailed);
    }
  });

  it('zero bytes per record: a 115-byte record seals to 131 bytes plus the same 16-byte header under a PQC or a classical root', () => {
    const pqc = generateRecipient('hybrid');
    const classical = generateRecipient('classical');
    const rootPqc = unwrapRoot(wrapRoot(root, pqc.publicKey, 2, 1), pqc.secretKey);
    const rootClassical = unwrapRoot(wrapRoot(rng.bytes(32), classical.publicKey, 2, 1), classical.secretKey);
    const a = sealRecord(2, deriveDataKey(rootPqc, salt, 2, 1), { ...address, generation: 1 }, plaintext);
    const b = sealRecord(2, deriveDataKey(rootClassical, salt, 2, 1), { ...address, generation: 1 }, plaintext);
    expect(a.length).toBe(147);
    expect(b.length).toBe(147);
    expect(a.subarray(0, HEADER_BYTES)).toEqual(b.subarray(0, HEADER_BYTES));
    expect(a.length - HEADER_BYTES).toBe(115 + 16);
  });

  it('golden vectors freeze the formats (docs/format.md)', () => {
    const g = { scope: 'public' };
    const k = deriveDataKey(new Uint8Array(32).fill(1), new Uint8Array(32).fill(2), 2, 7, g);
    const rec = sealRecord(
      2,
      k,
      { collection: 'c', id: 'r1', generation: 7, sequence: 42 },
      new TextEncoder().encode('hello pqdb'),
    );
    const k3 = deriveDataKey(new Uint8Array(32).fill(1), new Uint8Array(32).fill(2), 3, 7, g);
    const rec3 = sealRecord(
      3,
      k3,
      { collection: 'c', id: 'r1', generation: 7, sequence: 42 },
      new TextEncoder().encode('hello pqdb'),
    );
    const recipient = generateRecipient('classical', new Uint8Array(32).fill(5));
    const env = wrapRoot(new Uint8Array(32).fill(1), recipient.publicKey, 2, 7, new Uint8Array(32).fill(6));
    const got = { dataKey: hex(k), record: hex(rec), record3: hex(rec3), classicalEnvelope: hex(env) };
    expect(got).toEqual(GOLDEN);
  });
});

// Computed once when the formats were fixed; a change here is a format change (bump the versions).
const GOLDEN = {
  dataKey: '6a2df2be014f8f00d2148575205b7b069f3670d68f748db66cc1e8b20fecd698',
  record: '0102000000000007000000000000002a4b0490bade8aaa767af2b97a2c5894cad43f448f57a00f08d49a',
  record3:
    '0103000000000007000000000000002aad0e6b168af8399be41d0df9fd22697e7178792eeb69e9e8d81d644f637dce46decc311a4a38f92702f789b8ac917cf5996491200d1340c163f6',
  classicalEnvelope:
    '01020200000000074021b540fce4e3e11069e2dad898e12ff5b2d6e60f9477e310c2982daaa6c9136c108a1777c5947e448fa37d68174557db858c7bd8fad295705d2327f786a69c069fabe3682c788b1a95eacc84c560a4629f7a5f1297c591615a0ec2dbd67c37',
};

describe('records sealed together (a commit page)', () => {
  it("recordAeadInto + encryptInto give sealRecord's bytes; a suite with subkeys is left to sealRecord", async () => {
    const { recordAeadInto } = await import('../src/crypto/record');
    const { gcmsiv } = await import('../src/kernels/aead');
    for (const s of ['gcmsiv-hkdf256', 'gcmsiv-hkdf384'] as const) {
      const dataKey = deriveDataKey(root, salt, s, 3, { scope: 'public' });
      const keyed = gcmsiv.withKey(dataKey);
      const records = [0, 1, 115, 300, 5000].map((n, i) => ({
        address: { collection: 'c', id: `r${i}`, generation: 3, sequence: 100 + i },
        plaintext: rng.bytes(n),
      }));
      const page = new Uint8Array(records.reduce((n, r) => n + sealedLength(s, r.plaintext.length), 0));
      let at = 0;
      const parts = records.map((r) => {
        const slot = page.subarray(at, (at += sealedLength(s, r.plaintext.length)));
        return recordAeadInto(s, r.address, r.plaintext, slot)!;
      });
      keyed.encryptInto(parts);
      at = 0;
      for (const r of records) {
        const want = sealRecord(s, dataKey, r.address, r.plaintext);
        expect(hex(page.subarray(at, (at += want.length)))).toBe(hex(want));
      }
      keyed.destroy();
    }
    expect(recordAeadInto('cnsa2-gcm-hkdf384-commit', address, plaintext, new Uint8Array(1000))).toBeUndefined();
  });

  it('a commit of interleaved governance states under a one-key cache reads back whole', async () => {
    const { openStore, openMemoryPageStore } = await import('../src/index');
    const { MemoryMedium } = await import('../src/storage/memory');
    const who = generateRecipient();
    const medium = new MemoryMedium();
    const open = async (create: boolean) =>
      openStore({
        storage: await openMemoryPageStore({ medium }),
        create,
        recipients: [who.publicKey],
        unlock: who.secretKey,
        autoCheckpoint: false,
        keyCacheSize: 1,
      });
    let store = await open(true);
    let c = store.collection('c', { schema: { v: 'string' } });
    const scopes = ['a', 'a', 'b', 'a', 'c', 'c', 'b', 'a'];
    await store.batch((tx) =>
      scopes.forEach((scope, i) => tx.put(c, `r${i}`, { v: `${scope}${i}` }, { governance: { scope } })),
    );
    await store.close();
    store = await open(false);
    c = store.collection('c', { schema: { v: 'string' } });
    for (const [i, scope] of scopes.entries()) expect(await c.get(`r${i}`)).toEqual({ v: `${scope}${i}` });
    await store.close();
  });
});
