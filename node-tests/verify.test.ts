// The store verifier and `pqdb verify`: a good store passes (exit 0), and a flipped bit in a page, a
// truncated segment, a forged checkpoint or a record altered under a recomputed checksum are found
// and named (non-zero exit). The verifier opens the store read-only: it changes nothing on disk and
// runs while a writer holds the store. The command line takes a directory, so its tests run on
// node-fs (copies of one good store, edited file by file); verifyStore runs on every page store.
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { spawnSync } from 'node:child_process';
import {
  mkdtempSync,
  rmSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  statSync,
  truncateSync,
  existsSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateRecipient, generateSigner, openStore, openMemoryPageStore } from '../src/node';
import { verifyStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { crc32c } from '../src/_crc32c';
import { openNodeFsPageStore } from '../src/storage/node-fs';
import { pageKind } from '../src/engine/page-format';
import {
  STORE_FIXTURES,
  nodeFsStoreFixture,
  perTest,
  replacePage,
  type NodeFsStoreFixture,
} from './support/store-fixtures';
import * as merkleModule from '../src/crypto/merkle';
import { decodeCheckpoint, signCheckpoint, SIGNED_CHECKPOINT_BYTES } from '../src/crypto/proofs';
import { sha384 } from '../src/crypto';

const recipient = generateRecipient('classical');
const signer = generateSigner();
const schema = { lemma: 'string', gloss: 'string' } as const;
const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
/** Key files and paths that hold no store. */
let scratch: string;
/** The good store every command-line test starts from (a copy of it, where a test changes it). */
let goodStore: NodeFsStoreFixture;
let good: string;

function cli(args: string[], env: Record<string, string> = {}) {
  const r = spawnSync(process.execPath, ['bin/pqdb.mjs', ...args], {
    encoding: 'utf8',
    env: { ...process.env, PQDB_UNLOCK: '', PQDB_SIGNER_PUBLIC: '', ...env },
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, json: () => JSON.parse(r.stdout) };
}
const keys = { PQDB_UNLOCK: b64(recipient.secretKey), PQDB_SIGNER_PUBLIC: b64(signer.publicKey) };

async function fill(f: NodeFsStoreFixture): Promise<void> {
  const store = await f.open({
    create: true,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    signer: signer.secretKey,
    signerPublicKey: signer.publicKey,
    autoCheckpoint: false,
  });
  const words = store.collection('words', { schema, index: { text: ['lemma', 'gloss'] } });
  for (let c = 0; c < 6; c++) {
    await store.batch((tx) => {
      for (let i = 0; i < 40; i++) tx.put(words, `w${c}-${i}`, { lemma: `word${i}`, gloss: `gloss of commit ${c}` });
    });
    if (c === 1) await words.search('gloss');
    if (c % 2 === 1) await store.checkpoint();
  }
  await words.put('w0-1', { lemma: 'updated', gloss: 'after the checkpoints' });
  await words.delete('w0-2');
  await store.close();
}

const segments = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith('.pqs'))
    .sort();

beforeAll(async () => {
  scratch = mkdtempSync(join(tmpdir(), 'pqdb-verify-'));
  goodStore = await nodeFsStoreFixture();
  good = goodStore.dir;
  await fill(goodStore);
});
afterAll(async () => {
  rmSync(scratch, { recursive: true, force: true });
  await goodStore.dispose();
});

describe('pqdb verify', () => {
  /** A copy of the good store, removed after the test. */
  const copyOfGood = perTest(() => goodStore.copy());

  it('passes a good store and changes nothing on disk', () => {
    const before = readdirSync(good).map((f) => [f, statSync(join(good, f)).size, statSync(join(good, f)).mtimeMs]);
    const r = cli(['verify', good, '--json'], keys);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const report = r.json();
    expect(report).toMatchObject({ ok: true, complete: true, problems: [], skipped: [] });
    expect(report.counts).toMatchObject({
      commitPages: 8,
      logPages: 3,
      indexPages: 1,
      recordsDecrypted: 241,
      collections: { words: 239 },
      leaves: { 1: 242 }, // 241 puts and a delete
      checkpoints: 3,
      signaturesVerified: 3,
      consistencyProofs: 2,
      inclusionProofs: 238,
      uncheckpointed: 1,
    });
    expect(readdirSync(good).map((f) => [f, statSync(join(good, f)).size, statSync(join(good, f)).mtimeMs])).toEqual(
      before,
    );
    const text = cli(['verify', good], keys);
    expect(text.status).toBe(0);
    expect(text.stdout).toMatch(/OK: every check holds/);
    expect(text.stdout).toMatch(/3 signatures verified, 2 consistency proofs/);
    // A freshness pin kept elsewhere: the log size (or checkpoint hash) the store must still hold.
    expect(cli(['verify', good, '--expect-checkpoint', '240'], keys).status).toBe(0);
    const stale = cli(['verify', good, '--expect-checkpoint', '241', '--json'], keys);
    expect(stale.status).toBe(1);
    expect(stale.json().problems).toEqual([expect.objectContaining({ where: 'checkpoints', code: 'ROLLBACK' })]);
    const missing = cli(['verify', good, '--expect-checkpoint', 'ab'.repeat(48), '--json'], keys);
    expect(missing.json().problems[0]).toMatchObject({ code: 'ROLLBACK' });
  });

  it('takes keys from files (raw or base64); without keys it checks what it can and exits 3', () => {
    const unlockFile = join(scratch, 'unlock.key');
    const signerFile = join(scratch, 'signer.pub');
    writeFileSync(unlockFile, recipient.secretKey);
    writeFileSync(signerFile, b64(signer.publicKey) + '\n');
    expect(cli(['verify', good, '--unlock', unlockFile, '--signer-public', signerFile]).status).toBe(0);
    const bare = cli(['verify', good, '--json']);
    expect(bare.status, bare.stdout + bare.stderr).toBe(3);
    const report = bare.json();
    expect(report).toMatchObject({ ok: true, complete: false });
    expect(report.skipped.join('\n')).toMatch(/no recipient secret key[\s\S]*no trusted signer public key/);
    expect(report.counts).toMatchObject({ commitPages: 8, logPages: 3, leaves: { 1: 240 }, consistencyProofs: 2 });
    const signatures = cli(['verify', good, '--json'], { PQDB_SIGNER_PUBLIC: keys.PQDB_SIGNER_PUBLIC });
    expect(signatures.status).toBe(3);
    expect(signatures.json().counts.signaturesVerified).toBe(3);
    const wrong = cli(['verify', good, '--json'], { PQDB_UNLOCK: b64(generateRecipient('classical').secretKey) });
    expect(wrong.status).toBe(1);
    expect(wrong.json().problems[0]).toMatchObject({ where: 'manifest', code: 'AUTH_FAILED' });
    expect(cli(['verify']).status).toBe(2);
    expect(cli(['frobnicate', good]).status).toBe(2);
    expect(cli(['verify', join(scratch, 'nowhere')]).status).toBe(2);
    expect(cli(['verify', good], { PQDB_UNLOCK: 'not base64!' }).status).toBe(2);
  });

  it('names a flipped bit in a page', async () => {
    const dir = (await copyOfGood()).dir;
    const seg = join(dir, segments(dir)[0]);
    const bytes = readFileSync(seg);
    // Walk the segment's records (docs/storage.md) to the body of commit page 1.
    let off = 16;
    while (bytes.readUInt32LE(off + 8) !== 1 || bytes[off + 4] !== 1) off += 24 + bytes.readUInt32LE(off + 12);
    bytes[off + 24 + Math.floor(bytes.readUInt32LE(off + 12) / 2)] ^= 0x04;
    writeFileSync(seg, bytes);
    const r = cli(['verify', dir, '--json'], keys);
    expect(r.status).toBe(1);
    const report = r.json();
    expect(report.ok).toBe(false);
    expect(
      report.problems.some(
        (p: { where: string; message: string }) => /^page \d+$/.test(p.where) && /checksum|header/.test(p.message),
      ),
    ).toBe(true);
    expect(cli(['verify', dir], keys).stdout).toMatch(/PROBLEM +page \d+: \[CORRUPTION\]/);
  });

  it('names a truncated segment', async () => {
    const dir = (await copyOfGood()).dir;
    const seg = join(dir, segments(dir)[0]);
    truncateSync(seg, statSync(seg).size - 100);
    const r = cli(['verify', dir], keys);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/\[CORRUPTION\].*seg-00000001\.pqs holds \d+ bytes, the manifest committed \d+/);
  });

  it('names a forged checkpoint', async () => {
    const forged = await copyOfGood();
    const dir = forged.dir;
    const forger = generateSigner();
    const store = await forged.open({
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
      signer: forger.secretKey,
      signerPublicKey: forger.publicKey,
      autoCheckpoint: false,
    });
    await store.checkpoint();
    await store.close();
    const r = cli(['verify', dir, '--json'], keys);
    expect(r.status).toBe(1);
    expect(r.json().problems).toEqual([
      {
        where: 'checkpoint 4',
        code: 'AUTH_FAILED',
        message: expect.stringMatching(/not signed by the trusted signer key: it names another signer key/),
      },
    ]);
  });

  it('reports an unfinished commit tail as a note, not a failure, and runs beside a writer', async () => {
    const tail = await copyOfGood();
    const dir = tail.dir;
    const segs = segments(dir);
    const seg = join(dir, segs[segs.length - 1]);
    writeFileSync(seg, Buffer.concat([readFileSync(seg), Buffer.alloc(77, 0xab)]));
    const writer = await tail.writablePages(); // holds the lock (and leaves the tail: it may be another writer's)
    try {
      const r = cli(['verify', dir, '--json'], keys);
      expect(r.status).toBe(0);
      expect(existsSync(join(dir, 'LOCK'))).toBe(true);
    } finally {
      await writer.close();
    }
    writeFileSync(seg, Buffer.concat([readFileSync(seg), Buffer.alloc(77, 0xab)]));
    const r = cli(['verify', dir, '--json'], keys);
    expect(r.status).toBe(0);
    expect(r.json().notes.join('\n')).toMatch(/154 bytes past its committed length/); // both tails, never truncated
    expect(statSync(seg).size).toBeGreaterThan(77); // left in place
  });
});

