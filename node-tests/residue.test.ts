// Key residue on the JavaScript side (the hygiene suite checks WebAssembly memory): no copy of a key,
// of its expanded AES schedule or of a secret intermediate outlives the call that made it. The
// one-shot AEAD keeps nothing reachable but the caller's own key; the engine's one-shot ciphers
// (page and index keys, envelope wrap keys, suite-3 record subkeys) reach no key bytes once the store
// is closed; per-record subkeys are wiped on every path; the hybrid KEM wipes the seed's expansion,
// its copies of the seed and the partial shared secrets. Reachability is read through the V8
// inspector (support/reachable.ts); the modules below are wrapped to observe what passes through.
import { describe, it, expect, beforeAll, vi } from 'vitest';
import * as api from '../src/crypto';
import { expandKey } from '../src/kernels/aead';
import { makeHybrid, type HybridParts } from '../src/crypto/hybrid-kem';
import { sealRecord, openRecord, deriveDataKey, sealedLength } from '../src/record-api';
import { openStore, generateRecipient, generateSigner, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { kemProvider } from '../src/crypto/kem';
import { sha3_256, shake256 } from '../src/kernels/sha3';
import { sha3_256 as nobleSha3_256, shake256 as nobleShake256 } from '@noble/hashes/sha3.js';
import { ml_kem1024 as nobleMlKem1024 } from '@noble/post-quantum/ml-kem.js';
import { x25519 as nobleX25519 } from '@noble/curves/ed25519.js';
import { x25519 } from '../src/kernels/x25519';
import { buffersHolding } from './support/reachable';
import { FLAVORS } from './support/vectors';
import { Rng } from './cases/_util';

type Made = { cipher: object; value: Uint8Array; site: string };
const seen = vi.hoisted(() => ({
  /** Every one-shot cipher made while `on`, with a copy of its key taken by this test. */
  ciphers: [] as Made[],
  /** The keys given to the record layer's one-shot calls (sealOnce, openOnce) while `on`. */
  once: [] as { key: Uint8Array; site: string }[],
  /** Outputs of HKDF-Expand whose info starts with `label`. */
  expanded: [] as { info: Uint8Array; out: Uint8Array }[],
  /** X25519 scalars the hybrid passed to its provider's X25519 and the shared secrets it got back. */
  x25519: [] as Uint8Array[],
  /** Outputs of one-call HKDF (the engine's key derivations), with a copy taken when made. */
  hkdf: [] as { info: string; out: Uint8Array; value: Uint8Array }[],
  /** Roots unwrapped from key envelopes (the store secret S and the generation roots R_g). */
  roots: [] as { out: Uint8Array; value: Uint8Array }[],
  on: false,
}));

vi.mock('../src/kernels/aead', async (importOriginal) => {
  const m = await importOriginal<typeof import('../src/kernels/aead')>();
  const wrap = (f: typeof m.gcm): typeof m.gcm =>
    Object.freeze(
      Object.assign(
        (key: Uint8Array, nonce: Uint8Array, aad?: Uint8Array) => {
          const cipher = f(key, nonce, aad);
          if (seen.on) seen.ciphers.push({ cipher, value: new Uint8Array(key), site: new Error().stack ?? '' });
          return cipher;
        },
        { withKey: f.withKey, keyBytes: f.keyBytes, nonceBytes: f.nonceBytes, tagBytes: f.tagBytes },
      ),
    );
  const once = <F extends typeof m.sealOnce>(f: F): F =>
    ((mode, key, ...rest) => {
      if (seen.on) seen.once.push({ key, site: new Error().stack ?? '' });
      return f(mode, key, ...rest);
    }) as F;
  return { ...m, gcm: wrap(m.gcm), gcmsiv: wrap(m.gcmsiv), sealOnce: once(m.sealOnce), openOnce: once(m.openOnce) };
});

vi.mock('../src/kernels/hmac', async (importOriginal) => {
  const m = await importOriginal<typeof import('../src/kernels/hmac')>();
  const expand: typeof m.expand = (hash, prk, info, length) => {
    const out = m.expand(hash, prk, info, length);
    if (seen.on) seen.expanded.push({ info: new Uint8Array(info ?? new Uint8Array(0)), out });
    return out;
  };
  const hkdf: typeof m.hkdf = (hash, ikm, salt, info, length) => {
    const out = m.hkdf(hash, ikm, salt, info, length);
    const label = new TextDecoder().decode(info ?? new Uint8Array(0)).replace(/[^ -~].*$/s, '');
    if (seen.on) seen.hkdf.push({ info: label, out, value: out.slice() });
    return out;
  };
  return { ...m, expand, hkdf };
});

vi.mock('../src/crypto/envelope', async (importOriginal) => {
  const m = await importOriginal<typeof import('../src/crypto/envelope')>();
  const unwrapRoot: typeof m.unwrapRoot = (envelope, secretKey) => {
    const out = m.unwrapRoot(envelope, secretKey);
    if (seen.on) seen.roots.push({ out, value: out.slice() });
    return out;
  };
  return { ...m, unwrapRoot };
});

const rng = new Rng(2718);
const isZero = (a: Uint8Array) => a.every((b) => b === 0);
const observe = <T>(fn: () => T): T => {
  seen.on = true;
  try {
    return fn();
  } finally {
    seen.on = false;
  }
};

/**
 * Windows of the expanded key to search for. The bitsliced schedule is made of 0x00/0xff mask bytes,
 * so a window is 128 bytes with both values well mixed (about 128 bits of the schedule each).
 */
function scheduleNeedles(key: Uint8Array): Uint8Array[] {
  const rk = expandKey(key);
  const out: Uint8Array[] = [];
  for (let at = 0; at + 128 <= rk.length && out.length < 6; at += 128) {
    const w = rk.slice(at, at + 128);
    const set = w.filter((b) => b !== 0).length;
    if (set > 32 && set < 96) out.push(w);
  }
  rk.fill(0);
  expect(out.length).toBeGreaterThan(0);
  return out;
}

/** An object whose method's closure holds a copy of `bytes` (as a residue would). */
function holding(bytes: Uint8Array): { held: Uint8Array; o: object } {
  const held = new Uint8Array(bytes);
  return { held, o: { encrypt: () => held.length } };
}

/** An object whose method's closure holds `bytes` itself. */
function referencing(bytes: Uint8Array): object {
  return { encrypt: () => bytes.length };
}

describe('the reachability probe', () => {
  it('finds a copy a closure holds or a Map entry, and skips the caller’s own array', async () => {
    const key = rng.bytes(32);
    const { held, o } = holding(key);
    expect(await buffersHolding(o, [key])).toEqual(['(root).encrypt.[[Scopes]].Closure (holding).held']);
    const viaMap = { m: new Map([['k', new Uint8Array([1, ...key, 2]).subarray(1, 33)]]) };
    expect((await buffersHolding(viaMap, [key])).length).toBe(1);
    expect(await buffersHolding(referencing(key), [key])).toEqual([
      '(root).encrypt.[[Scopes]].Closure (referencing).bytes',
    ]);
    expect(await buffersHolding(referencing(key), [key], [key])).toEqual([]);
    held.fill(0);
    expect(await buffersHolding(o, [key])).toEqual([]);
  });
});

describe.each(FLAVORS)('one-shot AEAD keeps no copy of the key (%s)', (flavor) => {
  beforeAll(() => api.setWasmFlavor(flavor));

  for (const mode of ['gcm', 'gcmsiv'] as const) {
    it(`${mode}: nothing reachable from the cipher but the caller's key holds the key or its schedule`, async () => {
      const key = rng.bytes(32);
      const needles = [key, ...scheduleNeedles(key)];
      const nonce = rng.bytes(12);
      const aad = rng.bytes(40);
      const pt = rng.bytes(115);
      const c = api[mode](key, nonce, aad);
      expect(await buffersHolding(c, needles, [key])).toEqual([]);
      const ct = c.encrypt(pt);
      c.encrypt(pt, new Uint8Array(ct.length));
      expect(await buffersHolding(c, needles, [key])).toEqual([]);
      expect(c.decrypt(ct)).toEqual(pt);
      ct[5] ^= 1;
      expect(() => c.decrypt(ct)).toThrow(expect.objectContaining({ code: 'AUTH_FAILED' }));
      const big = api[mode](key, nonce); // the streaming path (larger than the kernel buffers)
      big.decrypt(big.encrypt(new Uint8Array(300_000)));
      for (const x of [c, big]) expect(await buffersHolding(x, needles, [key])).toEqual([]);
      // Reading the caller's key at each call: a wiped key no longer opens anything.
      const ct2 = c.encrypt(pt);
      key.fill(0);
      expect(() => c.decrypt(ct2)).toThrow(expect.objectContaining({ code: 'AUTH_FAILED' }));
    });
  }
});

describe('suite-3 record subkeys', () => {
  it('are wiped after sealing and opening, on success and on every failure', () => {
    const s = 'cnsa2-gcm-hkdf384-commit';
    const dataKey = deriveDataKey(rng.bytes(32), rng.bytes(32), s, 1);
    const address = { collection: 'c', id: 'r1', generation: 1, sequence: 41 };
    const pt = rng.bytes(115);
    const keyFor = () => dataKey;
    const label = new TextEncoder().encode('pqdb record key v1');
    const attempts: [string, () => unknown][] = [
      ['seal', () => sealRecord(s, dataKey, address, pt)],
      ['seal into an output of the wrong size', () => sealRecord(s, dataKey, address, pt, 0, new Uint8Array(10))],
    ];
    const sealed = sealRecord(s, dataKey, address, pt);
    const tampered = (at: number) => {
      const t = sealed.slice();
      t[at] ^= 1;
      return t;
    };
    attempts.push(
      ['open', () => openRecord(sealed, 'c', 'r1', keyFor)],
      ['open with an altered commitment', () => openRecord(tampered(20), 'c', 'r1', keyFor)],
      ['open with an altered body', () => openRecord(tampered(60), 'c', 'r1', keyFor)],
      ['open a record cut inside its commitment', () => openRecord(sealed.subarray(0, 40), 'c', 'r1', keyFor)],
    );
    for (const [name, run] of attempts) {
      seen.expanded.length = 0;
      observe(() => {
        try {
          run();
        } catch {
          // failures are expected for most attempts; what matters is what they leave behind
        }
      });
      const subkeys = seen.expanded.filter((e) => label.every((b, i) => e.info[i] === b));
      expect(subkeys.length, name).toBe(1);
      expect(
        subkeys.map((e) => isZero(e.out)),
        name,
      ).toEqual([true]);
    }
    expect(sealedLength(s, 115)).toBe(sealed.length);
  });
});

describe('the engine’s one-shot ciphers', () => {
  it('reach no key bytes once the store is closed (page, index, envelope and record keys)', async () => {
    const recipient = generateRecipient();
    const signer = generateSigner();
    const medium = new MemoryMedium();
    const open = async (create = false) =>
      openStore({
        storage: await openMemoryPageStore({ medium }),
        create,
        recipients: [recipient.publicKey],
        unlock: recipient.secretKey,
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
      });
    const schema = { lemma: 'string', gloss: 'string' } as const;
    const options = { schema, suite: 'cnsa2-gcm-hkdf384-commit', index: { text: ['lemma', 'gloss'] } } as const;
    seen.ciphers.length = 0;
    seen.once.length = 0;
    seen.on = true;
    try {
      let store = await open(true);
      let words = store.collection('w', options);
      await store.batch((tx) => {
        for (let i = 0; i < 6; i++) tx.put(words, `n${i}`, { lemma: `cat${i}`, gloss: 'a small feline' });
      });
      await store.checkpoint();
      await store.close();
      store = await open();
      words = store.collection('w', options);
      expect(await words.get('n3')).toEqual({ lemma: 'cat3', gloss: 'a small feline' });
      expect((await words.search('feline')).length).toBe(6);
      await store.close();
    } finally {
      seen.on = false;
    }
    const sites = (what: RegExp) => seen.ciphers.filter((c) => what.test(c.site)).length;
    expect(sites(/encodePage|decodePage\b/)).toBeGreaterThan(0);
    expect(sites(/encodeIndexPage|decodeIndexPage/)).toBeGreaterThan(0);
    expect(sites(/wrapRoot|unwrapRoot/)).toBeGreaterThan(0);
    // Records go through calls that make no cipher object; each per-record subkey is wiped after.
    const records = seen.once.filter((c) => /sealRecord|openRecord/.test(c.site));
    expect(records.length).toBeGreaterThan(0);
    expect(records.filter((c) => !isZero(c.key))).toEqual([]);
    const holders: string[] = [];
    for (const c of seen.ciphers) holders.push(...(await buffersHolding(c.cipher, [c.value])));
    expect(holders).toEqual([]);
  });
});

describe('a closed store', () => {
  it('keeps no copy of S, of a root R_g or of a key derived from them, also after a failed open', async () => {
    const recipient = generateRecipient();
    const medium = new MemoryMedium();
    const open = async (extra: { create?: boolean; minCommit?: number } = {}) => {
      const storage = await openMemoryPageStore({ medium });
      try {
        return await openStore({ storage, recipients: [recipient.publicKey], unlock: recipient.secretKey, ...extra });
      } catch (e) {
        await storage.close();
        throw e;
      }
    };
    const options = { schema: { w: 'string' }, index: { text: ['w'] } } as const;
    seen.hkdf.length = 0;
    seen.roots.length = 0;
    const closed: object[] = [];
    seen.on = true;
    try {
      let store = await open({ create: true });
      await store.batch((tx) => tx.put(store.collection('c', options), 'a', { w: 'cat' }));
      await store.close();
      closed.push(store);
      store = await open();
      const c = store.collection('c', options);
      expect(await c.get('a')).toEqual({ w: 'cat' });
      expect((await c.search('cat')).length).toBe(1);
      await store.batch((tx) => tx.put(c, 'b', { w: 'dog' }));
      await store.close();
      closed.push(store);
      // Opens that fail after the store secret was unlocked: a rollback pin, a page gone missing.
      await expect(open({ minCommit: 99 })).rejects.toMatchObject({ code: 'ROLLBACK' });
      medium.pages.clear();
      await expect(open()).rejects.toMatchObject({ code: 'CORRUPTION' });
    } finally {
      seen.on = false;
    }
    const labels = new Set(seen.hkdf.map((h) => h.info));
    for (const l of ['pqdb manifest key v2', 'pqdb store id v1', 'pqdb page key v1']) expect(labels).toContain(l);
    // S and R_1, unwrapped at each open; K_manifest from each open and each commit.
    expect(seen.roots.length).toBeGreaterThanOrEqual(6);
    const needles = [
      ...seen.roots.map((r) => r.value),
      ...seen.hkdf.filter((h) => h.info === 'pqdb manifest key v2').map((h) => h.value),
    ];
    const left = [...seen.roots, ...seen.hkdf]
      .filter((b) => !isZero(b.out))
      .map((b) => ('info' in b ? b.info : 'root'));
    expect(left).toEqual([]);
    for (const store of closed) expect(await buffersHolding(store, needles)).toEqual([]);
  });
});

describe.each(['wasm', 'noble'] as const)('hybrid KEM intermediates (%s provider)', (provider) => {
  /** Arrays the hybrid received from or handed to its parts, to be zero after each call. */
  let secrets: Uint8Array[] = [];
  const record = <T extends Uint8Array>(a: T): T => (secrets.push(a), a);
  const base: HybridParts =
    provider === 'wasm'
      ? { mlkem: kemProvider('wasm').ml_kem1024, x25519, sha3_256, shake256 }
      : {
          mlkem: nobleMlKem1024 as unknown as HybridParts['mlkem'],
          x25519: nobleX25519,
          sha3_256: nobleSha3_256,
          shake256: nobleShake256,
        };
  const note = (a: Uint8Array) => (seen.on && seen.x25519.push(a), a);
  const hybrid = makeHybrid({
    x25519: {
      getPublicKey: (s) => base.x25519.getPublicKey(note(s)),
      getSharedSecret: (s, p) => note(base.x25519.getSharedSecret(note(s), p)),
    },
    shake256: (msg, opts) => record(base.shake256(record(msg), opts)),
    sha3_256: (msg) => (record(msg.subarray(0, 64)), base.sha3_256(msg)), // ss_MLKEM ‖ ss_X25519
    mlkem: {
      ...base.mlkem,
      keygen: (seed) => {
        const kp = base.mlkem.keygen(record(seed!));
        record(kp.secretKey);
        return kp;
      },
      encapsulate: (pk, msg) => {
        const r = base.mlkem.encapsulate(pk, record(msg!));
        record(r.sharedSecret);
        return r;
      },
      decapsulate: (ct, sk) => record(base.mlkem.decapsulate(ct, record(sk))),
    },
  });
  /** Runs `fn`; every recorded array not owned by the caller or returned must be zero afterwards. */
  const leftovers = (owned: Uint8Array[], fn: () => unknown): string[] => {
    secrets = [];
    seen.x25519.length = 0;
    let result: unknown;
    observe(() => {
      try {
        result = fn();
      } catch (e) {
        result = e;
      }
    });
    const keep = new Set<ArrayBufferLike>(owned.map((a) => a.buffer));
    const out = result as Record<string, unknown> | Uint8Array;
    for (const v of out instanceof Uint8Array ? [out] : Object.values(out ?? {}))
      if (v instanceof Uint8Array) keep.add(v.buffer);
    const all = [...secrets, ...seen.x25519];
    expect(all.length).toBeGreaterThan(0);
    return all.filter((a) => !keep.has(a.buffer) && !isZero(a)).map((a) => `${a.length} bytes`);
  };

  it('getPublicKey and keygen leave no copy of the seed or of its expansion', () => {
    const seed = rng.bytes(32);
    const kp = hybrid.keygen(seed);
    expect(leftovers([seed], () => hybrid.getPublicKey(seed))).toEqual([]);
    expect(leftovers([seed], () => hybrid.keygen(seed))).toEqual([]);
    expect(leftovers([], () => hybrid.keygen())).toEqual([]);
    expect(hybrid.getPublicKey(seed)).toEqual(kp.publicKey);
  });

  it('encapsulate and decapsulate wipe the partial shared secrets, also when encapsulation fails', () => {
    const kp = hybrid.keygen(rng.bytes(32));
    const msg = rng.bytes(64);
    const { cipherText } = hybrid.encapsulate(kp.publicKey, msg);
    expect(leftovers([kp.publicKey, msg], () => hybrid.encapsulate(kp.publicKey, msg))).toEqual([]);
    expect(leftovers([kp.publicKey], () => hybrid.encapsulate(kp.publicKey))).toEqual([]);
    expect(leftovers([kp.secretKey, cipherText], () => hybrid.decapsulate(cipherText, kp.secretKey))).toEqual([]);
    // An ML-KEM half failing the modulus check (FIPS 203 §7.2) after the X25519 share was computed.
    const bad = kp.publicKey.slice();
    bad.fill(0xff, 0, 384);
    expect(() => hybrid.encapsulate(bad, msg)).toThrow();
    expect(leftovers([bad, msg], () => hybrid.encapsulate(bad, msg))).toEqual([]);
  });
});
