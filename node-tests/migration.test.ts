// Live migration (DESIGN §8): every record moves to the target suite in a new key generation while
// reads and writes go on; writes that reach records first are accounted (superseded, deleted,
// inserted); authority can withhold records; a pause resumes; a SIGKILLed migrator resumes in a new
// process from its durable cursor; the result verifies record by record and with verifyStore. On
// memory, node-fs and IndexedDB over fake-indexeddb; the killed migrator on node-fs (it is a child
// process writing a directory).
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, type Store } from '../src/node';
import { verifyStore, verifySealed, openSealed, PqdbError, type AuthorityRequest } from '../src/index';
import { readHeader } from '../src/crypto/record';
import { tokenize } from '../src/engine/lexical';
import { unlockManifest } from '../src/engine/manifest';
import { hex } from './cases/_util';
import { runUntilKilled } from './support/kill';
import { STORE_FIXTURES, nodeFsStoreFixture, perTest, type NodeStoreFixture } from './support/store-fixtures';

const schema = { lemma: 'string', gloss: 'string', n: 'integer' } as const;
type Doc = { lemma: string; gloss: string; n: number };
const recipient = generateRecipient('classical');
const signer = generateSigner();
const WORDS = ['amber', 'basalt', 'cobalt', 'dune', 'ember', 'fjord', 'glacier', 'harbor'];
const doc = (i: number): Doc => ({
  lemma: WORDS[i % 8],
  gloss: `${WORDS[(i * 3) % 8]} ${WORDS[(i * 5 + 1) % 8]} number ${i}`,
  n: i,
});
async function fill(open: (create: boolean) => Promise<Store>, n: number) {
  const store = await open(true);
  const words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
  const model = new Map<string, Doc>();
  for (let i = 0; i < n; i += 250) {
    await store.batch((tx) => {
      for (let k = i; k < Math.min(n, i + 250); k++) {
        tx.put(words, `w${String(k).padStart(5, '0')}`, doc(k), {
          governance: { scope: k % 50 === 7 ? 'restricted' : 'public' },
        });
        model.set(`w${String(k).padStart(5, '0')}`, doc(k));
      }
    });
  }
  return { store, words, model };
}

/** Every record equals the model, and (via the pages) is sealed with `suite`, except `except`. */
async function checkAll(store: Store, model: Map<string, Doc>) {
  const words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
  expect(words.size).toBe(model.size);
  for (const [id, v] of model) expect(await words.get(id), id).toEqual(v);
  for (const q of ['amber', 'dune glacier', 'number']) {
    const got = (await words.search(q, { limit: 100_000 })).map((x) => x.id).sort();
    const want = [...model]
      .filter(([, v]) => tokenize(q).every((t) => tokenize(`${v.lemma} ${v.gloss}`).includes(t)))
      .map(([id]) => id)
      .sort();
    expect(got, q).toEqual(want);
  }
}

/** Suite and generation of the sealed record inside an export (docs/format.md: "PQDX" ‖ 1 ‖ be16 ‖ leaf ‖ be32 ‖ record ‖ …). */
function recordOf(exported: Uint8Array): { suite: number; generation: number } {
  const dv = new DataView(exported.buffer, exported.byteOffset);
  const at = 7 + dv.getUint16(5);
  const h = readHeader(exported.subarray(at + 4, at + 4 + dv.getUint32(at)));
  return { suite: h.suite.id, generation: h.generation };
}

/** verifyStore over the location's page store, opened for reading with no store open on it. */
async function verifyAt(f: NodeStoreFixture, options: Parameters<typeof verifyStore>[1]) {
  const pages = await f.pages();
  try {
    return await verifyStore(pages, options);
  } finally {
    await pages.close();
  }
}

