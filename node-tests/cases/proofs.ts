// Verifiable batches through a store, checked from outside it: ML-DSA-87-signed checkpoints that
// persist across reopen (signatures, key ids and the `previous` chain checked against
// docs/format.md), consistency proofs between every pair of checkpoints, and sealed exports that
// verify offline, open with the store's keys and fail for flipped bits. Platform-neutral: vitest
// runs it in Node (cases/_store.ts fixtures) and Playwright inside Chromium on real IndexedDB
// through the bundled dist/browser.js.

import type * as Crypto from '../../src/crypto';
import type { Store } from '../../src/engine/store';
import type { Schema, Value } from '../../src/engine/codec';
import type { verifyStore } from '../../src/engine/verify';
import { Rng, equalBytes } from './_util';
import {
  ok,
  sameValue,
  rejection,
  withStore,
  type StoreCase,
  type StoreFixture,
  type StoreFixtureFactory,
} from './_store';

type KeyPair = { publicKey: Uint8Array; secretKey: Uint8Array };

/** What the cases need from pqdb and pqdb/crypto, plus a decoder for opened exports. */
export interface ProofsApi {
  generateRecipient(type?: 'hybrid' | 'classical'): KeyPair;
  generateSigner(): KeyPair;
  verifySealed: typeof Crypto.verifySealed;
  openSealed: typeof Crypto.openSealed;
  merkle: Pick<typeof Crypto.merkle, 'verifyConsistency'>;
  ml_dsa87: Pick<typeof Crypto.ml_dsa87, 'verify'>;
  sha384(msg: Uint8Array): Uint8Array;
  verifyStore: typeof verifyStore;
  /** Decodes a record's plaintext (its typed encoding under `schema`). */
  decodeValue(schema: Schema, plaintext: Uint8Array): Value;
}

const SCHEMA = { lemma: 'string', n: 'integer' } as const;
// docs/format.md: signed = checkpoint (129) ‖ SHA-384(signer public key)[0, 16) ‖ ML-DSA-87 signature.
const CHECKPOINT_BYTES = 129;
const KEY_ID_BYTES = 16;
const SIGNATURE_BYTES = 4627;
const CONTEXT = new TextEncoder().encode('pqdb checkpoint v1');

interface Written {
  /** The collection's contents as the store should hold them. */
  model: Map<string, Value>;
  /** Puts written: each is one leaf of the generation's log; deletes add none (docs/format.md). */
  leaves: number;
  /** Every checkpoint as returned by store.checkpoint(), oldest first. */
  checkpoints: (Crypto.Checkpoint & { signed: Uint8Array })[];
}

const word = (rng: Rng, i: number): Value => ({
  lemma: `word ${i} ${'x'.repeat(rng.int(40))}`,
  n: rng.int(1_000_000) - 500_000,
});

/**
 * Writes through several commits (one batch, single puts, an update, a delete, a mixed batch) and
 * checkpoints five times, once without a write in between; returns what was written.
 */
async function writeLog(store: Store, rng: Rng): Promise<Written> {
  const w = store.collection('w', { schema: SCHEMA });
  const model = new Map<string, Value>();
  const out: Written = { model, leaves: 0, checkpoints: [] };
  const checkpoint = async (): Promise<void> => {
    const c = await store.checkpoint();
    ok(
      c.size === out.leaves,
      `checkpoint ${out.checkpoints.length}: size ${c.size}, expected one leaf per put and per delete (${out.leaves})`,
    );
    out.checkpoints.push(c);
  };
  await store.batch((tx) => {
    for (let i = 0; i < 120; i++) {
      const v = word(rng, i);
      tx.put(w, `w${i}`, v, { governance: { scope: i % 3 === 0 ? 'public' : 'team' } });
      model.set(`w${i}`, v);
    }
  });
  out.leaves += 120;
  await checkpoint();
  for (let i = 120; i < 130; i++) {
    const v = word(rng, i);
    await w.put(`w${i}`, v);
    model.set(`w${i}`, v);
    out.leaves++;
  }
  const updated = { lemma: 'updated', n: -3 };
  await w.put('w3', updated, { governance: { scope: 'public' } });
  model.set('w3', updated);
  ok(await w.delete('w4'), 'delete of an existing record returns true');
  model.delete('w4');
  out.leaves += 2; // the update and the delete
  await checkpoint();
  await checkpoint(); // nothing written since: same size and root, a new link in the chain
  await store.batch((tx) => {
    for (let i = 130; i < 170; i++) {
      const v = word(rng, i);
      tx.put(w, `w${i}`, v);
      model.set(`w${i}`, v);
    }
    for (let i = 10; i < 20; i++) {
      tx.delete(w, `w${i}`);
      model.delete(`w${i}`);
    }
  });
  out.leaves += 50; // 40 puts and 10 deletes
  await checkpoint();
  for (let i = 170; i < 173; i++) {
    const v = word(rng, i);
    await w.put(`w${i}`, v);
    model.set(`w${i}`, v);
    out.leaves++;
  }
  await checkpoint();
  return out;
}

