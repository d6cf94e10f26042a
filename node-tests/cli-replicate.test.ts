// `pqdb replicate serve` and `pqdb replicate follow` as a shell user runs them, in a temporary
// directory with keys from pqdb keygen: the verbs that run until a signal (serve, follow without
// --once) as bin/pqdb.mjs processes, the others in-process through run() of dist/cli.js. serve
// holds its store's writer lock, so the CLI primary serves records imported before it starts: a
// follower catches up with --once and pqdb scan reads the replica directory; serve reports the
// follower in its status lines and exits 0 on SIGINT. A follower the primary does not trust, one
// pinning another primary key and one whose --unlock does not open the store each end at once
// with one line and status 2. For a primary that writes while it serves, a library store in this
// process serves and the CLI follows it: status lines with lag and records/s, SIGINT, a restart
// that resumes from the replica's own commit, and the records read back equal.
import { BIN, cliIn, type Run } from './support/cli';
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore } from '../src/node';

let dir: string;

const { pqdb, ok, failsWith } = cliIn(() => dir);

const U = ['--unlock', 'alice'];
const keyOf = (name: string) => new Uint8Array(Buffer.from(readFileSync(join(dir, name), 'utf8').trim(), 'base64'));

/** A pqdb process under way: its stdout lines as they come, and how it ended. */
interface Child {
  child: ChildProcess;
  lines: string[];
  /** Resolves with the first line (from the start) that `test` accepts. */
  line(test: (line: string) => boolean, what: string, ms?: number): Promise<string>;
  exited: Promise<Run>;
}

/** Starts pqdb in the test directory with every key variable emptied. */
function start(args: string[]): Child {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: dir,
    env: { ...process.env, PQDB_UNLOCK: '', PQDB_SIGNER_PUBLIC: '', PQDB_SIGNER: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const lines: string[] = [];
  let out = '';
  let err = '';
  let wake = () => undefined as void;
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    const all = out.split('\n');
    lines.splice(0, lines.length, ...all.slice(0, -1));
    wake();
  });
  child.stderr!.on('data', (d: Buffer) => void (err += d.toString()));
  // A verb that never ends (retrying for ever) fails its test with status null, not a hang.
  const limit = setTimeout(() => child.kill('SIGKILL'), 30_000);
  const exited = new Promise<Run>((done) =>
    child.on('close', (status) => {
      clearTimeout(limit);
      wake();
      done({ status, stdout: out, stderr: err });
    }),
  );
  let ended = false;
  void exited.then(() => (ended = true));
  async function line(test: (l: string) => boolean, what: string, ms = 15_000): Promise<string> {
    const end = Date.now() + ms;
    for (;;) {
      const found = lines.find(test);
      if (found !== undefined) return found;
      if (ended || Date.now() > end)
        throw new Error(`no line ${what} from pqdb ${args.slice(0, 2).join(' ')}: ${out}${err}`);
      await new Promise<void>((r) => {
        const t = setTimeout(r, 50);
        wake = () => (clearTimeout(t), r());
      });
    }
  }
  return { child, lines, line, exited };
}

const events = (lines: string[]) => lines.map((l) => JSON.parse(l) as Record<string, unknown> & { event: string });

/** Runs pqdb to its end, in-process. */
const run = (args: string[]): Promise<Run> => pqdb(args);

