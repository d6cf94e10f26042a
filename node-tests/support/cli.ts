// Running the built command line (bin/pqdb.mjs) in a test's temporary directory, with no key in the
// environment: the helpers the CLI suites share.
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { expect } from 'vitest';

const BIN = resolve('bin/pqdb.mjs');

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** The helpers for a suite whose directory `cwd()` gives (it may be made in beforeAll). */
export function cliIn(cwd: () => string) {
  /** Runs pqdb; `env` adds to an environment with every key variable emptied. */
  function pqdb(args: string[], input?: string, env: Record<string, string> = {}): Run {
    const r = spawnSync(process.execPath, [BIN, ...args], {
      cwd: cwd(),
      encoding: 'utf8',
      input: input ?? '',
      env: { ...process.env, PQDB_UNLOCK: '', PQDB_SIGNER_PUBLIC: '', PQDB_SIGNER: '', ...env },
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  }
  /** Runs pqdb and expects status 0 and nothing on stderr; returns stdout. */
  function ok(args: string[], input?: string): string {
    const r = pqdb(args, input);
    expect(r.stderr, args.join(' ')).toBe('');
    expect(r.status, args.join(' ')).toBe(0);
    return r.stdout;
  }
  /** Runs pqdb with --json and parses its stdout. */
  function json(args: string[], input?: string): Record<string, unknown> {
    return JSON.parse(ok([...args, '--json'], input)) as Record<string, unknown>;
  }
  /** Expects one line on stderr matching `message`, status `status`, no stack trace. */
  function failsWith(args: string[], status: number, message: RegExp, input?: string): Run {
    const r = pqdb(args, input);
    expect(r.stderr, args.join(' ')).toMatch(/^pqdb[ :][^\n]*\n$/);
    expect(r.stderr).not.toContain('    at ');
    expect(r.stderr).toMatch(message);
    expect(r.status).toBe(status);
    return r;
  }
  return { pqdb, ok, json, failsWith };
}
