// A replica follows one store (src/replication/replica.ts): the store id given to it, or the one of
// the first commit it applied (kept in its own manifest with its watermark). A commit of any other
// store, such as a trusted-but-compromised primary serving a substitute, is refused with
// AUTH_FAILED before anything of it is staged or opened, on first contact when the id is given,
// and after a restart. `pqdb replicate follow --store-id` pins it from the command line.
import { describe, it, expect, vi, beforeAll, afterAll } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { openStore, openMemoryPageStore } from '../src/index';
import { MemoryMedium } from '../src/storage/memory';
import { engineOf as partsOf } from '../src/engine/store';
import { Primary } from '../src/replication/primary';
import { Replica } from '../src/replication/replica';
import { Store } from '../src/engine/store';
import { sessionPair } from './support/sessions';
import { options, recipient, schema, signer } from './support/replication-stores';

const pair = () => sessionPair();

/** Two stores any replica holding `recipient` opens: the one it should follow, and a substitute. */
async function twoStores() {
  const a = await openStore({ ...options, storage: 'memory' });
  const b = await openStore({ ...options, storage: 'memory' });
  for (let i = 0; i < 5; i++) await a.collection('w', { schema }).put(`a${i}`, { lemma: 'a', n: i });
  for (let i = 0; i < 9; i++) await b.collection('w', { schema }).put(`b${i}`, { lemma: 'b', n: i });
  const primaries = { a: new Primary(partsOf(a)), b: new Primary(partsOf(b)) };
  const link = { to: 'a' as 'a' | 'b' };
  const connect = async () => {
    const [p, r] = pair();
    void primaries[link.to].accept(p);
    return r;
  };
  const close = async () => {
    await primaries.a.close();
    await primaries.b.close();
    await a.close();
    await b.close();
  };
  return { a, b, link, connect, close };
}

const settle = () => new Promise((r) => setTimeout(r, 200));

describe('replication: the store a replica follows', () => {
  it('given storeId, a replica refuses another store on first contact, before staging or opening it', async () => {
    const { a, link, connect, close } = await twoStores();
    link.to = 'b'; // a substitute answers first
    const opens = vi.spyOn(Store, 'over');
    const replica = await Replica.open(await openMemoryPageStore({ medium: new MemoryMedium() }), {
      unlock: recipient.secretKey,
      storeId: a.info().storeId.toUpperCase(),
      connect,
      backoffMs: [10],
    });
    await settle();
    expect(replica.status().appliedWatermark).toBe(0);
    expect(replica.status().lastError).toMatch(
      new RegExp(
        `^AUTH_FAILED: the primary sent a commit of store [0-9a-f]{32}, but this replica follows store ${a.info().storeId}`,
      ),
    );
    expect(opens).not.toHaveBeenCalled(); // refused on the header: no store opened on the substitute
    opens.mockRestore();
    link.to = 'a';
    await replica.applied(a.info().commit);
    expect(replica.collection('w', { schema }).size).toBe(5);
    await replica.close();
    await close();
  });

  it('without storeId, the store of its first applied commit is pinned, and stays pinned after a restart', async () => {
    const { a, link, connect, close } = await twoStores();
    const medium = new MemoryMedium();
    const open = async () =>
      Replica.open(await openMemoryPageStore({ medium }), { unlock: recipient.secretKey, connect, backoffMs: [10] });
    let replica = await open();
    await replica.applied(a.info().commit);
    const at = replica.status().appliedWatermark;
    link.to = 'b';
    await replica.close(); // as after a kill; it comes back to a substitute
    replica = await open();
    await settle();
    expect(replica.status().appliedWatermark).toBe(at);
    expect(replica.status().lastError).toMatch(/^AUTH_FAILED: the primary sent a commit of store [0-9a-f]{32}, but/);
    expect(replica.collection('w', { schema }).has('b0')).toBe(false);
    expect(await replica.collection('w', { schema }).get('a4')).toEqual({ lemma: 'a', n: 4 });
    await replica.close();
    // Its own page store still holds store A at its watermark.
    const pages = await openMemoryPageStore({ medium });
    const held = await Store.open(pages, { unlock: recipient.secretKey, readOnly: true });
    expect(held.info()).toMatchObject({ storeId: a.info().storeId, commit: at });
    await held.close();
    await close();
  });

  it('storeId must be 32 hex digits', async () => {
    const pages = await openMemoryPageStore({ medium: new MemoryMedium() });
    const connect = () => Promise.reject(new Error('unused'));
    await expect(Replica.open(pages, { unlock: recipient.secretKey, storeId: 'abc', connect })).rejects.toThrow(
      TypeError,
    );
  });
});

