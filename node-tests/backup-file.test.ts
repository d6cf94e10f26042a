// Backup files (src/storage/archive.ts, docs/storage.md#backup-files): store.backupFile() makes one
// byte string of a managed copy and restoreStore(bytes, …) makes a store of it, verified as any
// copy is. The file's framing is the adversary's: a truncated, mangled or re-framed file is
// CORRUPTION, a file whose framing is fine but whose pages were changed fails the restore's
// verification, and random damage never surfaces as anything but a PqdbError.
import { describe, it, expect } from 'vitest';
import { generateRecipient, generateSigner, openStore, restoreStore, PqdbError } from '../src/node';
import { openMemoryPageStore } from '../src/storage/memory';
import { openBackupFile, writeBackupFile } from '../src/storage/archive';
import { crc32c } from '../src/_crc32c';

const r = generateRecipient();
const s = generateSigner();
const keys = { recipients: [r.publicKey], unlock: r.secretKey, signer: s.secretKey, signerPublicKey: s.publicKey };
const schema = { title: 'string', n: 'number' } as const;

async function storeWith(n: number) {
  const store = await openStore({ ...keys, create: true, storage: await openMemoryPageStore() });
  const notes = store.collection('notes', { schema });
  for (let i = 0; i < n; i += 50)
    await store.batch((tx) => {
      for (let j = i; j < Math.min(n, i + 50); j++) tx.put(notes, `n${j}`, { title: `note ${j}`, n: j });
    });
  return store;
}

/** `file` with its checksum made right again after a change (the framing then passes its CRC). */
function reseal(file: Uint8Array): Uint8Array {
  const out = file.slice();
  new DataView(out.buffer).setUint32(out.length - 4, crc32c(out.subarray(0, out.length - 4)), true);
  return out;
}

const restoreInto = async (file: Uint8Array) =>
  restoreStore(file, { storage: await openMemoryPageStore(), unlock: r.secretKey, trustedSigner: s.publicKey });