/** Checks every signature, key id, size and `previous` link of `list` against `expected` (the same checkpoints). */
function checkCheckpoints(
  api: ProofsApi,
  list: (Crypto.Checkpoint & { signed: Uint8Array })[],
  expected: Written,
  signer: KeyPair,
  where: string,
): void {
  ok(
    list.length === expected.checkpoints.length,
    `${where}: ${list.length} checkpoints, expected ${expected.checkpoints.length}`,
  );
  const keyId = api.sha384(signer.publicKey).subarray(0, KEY_ID_BYTES);
  const other = api.generateSigner();
  list.forEach((c, i) => {
    const e = expected.checkpoints[i];
    const at = `${where}: checkpoint ${i}`;
    ok(equalBytes(c.signed, e.signed), `${at}: signed bytes differ from those checkpoint() returned`);
    ok(c.size === e.size && c.generation === e.generation && equalBytes(c.root, e.root), `${at}: fields differ`);
    ok(equalBytes(c.storeId, list[0].storeId), `${at}: store id differs from the first checkpoint's`);
    ok(c.signed.length === CHECKPOINT_BYTES + KEY_ID_BYTES + SIGNATURE_BYTES, `${at}: ${c.signed.length} bytes`);
    ok(
      equalBytes(c.signed.subarray(CHECKPOINT_BYTES, CHECKPOINT_BYTES + KEY_ID_BYTES), keyId),
      `${at}: key id is not SHA-384(public key)[0, 16)`,
    );
    const msg = c.signed.subarray(0, CHECKPOINT_BYTES);
    const sig = c.signed.subarray(CHECKPOINT_BYTES + KEY_ID_BYTES);
    ok(
      api.ml_dsa87.verify(sig, msg, signer.publicKey, { context: CONTEXT }),
      `${at}: the ML-DSA-87 signature does not verify`,
    );
    ok(
      !api.ml_dsa87.verify(sig, msg, other.publicKey, { context: CONTEXT }),
      `${at}: the signature verifies under another key`,
    );
    const bent = msg.slice();
    bent[25 + 7] ^= 1; // the low byte of the tree size
    ok(
      !api.ml_dsa87.verify(sig, bent, signer.publicKey, { context: CONTEXT }),
      `${at}: the signature verifies over an altered size`,
    );
    const previous = i === 0 ? new Uint8Array(48) : api.sha384(list[i - 1].signed);
    ok(
      equalBytes(c.previous, previous),
      `${at}: previous is not ${i === 0 ? 'zero' : 'SHA-384 of the checkpoint before'}`,
    );
  });
}