describe.each(STORE_FIXTURES)('verifyStore (%s)', (_name, factory) => {
  const fresh = perTest(factory);

  it('finds a record altered under a recomputed checksum (the MAC, not the CRC, catches it)', async () => {
    const f = await fresh();
    const store = await f.open({
      create: true,
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
    });
    const c = store.collection('c', { schema });
    await store.batch((tx) => {
      for (let i = 0; i < 10; i++) tx.put(c, `k${i}`, { lemma: 'x', gloss: 'y' });
    });
    await store.checkpoint();
    await store.close();
    const check = async () => {
      const pages = await f.pages();
      try {
        return await verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
      } finally {
        await pages.close();
      }
    };
    expect(await check()).toMatchObject({ ok: true, complete: true });
    const [pageId, stored] = [...(await f.storedPages()).entries()].find(
      ([, bytes]) => pageKind(bytes) === 'commit' && bytes.length > 500,
    )!;
    const altered = new Uint8Array(stored);
    altered[altered.length - 20] ^= 1; // inside the last record's ciphertext or tag
    await replacePage(f, pageId, altered);
    const report = await check();
    expect(report.ok).toBe(false);
    expect(report.problems).toContainEqual(
      expect.objectContaining({ where: `record c/k9 (page ${pageId})`, code: 'AUTH_FAILED' }),
    );
  });
});

