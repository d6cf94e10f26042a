// The examples run: examples/node-service started as a real process and exercised over HTTP (then
// stopped, restarted and stopped again), and examples/cli-session's script run with this checkout's
// pqdb command. Both import 'pqdb' from the built dist/ (npm run build first). The browser example
// runs in browser-tests/examples.spec.mjs.
import { describe, it, expect, afterAll } from 'vitest';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = fileURLToPath(new URL('..', import.meta.url));
const service = join(repo, 'examples', 'node-service');
const work = mkdtempSync(join(tmpdir(), 'pqdb-examples-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

interface Running {
  child: ChildProcess;
  base: string;
  stderr: () => string;
}

/** Starts server.mjs on a free port and resolves once it prints its address. */
function startService(store: string, keys: string): Promise<Running> {
  const child = spawn(
    process.execPath,
    [join(service, 'server.mjs'), '--store', store, '--keys', keys, '--port', '0'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stderr!.on('data', (d) => (err += d));
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m !== null) resolve({ child, base: m[1], stderr: () => err });
    });
    child.once('exit', (code) => reject(new Error(`server exited with ${code}: ${err}`)));
  });
}

function stopService(r: Running): Promise<number | null> {
  return new Promise((resolve) => {
    r.child.once('exit', (code) => resolve(code));
    r.child.kill('SIGTERM');
  });
}

/** Every file under `dir`, recursively. */
function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(join(dir, e.name)) : [join(dir, e.name)],
  );
}

describe('examples/node-service', () => {
  const keys = join(work, 'svc-keys');
  const store = join(work, 'svc-store');

  it('keygen writes raw key files, the secret ones mode 0600, and never overwrites them', () => {
    const first = spawnSync(process.execPath, [join(service, 'keygen.mjs'), keys], { encoding: 'utf8' });
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    const sizes = Object.fromEntries(readdirSync(keys).map((f) => [f, statSync(join(keys, f)).size]));
    expect(sizes).toEqual({ 'recipient.key': 32, 'recipient.pub': 1600, 'signer.key': 4896, 'signer.pub': 2592 });
    expect(statSync(join(keys, 'recipient.key')).mode & 0o777).toBe(0o600);
    expect(statSync(join(keys, 'signer.key')).mode & 0o777).toBe(0o600);
    const before = readFileSync(join(keys, 'recipient.key'));
    const again = spawnSync(process.execPath, [join(service, 'keygen.mjs'), keys], { encoding: 'utf8' });
    expect(again.status).not.toBe(0);
    expect(readFileSync(join(keys, 'recipient.key'))).toEqual(before);
  });

  it('serves PUT, GET, DELETE and search over HTTP, persists across a restart, and seals what it stores', async () => {
    let svc = await startService(store, keys);
    try {
      const put = (id: string, body: unknown) =>
        fetch(`${svc.base}/notes/${encodeURIComponent(id)}`, { method: 'PUT', body: JSON.stringify(body) });
      expect((await put('n1', { title: 'groceries', body: 'milk and bread' })).status).toBe(204);
      expect((await put('n2', { title: 'reading list', body: 'a book about bread baking' })).status).toBe(204);
      expect((await put('n3', { title: 'todo', body: 'call the plumber' })).status).toBe(204);

      const got = await fetch(`${svc.base}/notes/n1`);
      expect(got.status).toBe(200);
      expect(await got.json()).toEqual({ title: 'groceries', body: 'milk and bread' });
      expect((await fetch(`${svc.base}/notes/missing`)).status).toBe(404);

      const search = async (q: string) =>
        ((await (await fetch(`${svc.base}/notes?q=${encodeURIComponent(q)}`)).json()) as { id: string }[])
          .map((h) => h.id)
          .sort();
      expect(await search('bread')).toEqual(['n1', 'n2']);
      expect(await search('plumb')).toEqual(['n3']); // the last word is a prefix
      expect(await search('bread plumber')).toEqual([]);

      const bad = await put('n4', { title: 42, body: 'x' });
      expect(bad.status).toBe(400);
      expect(await bad.json()).toEqual({ error: 'SCHEMA_MISMATCH' });
      expect((await fetch(`${svc.base}/notes/n4`, { method: 'PUT', body: '{not json' })).status).toBe(400);

      expect((await fetch(`${svc.base}/notes/n3`, { method: 'DELETE' })).status).toBe(204);
      expect((await fetch(`${svc.base}/notes/n3`, { method: 'DELETE' })).status).toBe(404);
      const cp = await fetch(`${svc.base}/checkpoint`, { method: 'POST' });
      expect(cp.status).toBe(200);
      expect(await cp.json()).toMatchObject({ size: 4, hash: expect.stringMatching(/^[0-9a-f]{96}$/) });

      // A second instance on the same store is refused at start, with one line and no stack trace.
      const second = spawnSync(
        process.execPath,
        [join(service, 'server.mjs'), '--store', store, '--keys', keys, '--port', '0'],
        { encoding: 'utf8', timeout: 30_000 },
      );
      expect(second.status).toBe(1);
      expect(second.stderr).toMatch(/^cannot open .*: \[LOCKED\] /);
      expect(second.stderr).not.toMatch(/\n\s+at /);
    } finally {
      expect(await stopService(svc)).toBe(0);
    }
    expect(svc.stderr()).toBe('');

    // Nothing readable on disk: no plaintext of a note, no key file in the store's directory.
    const files = filesUnder(store);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) {
      const bytes = readFileSync(f);
      expect(bytes.includes('groceries')).toBe(false);
      expect(bytes.includes('milk and bread')).toBe(false);
      expect(bytes.includes(readFileSync(join(keys, 'recipient.key')))).toBe(false);
    }

    svc = await startService(store, keys);
    try {
      expect(await (await fetch(`${svc.base}/notes/n2`)).json()).toEqual({
        title: 'reading list',
        body: 'a book about bread baking',
      });
      expect((await fetch(`${svc.base}/notes/n3`)).status).toBe(404);
      expect(((await (await fetch(`${svc.base}/notes?q=bread`)).json()) as unknown[]).length).toBe(2);
    } finally {
      expect(await stopService(svc)).toBe(0);
    }
  });

  it('refuses to start with keys that do not open the store', () => {
    const other = join(work, 'svc-other-keys');
    expect(spawnSync(process.execPath, [join(service, 'keygen.mjs'), other]).status).toBe(0);
    const r = spawnSync(process.execPath, [join(service, 'server.mjs'), '--store', store, '--keys', other], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^cannot open .*: \[AUTH_FAILED\] /);
  });
});