describe.each(STORE_FIXTURES)('live migration (%s)', (_name, factory) => {
  const fresh = perTest(factory);

  it('moves every record to the target suite while writes go on, and accounts for each', async () => {
    const f = await fresh();
    const open = (create = false) =>
      f.open({
        create,
        recipients: [recipient.publicKey],
        unlock: recipient.secretKey,
        suite: 'gcmsiv-hkdf256',
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
      });
    let { store, words, model } = await fill(open, 1000);
    const other = store.collection('other', { schema });
    await other.put('o1', doc(1));
    const progress: { phase: string; copied: number }[] = [];
    let wrote: Promise<unknown> | undefined;
    const result = await store.migrate({
      to: 'gcmsiv-hkdf384',
      chunkRecords: 64,
      onProgress: (p) => {
        progress.push({ phase: p.phase, copied: p.copied });
        if (wrote === undefined && p.phase === 'copying') {
          // Reads keep working mid-migration; an update and a delete reach records the copy has not
          // reached yet (the last written), and an insert adds one.
          wrote = (async () => {
            expect(await words.get('w00003')).toEqual(doc(3));
            await words.put('w00998', { lemma: 'updated', gloss: 'during migration', n: -1 });
            model.set('w00998', { lemma: 'updated', gloss: 'during migration', n: -1 });
            await words.delete('w00999');
            model.delete('w00999');
            await words.put('new', { lemma: 'inserted', gloss: 'during migration', n: -2 });
            model.set('new', { lemma: 'inserted', gloss: 'during migration', n: -2 });
          })();
        }
      },
    });
    await wrote;
    expect(result).toMatchObject({
      phase: 'done',
      copied: 998 + 1,
      superseded: 1,
      deleted: 1,
      withheld: 0,
      failed: 0,
      inserted: 1,
      total: 1001 + 1,
      to: 'gcmsiv-hkdf384',
      running: false,
    });
    expect(result.copied + result.superseded + result.deleted + result.withheld + result.failed + result.inserted).toBe(
      result.total,
    );
    expect(progress.filter((p) => p.phase === 'copying').length).toBeGreaterThanOrEqual(15);
    expect(progress.map((p) => p.phase)).toEqual(
      expect.arrayContaining(['indexing', 'verifying', 'activating', 'done']),
    );
    expect(result.workMs).toBeGreaterThan(0);
    expect(store.registry.list().find((e) => e.suite.name === 'gcmsiv-hkdf256')?.state).toBe('decrypt-only');
    expect(store.registry.list().find((e) => e.suite.name === 'gcmsiv-hkdf384')?.state).toBe('active');
    expect(store.info().generations).toEqual([1, 2]);
    expect(store.checkpoints().at(-1)?.generation).toBe(2);
    await checkAll(store, model);
    // Every live record's sealed bytes name suite 2 and generation 2 (an export carries the record).
    for (const id of ['w00000', 'w00500', 'w00998', 'new'])
      expect(recordOf(await words.exportSealed(id)), id).toEqual({ suite: 2, generation: 2 });
    await store.close();
    store = await open();
    expect(store.migration()).toMatchObject({ phase: 'done', copied: 999, total: 1002, running: false });
    await checkAll(store, model);
    await store.close();
    const report = await verifyAt(f, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
    expect(report.problems).toEqual([]);
    // Generation 2: 999 copies, the update, the insert and the delete (a delete is a leaf too).
    expect(report.counts.leaves).toEqual({ 1: 1001, 2: 1002 });
  });
});

describe.each(STORE_FIXTURES)('live migration: pause, authority, errors (%s)', (_name, factory) => {
  const fresh = perTest(factory);
  const opener =
    (f: NodeStoreFixture, extra: Record<string, unknown> = {}) =>
    (create = false) =>
      f.open({
        create,
        recipients: [recipient.publicKey],
        unlock: recipient.secretKey,
        suite: 'gcmsiv-hkdf256',
        autoCheckpoint: false,
        ...extra,
      });

  it('pauses on abort and resumes on the next migrate(); authority withholds records', async () => {
    const f = await fresh();
    const open = opener(f, {
      authority: (r: AuthorityRequest) => r.operation !== 'copy' || r.governance.scope !== 'restricted',
    });
    const { store, model } = await fill(open, 600);
    const ac = new AbortController();
    const paused = await store
      .migrate({ to: 'gcmsiv-hkdf384', chunkRecords: 50, signal: ac.signal, onProgress: () => ac.abort() })
      .catch((e) => e);
    expect(paused).toBeInstanceOf(PqdbError);
    expect(paused.code).toBe('ABORTED');
    expect(store.migration()).toMatchObject({ phase: 'copying', copied: 50, running: false });
    await expect(store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' })).rejects.toThrow(/under way/);
    await expect(store.retireGenerations()).rejects.toMatchObject({
      code: 'GENERATION_IN_USE',
      message: expect.stringMatching(/migration is under way/),
    });
    const done = await store.migrate({ to: 'gcmsiv-hkdf384' });
    const restricted = [...model.keys()].filter((id) => Number(id.slice(1)) % 50 === 7).length;
    expect(done).toMatchObject({
      phase: 'done',
      withheld: restricted,
      copied: 600 - restricted,
      failed: 0,
      total: 600,
    });
    await checkAll(store, model); // withheld records stay readable in their old generation
    // So their generation cannot be retired, and a refusal changes nothing.
    await expect(store.retireGenerations()).rejects.toMatchObject({
      code: 'GENERATION_IN_USE',
      message: expect.stringMatching(new RegExp(`^${restricted} live record`)),
    });
    await checkAll(store, model);
    await store.close();
  });

  it('authority can deny the migration itself: nothing is written, and one under way stays paused', async () => {
    const f = await fresh();
    const asked: AuthorityRequest[] = [];
    let allow = false;
    const authority = (r: AuthorityRequest) => (asked.push(r), r.operation === 'copy' || allow);
    const open = opener(f, { authority, signer: signer.secretKey, signerPublicKey: signer.publicKey });
    const { store, model } = await fill(open, 300);
    const before = store.info();
    const denied = await store.migrate({ to: 'gcmsiv-hkdf384', collection: 'words' }).catch((e) => e);
    expect(denied).toBeInstanceOf(PqdbError);
    expect(denied).toMatchObject({
      code: 'AUTHORITY_DENIED',
      message: 'current authority does not allow migrating words to gcmsiv-hkdf384: nothing was written',
    });
    expect(asked).toEqual([{ operation: 'migrate', to: 'gcmsiv-hkdf384', collections: ['words'] }]);
    expect(store.info()).toEqual(before); // no generation, no commit
    expect(store.migration()).toBeUndefined();
    // The per-call check overrides the store's: allowed, paused, then denied on resuming.
    const ac = new AbortController();
    const paused = await store
      .migrate({
        to: 'gcmsiv-hkdf384',
        chunkRecords: 50,
        signal: ac.signal,
        onProgress: () => ac.abort(),
        authority: () => true,
      })
      .catch((e) => e);
    expect(paused.code).toBe('ABORTED');
    const cursor = store.migration()!.cursor;
    await expect(store.migrate({ to: 'gcmsiv-hkdf384' })).rejects.toMatchObject({
      code: 'AUTHORITY_DENIED',
      message: expect.stringMatching(/the migration under way stays paused/),
    });
    expect(store.migration()).toMatchObject({ phase: 'copying', copied: 50, cursor, running: false });
    await store.close();
    // Reopened, the store's check is asked before the migration resumes by itself: still denied.
    const again = await open();
    await new Promise((r) => setTimeout(r, 20));
    expect(again.migration()).toMatchObject({ phase: 'copying', copied: 50, cursor, running: false });
    allow = true;
    expect(await again.migrate({ to: 'gcmsiv-hkdf384' })).toMatchObject({ phase: 'done', copied: 300, failed: 0 });
    await checkAll(again, model);
    await again.close();
  });

  it('retiring keeps a persisted index whole when the pages it would re-index from are deleted', async () => {
    const f = await fresh();
    const open = opener(f, { signer: signer.secretKey, signerPublicKey: signer.publicKey });
    const { store, words, model } = await fill(open, 400);
    await store.checkpoint(); // the index is persisted here
    await words.put('w00003', { lemma: 'zircon', gloss: 'after the checkpoint', n: 3 }); // only in a generation-1 page after it
    model.set('w00003', { lemma: 'zircon', gloss: 'after the checkpoint', n: 3 });
    await words.delete('w00004');
    model.delete('w00004');
    await store.close();
    const again = await open(); // the index is not loaded: the migration reseals it as it is
    again.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
    await again.migrate({ to: 'gcmsiv-hkdf384' });
    expect(await again.retireGenerations()).toEqual([1]);
    await again.close();
    const third = await open();
    const w = third.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
    expect((await w.search('zircon')).map((r) => r.id)).toEqual(['w00003']);
    await checkAll(third, model);
    await third.close();
  });

  it('seals right when a commit or a copy chunk holds more governance states than the key cache', async () => {
    const store = await opener(await fresh(), { keyCacheSize: 2 })(true);
    const words = store.collection('words', { schema });
    await store.batch((tx) => {
      for (let i = 0; i < 30; i++) tx.put(words, `k${i}`, doc(i), { governance: { scope: `s${i % 5}` } });
    });
    for (let i = 0; i < 30; i++) expect(await words.get(`k${i}`)).toEqual(doc(i));
    expect(await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit', chunkRecords: 10 })).toMatchObject({
      phase: 'done',
      copied: 30,
      failed: 0,
    });
    for (let i = 0; i < 30; i++) expect(await words.get(`k${i}`)).toEqual(doc(i));
    await store.close();
  });

  it('retires the old generation after a migration: its pages and keys go, its log and checkpoints stay', async () => {
    const f = await fresh();
    const open = opener(f, { signer: signer.secretKey, signerPublicKey: signer.publicKey });
    const { store, words, model } = await fill(open, 800);
    await store.checkpoint();
    await words.put('w00001', doc(901));
    model.set('w00001', doc(901));
    await store.checkpoint();
    const oldExport = await words.exportSealed('w00002'); // generation 1, proven by the second checkpoint
    expect(await store.retireGenerations()).toEqual([]); // only one generation so far
    await store.migrate({ to: 'gcmsiv-hkdf384' });
    expect(await store.retireGenerations()).toEqual([1]);
    expect(await store.retireGenerations()).toEqual([]);
    await checkAll(store, model);
    expect(() => store.dataKeyFor(1, 1, '{"scope":"public"}')).toThrow();
    // The old export still verifies against its signed checkpoint, but nothing opens it any more.
    expect(verifySealed(oldExport, signer.publicKey).valid).toBe(true);
    expect(() =>
      openSealed(oldExport, (suite, generation, governance) => store.dataKeyFor(suite.id, generation, governance)),
    ).toThrow();
    const cps = store.checkpoints();
    expect(cps.filter((c) => c.generation === 1)).toHaveLength(2);
    const proof01 = await store.consistencyProof(0, 1);
    expect(proof01.length).toBeGreaterThan(0);
    await words.put('new', doc(5));
    model.set('new', doc(5));
    await store.close();
    // Reopened: the keyring holds generation 2 only; the store, its index and its proofs check out.
    const again = await open();
    await checkAll(again, model);
    expect(again.checkpoints().map((c) => [c.generation, c.size])).toEqual(cps.map((c) => [c.generation, c.size]));
    expect(await again.consistencyProof(0, 1)).toEqual(proof01);
    const reopened = again.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
    expect(verifySealed(await reopened.exportSealed('new'), signer.publicKey).valid).toBe(true);
    await again.close();
    const report = await verifyAt(f, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
    expect(report.problems).toEqual([]);
    expect(report.counts.leaves).toMatchObject({ 1: 801, 2: 801 });
    expect(report.counts.collections).toEqual({ words: 801 });
  });

  it('refuses what it cannot do', async () => {
    const f = await fresh();
    const { store } = await fill(opener(f), 10);
    expect(() => store.migrate({ to: 'nope' as never })).toThrow(RangeError);
    expect(() => store.migrate({ to: 'gcmsiv-hkdf384', collection: 'missing' })).toThrow(RangeError);
    expect(() => store.migrate({ to: 'gcmsiv-hkdf384', chunkRecords: 0 })).toThrow(RangeError);
    await store.registry.setState('cnsa2-gcm-hkdf384-commit', 'quarantined');
    await expect(store.migrate({ to: 'cnsa2-gcm-hkdf384-commit' })).rejects.toMatchObject({
      code: 'SUITE_QUARANTINED',
    });
    expect(store.info().generations).toEqual([1]);
    await store.close();
    const ro = await f.open({ unlock: recipient.secretKey, readOnly: true });
    expect(() => ro.migrate({ to: 'gcmsiv-hkdf384' })).toThrow(expect.objectContaining({ code: 'READ_ONLY' }));
    await expect(
      ro.collection('words', { schema, index: { text: ['lemma', 'gloss'] } }).put('x', doc(1)),
    ).rejects.toMatchObject({ code: 'READ_ONLY' });
    await ro.close();
  });
});

describe.each(STORE_FIXTURES)('live migration: an index not loaded (%s)', (_name, factory) => {
  const fresh = perTest(factory);

  it('reseals a persisted index that is not loaded under the target generation, its content and coverage unchanged (not re-serialized)', async () => {
    const f = await fresh();
    const open = (create = false) =>
      f.open({
        create,
        recipients: [recipient.publicKey],
        unlock: recipient.secretKey,
        suite: 'gcmsiv-hkdf256',
        signer: signer.secretKey,
        signerPublicKey: signer.publicKey,
        autoCheckpoint: false,
      });
    const { store, words, model } = await fill(open, 1500);
    await store.checkpoint(); // persists the index, sealed under generation 1
    // Written after the checkpoint: the index page does not hold these; reopening applies them.
    await words.put('after', doc(3));
    model.set('after', doc(3));
    await words.delete('w00010');
    model.delete('w00010');
    await store.close();
    const manifest = async () => {
      const ps = await f.pages();
      const bytes = (await ps.readManifest())!;
      await ps.close();
      const { manifest, keys } = unlockManifest(bytes, recipient.secretKey); // the body is sealed
      keys.close();
      return manifest as { indexes: Record<string, { pageId: number; afterPage: number }> };
    };
    const before = (await manifest()).indexes.words;
    const again = await open();
    again.collection('words', { schema, index: { text: ['lemma', 'gloss'] } }); // opened, never searched
    const result = await again.migrate({ to: 'gcmsiv-hkdf384' });
    expect(result).toMatchObject({ phase: 'done', copied: 1500, failed: 0 });
    await again.close();
    const after = (await manifest()).indexes.words;
    expect(after.afterPage).toBe(before.afterPage);
    expect(after.pageId).not.toBe(before.pageId);
    const pages = await f.pages();
    expect(await pages.readPage(before.pageId)).toBeUndefined();
    const page = (await pages.readPage(after.pageId))!;
    expect(String.fromCharCode(...page.subarray(0, 4))).toBe('PQDI');
    expect(new DataView(page.buffer, page.byteOffset).getUint32(5)).toBe(2); // sealed under the new generation
    const report = await verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
    expect(report.problems).toEqual([]);
    expect(report.counts.indexPages).toBe(1);
    await pages.close();
    // The resealed index, plus the writes after it, answers as the records do.
    const third = await open();
    await checkAll(third, model);
    await third.close();
  });
});

describe('live migration across a kill (node-fs)', () => {
  const fresh = perTest(nodeFsStoreFixture);

  it('a SIGKILLed migrator resumes from its durable cursor in a new process; nothing is lost or doubled', async () => {
    const f = await fresh();
    const dir = f.dir;
    const open = (create = false) =>
      f.open({
        create,
        recipients: [recipient.publicKey],
        unlock: recipient.secretKey,
        suite: 'gcmsiv-hkdf256',
        autoCheckpoint: false,
      });
    const { store, model } = await fill(open, 2000);
    await store.close();
    // The migrator is killed once it has reported about half the records copied.
    let killedAt = 0;
    await runUntilKilled<{ progress?: { copied: number } }>(
      'node-tests/support/migrator.mjs',
      [dir, hex(recipient.secretKey), 'gcmsiv-hkdf384', '100'],
      (m, kill) => {
        killedAt = m.progress?.copied ?? killedAt;
        if (killedAt >= 1000) kill();
      },
    );
    expect(killedAt).toBeGreaterThanOrEqual(1000);
    expect(killedAt).toBeLessThan(2000);
    // Reopening resumes it; migrate() with the same target awaits that migration.
    const again = await open();
    expect(again.migration()).toMatchObject({ phase: 'copying', to: 'gcmsiv-hkdf384' });
    expect(again.migration()!.copied).toBeGreaterThanOrEqual(killedAt);
    const words = again.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
    await words.put('late', doc(7));
    model.set('late', doc(7));
    const result = await again.migrate({ to: 'gcmsiv-hkdf384' });
    expect(result).toMatchObject({
      phase: 'done',
      copied: 2000,
      superseded: 0,
      deleted: 0,
      withheld: 0,
      failed: 0,
      inserted: 1,
      total: 2001,
    });
    await checkAll(again, model);
    await again.close();
    // Cold, read-only: every record decrypts and the logs hold each copy exactly once.
    const report = await verifyAt(f, { unlock: recipient.secretKey });
    expect(report.problems).toEqual([]);
    expect(report.counts.collections).toEqual({ words: 2001 });
    expect(report.counts.leaves[2]).toBe(2001);
  });
});
