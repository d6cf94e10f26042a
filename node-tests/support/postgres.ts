// A throwaway PostgreSQL cluster for the tests of the postgres page store: initdb into a temporary
// directory, a server on a free port whose Unix socket lives in that directory too, one database,
// and a connection string to it; stopped and removed at the end. The binaries are looked up on PATH,
// then under /usr/lib/postgresql/*/bin (Debian's `postgresql` package). Without them the suites
// fail, saying what to install: they never skip silently.
//
// initdb and the server refuse to run as root: as root they run as the `postgres` user (created by
// Debian's package), else as `nobody`, through runuser; the directory is handed to that user.
import { afterAll, beforeAll } from 'vitest';
import { execFile } from 'node:child_process';
import { accessSync, constants, existsSync, readFileSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';

const run = promisify(execFile);

/** A running cluster. */
export interface PostgresCluster {
  /** Connects to the test database as the cluster's superuser `pqdb`, over the Unix socket. */
  readonly connectionString: string;
  /** The same for another database or role. */
  connectionFor(options: { database?: string; user?: string }): string;
  /** The Unix socket directory (the cluster's temporary directory). */
  readonly socketDir: string;
  readonly port: number;
  /** A superuser pool on the test database, for inspecting and tampering with tables. */
  readonly admin: pg.Pool;
  /** Stops the server (immediate shutdown) and removes its directory. Idempotent. */
  stop(): Promise<void>;
}

/** The directory holding initdb, pg_ctl and postgres, or undefined. */
export function findPostgresBin(): string | undefined {
  const has = (dir: string): boolean =>
    ['initdb', 'pg_ctl', 'postgres'].every((b) => {
      try {
        accessSync(join(dir, b), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir !== '' && has(dir)) return dir;
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => /^\d+$/.test(v))
    .sort((a, b) => Number(b) - Number(a));
  for (const v of versions) if (has(join(root, v, 'bin'))) return join(root, v, 'bin');
  return undefined;
}

/** The account the server runs as when the tests run as root. */
function serverUser(): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    const line = readFileSync('/etc/passwd', 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${name}:`));
    if (line !== undefined) {
      const [, , uid, gid] = line.split(':');
      return { name, uid: Number(uid), gid: Number(gid) };
    }
  }
  throw new Error('running as root, but neither a "postgres" nor a "nobody" user exists to run PostgreSQL as');
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts a cluster. `durable: false` (the default for tests) turns fsync off: the tests exercise
 * transactions, locks and connections, not the server's crash safety; benchmarks keep it on.
 * @throws Error saying to install the `postgresql` package when the binaries are missing
 */
export async function startPostgres(options: { durable?: boolean; database?: string } = {}): Promise<PostgresCluster> {
  const bin = findPostgresBin();
  if (bin === undefined) {
    throw new Error(
      'PostgreSQL binaries (initdb, pg_ctl, postgres) not found on PATH or under /usr/lib/postgresql/*/bin: ' +
        'install the Debian package `postgresql` (apt-get install -y postgresql); .ci/run does so in CI',
    );
  }
  const user = serverUser();
  const as = (cmd: string, args: string[]) =>
    user === undefined
      ? run(join(bin, cmd), args, { encoding: 'utf8' })
      : run('runuser', ['-u', user.name, '--', join(bin, cmd), ...args], { encoding: 'utf8' });
  const dir = await mkdtemp(join(tmpdir(), 'pqdb-pg-'));
  if (user !== undefined) await chown(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const log = join(dir, 'server.log');
  const database = options.database ?? 'pqdb_test';
  let started = false;
  const stop = async (): Promise<void> => {
    if (started) {
      started = false;
      process.off('exit', killOnExit);
      await admin.end().catch(() => undefined);
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    }
    await rm(dir, { recursive: true, force: true });
  };
  // If the test process dies without stop(), the server goes with it.
  const killOnExit = (): void => {
    try {
      const pid = Number(readFileSync(join(data, 'postmaster.pid'), 'utf8').split('\n')[0]);
      if (pid > 0) process.kill(pid, 'SIGQUIT');
    } catch {
      // already gone
    }
  };
  let admin!: pg.Pool;
  try {
    await as('initdb', ['-D', data, '-A', 'trust', '-U', 'pqdb', '-E', 'UTF8', '--no-sync', '--no-instructions']);
    const settings = ['-c', `unix_socket_directories=${dir}`, '-c', 'listen_addresses=127.0.0.1'];
    if (options.durable !== true) settings.push('-c', 'fsync=off', '-c', 'synchronous_commit=off');
    let port = 0;
    for (let attempt = 0; ; attempt++) {
      port = await freePort();
      try {
        await as('pg_ctl', [
          '-D',
          data,
          '-l',
          log,
          '-w',
          '-t',
          '60',
          '-o',
          [...settings, '-p', String(port)].join(' '),
          'start',
        ]);
        break;
      } catch (e) {
        if (attempt >= 2) throw e; // the port was taken meanwhile, twice: give up
      }
    }
    started = true;
    process.on('exit', killOnExit);
    const connectionFor = ({ database: db = database, user: role = 'pqdb' } = {}): string =>
      `postgresql://${role}@localhost:${port}/${db}?host=${encodeURIComponent(dir)}`;
    const boot = new pg.Client({ connectionString: connectionFor({ database: 'postgres' }) });
    await boot.connect();
    try {
      await boot.query(`CREATE DATABASE ${database}`);
    } finally {
      await boot.end();
    }
    admin = new pg.Pool({ connectionString: connectionFor({}), max: 2 });
    admin.on('error', () => undefined);
    return { connectionString: connectionFor({}), connectionFor, socketDir: dir, port, admin, stop };
  } catch (e) {
    const tail = await readFile(log, 'utf8').catch(() => '');
    await stop();
    throw new Error(`could not start a PostgreSQL cluster: ${(e as Error).message}\n${tail.slice(-2000)}`, {
      cause: e,
    });
  }
}

/**
 * One cluster for the test file: started before its tests, stopped after them. Returns a getter
 * (the cluster exists only once `beforeAll` ran).
 * @example const cluster = usePostgres(); it('…', async () => { await openPostgresPageStore({ connectionString: cluster().connectionString, name: 's' }) })
 */
export function usePostgres(options: { durable?: boolean } = {}): () => PostgresCluster {
  let cluster: PostgresCluster | undefined;
  beforeAll(async () => {
    cluster = await startPostgres(options);
  }, 120_000);
  afterAll(async () => {
    await cluster?.stop();
  });
  return () => {
    if (cluster === undefined) throw new Error('the PostgreSQL cluster did not start (see the beforeAll error)');
    return cluster;
  };
}

let names = 0;

/** A store name unused in this process. */
export const freshStoreName = (prefix = 's'): string => `${prefix}_${process.pid}_${names++}`;
