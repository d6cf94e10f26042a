// Page roles come from the authenticated manifest and key directory, never from a page's magic
// (DESIGN §11): a page the directory lists as a live commit page must open as one. A storage
// attacker copies one stored page's bytes over another's (checksums made to match): the verifier
// must report it, and every read of the store must either give the value written or fail with a
// PqdbError. The seeded sweep below checks the general property on sampled swaps: whenever a
// record cannot be read back, verifyStore is not ok.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawnSync } from 'node:child_process';
import { generateRecipient, generateSigner } from '../src/node';
import { verifyStore } from '../src/index';
import { PqdbError } from '../src/errors';
import { pageKind } from '../src/engine/page-format';
import { unlockManifest, type Manifest } from '../src/engine/manifest';
import type { Store, StoreOptions } from '../src/engine/store';
import { memoryStoreFixture, nodeFsStoreFixture, replacePage, type NodeStoreFixture } from './support/store-fixtures';
import { Rng } from './cases/_util';

const recipient = generateRecipient('classical');
const signer = generateSigner();
const schema = { lemma: 'string', gloss: 'string' } as const;
const options = (extra: Partial<StoreOptions> = {}): StoreOptions => ({
  recipients: [recipient.publicKey],
  unlock: recipient.secretKey,
  signer: signer.secretKey,
  signerPublicKey: signer.publicKey,
  autoCheckpoint: false,
  ...extra,
});
const value = (i: number, round: string) => ({ lemma: `word${i}`, gloss: `gloss ${i} ${round}` });
const RECORDS = 26;

/**
 * A store with a persisted key directory (two checkpoints), a lexical index, a migration to
 * another suite in chunks (several commit pages), and commits after the last checkpoint.
 * Returns the values each id must read back as.
 */
async function fill(f: NodeStoreFixture): Promise<Map<string, { lemma: string; gloss: string }>> {
  const expected = new Map<string, { lemma: string; gloss: string }>();
  const store = await f.open(options({ create: true }));
  try {
    const words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
    for (let c = 0; c < 3; c++)
      await store.batch((tx) => {
        for (let i = c * 9; i < Math.min(RECORDS, c * 9 + 9); i++) {
          tx.put(words, `w${i}`, value(i, 'first'));
          expected.set(`w${i}`, value(i, 'first'));
        }
      });
    await words.search('gloss');
    await store.checkpoint();
    await store.migrate({ to: 'gcmsiv-hkdf256', chunkRecords: 7 });
    await store.checkpoint();
    for (const i of [3, 11]) {
      await words.put(`w${i}`, value(i, 'after'));
      expected.set(`w${i}`, value(i, 'after'));
    }
  } finally {
    await store.close();
  }
  return expected;
}

/** Each stored page's role, from the authenticated manifest (the partitions: directory pages it does not name). */
async function roles(f: NodeStoreFixture): Promise<Map<number, string>> {
  const pages = await f.pages();
  try {
    const { manifest } = unlockManifest((await pages.readManifest())!, recipient.secretKey) as { manifest: Manifest };
    const heads = new Set((manifest.directory?.snapshots ?? []).flatMap((s) => s.pages));
    const out = new Map<number, string>();
    for (const id of await pages.listPages()) {
      const kind = pageKind((await pages.readPage(id))!)!;
      out.set(id, kind === 'directory' ? (heads.has(id) ? 'directory' : 'partition') : kind);
    }
    return out;
  } finally {
    await pages.close();
  }
}

/** How reading every record back went: how many failed (each with a PqdbError), or a wrong value. */
async function readBack(
  f: NodeStoreFixture,
  expected: Map<string, { lemma: string; gloss: string }>,
): Promise<{ failed: number; wrong: string[]; untyped: string[] }> {
  const wrong: string[] = [];
  const untyped: string[] = [];
  let failed = 0;
  const typed = (e: unknown, what: string) => {
    failed++;
    if (!(e instanceof PqdbError)) untyped.push(`${what}: ${String(e)}`);
  };
  let store: Store;
  try {
    store = await f.open(options({ readOnly: true }));
  } catch (e) {
    typed(e, 'open');
    return { failed: expected.size, wrong, untyped };
  }
  try {
    let words: ReturnType<Store['collection']>;
    try {
      words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
    } catch (e) {
      typed(e, 'collection');
      return { failed: expected.size, wrong, untyped };
    }
    for (const [id, v] of expected) {
      try {
        const got = (await words.get(id)) as { lemma: string; gloss: string } | undefined;
        if (got?.lemma !== v.lemma || got?.gloss !== v.gloss) wrong.push(`${id}: ${JSON.stringify(got)}`);
      } catch (e) {
        typed(e, id);
      }
    }
  } finally {
    await store.close().catch(() => undefined);
  }
  return { failed, wrong, untyped };
}

