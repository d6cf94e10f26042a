// What the pqdb verbs share to report on the terminal: the usage error a verb throws for a bad
// argument (index.ts prints it as one line pointing at the verb's --help, and exits 2), the one-line text of
// any error, the "cannot open" line and the migration accounting line. Node only.

/// <reference types="node" />
import { io } from './_io';
import type { MigrationProgress, MigrationStatus } from '../engine/migration/run';
import { PqdbError } from '../errors';

/**
 * A bad argument or a missing key: index.ts prints `pqdb: <message> (see pqdb <verb> --help)` and
 * exits 2.
 * @example
 * throw new UsageError('--to SUITE is required');
 */
export class UsageError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'UsageError';
  }
}

/**
 * One line for any thrown value: `[CODE] message` for a PqdbError, the message otherwise; line
 * breaks inside the message become spaces.
 * @example
 * errorText(new PqdbError('CORRUPTION', 'bad page')); // '[CORRUPTION] bad page'
 */
export function errorText(e: unknown): string {
  const message = (e instanceof Error ? e.message : String(e)).replace(/\s*[\r\n]+\s*/g, ' ').trim();
  return e instanceof PqdbError ? `[${e.code}] ${message}` : message;
}

/**
 * Writes `pqdb <command>: cannot open <location>: …` on stderr; returns exit status 2.
 * @example
 * return cannotOpen('status', location, e);
 */
export function cannotOpen(command: string, location: string, e: unknown): number {
  io.stderr.write(`pqdb ${command}: cannot open ${location}: ${errorText(e)}\n`);
  return 2;
}

/**
 * The accounting of a migration on one line (counts in en-US grouping).
 * @example
 * formatAccounting(result); // 'copied 1,200, superseded 3, deleted 0, withheld 0, failed 0, inserted 5; total 1,208'
 */
export function formatAccounting(r: MigrationStatus | MigrationProgress): string {
  const n = (x: number) => x.toLocaleString('en-US');
  return `copied ${n(r.copied)}, superseded ${n(r.superseded)}, deleted ${n(r.deleted)}, withheld ${n(r.withheld)}, failed ${n(r.failed)}, inserted ${n(r.inserted)}; total ${n(r.total)}`;
}