/** Consistency proofs from the store between every pair (i ≤ j) verify; altered ones do not. */
async function checkConsistency(api: ProofsApi, store: Store, where: string): Promise<number> {
  const list = store.checkpoints();
  let checked = 0;
  for (let i = 0; i < list.length; i++) {
    for (let j = i; j < list.length; j++) {
      const a = list[i];
      const b = list[j];
      const proof = await store.consistencyProof(i, j);
      const at = `${where}: consistency ${i} (size ${a.size}) → ${j} (size ${b.size})`;
      ok(api.merkle.verifyConsistency(a.size, b.size, a.root, b.root, proof), `${at} does not verify`);
      checked++;
      if (a.size === b.size) continue;
      const root = b.root.slice();
      root[47] ^= 0x80;
      ok(
        !api.merkle.verifyConsistency(a.size, b.size, a.root, root, proof),
        `${at} verifies against an altered new root`,
      );
      if (proof.length > 0) {
        const bad = proof.map((p) => p.slice());
        bad[bad.length - 1][0] ^= 1;
        ok(!api.merkle.verifyConsistency(a.size, b.size, a.root, b.root, bad), `${at} verifies with an altered proof`);
      }
    }
  }
  return checked;
}

/** Flips one bit (rotating through 0..7) at byte 0, every 97th byte and the last byte; each must fail. */
function checkTamper(api: ProofsApi, exported: Uint8Array, signer: KeyPair, at: string): void {
  const positions = new Set<number>([0, exported.length - 1]);
  for (let i = 97; i < exported.length; i += 97) positions.add(i);
  for (const i of positions) {
    const t = exported.slice();
    t[i] ^= 1 << (i % 8);
    ok(!api.verifySealed(t, signer.publicKey).valid, `${at}: verifies with bit ${i % 8} of byte ${i} flipped`);
  }
  ok(
    !api.verifySealed(exported.subarray(0, exported.length - 1), signer.publicKey).valid,
    `${at}: verifies truncated by one byte`,
  );
}

