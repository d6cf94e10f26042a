// `pqdb init --authority` and `pqdb policy sign|set|show` as a shell user runs them: the built
// command line (dist/cli.js, what bin/pqdb.mjs runs) run in-process in a temporary directory. A
// policy signed from a JSON file is set in a file store and shown back, and the library reads the
// same; each refusal of the store (a second set of the same policy, a skipped version, a key it
// does not pin, an expired policy, a store that pins no key, a threshold not met) is one line
// `pqdb: [CODE] …` and status 2, with the policy in force unchanged.
import { cliIn } from './support/cli';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, verifyPolicy } from '../src/node';

let dir: string;

const { ok, failsWith } = cliIn(() => dir);
/** Expects one line on stderr matching `message`, status 2, no stack trace. */
const fails = async (args: string[], message: RegExp, input?: string): Promise<void> => {
  await failsWith(args, 2, message, input);
};

const U = ['--unlock', 'alice'];
const file = (name: string) => join(dir, name);
const keyOf = (name: string) => new Uint8Array(Buffer.from(readFileSync(file(name), 'utf8').trim(), 'base64'));
/** Writes a policy document; one that names no store names the domain the test stores pin. */
const policyFile = (name: string, doc: Record<string, unknown>) =>
  writeFileSync(
    file(name),
    JSON.stringify(doc.stores !== undefined || doc.domain !== undefined ? doc : { ...doc, domain: 'cli' }),
  );
const D = ['--authority-domain', 'cli'];
const RULES = [
  { scope: 'billing', allow: ['read', 'write'] },
  { scope: 'billing', purposes: ['audit'], allow: ['read'] },
  { scope: '*', allow: [] },
];
let authId: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pqdb-cli-policy-'));
  await ok(['keygen', '--out', 'alice']);
  authId = (JSON.parse(await ok(['keygen', '--out', 'auth', '--signer', '--json'])) as { id: string }).id;
  await ok(['keygen', '--out', 'other', '--signer']);
  await ok(['init', 'store', '--recipient', 'alice.pub', ...U, '--authority', 'auth.pub', ...D]);
  await ok(['init', 'plain', '--recipient', 'alice.pub', ...U]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pqdb init --authority', () => {
  it('pins the key: the library opens the store with it and refuses another (AUTH_FAILED)', async () => {
    const out = JSON.parse(
      await ok(['init', 'pinned', '--recipient', 'alice.pub', ...U, '--authority', 'auth.pub', '--json']),
    ) as { authorityKeys: string[] };
    expect(out.authorityKeys).toEqual([authId]);
    const open = (key: Uint8Array) =>
      openStore({ location: file('pinned'), unlock: keyOf('alice'), authorityPublicKey: key, readOnly: true });
    await (await open(keyOf('auth.pub'))).close();
    await expect(open(keyOf('other.pub'))).rejects.toMatchObject({ code: 'AUTH_FAILED' });
  });

  it('takes several keys, repeated or comma-separated; refuses a secret key and a key named twice', async () => {
    expect(
      await ok(['init', 'two', '--recipient', 'alice.pub', ...U, '--authority', 'auth.pub,other.pub', ...D]),
    ).toContain('2 authority key(s) pinned, domain cli');
    await fails(
      ['init', 'x1', '--recipient', 'alice.pub', ...U, '--authority', 'auth'],
      /--authority auth: .*secret key/,
    );
    await fails(
      ['init', 'x2', '--recipient', 'alice.pub', ...U, '--authority', 'auth.pub', '--authority', 'auth.pub'],
      /already named/,
    );
  });

  it('a store created without it refuses every policy (AUTHORITY_DENIED) and shows none', async () => {
    policyFile('plain.json', { version: 1, rules: RULES });
    await ok(['policy', 'sign', 'plain.json', '--authority-key', 'auth', '--out', 'plain.signed']);
    await fails(['policy', 'set', 'plain', 'plain.signed', ...U], /^pqdb: \[AUTHORITY_DENIED\] /);
    expect(await ok(['policy', 'show', 'plain', ...U])).toBe(
      'no policy\nauthority keys pinned: none (pqdb init --authority pins them)\n',
    );
  });
});

