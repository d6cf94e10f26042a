// `pqdb backup`, `pqdb copies list|retire` and `pqdb restore` as a shell user runs them: the built
// command line (dist/cli.js, what bin/pqdb.mjs runs) run in-process in a temporary directory, on
// file stores. A store with records (two of them in a governance scope, written by the library: the
// CLI writes none) is backed up; the inventory lists the copy retained and the copy opens
// read-only. A record is deleted and a policy revoking `restore` for the scope is set; `restore
// --live` then leaves out both, the new store reads with get and scan and verifies, and both
// inventories record the restore. Retiring deletes the copy and a restore of it is refused; so is a
// retired copy put back, a restore onto a store, a copy of another store and a live store another
// writer holds: one line each, status 2.
import { cliIn } from './support/cli';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateRecipient, generateSigner, openStore } from '../src/node';

let dir: string;

const { pqdb, ok, failsWith } = cliIn(() => dir);
/** Expects one line on stderr matching `message`, `status`, no stack trace. */
const fails = async (args: string[], message: RegExp, status = 2): Promise<void> => {
  await failsWith(args, status, message);
};

const U = ['--unlock', 'alice'];
const S = ['--signer', 'signer'];
const file = (name: string) => join(dir, name);
const keyOf = (name: string) => new Uint8Array(Buffer.from(readFileSync(file(name), 'utf8').trim(), 'base64'));
const json = async <T = Record<string, unknown>>(args: string[]) => JSON.parse(await ok([...args, '--json'])) as T;

interface Copy {
  id: string;
  kind: string;
  state: string;
  destination: string;
  generations: number[];
  suites: string[];
  records: number;
  commit: number;
  retiredAt?: string;
  restores?: { time: string; storeId: string }[];
  sourceStoreId?: string;
}
const copiesOf = async (location: string) =>
  (await json<{ copies: Copy[] }>(['copies', 'list', location, ...U])).copies;