export function proofsCases(factory: StoreFixtureFactory, api: ProofsApi, seed = 2026): StoreCase[] {
  const recipient = api.generateRecipient('classical');
  const signer = api.generateSigner();
  const options = (create = false) => ({
    create,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: false as const,
  });
  const cases: StoreCase[] = [];
  const add = (
    name: string,
    body: (open: (o: ReturnType<typeof options>) => Promise<Store>, fixture: StoreFixture) => Promise<void>,
  ): void => {
    cases.push({ name, run: withStore(factory, body) });
  };

  add('checkpoints persist across reopen with valid ML-DSA-87 signatures; every pair is consistent', async (open) => {
    const store = await open(options(true));
    const written = await writeLog(store, new Rng(seed));
    checkCheckpoints(api, store.checkpoints(), written, signer, 'before reopen');
    const before = await checkConsistency(api, store, 'before reopen');
    ok(before === 15, `${before} pairs checked before reopen, expected 15`);
    await store.close();

    const again = await open(options());
    checkCheckpoints(api, again.checkpoints(), written, signer, 'after reopen');
    await checkConsistency(api, again, 'after reopen');
    // The log rebuilt on opening extends the persisted one: a new checkpoint is consistent with every old one.
    const w = again.collection('w', { schema: SCHEMA });
    await again.batch((tx) => {
      for (let i = 0; i < 7; i++) tx.put(w, `late${i}`, { lemma: `late ${i}`, n: i });
    });
    const last = await again.checkpoint();
    ok(
      last.size === written.leaves + 7,
      `checkpoint after reopen has size ${last.size}, expected ${written.leaves + 7}`,
    );
    written.checkpoints.push(last);
    checkCheckpoints(api, again.checkpoints(), written, signer, 'after reopen and a new checkpoint');
    const after = await checkConsistency(api, again, 'after reopen and a new checkpoint');
    ok(after === 21, `${after} pairs checked after the new checkpoint, expected 21`);
    ok(
      (await rejection(again.consistencyProof(3, 1), 'consistencyProof(3, 1)')).name === 'RangeError',
      'consistencyProof(newer, older) is a RangeError',
    );
    await again.close();

    const third = await open(options());
    checkCheckpoints(api, third.checkpoints(), written, signer, 'after a second reopen');
    await checkConsistency(api, third, 'after a second reopen');
  });

  add('sealed exports verify offline and open after reopen; flipped bits and other keys fail', async (open) => {
    const store = await open(options(true));
    const written = await writeLog(store, new Rng(seed + 1));
    const w = store.collection('w', { schema: SCHEMA });
    const early = await w.exportSealed('w0');
    const n = written.checkpoints.length;
    ok(store.checkpoints().length === n, 'an export covered by a checkpoint makes no new one');
    await store.close();

    const again = await open(options());
    const w2 = again.collection('w', { schema: SCHEMA });
    ok(equalBytes(await w2.exportSealed('w0'), early), 'the export of an unchanged record differs after reopen');
    await w2.put('late', { lemma: 'after reopen', n: 7 });
    written.model.set('late', { lemma: 'after reopen', n: 7 });
    // w0: first batch; w3: updated (single put); w100: first batch, governance 'team'; w125: single
    // put; w150: mixed batch; w172: last before reopen; late: no checkpoint covers it yet.
    const ids = ['w0', 'w3', 'w100', 'w125', 'w150', 'w172', 'late'];
    const exports: Uint8Array[] = [];
    for (const id of ids) {
      const e = await w2.exportSealed(id);
      exports.push(e);
      const v = api.verifySealed(e, signer.publicKey);
      ok(v.valid, `${id}: verifySealed says ${v.reason}`);
      ok(
        v.collection === 'w' && v.id === id && v.generation === 1,
        `${id}: names ${v.collection}/${v.id} generation ${v.generation}`,
      );
      const latest = again.checkpoints().at(-1)!;
      ok(
        v.checkpoint !== undefined && equalBytes(v.checkpoint.root, latest.root) && v.checkpoint.size === latest.size,
        `${id}: not verified against the newest checkpoint`,
      );
      const opened = api.openSealed(e, (suite, generation, governance) =>
        again.dataKeyFor(suite.id, generation, governance),
      );
      ok(opened.collection === 'w' && opened.id === id, `${id}: openSealed names ${opened.collection}/${opened.id}`);
      const value = api.decodeValue(SCHEMA, opened.plaintext);
      ok(
        sameValue(value, written.model.get(id)),
        `${id}: opened ${JSON.stringify(value)}, stored ${JSON.stringify(written.model.get(id))}`,
      );
      ok(!api.verifySealed(e, api.generateSigner().publicKey).valid, `${id}: verifies under another signer key`);
    }
    ok(
      again.checkpoints().length === n + 1,
      `exporting an uncovered record made ${again.checkpoints().length - n} checkpoints, expected 1`,
    );
    checkTamper(api, exports[0], signer, 'w0');
    checkTamper(api, exports[1], signer, 'w3');
    checkTamper(api, exports[exports.length - 1], signer, 'late');
    // A deleted record cannot be exported; an export from before a reopen still verifies.
    await rejection(w2.exportSealed('w4'), 'export of the deleted w4');
    ok(api.verifySealed(early, signer.publicKey).valid, 'an export made before reopening no longer verifies');
  });

  add(
    'the whole store verifies from outside (verifyStore); a checkpoint by another signer is named',
    async (open, fixture) => {
      const store = await open(options(true));
      const written = await writeLog(store, new Rng(seed + 1));
      await store.close();
      const verify = async () => {
        const pages = await fixture.pages();
        try {
          return await api.verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
        } finally {
          await pages.close();
        }
      };
      const report = await verify();
      const problems = report.problems.map((p) => `${p.where}: ${p.message}`).join('; ');
      ok(report.ok && report.complete, `verifyStore: ${problems || report.skipped.join('; ')}`);
      const c = report.counts;
      const n = written.checkpoints.length;
      ok(
        c.checkpoints === n && c.signaturesVerified === n,
        `verifyStore checked ${c.checkpoints} checkpoints, ${c.signaturesVerified} signatures; expected ${n}`,
      );
      ok(
        c.leaves[1] === written.leaves && c.recordsDecrypted === written.leaves - 11,
        `verifyStore saw ${c.leaves[1]} leaves, decrypted ${c.recordsDecrypted}; expected ${written.leaves} (11 deletes)`,
      );
      ok(
        c.collections.w === written.model.size && c.inclusionProofs + c.uncheckpointed === written.model.size,
        `verifyStore: ${c.collections.w} live, ${c.inclusionProofs} proven, ${c.uncheckpointed} uncovered; expected ${written.model.size} live`,
      );
      ok(
        c.consistencyProofs === n - 1,
        `verifyStore checked ${c.consistencyProofs} consistency proofs, expected ${n - 1}`,
      );
      const forger = api.generateSigner();
      const forged = await open({ ...options(), signer: forger.secretKey, signerPublicKey: forger.publicKey });
      await forged.checkpoint();
      await forged.close();
      const after = await verify();
      ok(
        !after.ok &&
          after.problems.length === 1 &&
          after.problems[0].where === `checkpoint ${n + 1}` &&
          after.problems[0].code === 'AUTH_FAILED',
        `verifyStore after a forged checkpoint: ${JSON.stringify(after.problems)}`,
      );
    },
  );

  add(
    'compacted after rounds of updates, reopened from its persisted directory: records, proofs and verifyStore hold',
    async (open, fixture) => {
      const store = await open(options(true));
      const w = store.collection('w', { schema: SCHEMA });
      const value = (i: number, round: number) => ({ lemma: `word ${i} round ${round}`, n: i * 10 + round });
      for (let round = 0; round < 3; round++) {
        await store.batch((tx) => {
          for (let i = 0; i < 150; i++) tx.put(w, `w${i}`, value(i, round));
        });
        await store.checkpoint();
      }
      await store.batch((tx) => {
        for (let i = 0; i < 100; i++) tx.put(w, `w${i}`, value(i, 3)); // the last round's page: 2/3 dead
      });
      const exported = await w.exportSealed('w140');
      const r = await store.compact();
      ok(
        r.pagesRewritten === 3 && r.recordsMoved === 50,
        `compaction rewrote ${r.pagesRewritten} pages and moved ${r.recordsMoved} records; expected 3 and 50`,
      );
      const last = await store.checkpoint();
      await store.close();

      const again = await open(options());
      const w2 = again.collection('w', { schema: SCHEMA });
      ok(w2.size === 150, `${w2.size} records after reopening, expected 150`);
      for (let i = 0; i < 150; i += 7)
        sameValue(await w2.get(`w${i}`), value(i, i < 100 ? 3 : 2), `w${i} after compaction and reopen`);
      ok(api.verifySealed(exported, signer.publicKey).valid, 'an export made before compaction still verifies');
      const moved = await w2.exportSealed('w140');
      ok(api.verifySealed(moved, signer.publicKey).valid, 'an export of a moved record verifies');
      // The compaction raised the history floor to the last round's page (leaf 450): from the
      // checkpoints below it, consistency is the floor page's links (verifyStore checks them); from
      // the first one at or above it, a proof as before.
      ok(r.historyFloor?.to === 450, `history floor ${r.historyFloor?.to}, expected 450`);
      const cps = again.checkpoints();
      const from = cps.findIndex((c) => c.size >= 450);
      const proof = await again.consistencyProof(from, cps.length - 1);
      ok(
        api.merkle.verifyConsistency(cps[from].size, last.size, cps[from].root, last.root, proof),
        'the first checkpoint at the floor is consistent with the one after compaction',
      );
      const pruned = await again.consistencyProof(0, cps.length - 1).then(
        () => 'a proof',
        (e: { code?: string }) => e.code,
      );
      ok(pruned === 'HISTORY_PRUNED', `a proof from below the floor gave ${pruned}, expected HISTORY_PRUNED`);
      await again.close();
      const pages = await fixture.pages();
      try {
        const report = await api.verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
        const problems = report.problems.map((p) => `${p.where}: ${p.message}`).join('; ');
        ok(report.ok && report.counts.collections.w === 150, `verifyStore after compaction: ${problems}`);
        ok(
          report.counts.consistencyProofs === cps.length - 1,
          `verifyStore checked ${report.counts.consistencyProofs} consistency links and proofs, expected ${cps.length - 1}`,
        );
      } finally {
        await pages.close();
      }
    },
  );

  return cases;
}
