// An adversarial fuzzer over a real store (DESIGN §11): a store is written in memory, then each case
// damages a copy of its medium the way a storage attacker could — a bit flipped with the checksum
// fixed, a page truncated, extended, dropped, duplicated or swapped, the manifest put back from an
// older commit, its header rewritten with hostile JSON, a page of one role copied over a page of
// another — and then opens, reads every record,
// searches, exports and verifies it. Every outcome must be the right data or a PqdbError; an older
// manifest must be refused when the caller pins the commit counter. Seeded and bounded
// (PQDB_FUZZ_CASES, default 240); `npm run bench:fuzz` runs many more.
import { describe, it, expect } from 'vitest';
import {
  openStore,
  generateRecipient,
  generateSigner,
  openMemoryPageStore,
  verifyStore,
  PqdbError,
} from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { crc32c } from '../src/_crc32c';
import { pageKind } from '../src/engine/page-format';
import { Rng } from './cases/_util';

const CASES = Number(process.env.PQDB_FUZZ_CASES ?? 240);
const SEED = Number(process.env.PQDB_FUZZ_SEED ?? 20261201);
const r = generateRecipient('classical');
const signer = generateSigner();
const schema = { text: 'string', n: 'integer' } as const;
type Doc = { text: string; n: number };

interface Snapshot {
  pages: Map<number, { bytes: Uint8Array; crc: number }>;
  manifest: { bytes: Uint8Array; crc: number };
  commit: number;
}

const snapshot = (m: MemoryMedium, commit: number): Snapshot => ({
  pages: new Map([...m.pages].map(([id, p]) => [id, { bytes: p.bytes.slice(), crc: p.crc }])),
  manifest: { bytes: m.manifest!.bytes.slice(), crc: m.manifest!.crc },
  commit,
});

const stored = (bytes: Uint8Array) => ({ bytes, crc: crc32c(bytes) });

/** A real store: two collections, an index, updates, deletes, checkpoints, a compaction with a history floor, a migration. */
async function build(): Promise<{ final: Snapshot; older: Snapshot[]; model: Map<string, Doc> }> {
  const medium = new MemoryMedium();
  const storage = await openMemoryPageStore({ medium });
  const store = await openStore({
    storage,
    create: true,
    recipients: [r.publicKey],
    unlock: r.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: false,
  });
  const docs = store.collection('docs', { schema, index: { text: ['text'] } });
  const model = new Map<string, Doc>();
  const older: Snapshot[] = [];
  const words = ['amber', 'basalt', 'cobalt', 'dune', 'ember', 'fjord'];
  for (let round = 0; round < 4; round++) {
    await store.batch((tx) => {
      for (let i = 0; i < 12; i++) {
        const id = `d${round}-${i}`;
        const v = { text: `${words[(i + round) % words.length]} ${words[i % words.length]} ${round}`, n: i };
        tx.put(docs, id, v, { governance: { scope: i % 2 ? 'a' : 'b' } });
        model.set(id, v);
      }
    });
    await docs.put(`d${round}-0`, { text: 'updated ember', n: -1 });
    model.set(`d${round}-0`, { text: 'updated ember', n: -1 });
    await docs.delete(`d${round}-1`);
    model.delete(`d${round}-1`);
    if (round % 2 === 1) await store.checkpoint();
    older.push(snapshot(medium, store.info().commit));
  }
  // The first round's records updated and compacted away: the history floor of generation 1 rises
  // (a floor page, log pages from the floor on, links from the older checkpoints).
  await store.batch((tx) => {
    for (const [id, v] of [...model].filter(([k]) => k.startsWith('d0-'))) {
      const next = { ...v, n: v.n + 100 };
      tx.put(docs, id, next);
      model.set(id, next);
    }
  });
  const compacted = await store.compact();
  if (compacted.historyFloor === undefined) throw new Error('the fuzzer expects its store to have a history floor');
  older.push(snapshot(medium, store.info().commit));
  await store.migrate({ to: 'cnsa2-gcm-hkdf384-commit', chunkRecords: 10 });
  await docs.put('late', { text: 'after the migration', n: 99 });
  model.set('late', { text: 'after the migration', n: 99 });
  const final = snapshot(medium, store.info().commit);
  await store.close();
  await storage.close();
  return { final, older, model };
}

