// Live migration (DESIGN §8): every record moves to the target suite in a new key generation while
// reads and writes go on; writes that reach records first are accounted (superseded, deleted,
// inserted); authority can withhold records; a pause resumes; a SIGKILLed migrator resumes in a new
// process from its durable cursor; the result verifies record by record and with verifyStore.
import { describe, it, expect, afterAll } from 'vitest';
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, generateRecipient, generateSigner, openNodeFsPageStore } from '../src/node';
import { openMemoryPageStore, verifyStore, PqdbError } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { readHeader } from '../src/crypto/record';
import { tokenize } from '../src/engine/lexical';

const schema = { lemma: 'string', gloss: 'string', n: 'integer' } as const;
type Doc = { lemma: string; gloss: string; n: number };
const recipient = generateRecipient('classical');
const signer = generateSigner();
const WORDS = ['amber', 'basalt', 'cobalt', 'dune', 'ember', 'fjord', 'glacier', 'harbor'];
const doc = (i: number): Doc => ({ lemma: WORDS[i % 8], gloss: `${WORDS[(i * 3) % 8]} ${WORDS[(i * 5 + 1) % 8]} number ${i}`, n: i });
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

async function fill(open: (create: boolean) => ReturnType<typeof openStore>, n: number) {
  const store = await open(true);
  const words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
  const model = new Map<string, Doc>();
  for (let i = 0; i < n; i += 250) {
    await store.batch((tx) => {
      for (let k = i; k < Math.min(n, i + 250); k++) {
        tx.put(words, `w${String(k).padStart(5, '0')}`, doc(k), { governance: { scope: k % 50 === 7 ? 'restricted' : 'public' } });
        model.set(`w${String(k).padStart(5, '0')}`, doc(k));
      }
    });
  }
  return { store, words, model };
}

/** Every record equals the model, and (via the pages) is sealed with `suite`, except `except`. */
async function checkAll(store: Awaited<ReturnType<typeof openStore>>, model: Map<string, Doc>) {
  const words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
  expect(words.size).toBe(model.size);
  for (const [id, v] of model) expect(await words.get(id), id).toEqual(v);
  for (const q of ['amber', 'dune glacier', 'number']) {
    const got = (await words.search(q, { limit: 100_000 })).map((x) => x.id).sort();
    const want = [...model].filter(([, v]) => tokenize(q).every((t) => tokenize(`${v.lemma} ${v.gloss}`).includes(t))).map(([id]) => id).sort();
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

describe('live migration', () => {
  it('moves every record to the target suite while writes go on, and accounts for each', async () => {
    const medium = new MemoryMedium();
    const open = async (create = false) =>
      openStore({ storage: await openMemoryPageStore({ medium }), create, recipients: [recipient.publicKey], unlock: recipient.secretKey, suite: 'gcmsiv-hkdf256', signer: signer.secretKey, signerPublicKey: signer.publicKey, autoCheckpoint: false });
    let { store, words, model } = await fill(open, 1000);
    const other = store.collection('other', { schema });
    await other.put('o1', doc(1));
    const progress: { phase: string; copied: number }[] = [];
    let wrote: Promise<unknown> | undefined;
    const result = await store.migrate({
      to: 'gcmsiv-hkdf384', chunkRecords: 64,
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
    expect(result).toMatchObject({ phase: 'done', copied: 998 + 1, superseded: 1, deleted: 1, withheld: 0, failed: 0, inserted: 1, total: 1001 + 1, to: 'gcmsiv-hkdf384', running: false });
    expect(result.copied + result.superseded + result.deleted + result.withheld + result.failed + result.inserted).toBe(result.total);
    expect(progress.filter((p) => p.phase === 'copying').length).toBeGreaterThanOrEqual(15);
    expect(progress.map((p) => p.phase)).toEqual(expect.arrayContaining(['indexing', 'verifying', 'activating', 'done']));
    expect(result.workMs).toBeGreaterThan(0);
    expect(store.registry.list().find((e) => e.suite.name === 'gcmsiv-hkdf256')?.state).toBe('decrypt-only');
    expect(store.registry.list().find((e) => e.suite.name === 'gcmsiv-hkdf384')?.state).toBe('active');
    expect(store.info().generations).toEqual([1, 2]);
    expect(store.checkpoints().at(-1)?.generation).toBe(2);
    await checkAll(store, model);
    // Every live record's sealed bytes name suite 2 and generation 2 (an export carries the record).
    for (const id of ['w00000', 'w00500', 'w00998', 'new']) expect(recordOf(await words.exportSealed(id)), id).toEqual({ suite: 2, generation: 2 });
    await store.close();
    store = await open();
    expect(store.migration()).toMatchObject({ phase: 'done', copied: 999, total: 1002, running: false });
    await checkAll(store, model);
    await store.close();
    const pages = await openMemoryPageStore({ medium });
    const report = await verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
    await pages.close();
    expect(report.problems).toEqual([]);
    expect(report.counts.leaves).toEqual({ 1: 1001, 2: 1001 });
  });
});