const verified = async (f: NodeStoreFixture) => {
  const pages = await f.pages();
  try {
    return await verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
  } finally {
    await pages.close();
  }
};

/** Copies stored page `from` over stored page `to` (checksum matching). */
async function swap(f: NodeStoreFixture, from: number, to: number): Promise<void> {
  const bytes = (await f.storedPages()).get(from)!;
  await replacePage(f, to, bytes);
}

/** A fresh memory location holding a copy of `source`'s medium. */
async function copyOf(source: Awaited<ReturnType<typeof memoryStoreFixture>>) {
  const f = await memoryStoreFixture();
  for (const [id, p] of source.medium.pages) f.medium.pages.set(id, { bytes: p.bytes.slice(), crc: p.crc });
  f.medium.manifest = { ...source.medium.manifest!, bytes: source.medium.manifest!.bytes.slice() };
  return f;
}

describe('page roles come from the manifest and the key directory', () => {
  let base: Awaited<ReturnType<typeof memoryStoreFixture>>;
  let expected: Map<string, { lemma: string; gloss: string }>;
  let role: Map<number, string>;
  const ofRole = (r: string) => [...role].filter(([, x]) => x === r).map(([id]) => id);

  beforeAll(async () => {
    base = await memoryStoreFixture();
    expected = await fill(base);
    role = await roles(base);
  });
  afterAll(() => base.dispose());

  it('the store verifies and reads back (the baseline the swaps start from)', async () => {
    for (const r of ['commit', 'directory', 'partition', 'log', 'index', 'checkpoint'])
      expect(ofRole(r).length, r).toBeGreaterThan(0);
    expect(ofRole('commit').length).toBeGreaterThanOrEqual(4);
    expect((await verified(base)).ok).toBe(true);
    expect(await readBack(base, expected)).toEqual({ failed: 0, wrong: [], untyped: [] });
  });

  for (const from of ['directory', 'partition', 'log', 'index', 'checkpoint', 'commit'])
    it(`a ${from} page copied over each live commit page is reported, and reads fail typed`, async () => {
      const source = ofRole(from)[0];
      for (const target of ofRole('commit')) {
        if (target === source) continue;
        const f = await copyOf(base);
        try {
          await swap(f, source, target);
          const report = await verified(f);
          expect(report.ok, `${from} page ${source} over commit page ${target}`).toBe(false);
          const read = await readBack(f, expected);
          expect(read.wrong).toEqual([]);
          expect(read.untyped).toEqual([]);
        } finally {
          await f.dispose();
        }
      }
    });

  it('open refuses any other page in the place of a commit page written after the persisted directory', async () => {
    const pages = await base.pages();
    let afterPage: number;
    try {
      const { manifest } = unlockManifest((await pages.readManifest())!, recipient.secretKey) as { manifest: Manifest };
      afterPage = manifest.directory!.afterPage;
    } finally {
      await pages.close();
    }
    const late = ofRole('commit').filter((id) => id > afterPage);
    expect(late.length).toBeGreaterThan(0);
    for (const from of ['directory', 'partition', 'log', 'index', 'checkpoint'])
      for (const target of late) {
        const f = await copyOf(base);
        try {
          await swap(f, ofRole(from)[0], target);
          await expect(f.open(options({ readOnly: true })), `${from} page over commit page ${target}`).rejects.toThrow(
            expect.objectContaining({
              code: 'CORRUPTION',
              message: `commit page ${target} holds a ${from === 'partition' ? 'directory' : from} page`,
            }),
          );
        } finally {
          await f.dispose();
        }
      }
  });

  for (const to of ['directory', 'partition', 'log', 'index', 'checkpoint'])
    it(`a commit page copied over each ${to} page is reported, and reads fail typed`, async () => {
      for (const target of ofRole(to)) {
        const f = await copyOf(base);
        try {
          await swap(f, ofRole('commit')[0], target);
          expect((await verified(f)).ok, `commit page over ${to} page ${target}`).toBe(false);
          const read = await readBack(f, expected);
          expect(read.wrong).toEqual([]);
          expect(read.untyped).toEqual([]);
        } finally {
          await f.dispose();
        }
      }
    });
});

/** Cases of the seeded sweep (PQDB_ROLE_CASES; every ordered pair of page ids when it is larger). */
const CASES = Number(process.env.PQDB_ROLE_CASES ?? 120);
const SEED = Number(process.env.PQDB_ROLE_SEED ?? 20261206);

