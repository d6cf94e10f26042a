// A storage attacker who holds only public keys (DESIGN §11): forged manifests, generations wrapped
// to the recipient by someone else, and a wholly substituted store. Each case is written as the
// attack — bytes an attacker can produce from what the medium shows — and must end in a PqdbError
// (or, for a substituted store, be caught by the store id pin), never in a store that opens.
import { describe, it, expect } from 'vitest';
import {
  openStore,
  generateRecipient,
  generateSigner,
  openMemoryPageStore,
  verifyStore,
  PqdbError,
} from '../src/index';
import { MerkleLogs } from '../src/engine/merkle-log';
import { Checkpoints } from '../src/engine/checkpoints';
import { signCheckpoint, recordLeafHash } from '../src/crypto/proofs';
import { sealedLength, readHeader } from '../src/crypto/record';
import { compileSchema, encodeValue } from '../src/engine/codec';
import { MemoryMedium } from '../src/storage/memory';
import { crc32c } from '../src/_crc32c';
import { KeyRing } from '../src/engine/keys';
import { Registry } from '../src/engine/registry';
import { CommitPipeline } from '../src/engine/commit';
import { wrapRoot } from '../src/crypto/envelope';
import { encodeManifest, newManifest, readManifest, unlockManifest, STORE_ID_LABEL } from '../src/engine/manifest';
import { hex, b64 } from '../src/_encoding';
import { pageKind, pageSalt } from '../src/engine/page-format';
import { leafBlind } from '../src/engine/keys';

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