type Outcome = 'correct' | 'pqdb-error' | 'rollback-refused' | 'non-pqdb-error' | 'wrong-data';

function reframeHeader(manifest: Uint8Array, edit: (h: Record<string, unknown>) => unknown): Uint8Array {
  const len = new DataView(manifest.buffer, manifest.byteOffset).getUint32(5);
  const header = JSON.parse(new TextDecoder().decode(manifest.subarray(9, 9 + len)));
  const head = new TextEncoder().encode(JSON.stringify(edit(header) ?? header));
  const out = new Uint8Array(9 + head.length + manifest.length - 9 - len);
  out.set(manifest.subarray(0, 9));
  new DataView(out.buffer).setUint32(5, head.length);
  out.set(head, 9);
  out.set(manifest.subarray(9 + len), 9 + head.length);
  return out;
}

const HOSTILE: unknown[] = [null, 0, -1, 1e300, 'x', [], {}, [[0]], [[0, 'x']], [[0, []]], true, 2 ** 53];

/** Damages `m` (a copy of the final store); returns what was done. */
function mutate(rng: Rng, m: MemoryMedium, older: Snapshot[]): { what: string; pin?: number; changed?: boolean } {
  const ids = [...m.pages.keys()];
  const pick = () => ids[rng.int(ids.length)];
  switch (rng.int(10)) {
    case 0: {
      const id = pick();
      const b = m.pages.get(id)!.bytes.slice();
      b[rng.int(b.length)] ^= 1 << rng.int(8);
      m.pages.set(id, stored(b));
      return { what: 'page bit flip, checksum fixed' };
    }
    case 1: {
      const b = m.manifest!.bytes.slice();
      b[rng.int(b.length)] ^= 1 << rng.int(8);
      m.manifest = stored(b);
      return { what: 'manifest bit flip, checksum fixed' };
    }
    case 2: {
      const id = pick();
      const b = m.pages.get(id)!.bytes;
      m.pages.set(id, stored(b.slice(0, rng.int(b.length))));
      return { what: 'page truncated' };
    }
    case 3: {
      const id = pick();
      const b = m.pages.get(id)!.bytes;
      const extra = new Uint8Array(1 + rng.int(64)).map(() => rng.int(256));
      const grown = new Uint8Array(b.length + extra.length);
      grown.set(b);
      grown.set(extra, b.length);
      m.pages.set(id, stored(grown));
      return { what: 'page extended' };
    }
    case 4:
      m.pages.delete(pick());
      return { what: 'page dropped' };
    case 5: {
      const [a, b] = [pick(), pick()];
      const pa = m.pages.get(a)!;
      m.pages.set(a, m.pages.get(b)!);
      m.pages.set(b, pa);
      return { what: 'pages swapped' };
    }
    case 6: {
      const source = m.pages.get(pick())!;
      const free = Math.max(...ids) + 1 + rng.int(3);
      m.pages.set(rng.int(2) === 0 ? free : Math.max(1, rng.int(free)), source);
      return { what: 'page duplicated' };
    }
    case 7: {
      const old = older[rng.int(older.length)];
      const pin = m.manifest !== undefined ? finalCommit : undefined;
      m.manifest = { ...old.manifest };
      if (rng.int(2) === 0) {
        m.pages.clear();
        for (const [id, p] of old.pages) m.pages.set(id, p);
        return { what: 'whole store from an older copy', pin };
      }
      return { what: 'older manifest over newer pages', pin };
    }
    case 8: {
      // A page of one role (by its magic) copied over a page of another: the verifier and open must
      // decide roles from the manifest and directory, never from the bytes (DESIGN §11).
      const kinds = new Map<string, number[]>();
      for (const id of ids) {
        const kind = pageKind(m.pages.get(id)!.bytes) ?? 'other';
        kinds.set(kind, [...(kinds.get(kind) ?? []), id]);
      }
      const roles = [...kinds.keys()];
      const [from, to] = [roles[rng.int(roles.length)], roles[rng.int(roles.length)]];
      const source = kinds.get(from)!,
        target = kinds.get(to)!;
      const [a, b] = [source[rng.int(source.length)], target[rng.int(target.length)]];
      m.pages.set(b, m.pages.get(a)!);
      // Every page of the medium is one the manifest or directory names: other bytes at its id
      // must not pass the verifier, whether or not a read happens to touch them.
      return { what: `${from} page over a ${to} page`, changed: a !== b };
    }
    default: {
      const key = ['v', 'storeId', 'commit', 'envelopes'][rng.int(4)];
      const value = HOSTILE[rng.int(HOSTILE.length)];
      m.manifest = stored(reframeHeader(m.manifest!.bytes, (h) => void (h[key] = value)));
      return { what: `hostile header field ${key}` };
    }
  }
}