describe('verifyStore on many checkpoints', () => {
  it('builds one Merkle tree per generation, not one per checkpoint; a wrong signed root is named', async () => {
    const medium = new MemoryMedium();
    const store = await openStore({
      storage: await openMemoryPageStore({ medium }),
      create: true,
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      autoCheckpoint: false,
    });
    const c = store.collection('c', { schema });
    for (let at = 0; at < 2000; at += 10) {
      await store.batch((tx) => {
        for (let i = at; i < at + 10; i++) tx.put(c, `k${i}`, { lemma: `word ${i}`, gloss: 'y' });
      });
      await store.checkpoint();
    }
    await c.put('late', { lemma: 'after the last checkpoint', gloss: 'y' });
    await store.close();
    const check = async () => {
      const pages = await openMemoryPageStore({ medium });
      try {
        return await verifyStore(pages, { unlock: recipient.secretKey, signerPublicKey: signer.publicKey });
      } finally {
        await pages.close();
      }
    };
    const Tree = merkleModule.MerkleHashTree;
    const trees = vi.spyOn(merkleModule, 'MerkleHashTree').mockImplementation(function (hashes: Uint8Array) {
      return new Tree(hashes); // a constructor returning an object: `new` gives the real tree
    } as unknown as typeof Tree);
    let report: Awaited<ReturnType<typeof verifyStore>>;
    try {
      report = await check();
      // One generation: one tree, for the inclusion proofs against its last checkpoint (a tree per
      // checkpoint size would be 200, ~100 MB at this size and quadratic in general).
      expect(trees).toHaveBeenCalledTimes(1);
    } finally {
      trees.mockRestore();
    }
    expect(report).toMatchObject({ ok: true, complete: true, problems: [] });
    expect(report.counts).toMatchObject({
      leaves: { 1: 2001 },
      checkpoints: 200,
      signaturesVerified: 200,
      consistencyProofs: 199,
      inclusionProofs: 2000,
      uncheckpointed: 1,
    });

    // Re-sign checkpoint 100 (size 1000) over another root: its root no longer matches its leaves,
    // the next one no longer chains to it, and the consistency proof from it fails.
    const [pageId, stored] = [...medium.pages.entries()].find(
      ([, p]) => p.bytes.length === SIGNED_CHECKPOINT_BYTES && decodeCheckpoint(p.bytes)?.size === 1000,
    )!;
    const forged = signCheckpoint(
      { ...decodeCheckpoint(stored.bytes)!, root: sha384(new Uint8Array([1])) },
      signer.secretKey,
      signer.publicKey,
    );
    medium.pages.set(pageId, { bytes: forged, crc: crc32c(forged) });
    const after = await check();
    expect(after.problems).toEqual([
      {
        where: 'checkpoint 100',
        code: 'MISMATCH',
        message: 'the root of the first 1000 leaves of generation 1 is not the signed root',
      },
      { where: 'checkpoint 101', code: 'MISMATCH', message: 'the checkpoint does not chain to the one before it' },
      { where: 'checkpoint 101', code: 'MISMATCH', message: 'the consistency proof from size 1000 does not verify' },
    ]);
    expect(after.counts).toMatchObject({ signaturesVerified: 200, consistencyProofs: 197, inclusionProofs: 2000 });

    // Re-sign the last checkpoint (size 2000) as an earlier state, size 500 with that size's true
    // root: the shrink is named, no consistency proof is asked of it, and only the 500 records it
    // covers are proven (against its root, from a tree of 500 leaves).
    medium.pages.set(pageId, stored);
    const at = (size: number) =>
      [...medium.pages.entries()].find(
        ([, p]) => p.bytes.length === SIGNED_CHECKPOINT_BYTES && decodeCheckpoint(p.bytes)?.size === size,
      )!;
    const [lastId, last] = at(2000);
    const shrunk = signCheckpoint(
      { ...decodeCheckpoint(last.bytes)!, size: 500, root: decodeCheckpoint(at(500)[1].bytes)!.root },
      signer.secretKey,
      signer.publicKey,
    );
    medium.pages.set(lastId, { bytes: shrunk, crc: crc32c(shrunk) });
    const trees2 = vi.spyOn(merkleModule, 'MerkleHashTree').mockImplementation(function (hashes: Uint8Array) {
      expect(hashes.length).toBe(500 * 48);
      return new Tree(hashes);
    } as unknown as typeof Tree);
    let shrinking: Awaited<ReturnType<typeof verifyStore>>;
    try {
      shrinking = await check();
      expect(trees2).toHaveBeenCalledTimes(1);
    } finally {
      trees2.mockRestore();
    }
    expect(shrinking.problems).toEqual([
      { where: 'checkpoint 200', code: 'MISMATCH', message: 'the log shrank from 1990 to 500 leaves' },
    ]);
    expect(shrinking.counts).toMatchObject({ consistencyProofs: 198, inclusionProofs: 500, uncheckpointed: 1501 });
  });
});