/** Opens the victim's store on `medium` with `options`; closing the store closes its page store too. */
const openVictim = async (medium: MemoryMedium, options: Partial<Parameters<typeof openStore>[0]> = {}) => {
  const storage = await openMemoryPageStore({ medium });
  try {
    const store = await openStore({ storage, unlock: victim.secretKey, ...options });
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
  const { crc32c } = await import('../src/_crc32c');
  return crc32c(bytes);
}

describe('rollback and splice', () => {
  const signer = generateSigner();
  const openOn = (medium: MemoryMedium, create = false, extra: { minCommit?: number } = {}) =>
    openVictim(medium, {
      create,
      recipients: [victim.publicKey],
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
      ...extra,
    });

  it('a dropped delete-only commit page does not bring the record back: open refuses', async () => {
    const medium = new MemoryMedium();
    const store = await openOn(medium, true);
    const notes = store.collection('notes', { schema });
    await notes.put('a', { text: 'kept' });
    await notes.put('b', { text: 'deleted' });
    const before = new Set(medium.pages.keys());
    await notes.delete('b');
    const [deletePage] = [...medium.pages.keys()].filter((id) => !before.has(id));
    await store.close();
    medium.pages.delete(deletePage);
    await expect(openOn(medium)).rejects.toMatchObject({ code: 'CORRUPTION' });
    const report = await verifyStore(await openMemoryPageStore({ medium }), { unlock: victim.secretKey });
    expect(report.ok).toBe(false);
  });

  it('a dropped page under a checkpoint, or a commit page put back from an older copy, is refused on open', async () => {
    const medium = new MemoryMedium();
    const store = await openOn(medium, true);
    const notes = store.collection('notes', { schema });
    await notes.put('a', { text: 'v1' });
    const copy = new Map(medium.pages);
    await notes.put('a', { text: 'v2' });
    await store.checkpoint();
    await store.close();
    const v2Page = [...medium.pages.keys()].find((id) => !copy.has(id) && medium.pages.get(id)!.bytes[3] === 0x50)!;
    const dropped = new MemoryMedium();
    for (const [id, p] of medium.pages) if (id !== v2Page) dropped.pages.set(id, p);
    dropped.manifest = medium.manifest;
    await expect(openOn(dropped)).rejects.toMatchObject({ code: 'CORRUPTION' });
  });

  it('an older copy of the whole store opens only without a freshness pin', async () => {
    const medium = new MemoryMedium();
    const store = await openOn(medium, true);
    const notes = store.collection('notes', { schema });
    await notes.put('a', { text: 'v1' });
    const old = { pages: new Map(medium.pages), manifest: medium.manifest };
    await store.registry.setState('gcmsiv-hkdf384', 'quarantined').catch(() => undefined);
    await notes.delete('a');
    const { commit } = store.info();
    await store.close();
    const restored = new MemoryMedium();
    for (const [id, p] of old.pages) restored.pages.set(id, p);
    restored.manifest = old.manifest;
    const unpinned = await openOn(restored);
    expect(unpinned.info().commit).toBeLessThan(commit); // consistent, but older: the caller can tell
    await unpinned.close();
    await expect(openOn(restored, false, { minCommit: commit })).rejects.toMatchObject({ code: 'ROLLBACK' });
    // The same pin for the verifier: the newest checkpoint's hash, kept elsewhere.
    const pinned = await openOn(medium);
    await pinned.checkpoint();
    const hash = pinned.info().checkpoint!.hash;
    await pinned.close();
    const verifyPinned = async (m: MemoryMedium) => {
      const ps = await openMemoryPageStore({ medium: m });
      try {
        return await verifyStore(ps, { unlock: victim.secretKey, expectCheckpoint: hash });
      } finally {
        await ps.close();
      }
    };
    expect((await verifyPinned(medium)).problems).toEqual([]);
    const stale = await verifyPinned(restored);
    expect(stale.problems).toEqual([expect.objectContaining({ code: 'ROLLBACK' })]);
    const current = await openOn(medium, false, { minCommit: commit });
    expect(current.collection('notes', { schema }).has('a')).toBe(false);
    await current.close();
  });

  it('checkpoint() refuses to sign a log that does not extend the last signed checkpoint', async () => {
    const ring = new KeyRing();
    ring.createGeneration(2, [victim.publicKey]);
    const registry = new Registry({ active: 2 });
    const manifest = newManifest(hex(ring.storeKey(STORE_ID_LABEL, 16)), ring.records(), registry.records(), 2, []);
    const pages = await openMemoryPageStore();
    const pipeline = new CommitPipeline(pages, ring, manifest, registry);
    const logs = new MerkleLogs();
    logs.append(1, new Uint8Array(48 * 3).fill(1));
    const storeId = new Uint8Array(16);
    // A signed checkpoint of size 2 whose root is not the root of this log's first two leaves.
    const forged = { storeId, generation: 1, size: 2, root: new Uint8Array(48).fill(9), previous: new Uint8Array(48) };
    const list = [{ ...forged, signed: signCheckpoint(forged, signer.secretKey, signer.publicKey) }];
    const cps = new Checkpoints(
      { pipeline, keys: ring, logs, storeId, list },
      {
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
      },
    );
    await expect(cps.checkpoint()).rejects.toMatchObject({ code: 'CORRUPTION' });
    expect(list.length).toBe(1);
    expect(await pages.listPages()).toEqual([]); // nothing signed, nothing written
    // A consistent predecessor: the next checkpoint signs.
    const rootAt2 = await logs.rootAt(1, 2);
    list[0] = (() => {
      const c = { ...forged, root: rootAt2 };
      return { ...c, signed: signCheckpoint(c, signer.secretKey, signer.publicKey) };
    })();
    await expect(cps.checkpoint()).resolves.toMatchObject({ size: 3 });
    await pages.close();
  });
});

describe('AES-GCM nonces', () => {
  it('a write sequence handed out again after a failed commit still seals under a fresh key (suite 3)', async () => {
    const medium = new MemoryMedium();
    const inner = await openMemoryPageStore({ medium });
    let failNext = false;
    let captured: Uint8Array | undefined;
    // The medium keeps what a failed commit wrote (as a torn tail or a copy could): the attacker has it.
    const storage = new Proxy(inner, {
      get(target, key) {
        if (key === 'commit')
          return async (batch: { pages?: { bytes: Uint8Array }[] }) => {
            if (failNext && (batch.pages?.length ?? 0) > 0) {
              failNext = false;
              captured = batch.pages![0].bytes.slice();
              throw new PqdbError('IO_ERROR', 'fdatasync failed');
            }
            return target.commit(batch as never);
          };
        const v = Reflect.get(target, key) as unknown;
        return typeof v === 'function' ? v.bind(target) : v;
      },
    });
    const store = await openStore({
      storage,
      create: true,
      recipients: [victim.publicKey],
      unlock: victim.secretKey,
      suite: 'cnsa2-gcm-hkdf384-commit',
    });
    const c = store.collection('c', { schema });
    const p1 = 'attack at dawn, attack at dawn!!';
    const p2 = 'retreat at dusk, retreat at dusk';
    failNext = true;
    await expect(c.put('x', { text: p1 })).rejects.toMatchObject({ code: 'IO_ERROR' });
    await c.put('x', { text: p2 }); // the same write sequence again
    await store.close();
    await inner.close();
    const [committed] = [...medium.pages.values()].map((p) => p.bytes);
    // Both pages hold one record of the same length at the same place: its header names the same
    // sequence, but the commitment and the keystream differ.
    expect(committed.length).toBe(captured!.length);
    const tail = sealedLength(3, encodeValue(compileSchema(schema), { text: p1 }).length); // the record, at the page's end
    const a = captured!.subarray(captured!.length - tail);
    const b = committed.subarray(committed.length - tail);
    expect(a.subarray(0, 16)).toEqual(b.subarray(0, 16)); // header: same suite, generation, sequence
    expect(a.subarray(16, 48)).not.toEqual(b.subarray(16, 48)); // commitment C differs: another K_r
    const xorCt = a.subarray(48, tail - 16).map((x, i) => x ^ b[48 + i]);
    const te = new TextEncoder();
    const xorPt = te.encode(p1).map((x, i) => x ^ te.encode(p2)[i]);
    expect(xorPt.length).toBe(32);
    const hex = (u: Uint8Array) => Buffer.from(u).toString('hex');
    expect(hex(xorCt)).not.toContain(hex(xorPt)); // no keystream reuse
  });
});

describe('published leaf hashes', () => {
  it('are no dictionary oracle: a leaf recomputed from the medium and guessed ids and governance matches none', async () => {
    const medium = new MemoryMedium();
    const signer = generateSigner();
    const store = await openVictim(medium, {
      create: true,
      recipients: [victim.publicKey],
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
    });
    const notes = store.collection('notes', { schema });
    await notes.put('alice', { text: 'x' }, { governance: { scope: 'hr' } }); // one record per commit page
    await store.checkpoint();
    const storeId = Uint8Array.from(store.info().storeId.match(/../g)!, (h) => parseInt(h, 16));
    await store.close();
    const pages = [...medium.pages.values()].map((p) => p.bytes);
    const commit = pages.find((b) => pageKind(b) === 'commit')!;
    const log = pages.find((b) => pageKind(b) === 'log')!;
    const published = Buffer.from(log.subarray(25)).toString('hex');
    // What the medium shows: the sealed record (at the page's end), its header, the commit salt.
    const length = sealedLength(2, encodeValue(compileSchema(schema), { text: 'x' }).length);
    const record = commit.subarray(commit.length - length);
    const header = readHeader(record);
    const guess = (blind?: Uint8Array) =>
      Buffer.from(
        recordLeafHash(
          storeId,
          'notes',
          'alice',
          header.sequence,
          header.suite.id,
          header.generation,
          record,
          '{"scope":"hr"}',
          pageSalt(commit),
          blind,
        ),
      ).toString('hex');
    expect(published).not.toContain(guess()); // every guess right, but no blind: no match
    // The store's own computation (with the store secret's blind) is what was published.
    const { keys } = unlockManifest(medium.manifest!.bytes, victim.secretKey);
    expect(published).toContain(guess(leafBlind(keys, pageSalt(commit))));
    keys.close();
  });
});

describe('checkpoint pages', () => {
  it('a checkpoint page replaced by one signed by someone else (same root, same chain) is refused on open', async () => {
    const medium = new MemoryMedium();
    const signer = generateSigner();
    const keysOf = { signer: signer.secretKey, signerPublicKey: signer.publicKey, autoCheckpoint: false as const };
    const store = await openVictim(medium, { create: true, recipients: [victim.publicKey], ...keysOf });
    await store.collection('notes', { schema }).put('a', { text: 'x' });
    const [c] = [await store.checkpoint()];
    await store.close();
    const [pageId] = [...medium.pages].find(([, p]) => pageKind(p.bytes) === 'checkpoint')!;
    const mallory = generateSigner();
    const forged = signCheckpoint(c, mallory.secretKey, mallory.publicKey);
    medium.pages.set(pageId, { bytes: forged, crc: crc32c(forged) });
    await expect(openVictim(medium)).rejects.toMatchObject({ code: 'CORRUPTION' });
  });
});