/** A TCP port nothing listens on (bound, then released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise<void>((r) => server.close(() => r()));
  return port;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pqdb-cli-replicate-'));
  await ok(['keygen', '--out', 'alice']);
  await ok(['keygen', '--out', 'bob']);
  for (const name of ['primary', 'replica', 'stranger']) await ok(['keygen', '--out', name, '--signer']);
  await ok(['init', 'store', '--recipient', 'alice.pub', ...U]);
  const lines = ['w1', 'w2', 'w3'].map((id, i) => JSON.stringify({ id, value: { lemma: `word ${i + 1}` } }));
  writeFileSync(join(dir, 'words.jsonl'), `${lines.join('\n')}\n`);
  await ok(['import', 'store', 'words', 'words.jsonl', '--format', 'jsonl', '--schema', 'lemma:string', ...U]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const follow = (location: string, port: number, ...more: string[]) => [
  'replicate',
  'follow',
  location,
  ...U,
  '--identity',
  'replica',
  '--primary',
  `127.0.0.1:${port}`,
  '--primary-key',
  'primary.pub',
  ...more,
];

describe('pqdb replicate: usage', () => {
  it('--help lists both verbs; bad arguments are one line and status 2', async () => {
    expect(await ok(['--help'])).toMatch(/^ {2}replicate {3}/m);
    expect(await ok(['replicate', '--help'])).toMatch(/^usage: pqdb replicate serve\|follow …\n/);
    expect(await ok(['help', 'replicate', 'follow'])).toContain('--primary HOST:PORT');
    const serve = ['replicate', 'serve', 'store', ...U];
    await failsWith([...serve, '--identity', 'primary'], 2, /^pqdb: at least one --trust FILE is required/);
    await failsWith([...serve, '--trust', 'replica.pub'], 2, /^pqdb: --identity FILE is required/);
    await failsWith([...serve, '--identity', 'primary', '--trust', 'replica'], 2, /--trust replica: .*a secret key\?/);
    await failsWith(
      [...serve, '--identity', 'primary', '--trust', 'replica.pub', '--port', '70000'],
      2,
      /--port expected/,
    );
    writeFileSync(join(dir, 'mixed'), readFileSync(join(dir, 'primary')));
    writeFileSync(join(dir, 'mixed.pub'), readFileSync(join(dir, 'replica.pub')));
    await failsWith(
      [...serve, '--identity', 'mixed', '--trust', 'replica.pub'],
      2,
      /mixed\.pub is not the public half/,
    );
    await failsWith(
      follow('r', 1).filter((a) => a !== '--primary' && a !== '127.0.0.1:1'),
      2,
      /--primary HOST:PORT is/,
    );
    await failsWith(follow('r', 0), 2, /^pqdb: --primary expected HOST:PORT/);
    await failsWith(follow('r', 1, '--timeout', '100'), 2, /^pqdb: --timeout MS is for --once/);
  });

  it('--once --timeout gives up with status 1 when no primary answers', async () => {
    const r = await run(follow('nobody', await freePort(), '--once', '--timeout', '300'));
    expect(r.stderr).toMatch(
      /^pqdb replicate follow: not caught up within 300 ms: applied 0 of commit 0, the primary has not reported its commit \(IO_ERROR: /,
    );
    expect(r.status).toBe(1);
  });
});

describe('pqdb replicate serve, followed by pqdb replicate follow', () => {
  let serve: Child;
  let port: number;
  let listening: Record<string, unknown>;

  beforeAll(async () => {
    serve = start(['replicate', 'serve', 'store', ...U, '--identity', 'primary', '--trust', 'replica.pub', '--json']);
    listening = JSON.parse(await serve.line(() => true, 'listening')) as Record<string, unknown>;
    port = listening.port as number;
  });

  afterAll(() => void serve.child.kill('SIGKILL'));

  it('prints where it listens, then follow --once catches up and pqdb scan reads the replica', async () => {
    expect(listening).toMatchObject({ event: 'listening', host: '127.0.0.1', commit: expect.any(Number) });
    expect(port).toBeGreaterThan(0);
    const r = await run(follow('replica-a', port, '--once', '--json'));
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);
    const got = events(r.stdout.trimEnd().split('\n'));
    expect(got[0]).toEqual({ event: 'following', location: 'replica-a', primary: `127.0.0.1:${port}`, applied: 0 });
    expect(got.at(-1)).toEqual({ event: 'caught-up', storeId: listening.storeId, commit: listening.commit });
    // The replica directory is a store holding the primary's manifest: read it read-only.
    expect(await ok(['scan', 'replica-a', 'words', ...U])).toBe(await ok(['scan', 'store', 'words', ...U]));
    expect(await ok(['get', 'replica-a', 'words', 'w2', ...U])).toBe('{"lemma":"word 2"}\n');
    // Again: nothing to fetch, it is caught up as soon as the primary reports.
    const again = await run(follow('replica-a', port, '--once'));
    expect(again.stdout).toMatch(
      new RegExp(
        `^pqdb replicate follow: following 127\\.0\\.0\\.1:${port} into replica-a from commit ${listening.commit}\n`,
      ),
    );
    expect(again.stdout).toMatch(/caught up: applied commit \d+ of store [0-9a-f]{32}\n$/);
    expect(again.status).toBe(0);
  });

  it('refuses, at once and in one line, an untrusted replica, another primary key and a key that opens nothing', async () => {
    const authFailed = (r: Run, message: RegExp) => {
      expect(r.stderr).toMatch(/^pqdb: \[AUTH_FAILED\] [^\n]*\n$/);
      expect(r.stderr).toMatch(message);
      expect(r.status).toBe(2);
    };
    const stranger = follow('replica-s', port).map((a) => (a === 'replica' ? 'stranger' : a));
    authFailed(await run(stranger), /the primary does not trust this --identity, or it is not --primary-key/);
    const pinned = follow('replica-p', port).map((a) => (a === 'primary.pub' ? 'stranger.pub' : a));
    authFailed(await run(pinned), /the handshake with 127\.0\.0\.1:\d+ failed/);
    const bob = follow('replica-b', port).map((a) => (a === 'alice' ? 'bob' : a));
    authFailed(await run(bob), /does not open with --unlock/);
    // A replica that holds the store refuses the wrong key when it opens.
    const held = follow('replica-a', port, '--once').map((a) => (a === 'alice' ? 'bob' : a));
    const r = await run(held);
    expect(r.stderr).toMatch(/^pqdb replicate follow: cannot open replica-a: \[AUTH_FAILED\] [^\n]*\n$/);
    expect(r.status).toBe(2);
  });

  it('counts a live follower in its status lines; SIGINT closes either side with status 0', async () => {
    const follower = start(follow('replica-l', port, '--json'));
    await serve.line((l) => JSON.parse(l).followers?.live === 1, 'with a live follower');
    const caughtUp = await follower.line((l) => JSON.parse(l).appliedWatermark === listening.commit, 'caught up');
    expect(JSON.parse(caughtUp)).toMatchObject({
      event: 'status',
      commitWatermark: listening.commit,
      lagCommits: 0,
      connected: true,
      recordsPerSecond: expect.any(Number),
    });
    follower.child.kill('SIGINT');
    const f = await follower.exited;
    expect(f.stderr).toBe('');
    expect(f.status).toBe(0);
    expect(events(f.stdout.trimEnd().split('\n')).at(-1)).toMatchObject({
      event: 'closed',
      signal: 'SIGINT',
      appliedWatermark: listening.commit,
    });
    serve.child.kill('SIGINT');
    const s = await serve.exited;
    expect(s.stderr).toBe('');
    expect(s.status).toBe(0);
    const got = events(s.stdout.trimEnd().split('\n'));
    expect(got.filter((e) => e.event === 'status')[0]).toMatchObject({
      commit: listening.commit,
      followers: { connected: expect.any(Number), live: expect.any(Number) },
      recordsPerSecond: 0,
    });
    expect(got.at(-1)).toEqual({ event: 'closed', signal: 'SIGINT', commit: listening.commit });
    // The lock is released: the store takes a writer again.
    await ok(['put', 'store', 'words', 'w4', '{"lemma":"word 4"}', ...U]);
  });
});

describe('pqdb replicate follow of a primary that writes while it serves', () => {
  it('reports lag and records/s, stops on SIGINT, resumes from its commit and ends equal', async () => {
    const words = { lemma: 'string', n: 'integer' } as const;
    const store = await openStore({
      location: join(dir, 'live'),
      create: true,
      recipients: [keyOf('alice.pub')],
      unlock: keyOf('alice'),
    });
    const server = await store.serveReplication({
      port: 0,
      identity: { publicKey: keyOf('primary.pub'), secretKey: keyOf('primary') },
      trustedPeers: [keyOf('replica.pub')],
    });
    try {
      const c = store.collection('words', { schema: words });
      let n = 0;
      /** `count` new records in one commit. */
      const write = (count: number) =>
        store.batch((tx) => {
          for (let i = 0; i < count; i++, n++) tx.put(c, `w${String(n).padStart(5, '0')}`, { lemma: `word ${n}`, n });
        });
      await write(10);
      const follower = start(follow('live-replica', server.port, '--json'));
      // Writes go on until a status line has counted some as applied.
      const counted = follower.line((l) => (JSON.parse(l).recordsPerSecond as number) > 0, 'with records/s');
      let done = false;
      void counted.finally(() => (done = true)).catch(() => undefined);
      while (!done) {
        await write(20);
        await new Promise((r) => setTimeout(r, 50));
      }
      const line = JSON.parse(await counted) as Record<string, unknown>;
      expect(line).toMatchObject({ event: 'status', connected: true, lagMs: expect.any(Number) });
      expect(typeof line.time).toBe('string');
      // Caught up once the writes stop: a status line at the primary's commit, lag 0.
      const { commit } = store.info();
      await follower.line((l) => {
        const s = JSON.parse(l);
        return s.appliedWatermark === commit && s.commitWatermark === commit && s.lagCommits === 0;
      }, `at commit ${commit}`);
      follower.child.kill('SIGTERM');
      expect((await follower.exited).status).toBe(0);
      // More writes while it is down; the restart resumes from the replica's own commit.
      await write(7);
      expect(await c.delete('w00003')).toBe(true);
      const r = await run(follow('live-replica', server.port, '--once'));
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(new RegExp(`into live-replica from commit ${commit}\n`));
      expect(r.stdout).toMatch(new RegExp(`caught up: applied commit ${store.info().commit} of store`));
      expect(r.status).toBe(0);
      const scanned = (await ok(['scan', 'live-replica', 'words', ...U])).trimEnd().split('\n');
      expect(scanned).toHaveLength(n - 1);
      const stored: string[] = [];
      for await (const { id, value } of c.scan()) stored.push(`${id}\t${JSON.stringify(value)}`);
      expect(scanned).toEqual(stored);
    } finally {
      await server.close();
      await store.close();
    }
  });
});
