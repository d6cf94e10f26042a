// The `pqdb` command's failure contract (src/cli/index.ts): whatever goes wrong — a store whose
// MANIFEST is garbage, a location or key file that cannot be read, a stdout whose reader went away —
// ends as exactly one line on stderr and the documented exit status, never a stack trace. Runs the
// built command line (dist/cli.js) in-process, and through bin/pqdb.mjs as a user does for what only
// a process shows — the exit status a shell sees, each the same as in-process byte for byte, a piped
// stdin, a stdout whose reader went away; the top-level catch itself is also run in-process with a
// verb that throws. cli-verbs.test.ts runs every verb.
import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, generateRecipient } from '../src/node';
import { PqdbError } from '../src/errors';
import { main } from '../src/cli/index';
import { runCli, spawnCli, type Run } from './support/cli';

// What the mocked `status` verb throws, and the keys it was handed (the other verbs are the real ones).
const thrown = vi.hoisted(() => ({
  value: undefined as unknown,
  keys: undefined as { unlock?: Uint8Array } | undefined,
}));
vi.mock('../src/cli/status', () => ({
  status: async (_location: string, _options: unknown, keys: { unlock?: Uint8Array }) => {
    thrown.keys = keys;
    throw thrown.value;
  },
}));

const recipient = generateRecipient('classical');
const unlock = Buffer.from(recipient.secretKey).toString('base64');
let base: string;
let good: string;
let garbage: string;
let notADirectory: string;

/** Runs the built command line in-process in this directory; `env` adds to one without keys. */
const cli = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
  runCli(process.cwd(), args, undefined, env);

/** Asserts the failure contract: one line on stderr naming pqdb, no stack frame. */
function expectOneLine(r: Run): void {
  expect(r.stderr).toMatch(/^pqdb[ :][^\n]*\n$/);
  expect(r.stderr).not.toContain('    at ');
}

beforeAll(async () => {
  base = mkdtempSync(join(tmpdir(), 'pqdb-cli-'));
  good = join(base, 'good');
  const store = await openStore({
    location: good,
    create: true,
    recipients: [recipient.publicKey],
    unlock: recipient.secretKey,
    autoCheckpoint: false,
  });
  const words = store.collection('words', { schema: { lemma: 'string' } });
  for (let i = 0; i < 10; i++) await words.put(`w${i}`, { lemma: `word${i}` });
  await store.close();
  garbage = join(base, 'garbage');
  cpSync(good, garbage, { recursive: true });
  // Not a pqdb manifest: bytes from a fixed pattern, so a failure reproduces.
  writeFileSync(
    join(garbage, 'MANIFEST'),
    Uint8Array.from({ length: 300 }, (_, i) => (i * 167 + 13) & 0xff),
  );
  writeFileSync(join(base, 'unlock.b64'), unlock, { mode: 0o600 }); // a secret key file others may read gets a warning
  notADirectory = join(base, 'plain-file');
  writeFileSync(notADirectory, 'not a store\n');
});

afterAll(() => rmSync(base, { recursive: true, force: true }));

describe('pqdb failures: one line on stderr, the documented status, no stack trace', () => {
  it('the good store is read (the failures below are the inputs, not the setup)', async () => {
    const r = await cli(['status', good], { PQDB_UNLOCK: unlock });
    expect(r.status).toBe(0);
    expect(r.stdout).toContain('words: gcmsiv-hkdf384, 10 records');
    expect(r.stderr).toBe('');
  });

  it.each([
    // verify reports a store whose framing is corrupt as a failed check (status 1), as documented.
    ['verify on a garbage MANIFEST', () => ['verify', garbage], 1, /cannot open .*\[CORRUPTION\]/],
    ['status on a garbage MANIFEST', () => ['status', garbage], 2, /cannot open .*\[CORRUPTION\]/],
    ['migrate on a garbage MANIFEST', () => ['migrate', garbage, '--to', 'gcmsiv-hkdf256'], 2, /\[CORRUPTION\]/],
    ['verify on a file, not a directory', () => ['verify', notADirectory], 2, /\[IO_ERROR\]/],
    ['status on a file, not a directory', () => ['status', notADirectory], 2, /\[IO_ERROR\]/],
    [
      'migrate on a file, not a directory',
      () => ['migrate', notADirectory, '--to', 'gcmsiv-hkdf256'],
      2,
      /\[IO_ERROR\]/,
    ],
    ['a key file that is a directory', () => ['verify', good, '--unlock', base], 2, /EISDIR/],
    ['a key file that does not exist', () => ['status', good, '--unlock', join(base, 'nowhere')], 2, /ENOENT/],
  ])('%s', async (_, args, status, message) => {
    const r = await cli(args(), { PQDB_UNLOCK: unlock });
    expect(r.status).toBe(status);
    expectOneLine(r);
    expect(r.stderr).toMatch(message);
  });

  it('a stdout closed by its reader (EPIPE) gives status 2 and one line, not an unhandled error event', async () => {
    const child = spawn(process.execPath, ['bin/pqdb.mjs', 'status', good, '--json'], {
      env: { ...process.env, PQDB_UNLOCK: unlock },
    });
    child.stdout.destroy(); // before the child has started: its first write finds the pipe closed
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    const status = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect(status).toBe(2);
    expectOneLine({ status, stdout: '', stderr });
    expect(stderr).toBe('pqdb: stdout: write EPIPE\n');
  });
});