let finalCommit = 0;

async function attempt(m: MemoryMedium, model: Map<string, Doc>, pin?: number): Promise<Outcome> {
  const storage = await openMemoryPageStore({ medium: m });
  try {
    if (pin !== undefined) {
      try {
        const s = await openStore({ storage, unlock: r.secretKey, minCommit: pin, readOnly: true });
        await s.close();
      } catch (e) {
        if (e instanceof PqdbError) return e.code === 'ROLLBACK' ? 'rollback-refused' : 'pqdb-error';
        return 'non-pqdb-error';
      }
      // Opened under the pin: it must then be the current store, read below.
    }
    const store = await openStore({ storage, unlock: r.secretKey, readOnly: true });
    try {
      const docs = store.collection('docs', { schema, index: { text: ['text'] } });
      let wrong = false;
      for (const [id, v] of model) {
        const got = await docs.get(id).catch((e) => {
          if (!(e instanceof PqdbError)) throw e;
          return 'error' as const;
        });
        if (got !== 'error' && (got?.text !== v.text || got?.n !== v.n)) wrong = true;
      }
      for (const id of ['d0-1', 'd1-1', 'd2-1', 'd3-1']) if (docs.has(id)) wrong = true; // deleted: never back
      await docs.search('ember', { limit: 100 }).catch((e) => {
        if (!(e instanceof PqdbError)) throw e;
      });
      await docs.exportSealed('late').catch((e) => {
        if (!(e instanceof PqdbError) && !(e instanceof RangeError) && !(e instanceof TypeError)) throw e;
      });
      return wrong ? 'wrong-data' : 'correct';
    } finally {
      await store.close();
    }
  } catch (e) {
    return e instanceof PqdbError ? 'pqdb-error' : 'non-pqdb-error';
  } finally {
    await storage.close().catch(() => undefined);
  }
}

describe('adversarial fuzzer', () => {
  it(
    `${CASES} damaged copies of a real store: every outcome is right data or a PqdbError`,
    async () => {
      const { final, older, model } = await build();
      finalCommit = final.commit;
      const rng = new Rng(SEED);
      const counts: Record<string, Record<Outcome | 'verify-threw' | 'verify-ok', number>> = {};
      const bad: string[] = [];
      for (let i = 0; i < CASES; i++) {
        const m = new MemoryMedium();
        for (const [id, p] of final.pages) m.pages.set(id, p);
        m.manifest = final.manifest;
        const { what, pin, changed } = i === 0 ? { what: 'none (the store as written)' } : mutate(rng, m, older);
        const outcome = await attempt(m, model, pin);
        const row = (counts[what] ??= {} as Record<Outcome | 'verify-threw' | 'verify-ok', number>);
        row[outcome] = (row[outcome] ?? 0) + 1;
        if (outcome === 'non-pqdb-error' || outcome === 'wrong-data') bad.push(`case ${i} (${what}): ${outcome}`);
        // The verifier never throws for bad data, and never calls damaged data good.
        const pages = await openMemoryPageStore({ medium: m });
        try {
          const report = await verifyStore(pages, { unlock: r.secretKey, signerPublicKey: signer.publicKey });
          if (report.ok) row['verify-ok'] = (row['verify-ok'] ?? 0) + 1;
          if (report.ok && outcome !== 'correct' && outcome !== 'rollback-refused')
            bad.push(`case ${i} (${what}): verifyStore ok on a store that does not open right`);
          if (report.ok && changed) bad.push(`case ${i} (${what}): verifyStore ok over a replaced page`);
        } catch (e) {
          row['verify-threw'] = (row['verify-threw'] ?? 0) + 1;
          bad.push(`case ${i} (${what}): verifyStore threw ${String(e)}`);
        } finally {
          await pages.close();
        }
      }
      console.log(`fuzzer (seed ${SEED}, ${CASES} cases):\n${JSON.stringify(counts, null, 1)}`);
      expect(bad).toEqual([]);
    },
    Math.max(180_000, CASES * 100),
  );
});