let storeId: string;
let copyId: string;
let restoredId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pqdb-cli-copies-'));
  await ok(['keygen', '--out', 'alice']);
  await ok(['keygen', '--out', 'signer', '--signer']);
  // Keys only the refusals and the policy need, written as keygen writes them (base64 on one line,
  // mode 0600: a secret key file others may read gets a warning).
  const write = (name: string, key: Uint8Array) =>
    writeFileSync(file(name), `${Buffer.from(key).toString('base64')}\n`, { mode: 0o600 });
  write('bob.pub', generateRecipient().publicKey);
  const auth = generateSigner();
  write('auth', auth.secretKey);
  write('auth.pub', auth.publicKey);
  const init = [
    'init',
    'store',
    '--recipient',
    'alice.pub',
    ...U,
    ...S,
    '--authority',
    'auth.pub',
    '--authority-domain',
    'cli',
  ];
  storeId = (await json<{ storeId: string }>(init)).storeId;
  const lines = [1, 2, 3].map((i) => JSON.stringify({ id: `w${i}`, value: { lemma: `word ${i}` } }));
  writeFileSync(file('words.jsonl'), `${lines.join('\n')}\n`);
  await ok(['import', 'store', 'words', 'words.jsonl', '--format', 'jsonl', '--schema', 'lemma:string', ...U]);
  const store = await openStore({ location: file('store'), unlock: keyOf('alice') });
  try {
    const words = store.collection('words', { schema: { lemma: 'string' } });
    for (const id of ['b1', 'b2']) await words.put(id, { lemma: `bill ${id}` }, { governance: { scope: 'billing' } });
  } finally {
    await store.close();
  }
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pqdb backup and copies list', () => {
  it('--help lists the verbs; backup needs the signer', async () => {
    const help = await ok(['--help']);
    for (const v of ['backup', 'restore', 'copies']) expect(help).toMatch(new RegExp(`^  ${v} `, 'm'));
    expect(await ok(['copies', '--help'])).toMatch(/^usage: pqdb copies list\|retire …\n/);
    expect(await ok(['help', 'restore'])).toContain('--live LOCATION');
    await fails(
      ['backup', 'store', 'bk0', ...U],
      /^pqdb: the signer secret key is required \(--signer FILE or PQDB_SIGNER\) \(see pqdb backup --help\)\n$/,
    );
    await fails(['copies', 'store'], /^pqdb: unknown command "copies store" \(see pqdb copies --help\)\n$/);
  });

  it('writes a copy of every record, listed retained with an absolute destination; it opens read-only', async () => {
    const out = await ok(['backup', 'store', 'bk1', ...U, ...S]);
    const m = new RegExp(
      `^pqdb backup: copy ([0-9a-f]{32}) of store in ${file('bk1')}\\n  5 record\\(s\\) at commit (\\d+), [\\d,]+ bytes in \\d+ page\\(s\\)\\n  writes paused [\\d.]+ ms; took [\\d.]+ s\\n$`,
    ).exec(out);
    expect(m, out).not.toBeNull();
    copyId = m![1];
    const [copy] = await copiesOf('store');
    expect(copy).toMatchObject({
      id: copyId,
      kind: 'backup',
      state: 'retained',
      destination: file('bk1'),
      generations: [1],
      suites: ['gcmsiv-hkdf384'],
      records: 5,
      commit: Number(m![2]),
    });
    const table = (await ok(['copies', 'list', 'store', ...U])).split('\n');
    expect(table[0].split(/\s+/)).toEqual([
      'id',
      'kind',
      'state',
      'time',
      'destination',
      'generations',
      'suites',
      'records',
      'commit',
    ]);
    expect(table[1].split(/\s+/)).toEqual([
      copyId,
      'backup',
      'retained',
      expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      file('bk1'),
      '1',
      'gcmsiv-hkdf384',
      '5',
      m![2],
    ]);
    expect(await ok(['get', 'bk1', 'words', 'b1', ...U])).toBe('{"lemma":"bill b1"}\n');
    await fails(['put', 'bk1', 'words', 'w9', '{"lemma":"x"}', ...U], /^pqdb: \[READ_ONLY\] this is managed copy /);
    await fails(
      ['backup', 'store', 'bk1', ...U, ...S],
      /^pqdb: \[CONFLICT\] the backup destination .* already holds a store/,
    );
    expect(await copiesOf('store')).toHaveLength(1);
  });
});