describe('backup files', () => {
  it('a store backed up to a file restores from its bytes with every record; the copy is inventoried', async () => {
    const store = await storeWith(1200);
    const { file, copy, pages } = await store.backupFile();
    expect(file).toBeInstanceOf(Uint8Array);
    expect(pages).toBeGreaterThan(0);
    expect(store.copies().map((c) => [c.id, c.destination])).toContainEqual([copy.id, 'a backup file']);
    const { store: back, restored, verify } = await restoreInto(file);
    expect(verify.ok).toBe(true);
    expect(restored).toBe(1200);
    const notes = back.collection('notes', { schema });
    expect(await notes.get('n0')).toEqual({ title: 'note 0', n: 0 });
    expect(await notes.get('n1199')).toEqual({ title: 'note 1199', n: 1199 });
    expect(notes.size).toBe(1200);
    await back.close();
    await store.close();
  });

  it('the file round-trips a page store exactly: every page id and byte, and the manifest', async () => {
    const store = await storeWith(300);
    const { file } = await store.backupFile();
    const pages = await openBackupFile(file);
    expect(await writeBackupFile(pages)).toEqual(file);
    await pages.close();
    await store.close();
  });

  it('a truncated, mangled or re-framed file is CORRUPTION, with a message that says what', async () => {
    const store = await storeWith(200);
    const { file } = await store.backupFile();
    await store.close();
    const dv = (f: Uint8Array) => new DataView(f.buffer, f.byteOffset, f.byteLength);
    const manifestLength = dv(file).getUint32(13, true);
    const firstPage = 17 + manifestLength;
    const cases: [string, Uint8Array, RegExp][] = [
      ['empty', new Uint8Array(0), /shorter than any/],
      ['truncated', file.subarray(0, file.length - 100), /checksum/],
      [
        'one byte changed',
        (() => {
          const f = file.slice();
          f[firstPage + 40] ^= 1;
          return f;
        })(),
        /checksum/,
      ],
      [
        'another magic',
        reseal(
          (() => {
            const f = file.slice();
            f[0] = 0x51;
            return f;
          })(),
        ),
        /PQDBFILE/,
      ],
      [
        'a later version',
        reseal(
          (() => {
            const f = file.slice();
            f[8] = 2;
            return f;
          })(),
        ),
        /version 2/,
      ],
      [
        'a manifest past the end',
        reseal(
          (() => {
            const f = file.slice();
            dv(f).setUint32(13, file.length, true);
            return f;
          })(),
        ),
        /manifest of/,
      ],
      [
        'no manifest',
        reseal(
          (() => {
            const f = file.slice();
            dv(f).setUint32(13, 0, true);
            return f;
          })(),
        ),
        /manifest of 0/,
      ],
      [
        'more pages than bytes',
        reseal(
          (() => {
            const f = file.slice();
            dv(f).setUint32(9, 0xffffffff, true);
            return f;
          })(),
        ),
        /pages in/,
      ],
      [
        'a page longer than the rest',
        reseal(
          (() => {
            const f = file.slice();
            dv(f).setUint32(firstPage + 4, 0x7fffffff, true);
            return f;
          })(),
        ),
        /page \d+ of \d+ bytes/,
      ],
      [
        'bytes after the last page',
        reseal(new Uint8Array([...file.subarray(0, file.length - 4), 1, 2, 3, 0, 0, 0, 0])),
        /after the last page/,
      ],
    ];
    // A page id given twice: the second page's id set to the first's.
    const twice = file.slice();
    const secondPage = firstPage + 8 + dv(file).getUint32(firstPage + 4, true);
    dv(twice).setUint32(secondPage, dv(file).getUint32(firstPage, true), true);
    cases.push(['a page id given twice', reseal(twice), /ascend/]);
    for (const [what, f, message] of cases) {
      const e = await openBackupFile(f).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(e, what).toBeInstanceOf(PqdbError);
      expect((e as PqdbError).code, what).toBe('CORRUPTION');
      expect((e as PqdbError).message, what).toMatch(message);
      await expect(restoreInto(f), what).rejects.toMatchObject({ code: 'CORRUPTION' });
    }
  });

  it("a page changed inside a well-framed file fails the restore's verification (the CRC is not what trusts it)", async () => {
    const store = await storeWith(200);
    const { file } = await store.backupFile();
    await store.close();
    const manifestLength = new DataView(file.buffer).getUint32(13, true);
    const f = file.slice();
    f[17 + manifestLength + 8 + 60] ^= 0x40; // a byte of the first page's sealed body
    await expect(restoreInto(reseal(f))).rejects.toMatchObject({ code: 'CORRUPTION' });
    // The manifest changed: it is sealed, so the copy does not open.
    const g = file.slice();
    g[17 + 30] ^= 0x40;
    await expect(restoreInto(reseal(g))).rejects.toBeInstanceOf(PqdbError);
  });

  it('random damage to the framing is always a PqdbError, never another exception or a store', async () => {
    const store = await storeWith(60);
    const { file } = await store.backupFile();
    await store.close();
    let seed = 0x9e3779b9;
    const rand = (n: number) => {
      seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      return seed % n;
    };
    const cases = Number(process.env.PQDB_FUZZ_CASES ?? 300);
    for (let i = 0; i < cases; i++) {
      const f = file.slice();
      const head = 17 + new DataView(file.buffer).getUint32(13, true) + 64; // the header, the manifest, the first page's frame
      for (let k = 1 + rand(4); k > 0; k--) f[rand(Math.min(f.length - 4, head + 400))] = rand(256);
      const damaged = i % 3 === 0 ? f.subarray(0, rand(f.length)) : reseal(f);
      const e = await openBackupFile(damaged).then(
        async (pages) => {
          await pages.close();
          return restoreInto(damaged).then(
            async (ok) => {
              await ok.store.close();
              return 'restored';
            },
            (err: unknown) => err,
          );
        },
        (err: unknown) => err,
      );
      if (e === 'restored') continue; // the random bytes were the ones already there
      expect(e, `case ${i}`).toBeInstanceOf(PqdbError);
    }
  });
});