describe('a seeded sweep of page copies: no verifier pass over a store whose reads fail', () => {
  it(`${CASES} sampled (page, other page id) pairs`, async () => {
    const base = await memoryStoreFixture();
    try {
      const expected = await fill(base);
      const role = await roles(base);
      const ids = [...role.keys()];
      const pairs = ids.flatMap((from) => ids.filter((to) => to !== from).map((to) => [from, to] as const));
      // A seeded Fisher–Yates shuffle, then the first CASES pairs.
      const rng = new Rng(SEED);
      for (let i = pairs.length - 1; i > 0; i--) {
        const j = rng.int(i + 1);
        [pairs[i], pairs[j]] = [pairs[j], pairs[i]];
      }
      const bad: string[] = [];
      const tally = { cases: 0, readsFailed: 0, verifyFailed: 0 };
      for (const [from, to] of pairs.slice(0, CASES)) {
        const what = `${role.get(from)} page ${from} over ${role.get(to)} page ${to}`;
        const f = await copyOf(base);
        try {
          await swap(f, from, to);
          let ok: boolean | undefined;
          try {
            ok = (await verified(f)).ok;
          } catch (e) {
            bad.push(`${what}: verifyStore threw ${String(e)}`);
          }
          const read = await readBack(f, expected);
          tally.cases++;
          if (read.failed > 0) tally.readsFailed++;
          if (ok === false) tally.verifyFailed++;
          if (read.failed > 0 && ok === true) bad.push(`${what}: ${read.failed} read(s) fail, yet verifyStore is ok`);
          for (const w of read.wrong) bad.push(`${what}: wrong data ${w}`);
          for (const u of read.untyped) bad.push(`${what}: not a PqdbError: ${u}`);
        } finally {
          await f.dispose();
        }
      }
      console.log(`page-copy sweep (seed ${SEED}, ${pairs.length} pairs): ${JSON.stringify(tally)}`);
      expect(bad).toEqual([]);
      expect(tally.cases).toBe(Math.min(CASES, pairs.length));
      expect(tally.readsFailed).toBeGreaterThan(0); // the sweep reaches pages that reads depend on
    } finally {
      await base.dispose();
    }
  }, 120_000);
});

describe('pqdb verify (node-fs)', () => {
  it('fails (exit 1) on a directory page copied over a live commit page the directory covers', async () => {
    const f = await nodeFsStoreFixture();
    try {
      await fill(f);
      const role = await roles(f);
      const pages = await f.pages();
      let afterPage: number;
      try {
        afterPage = (unlockManifest((await pages.readManifest())!, recipient.secretKey).manifest as Manifest).directory!
          .afterPage;
      } finally {
        await pages.close();
      }
      // The migration's last commit page before the checkpoint: one the directory covers (open does not read it).
      const target = Math.max(...[...role].filter(([id, r]) => r === 'commit' && id <= afterPage).map(([id]) => id));
      const head = [...role].find(([, r]) => r === 'directory')![0];
      const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
      const run = () =>
        spawnSync(process.execPath, ['bin/pqdb.mjs', 'verify', f.dir, '--json'], {
          encoding: 'utf8',
          env: { ...process.env, PQDB_UNLOCK: b64(recipient.secretKey), PQDB_SIGNER_PUBLIC: b64(signer.publicKey) },
        });
      const good = run();
      expect(good.status, good.stdout).toBe(0);
      await swap(f, head, target);
      const r = run();
      expect(r.status, r.stdout).toBe(1);
      const report = JSON.parse(r.stdout);
      expect(report.ok).toBe(false);
      expect(report.problems).toContainEqual(expect.objectContaining({ where: `page ${target}`, code: 'CORRUPTION' }));
    } finally {
      await f.dispose();
    }
  }, 60_000);
});

describe('a page nothing names, below the directory end', () => {
  it('is noted, not taken for a commit page, by open and the verifier alike', async () => {
    const f = await memoryStoreFixture();
    try {
      const store = await f.open(options({ create: true }));
      const words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
      for (let i = 0; i < 6; i++) await words.put(`w${i}`, value(i, 'first'));
      await words.search('gloss');
      await store.checkpoint();
      const before = await f.raw.pages();
      await words.put('w9', value(9, 'late'));
      await store.checkpoint(); // a new index page and log page; the old ones go
      await store.close();
      const now = await f.raw.pages();
      const gone = [...before].filter(([id, b]) => !now.has(id) && pageKind(b) !== 'commit');
      expect(gone.length).toBeGreaterThan(0);
      for (const [id, bytes] of gone) await f.raw.setPage(id, bytes); // superseded pages put back
      const report = await verified(f);
      expect(report.problems).toEqual([]);
      expect(report.notes).toContain(
        `${gone.length} page(s) the manifest and the key directory do not name are not part of the store`,
      );
      const again = await f.open(options({ readOnly: true }));
      expect(again.recovery.actions.some((a) => a.startsWith(`${gone.length} page(s) the manifest`))).toBe(true);
      expect((await again.collection('words', { schema }).get('w9'))?.gloss).toBe('gloss 9 late');
    } finally {
      await f.dispose();
    }
  });
});