describe('pqdb restore', () => {
  it('--live: a deletion and a revoked scope stay out; the new store reads; both inventories record it', async () => {
    await ok(['delete', 'store', 'words', 'w1', ...U]);
    writeFileSync(
      file('policy.json'),
      JSON.stringify({
        version: 1,
        rules: [
          { scope: 'billing', allow: ['read', 'write', 'migrate'] },
          { scope: '*', allow: ['read', 'write', 'migrate', 'restore'] },
        ],
      }),
    );
    await ok(['policy', 'sign', 'policy.json', '--authority-key', 'auth', '--domain', 'cli', '--out', 'policy.signed']);
    await ok(['policy', 'set', 'store', 'policy.signed', ...U]);

    const out = await ok(['restore', 'bk1', 'restored', '--live', 'store', ...U, ...S]);
    const m = new RegExp(
      `^pqdb restore: restored: restored 2, withheld 2, deleted 1\\n  new store ([0-9a-f]{32}), from copy ${copyId} of store ${storeId} at commit \\d+\\n  copy verified in [\\d.]+ s; took [\\d.]+ s; recorded in the inventory of store\\n$`,
    ).exec(out);
    expect(m, out).not.toBeNull();
    restoredId = m![1];
    expect(restoredId).not.toBe(storeId);

    expect(await ok(['scan', 'restored', 'words', ...U])).toBe('w2\t{"lemma":"word 2"}\nw3\t{"lemma":"word 3"}\n');
    expect(await ok(['get', 'restored', 'words', 'w3', ...U])).toBe('{"lemma":"word 3"}\n');
    await fails(['get', 'restored', 'words', 'b1', ...U], /no record "b1"/, 1);
    expect(await ok(['verify', 'restored', ...U, '--signer-public', 'signer.pub'])).toMatch(/^OK: every check holds/m);
    const store = await openStore({ location: file('restored'), unlock: keyOf('alice'), readOnly: true });
    try {
      expect(store.policy()?.version).toBe(1);
    } finally {
      await store.close();
    }

    const [live] = await copiesOf('store');
    expect(live).toMatchObject({ id: copyId, state: 'restored-from', restores: [{ storeId: restoredId }] });
    expect(await ok(['copies', 'list', 'store', ...U])).toContain(`\n  restored into store ${restoredId} at `);
    const mine = await copiesOf('restored');
    expect(mine).toEqual([
      expect.objectContaining({
        id: copyId,
        kind: 'restore',
        state: 'restored-from',
        sourceStoreId: storeId,
        destination: file('bk1'),
        records: 5,
      }),
    ]);
  });

  it('without --live: the copy as it was, or under a --policy given; --trusted-signer alone; --json, --progress', async () => {
    // The store pins an authority key and the copy holds no policy: nothing outside the copy says
    // none was dropped, so a restore alone needs the current policy.
    await fails(
      ['restore', 'bk1', 'plain0', ...U, '--trusted-signer', 'signer.pub'],
      /^pqdb: \[AUTHORITY_DENIED\] the store pins authority keys but holds no policy/,
    );
    expect(existsSync(file('plain0'))).toBe(false);
    const r = await json<Record<string, unknown>>([
      'restore',
      'bk1',
      'plain',
      ...U,
      '--trusted-signer',
      'signer.pub',
      '--policy',
      'policy.signed',
    ]);
    expect(r).toMatchObject({
      location: 'plain',
      copy: 'bk1',
      restored: 3,
      fromLive: 0,
      withheld: 2,
      deleted: 0,
      unsigned: 0,
      refused: [],
      copyId,
      sourceStoreId: storeId,
      verify: { ok: true }, // record versions are opened by the restore itself, not by the verifier
    });
    expect(r.storeId).toMatch(/^[0-9a-f]{32}$/);
    expect(r).not.toHaveProperty('store');
    expect(await ok(['get', 'plain', 'words', 'w1', ...U])).toBe('{"lemma":"word 1"}\n');

    const p = await pqdb([
      'restore',
      'bk1',
      'governed',
      ...U,
      ...S,
      '--policy',
      'policy.signed',
      '--authority',
      'auth.pub', // the keys the store pins, named from outside the copy
      '--progress',
    ]);
    expect(p.status).toBe(0);
    expect(p.stdout).toMatch(/^pqdb restore: governed: restored 3, withheld 2, deleted 0\n/);
    expect(p.stderr).toMatch(/restore +\[#+\] 5\/5 records/);
  });

  it('refused: no trusted key, an --unlock no --recipient opens, a store at the target, a stranger copy, a held lock', async () => {
    await fails(
      ['restore', 'bk1', 'x1', ...U],
      /^pqdb: the copy's signer public key is required .*\(see pqdb restore --help\)\n$/,
    );
    await fails(
      ['restore', 'bk1', 'x2', ...U, ...S, '--recipient', 'bob.pub'],
      /the --unlock key is not the secret key of any --recipient/,
    );
    await fails(
      ['restore', 'bk1', 'restored', '--live', 'store', ...U, ...S],
      /^pqdb: \[CONFLICT\] the restore target/,
    );
    // The copy pins another authority key than the one named: a fork could have swapped it.
    await fails(['restore', 'bk1', 'x5', ...U, ...S, '--authority', 'signer.pub'], /^pqdb: \[AUTH_FAILED\] /);
    const other = await openStore({
      location: file('other'),
      create: true,
      recipients: [keyOf('alice.pub')],
      unlock: keyOf('alice'),
      signer: keyOf('signer'),
      signerPublicKey: keyOf('signer.pub'),
    });
    try {
      await other.collection('words', { schema: { lemma: 'string' } }).put('o1', { lemma: 'other' });
      await other.backup(file('bk-other'));
    } finally {
      await other.close();
    }
    await fails(
      ['restore', 'bk-other', 'x3', '--live', 'store', ...U, ...S],
      /^pqdb: \[AUTH_FAILED\] the copy is of store /,
    );
    const writer = await openStore({ location: file('store'), unlock: keyOf('alice') });
    try {
      await fails(['restore', 'bk1', 'x4', '--live', 'store', ...U, ...S], /^pqdb: \[LOCKED\] /);
    } finally {
      await writer.close();
    }
    for (const x of ['x1', 'x2', 'x3', 'x4', 'x5']) expect(existsSync(file(x)), x).toBe(false);
    expect((await copiesOf('store'))[0].restores).toHaveLength(1);
  });

  it('a fork written past the last signed checkpoint: its records come from --live, else are refused', async () => {
    // The store's files copied, then written by a holder of the store secret, who cannot sign.
    cpSync(file('store'), file('fork'), { recursive: true });
    const fork = await openStore({ location: file('fork'), unlock: keyOf('alice') });
    try {
      await fork.collection('words', { schema: { lemma: 'string' } }).put('w2', { lemma: 'forged' });
    } finally {
      await fork.close();
    }
    expect(await ok(['restore', 'fork', 'fork-alone', ...U, '--trusted-signer', 'signer.pub'])).toMatch(
      /^pqdb restore: fork-alone: restored 1, withheld 2, deleted 0, refused 1 \(past the last signed checkpoint\)\n/,
    );
    await fails(['get', 'fork-alone', 'words', 'w2', ...U], /no record "w2"/, 1);
    const live = await openStore({ location: file('store'), unlock: keyOf('alice') });
    try {
      for (let i = 0; i < 3; i++)
        await live.collection('words', { schema: { lemma: 'string' } }).put('w9', { lemma: `late ${i}` }); // the live store goes on
    } finally {
      await live.close();
    }
    const r = await json<Record<string, unknown>>(['restore', 'fork', 'fork-live', '--live', 'store', ...U, ...S]);
    expect(r).toMatchObject({ restored: 1, fromLive: 1, withheld: 2, unsigned: 0, refused: [] });
    expect(await ok(['get', 'fork-live', 'words', 'w2', ...U])).toBe('{"lemma":"word 2"}\n');
  });
});

describe('pqdb copies retire', () => {
  it('deletes the copy and records it; a restore of it is refused, of it put back too; twice is CONFLICT', async () => {
    expect(await ok(['copies', 'retire', 'store', copyId.slice(0, 8), ...U])).toBe(
      `pqdb copies retire: copy ${copyId} retired; deleted ${file('bk1')}\n`,
    );
    expect(existsSync(file('bk1'))).toBe(false);
    expect((await copiesOf('store'))[0]).toMatchObject({ id: copyId, state: 'retired', retiredAt: expect.any(String) });
    await fails(['restore', 'bk1', 'again', '--live', 'store', ...U, ...S], /^pqdb: \[NOT_FOUND\] /);
    expect(existsSync(file('again'))).toBe(false);

    const second = /copy ([0-9a-f]{32})/.exec(await ok(['backup', 'store', 'bk2', ...U, ...S]))![1];
    cpSync(file('bk2'), file('bk2-kept'), { recursive: true });
    const retired = await json<{ copy: Copy; deleted: boolean }>(['copies', 'retire', 'store', second, ...U]);
    expect(retired).toMatchObject({ location: 'store', copy: { id: second, state: 'retired' }, deleted: true });
    await fails(
      ['restore', 'bk2-kept', 'again', '--live', 'store', ...U, ...S],
      /^pqdb: \[AUTHORITY_DENIED\] managed copy/,
    );
    await fails(['copies', 'retire', 'store', second, ...U], /^pqdb: \[CONFLICT\] managed copy .* is retired already/);
    await fails(['copies', 'retire', 'store', 'nope', ...U], /^pqdb: \[NOT_FOUND\] no managed copy nope/);
  });
});