describe('pqdb replicate follow --store-id', () => {
  const BIN = resolve('bin/pqdb.mjs');
  let dir: string;
  const env = { ...process.env, PQDB_UNLOCK: '', PQDB_SIGNER_PUBLIC: '', PQDB_SIGNER: '' };
  const pqdb = (args: string[]) => spawnSync(process.execPath, [BIN, ...args], { cwd: dir, env, encoding: 'utf8' });
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'pqdb-pin-'));
    for (const a of [
      ['keygen', '--out', 'alice'],
      ['keygen', '--out', 'primary', '--signer'],
      ['keygen', '--out', 'replica', '--signer'],
      ['init', 'store', '--recipient', 'alice.pub', '--unlock', 'alice'],
    ])
      expect(pqdb(a).status).toBe(0);
    writeFileSync(join(dir, 'w.jsonl'), '{"id":"w1","value":{"lemma":"one"}}\n');
    expect(
      pqdb([
        'import',
        'store',
        'words',
        'w.jsonl',
        '--format',
        'jsonl',
        '--schema',
        'lemma:string',
        '--unlock',
        'alice',
      ]).status,
    ).toBe(0);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('follows the store it names, refuses a primary serving another (status 2) and a directory holding another', async () => {
    const serve = spawn(
      process.execPath,
      [
        BIN,
        'replicate',
        'serve',
        'store',
        '--unlock',
        'alice',
        '--identity',
        'primary',
        '--trust',
        'replica.pub',
        '--json',
      ],
      { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const limit = setTimeout(() => serve.kill('SIGKILL'), 30_000);
    try {
      const listening = await new Promise<{ port: number; storeId: string }>((ok, fail) => {
        let out = '';
        serve.stdout.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('\n')) ok(JSON.parse(out.slice(0, out.indexOf('\n'))));
        });
        serve.on('close', () => fail(new Error(`serve ended: ${out}`)));
      });
      const follow = (location: string, storeId: string, ...more: string[]) =>
        new Promise<{ status: number | null; stdout: string; stderr: string }>((done) => {
          const c = spawn(
            process.execPath,
            [
              BIN,
              'replicate',
              'follow',
              location,
              '--unlock',
              'alice',
              '--identity',
              'replica',
              '--primary',
              `127.0.0.1:${listening.port}`,
              '--primary-key',
              'primary.pub',
              '--store-id',
              storeId,
              ...more,
            ],
            { cwd: dir, env },
          );
          const t = setTimeout(() => c.kill('SIGKILL'), 20_000);
          let stdout = '';
          let stderr = '';
          c.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
          c.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
          c.on('close', (status) => (clearTimeout(t), done({ status, stdout, stderr })));
        });
      const other = 'ab'.repeat(16);
      const refused = await follow('r1', other);
      expect(refused.stderr).toMatch(
        new RegExp(
          `^pqdb: \\[AUTH_FAILED\\] 127\\.0\\.0\\.1:\\d+ serves store ${listening.storeId}, not --store-id ${other}\\n$`,
        ),
      );
      expect(refused.status).toBe(2);
      const ok = await follow('r2', listening.storeId.toUpperCase(), '--once', '--timeout', '15000');
      expect(ok.stdout).toMatch(/caught up: applied commit \d+ of store/);
      expect(ok.status).toBe(0);
      const held = await follow('r2', other, '--once', '--timeout', '15000');
      expect(held.stderr).toMatch(/^pqdb replicate follow: cannot open r2: \[AUTH_FAILED\] this is not the store/);
      expect(held.status).toBe(2);
      expect(
        pqdb([
          'replicate',
          'follow',
          'r3',
          '--unlock',
          'alice',
          '--identity',
          'replica',
          '--primary',
          '127.0.0.1:1',
          '--primary-key',
          'primary.pub',
          '--store-id',
          'xyz',
        ]).stderr,
      ).toMatch(/--store-id expected 32 hex digits/);
    } finally {
      clearTimeout(limit);
      serve.kill('SIGKILL');
    }
  }, 60_000);
});