/** `r` with the durations it reports, `(0.01 s)`, made one. */
const untimed = (r: Run): Run => ({ ...r, stdout: r.stdout.replace(/\(\d+\.\d+ s\)/g, '(… s)') });

describe('through bin/pqdb.mjs: what a shell sees is what run() gives', () => {
  it.each([
    ['0: a store read', () => ['status', good], { PQDB_UNLOCK: unlock }, 0],
    ['1: a check failed', () => ['verify', garbage], { PQDB_UNLOCK: unlock }, 1],
    ['2: a usage error', () => ['no-such-verb'], {}, 2],
    ['2: a key file that cannot be read', () => ['status', good, '--unlock', base], {}, 2],
    ['3: checks skipped for want of a key', () => ['verify', good], {}, 3],
  ])('status %s', async (_, args, env: Record<string, string>, status) => {
    const spawned = spawnCli(process.cwd(), args(), undefined, env);
    expect(spawned.status).toBe(status);
    if (status === 1 || status === 2) expectOneLine(spawned);
    expect(untimed(await cli(args(), env))).toEqual(untimed(spawned));
  });

  it('a piped stdin: put reads the value from "-"', async () => {
    const copy = join(base, 'piped');
    cpSync(good, copy, { recursive: true });
    const args = ['put', copy, 'words', 'w10', '-'];
    const put = spawnCli(process.cwd(), args, '{"lemma":"from a pipe"}', { PQDB_UNLOCK: unlock });
    expect(put).toEqual({ status: 0, stdout: 'pqdb put: words/w10 (commit 12)\n', stderr: '' });
    const got = await cli(['get', copy, 'words', 'w10'], { PQDB_UNLOCK: unlock });
    expect(got).toEqual({ status: 0, stdout: '{"lemma":"from a pipe"}\n', stderr: '' });
  });
});

describe('run(): each in-process run on its own', () => {
  it('reads the keys from its env, names paths from its cwd, runs one at a time, leaves the process as it was', async () => {
    const home = process.cwd();
    const signals = process.listenerCount('SIGINT');
    // Relative locations from two directories at once: the runs wait for each other.
    const [here, there] = await Promise.all([
      runCli(base, ['status', 'good'], undefined, { PQDB_UNLOCK: unlock }),
      runCli(good, ['status', '.'], undefined, { PQDB_UNLOCK: unlock }),
    ]);
    expect(here.status).toBe(0);
    expect(here.stdout).toContain('words: gcmsiv-hkdf384, 10 records');
    expect(there.stdout.replace(/^[^\n]*\n/, '')).toBe(here.stdout.replace(/^[^\n]*\n/, ''));
    // The key from this run's env only: the next run, without it, is refused.
    expect((await runCli(base, ['status', 'good'])).stdout).toMatch(/^pqdb status good \(no --unlock: /);
    // migrate listens for SIGINT while it runs, and stops listening after.
    const copy = join(base, 'migrated');
    cpSync(good, copy, { recursive: true });
    const migrated = await runCli(base, ['migrate', 'migrated', '--to', 'gcmsiv-hkdf256'], undefined, {
      PQDB_UNLOCK: unlock,
    });
    expect(migrated.status).toBe(0);
    expect(process.cwd()).toBe(home);
    expect(process.listenerCount('SIGINT')).toBe(signals);
    expect(process.exitCode).toBeUndefined();
  });
});

describe('the top-level catch of main()', () => {
  it.each([
    [
      'a PqdbError, with its code, on one line',
      () => new PqdbError('IO_ERROR', 'disk gone\n  while closing'),
      'pqdb: [IO_ERROR] disk gone while closing\n',
    ],
    ['a plain Error', () => new Error('unexpected'), 'pqdb: unexpected\n'],
    ['a thrown non-Error', () => 'a string', 'pqdb: a string\n'],
  ])('%s: status 2, the keys wiped', async (_, error, line) => {
    thrown.value = error();
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      expect(await main(['status', good, '--unlock', join(base, 'unlock.b64')])).toBe(2);
      expect(write.mock.calls.map((c) => String(c[0])).join('')).toBe(line);
      expect(thrown.keys?.unlock).toEqual(new Uint8Array(32));
    } finally {
      write.mockRestore();
    }
  });
});