describe('pqdb migrate and pqdb status', () => {
  const copyOfGood = perTest(() => goodStore.copy());

  it('migrates a file store from the command line, reports status, and the result verifies', async () => {
    const dir = (await copyOfGood()).dir;
    const signerEnv = { ...keys, PQDB_SIGNER: b64(signer.secretKey) };
    const before = cli(['status', dir, '--json'], keys);
    expect(before.status).toBe(0);
    expect(before.json()).toMatchObject({
      authenticated: true,
      collections: { words: { suite: 'gcmsiv-hkdf384', records: 239 } },
      checkpoints: 3,
    });
    const bare = cli(['status', dir]);
    expect(bare.status).toBe(0);
    // Without the key only the header is readable: the suites, registry and collections are sealed.
    expect(bare.stdout).toMatch(/manifest body is sealed[\s\S]*commit +\d+[\s\S]*generations +1\n/);
    expect(bare.stdout).not.toMatch(/gcmsiv|words/);
    expect(cli(['migrate', dir, '--to', 'nope'], signerEnv).status).toBe(2);
    expect(cli(['migrate', dir, '--to', 'gcmsiv-hkdf256']).status).toBe(2); // no key
    const r = cli(['migrate', dir, '--to', 'gcmsiv-hkdf256', '--chunk', '50', '--json'], signerEnv);
    expect(r.status, r.stderr).toBe(0);
    expect(r.json()).toMatchObject({
      phase: 'done',
      to: 'gcmsiv-hkdf256',
      copied: 239,
      failed: 0,
      total: 239,
      generation: 2,
    });
    const after = cli(['status', dir, '--json'], keys).json();
    expect(after.collections.words).toEqual({ suite: 'gcmsiv-hkdf256', records: 239 });
    expect(after.registry).toContainEqual(expect.objectContaining({ suite: 'gcmsiv-hkdf384', state: 'decrypt-only' }));
    expect(after.migration).toMatchObject({ phase: 'done', copied: 239 });
    const v = cli(['verify', dir, '--json'], keys);
    expect(v.status, v.stdout).toBe(0);
    expect(v.json().counts).toMatchObject({
      leaves: { 1: 242, 2: 239 }, // generation 1 also logs the delete
      // The three of the store, generation 1 signed to its end before generation 2 opened, and
      // generation 2 at the end of the migration.
      checkpoints: 5,
      signaturesVerified: 5,
      inclusionProofs: 239,
      indexPages: 1,
    });
    // Again, and retire the generations left behind.
    const again = cli(['migrate', dir, '--to', 'gcmsiv-hkdf384', '--retire', '--json'], signerEnv);
    expect(again.status, again.stderr).toBe(0);
    expect(again.json()).toMatchObject({ phase: 'done', copied: 239, generation: 3, retired: [1, 2] });
    const st = cli(['status', dir, '--json'], keys).json();
    expect(st).toMatchObject({
      generations: [{ generation: 3, suite: 'gcmsiv-hkdf384' }],
      retired: [1, 2],
      collections: { words: { records: 239 } },
    });
    const v2 = cli(['verify', dir, '--json'], keys);
    expect(v2.status, v2.stdout).toBe(0);
    expect(v2.json().counts).toMatchObject({
      leaves: { 1: 242, 2: 239, 3: 239 },
      checkpoints: 6, // generation 2 was signed to its end already: no second one before generation 3
      signaturesVerified: 6,
      inclusionProofs: 239,
    });
  });
});