describe('examples/cli-session', () => {
  it('session.sh makes keys, creates and fills a store, then status, verify, migrate --retire, status and verify succeed', () => {
    const dir = join(work, 'cli');
    const r = spawnSync('sh', [join(repo, 'examples', 'cli-session', 'session.sh'), dir], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, PQDB: `${process.execPath} ${join(repo, 'bin', 'pqdb.mjs')}` },
    });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const out = r.stdout;
    expect(out).toContain('pqdb init: created ');
    expect(out).toContain('pqdb import: 20 records into notes');
    expect(out).toMatch(/pqdb checkpoint: generation 1, size 20, hash [0-9a-f]{96}/);
    expect(out).toContain('(no --unlock: the manifest body is sealed)');
    expect(out).toMatch(/collection\s+notes: gcmsiv-hkdf256, 20 records/);
    expect(out.match(/OK: every check holds/g)?.length).toBe(2);
    expect(out).toMatch(/copied 20, superseded 0, deleted 0, withheld 0, failed 0, inserted 0; total 20/);
    expect(out).toContain('retired generation(s): 1');
    expect(out).toMatch(/collection\s+notes: cnsa2-gcm-hkdf384-commit, 20 records/);
    expect(out).toContain('session done');
  });

  it('session.sh stops at the first verb that fails', () => {
    const dir = join(work, 'cli-fail');
    const r = spawnSync('sh', [join(repo, 'examples', 'cli-session', 'session.sh'), dir], {
      encoding: 'utf8',
      timeout: 120_000,
      env: { ...process.env, PQDB: `${process.execPath} ${join(repo, 'bin', 'pqdb.mjs')} no-such-verb` },
    });
    expect(r.status).not.toBe(0);
    expect(r.stdout).not.toContain('session done');
  });
});
