// The `pqdb` command's trust in what it opens and reads, as a shell user meets it (the built
// command line run in-process in a temporary directory, the key file warning through bin/pqdb.mjs
// too): a store pinned by --store-id, --min-commit and --pin-file (a substituted store is
// AUTH_FAILED, an older copy ROLLBACK, the pin file follows the commits, is replaced atomically and
// refused as a symbolic link), every verb that opens a store taking the pin options, a secret key
// file others may read used with one warning line, and a recipient secret key given where a public
// key belongs refused.
import { cliIn } from './support/cli';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { chmodSync, cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/node';
import { generateRecipient, isX25519PublicKey } from '../src/crypto/envelope';
import { VERBS } from '../src/cli/index';
import type { Verb } from '../src/cli/_verb';

let dir: string;
const { pqdb, spawned, ok, failsWith } = cliIn(() => dir);
const fails = async (args: string[], message: RegExp, status = 2) => await failsWith(args, status, message);
const U = ['--unlock', 'alice'];
const file = (name: string) => join(dir, name);
const pinOf = (name: string) => JSON.parse(readFileSync(file(name), 'utf8')) as { storeId: string; commit: number };
const keyOf = (name: string) => new Uint8Array(Buffer.from(readFileSync(file(name), 'utf8').trim(), 'base64'));

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pqdb-cli-pins-'));
  await ok(['keygen', '--out', 'alice']);
  await ok(['keygen', '--out', 'bob', '--type', 'classical']);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the pin options', () => {
  it('every verb that opens a store takes --store-id, --min-commit and --pin-file, and lists them', () => {
    const verbs = VERBS.flatMap((v) => ('verbs' in v ? v.verbs : [v])) as Verb[];
    // init makes the store (it writes the first pin); restore makes a new one; the policy and
    // replicate verbs do not take the pin options yet.
    const without = new Set(['keygen', 'init', 'restore', 'policy sign', 'policy set', 'policy show']);
    for (const v of verbs.filter((v) => v.options.unlock !== undefined && !without.has(v.name))) {
      if (v.name.startsWith('replicate ')) continue;
      for (const o of ['store-id', 'min-commit', 'pin-file']) {
        expect(v.options[o], `${v.name} --${o}`).toBeDefined();
        expect(v.help, `${v.name} --${o}`).toContain(`--${o}`);
      }
    }
    expect(verbs.find((v) => v.name === 'init')!.options['pin-file']).toBeDefined();
  });

  it('a substituted store is AUTH_FAILED, an older copy ROLLBACK; the pin file follows the commits', async () => {
    await ok(['init', 'store', '--recipient', 'alice.pub', ...U, '--pin-file', 'app.pin']);
    const first = pinOf('app.pin');
    expect(first.storeId).toMatch(/^[0-9a-f]{32}$/);
    await fails(
      ['init', 'other', '--recipient', 'alice.pub', ...U, '--pin-file', 'app.pin'],
      /app\.pin already pins store /,
    );
    cpSync(file('store'), file('old'), { recursive: true }); // an older copy of the whole store
    await ok(['put', 'store', 'c', 'a', '{"w":"cat"}', '--schema', 'w:string', ...U, '--pin-file', 'app.pin']);
    const second = pinOf('app.pin');
    expect(second).toEqual({ storeId: first.storeId, commit: first.commit + 1 });
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]); // replaced by a rename
    // A store someone made for alice's public key (anyone can: envelopes are not sender-authenticated).
    const evil = await openStore({
      location: file('evil'),
      create: true,
      recipients: [keyOf('alice.pub')],
      unlock: keyOf('alice'),
    });
    await evil.close();
    const substituted = /^pqdb: \[AUTH_FAILED\] this is not the store /;
    await fails(['get', 'evil', 'c', 'a', ...U, '--pin-file', 'app.pin'], substituted);
    await fails(
      ['status', 'evil', ...U, '--store-id', first.storeId.toUpperCase()],
      /\[AUTH_FAILED\] this is not the store /,
    );
    await fails(['scan', 'old', 'c', ...U, '--pin-file', 'app.pin'], /^pqdb: \[ROLLBACK\] the store is at commit /);
    await fails(['verify', 'old', ...U, '--pin-file', 'app.pin'], /^pqdb verify: old: \[ROLLBACK\] /, 1);
    await fails(['get', 'store', 'c', 'a', ...U, '--min-commit', '99'], /\[ROLLBACK\]/);
    expect(pinOf('app.pin')).toEqual(second); // no refused open moved it
    // Bad pins are usage errors: nothing is opened.
    await fails(['get', 'store', 'c', 'a', ...U, '--store-id', 'abc'], /^pqdb: --store-id expected 32 hex digits/);
    await fails(
      ['get', 'store', 'c', 'a', ...U, '--pin-file', 'app.pin', '--store-id', '0'.repeat(32)],
      /is not the store/,
    );
    symlinkSync(file('app.pin'), file('link.pin'));
    await fails(['get', 'store', 'c', 'a', ...U, '--pin-file', 'link.pin'], /--pin-file link\.pin is a symbolic link/);
    writeFileSync(file('junk.pin'), '{"storeId":1}');
    await fails(['get', 'store', 'c', 'a', ...U, '--pin-file', 'junk.pin'], /is not a pin file/);
  });
});

describe('key files', () => {
  // Through bin/pqdb.mjs too: the mode a real process stats, and the warning once per run (in-process
  // runs forget the files warned about, as each process starts with none).
  it.each(['in-process', 'in-process again', 'bin/pqdb.mjs'])(
    'a secret key file others may read is used with one warning line (%s)',
    async (how) => {
      chmodSync(file('alice'), 0o644);
      try {
        const args = ['get', 'store', 'c', 'a', ...U, '--pin-file', 'app.pin'];
        const r = how === 'bin/pqdb.mjs' ? spawned(args) : await pqdb(args);
        expect(r.status).toBe(0);
        expect(r.stdout).toBe('{"w":"cat"}\n');
        expect(r.stderr).toBe(
          'pqdb: warning: UNPROTECTED SECRET KEY FILE alice (--unlock): mode 0644 lets others read or change it; chmod 600 alice\n',
        );
      } finally {
        chmodSync(file('alice'), 0o600);
      }
    },
  );

  it('a recipient secret key given for a public key is refused, and no store is made', async () => {
    await fails(
      ['init', 's2', '--recipient', 'alice.pub', '--recipient', 'bob', ...U],
      /--recipient bob: a secret key, not a public key \(give bob\.pub\)/,
    );
    // Without a .pub beside it: 32 bytes that are no X25519 public key.
    const seed = Array.from({ length: 64 }, (_, i) => new Uint8Array(32).fill(i + 1)).find(
      (s) => !isX25519PublicKey(s),
    )!;
    writeFileSync(
      file('carol'),
      `${Buffer.from(generateRecipient('classical', seed).secretKey).toString('base64')}\n`,
      {
        mode: 0o600,
      },
    );
    await fails(
      ['init', 's2', '--recipient', 'alice.pub', '--recipient', 'carol', ...U],
      /--recipient carol: a secret key/,
    );
    expect(readdirSync(dir)).not.toContain('s2');
  });
});
