// Running the built command line in a test's temporary directory, with no key in the environment:
// the helpers the CLI suites share. `pqdb` runs it in-process through run() of dist/cli.js, the
// module bin/pqdb.mjs runs (the same output and exit status, without starting Node and loading the
// bundle once per case); `spawned` runs bin/pqdb.mjs as a child process, for what only a process
// shows (its exit status, a real stdin, signals).
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'vitest';

export const BIN = resolve('bin/pqdb.mjs');

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** What run() of dist/cli.js writes to. */
interface Output {
  write(chunk: string | Uint8Array): unknown;
  readonly isTTY?: boolean;
}

interface CliModule {
  run(
    argv: string[],
    options: {
      stdout: Output;
      stderr: Output;
      stdin: string;
      env: Record<string, string | undefined>;
      cwd: string;
    },
  ): Promise<number>;
}

// Loaded once per test file (each file is its own process), at its first run, by Node's own loader
// as bin/pqdb.mjs loads it (require of an ES module, Node ≥ 20.19), not transformed by the test
// runner; through the runner's import where Node cannot require it.
let cli: Promise<CliModule> | undefined;

function loadCli(): Promise<CliModule> {
  const file = resolve('dist/cli.js');
  try {
    return Promise.resolve(createRequire(import.meta.url)(file) as CliModule);
  } catch {
    return import(/* @vite-ignore */ pathToFileURL(file).href) as Promise<CliModule>;
  }
}

/** Every key variable emptied, then `env`. */
function environment(env: Record<string, string>): Record<string, string | undefined> {
  return { ...process.env, PQDB_UNLOCK: '', PQDB_SIGNER_PUBLIC: '', PQDB_SIGNER: '', ...env };
}

/** Collects what is written, decoded as UTF-8 at the end (as spawnSync with encoding 'utf8' does). */
function collector(): Output & { text(): string } {
  const chunks: Buffer[] = [];
  return {
    write(chunk) {
      chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : Buffer.from(chunk));
      return true;
    },
    text: () => Buffer.concat(chunks).toString('utf8'),
  };
}

/**
 * Runs pqdb in-process in `cwd`, stdin `input` (empty by default); `env` adds to an environment with
 * every key variable emptied.
 */
export async function runCli(
  cwd: string,
  args: string[],
  input?: string,
  env: Record<string, string> = {},
): Promise<Run> {
  cli ??= loadCli();
  const { run } = await cli;
  const stdout = collector();
  const stderr = collector();
  const status = await run(args, { stdout, stderr, stdin: input ?? '', env: environment(env), cwd });
  return { status, stdout: stdout.text(), stderr: stderr.text() };
}

/** Runs bin/pqdb.mjs as a child process, as runCli does in-process. */
export function spawnCli(cwd: string, args: string[], input?: string, env: Record<string, string> = {}): Run {
  const r = spawnSync(process.execPath, [BIN, ...args], {
    cwd,
    encoding: 'utf8',
    input: input ?? '',
    env: environment(env),
  });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** The helpers for a suite whose directory `cwd()` gives (it may be made in beforeAll). */
export function cliIn(cwd: () => string) {
  /** Runs pqdb in-process; `env` adds to an environment with every key variable emptied. */
  function pqdb(args: string[], input?: string, env: Record<string, string> = {}): Promise<Run> {
    return runCli(cwd(), args, input, env);
  }
  /** Runs bin/pqdb.mjs as a child process, as pqdb does in-process. */
  function spawned(args: string[], input?: string, env: Record<string, string> = {}): Run {
    return spawnCli(cwd(), args, input, env);
  }
  /** Runs pqdb and expects status 0 and nothing on stderr; returns stdout. */
  async function ok(args: string[], input?: string): Promise<string> {
    const r = await pqdb(args, input);
    expect(r.stderr, args.join(' ')).toBe('');
    expect(r.status, args.join(' ')).toBe(0);
    return r.stdout;
  }
  /** Runs pqdb with --json and parses its stdout. */
  async function json(args: string[], input?: string): Promise<Record<string, unknown>> {
    return JSON.parse(await ok([...args, '--json'], input)) as Record<string, unknown>;
  }
  /** Expects one line on stderr matching `message`, status `status`, no stack trace. */
  async function failsWith(args: string[], status: number, message: RegExp, input?: string): Promise<Run> {
    return expectFailure(await pqdb(args, input), args, status, message);
  }
  return { pqdb, spawned, ok, json, failsWith };
}

/** Expects of `r` one line on stderr matching `message`, status `status`, no stack trace. */
export function expectFailure(r: Run, args: string[], status: number, message: RegExp): Run {
  expect(r.stderr, args.join(' ')).toMatch(/^pqdb[ :][^\n]*\n$/);
  expect(r.stderr).not.toContain('    at ');
  expect(r.stderr).toMatch(message);
  expect(r.status).toBe(status);
  return r;
}