describe('pqdb policy sign, set, show', () => {
  it('signs a JSON file as base64 the library verifies; sets it; shows it in text and JSON', async () => {
    expect(await ok(['policy', 'show', 'store', ...U])).toBe(`no policy\nauthority keys pinned: ${authId}\n`);
    policyFile('v1.json', { version: 1, rules: RULES, expires: '2099-01-01T00:00:00Z' });
    expect(await ok(['policy', 'sign', 'v1.json', '--authority-key', 'auth', '--out', 'v1.signed'])).toBe(
      'pqdb policy sign: version 1, 1 signature(s) of threshold 1; wrote v1.signed (base64)\n',
    );
    const text = readFileSync(file('v1.signed'), 'utf8');
    expect(text).toMatch(/^[A-Za-z0-9+/]+=*\n$/);
    const signed = new Uint8Array(Buffer.from(text, 'base64'));
    expect(verifyPolicy(signed, [keyOf('auth.pub')]).version).toBe(1);

    expect(await ok(['policy', 'set', 'store', 'v1.signed', ...U])).toMatch(
      new RegExp(`^pqdb policy set: version 1 in force \\(commit \\d+\\), signed by ${authId}\\n$`),
    );
    expect(await ok(['policy', 'show', 'store', ...U])).toBe(
      [
        'policy version 1, threshold 1, expires 2099-01-01T00:00:00.000Z',
        `signed by: ${authId}`,
        'domain: cli',
        `authority keys pinned: ${authId}`,
        'rules:',
        '  billing: read, write',
        '  billing (purposes audit): read',
        '  *: nothing',
        '',
      ].join('\n'),
    );
    const shown = JSON.parse(await ok(['policy', 'show', 'store', ...U, '--json'])) as Record<string, unknown>;
    expect(shown).toEqual({
      location: 'store',
      authorityKeys: [authId],
      policy: {
        version: 1,
        expires: '2099-01-01T00:00:00.000Z',
        expired: false,
        threshold: 1,
        domain: 'cli',
        signers: [authId],
        rules: RULES,
      },
    });
    const store = await openStore({ location: file('store'), unlock: keyOf('alice'), readOnly: true });
    try {
      expect(store.policy()?.signed).toEqual(signed);
    } finally {
      await store.close();
    }
  });

  it('the same signed file again is ROLLBACK, a skipped version CONFLICT: status 2, version 1 stays', async () => {
    await fails(['policy', 'set', 'store', 'v1.signed', ...U], /^pqdb: \[ROLLBACK\] policy version 1 is not newer/);
    policyFile('v3.json', { version: 3, rules: RULES });
    await ok(['policy', 'sign', 'v3.json', '--authority-key', 'auth', '--out', 'v3.signed']);
    await fails(['policy', 'set', 'store', 'v3.signed', ...U], /^pqdb: \[CONFLICT\] policy version 3 skips/);
    expect(await ok(['policy', 'show', 'store', ...U])).toMatch(/^policy version 1,/);
  });

  it('a policy signed by a key the store does not pin is AUTH_FAILED', async () => {
    policyFile('v2.json', { version: 2, rules: RULES });
    await ok(['policy', 'sign', 'v2.json', '--authority-key', 'other', '--out', 'v2.other']);
    await fails(['policy', 'set', 'store', 'v2.other', ...U], /^pqdb: \[AUTH_FAILED\] /);
  });

  it('an expired policy is AUTHORITY_DENIED', async () => {
    policyFile('v2-expired.json', { version: 2, rules: RULES, expires: '2001-01-01T00:00:00Z' });
    await ok(['policy', 'sign', 'v2-expired.json', '--authority-key', 'auth', '--out', 'v2.expired']);
    await fails(['policy', 'set', 'store', 'v2.expired', ...U], /^pqdb: \[AUTHORITY_DENIED\] policy version 2 expired/);
    expect(await ok(['policy', 'show', 'store', ...U])).toMatch(/^policy version 1,/);
  });

  it('signs stdin to stdout (base64, nothing else), or --raw bytes; set reads either, and "-"', async () => {
    const b64 = await ok(
      ['policy', 'sign', '-', '--authority-key', 'auth'],
      JSON.stringify({ version: 2, rules: RULES, domain: 'cli' }),
    );
    expect(b64).toMatch(/^[A-Za-z0-9+/]+=*\n$/);
    expect(await ok(['policy', 'set', 'store', '-', ...U, '--json'], b64)).toMatch(/"version": 2/);
    policyFile('v3b.json', { version: 3, rules: [{ scope: '*', allow: ['read'] }] });
    const report = JSON.parse(
      await ok(['policy', 'sign', 'v3b.json', '--authority-key', 'auth', '--raw', '--out', 'v3.raw', '--json']),
    ) as Record<string, unknown>;
    expect(report).toEqual({
      version: 3,
      threshold: 1,
      signatures: 1,
      signedBy: [authId],
      out: 'v3.raw',
      format: 'raw',
    });
    expect(readFileSync(file('v3.raw')).subarray(0, 4).toString('latin1')).toBe('PQAP');
    await ok(['policy', 'set', 'store', 'v3.raw', ...U]);
    expect(await ok(['policy', 'show', 'store', ...U])).toMatch(/^policy version 3, threshold 1, no expiry\n/);
  });

  it('a threshold: one signature is AUTH_FAILED; sign adds the second to the signed file', async () => {
    policyFile('t.json', { version: 1, threshold: 2, rules: RULES });
    expect(await ok(['policy', 'sign', 't.json', '--authority-key', 'auth', '--out', 't1'])).toContain(
      '1 signature(s) of threshold 2; needs 1 more',
    );
    await fails(['policy', 'set', 'two', 't1', ...U], /^pqdb: \[AUTH_FAILED\] the policy needs 2 authority signatures/);
    await ok(['policy', 'sign', 't1', '--authority-key', 'other', '--out', 't2']);
    const set = JSON.parse(await ok(['policy', 'set', 'two', 't2', ...U, '--json'])) as { signers: string[] };
    expect(set.signers).toHaveLength(2);
    expect(set.signers).toContain(authId);
    await fails(['policy', 'sign', 't2', '--authority-key', 'auth'], /this key has signed it already/);
  });

  it('show and set with --authority check the pin (AUTH_FAILED for another key)', async () => {
    expect(await ok(['policy', 'show', 'store', ...U, '--authority', 'auth.pub'])).toMatch(/^policy version 3/);
    await fails(['policy', 'show', 'store', ...U, '--authority', 'other.pub'], /^pqdb: \[AUTH_FAILED\] /);
  });

  it('sign refuses a key pair whose .pub is not its public half, a missing .pub, and a bad document', async () => {
    writeFileSync(file('mixed'), readFileSync(file('auth')));
    writeFileSync(file('mixed.pub'), readFileSync(file('other.pub')));
    await fails(['policy', 'sign', 'v2.json', '--authority-key', 'mixed'], /mixed\.pub is not the public half/);
    await fails(['policy', 'sign', 'v2.json', '--authority-key', 'auth.pub'], /auth\.pub\.pub is missing/);
    await fails(
      ['policy', 'sign', '-', '--authority-key', 'auth'],
      /"version" expected an integer/,
      '{"version":0,"rules":[]}',
    );
    await fails(
      ['policy', 'sign', '-', '--authority-key', 'auth'],
      /neither a JSON document nor a signed policy/,
      'no\n',
    );
    await fails(['policy', 'sign', 'v2.json'], /at least one --authority-key FILE is required/);
  });

  it('--store and --domain name the stores a policy governs; a policy for another store is AUTHORITY_DENIED', async () => {
    const { storeId } = JSON.parse(
      await ok(['init', 'byid', '--recipient', 'alice.pub', ...U, '--authority', 'auth.pub', '--json']),
    ) as { storeId: string };
    writeFileSync(file('named.json'), JSON.stringify({ version: 1, rules: RULES }));
    await ok(['policy', 'sign', 'named.json', '--authority-key', 'auth', '--domain', 'cli', '--out', 'named.cli']);
    await fails(
      ['policy', 'set', 'byid', 'named.cli', ...U],
      /^pqdb: \[AUTHORITY_DENIED\] policy version 1 does not govern this store/,
    );
    await ok(['policy', 'sign', 'named.json', '--authority-key', 'auth', '--out', 'named.none']);
    await fails(['policy', 'set', 'byid', 'named.none', ...U], /^pqdb: \[AUTHORITY_DENIED\] .*names no store/);
    const other = 'ab'.repeat(16);
    await ok([
      'policy',
      'sign',
      'named.json',
      '--authority-key',
      'auth',
      '--store',
      `${other},${storeId}`,
      '--out',
      'named.id',
    ]);
    await ok(['policy', 'set', 'byid', 'named.id', ...U]);
    expect(await ok(['policy', 'show', 'byid', ...U])).toContain(`stores: ${[other, storeId].sort().join(', ')}\n`);
    await fails(
      ['policy', 'sign', 'named.id', '--authority-key', 'other', '--store', storeId],
      /not of a signed policy/,
    );
    await fails(
      ['policy', 'sign', 'named.json', '--authority-key', 'auth', '--store', 'nope'],
      /store ids of 32 hex digits/,
    );
  });

  it('init --authority-threshold: the first policy needs that many of the pinned keys', async () => {
    await ok([
      'init',
      'thr',
      '--recipient',
      'alice.pub',
      ...U,
      '--authority',
      'auth.pub,other.pub',
      ...D,
      '--authority-threshold',
      '2',
    ]);
    policyFile('thr.json', { version: 1, rules: RULES });
    await ok(['policy', 'sign', 'thr.json', '--authority-key', 'auth', '--out', 'thr1']);
    await fails(
      ['policy', 'set', 'thr', 'thr1', ...U],
      /^pqdb: \[AUTH_FAILED\] policy version 1 needs 2 authority signatures/,
    );
    await ok(['policy', 'sign', 'thr1', '--authority-key', 'other', '--out', 'thr2']);
    await ok(['policy', 'set', 'thr', 'thr2', ...U]);
    await fails(
      ['init', 'thr3', '--recipient', 'alice.pub', ...U, '--authority', 'auth.pub', '--authority-threshold', '2'],
      /exceeds/,
    );
    await fails(
      ['init', 'thr4', '--recipient', 'alice.pub', ...U, '--authority-domain', 'cli'],
      /need --authority FILE/,
    );
  });

  it('sign --out refuses a symbolic link (and an existing file): the link target is never written', async () => {
    policyFile('link.json', { version: 9, rules: RULES });
    writeFileSync(file('victim'), 'keep\n');
    symlinkSync('victim', file('link'));
    await fails(
      ['policy', 'sign', 'link.json', '--authority-key', 'auth', '--out', 'link'],
      /^pqdb: \[IO_ERROR\] cannot write link/,
    );
    expect(readFileSync(file('victim'), 'utf8')).toBe('keep\n');
    symlinkSync('nowhere', file('dangling'));
    await fails(
      ['policy', 'sign', 'link.json', '--authority-key', 'auth', '--raw', '--out', 'dangling'],
      /\[IO_ERROR\]/,
    );
    expect(existsSync(file('nowhere'))).toBe(false);
    await fails(['policy', 'sign', 'link.json', '--authority-key', 'auth', '--out', 'victim'], /\[IO_ERROR\]/);
    expect(readFileSync(file('victim'), 'utf8')).toBe('keep\n');
  });

  it('--help lists the group; its usage, a missing or unknown word and missing arguments are usage errors', async () => {
    expect(await ok(['--help'])).toMatch(/^ {2}policy {6}signed authority policies/m);
    const group = await ok(['policy', '--help']);
    expect(group).toMatch(/^usage: pqdb policy sign\|set\|show/);
    for (const v of ['sign', 'set', 'show']) expect(group).toMatch(new RegExp(`^  pqdb policy ${v} `, 'm'));
    expect(await ok(['help', 'policy'])).toBe(group);
    expect(await ok(['help', 'policy', 'set'])).toMatch(/^usage: pqdb policy set <location> <signed>/);
    expect(await ok(['policy', 'sign', '--help'])).toContain('--authority-key FILE');
    await fails(['policy'], /^pqdb: missing sign\|set\|show after "policy" \(see pqdb policy --help\)\n$/);
    await fails(['policy', 'frob'], /^pqdb: unknown command "policy frob" \(see pqdb policy --help\)\n$/);
    await fails(['policy', 'set', 'store'], /^pqdb: missing <signed> \(see pqdb policy set --help\)\n$/);
    await fails(['policy', 'show', 'store'], /the recipient secret key is required/);
  });
});
