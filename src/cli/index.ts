// The pqdb command line (Node), built into dist/cli.js and run by bin/pqdb.mjs:
//   pqdb verify <location>            checks a file store read-only (verify.ts, src/engine/verify.ts)
//   pqdb migrate <location> --to S    moves every record to suite S on the live store (migrate.ts, DESIGN §8)
//   pqdb status <location>            store, registry, checkpoints and migration state (status.ts)
// This file parses the arguments, holds the usage text, loads the keys (_keys.ts), dispatches to the
// verb and wipes the keys after it. Keys come from outside the store: --unlock FILE or PQDB_UNLOCK
// (the recipient secret key), --signer-public FILE or PQDB_SIGNER_PUBLIC (the trusted ML-DSA-87
// public key), --signer FILE or PQDB_SIGNER (the ML-DSA-87 secret key, to checkpoint a migration); a
// FILE holds the raw key bytes or their base64, the variables base64.
//
// Exit status: 0 success (verify: every check holds); 1 a check or the migration failed; 2 usage
// error or the store cannot be opened; 3 (verify) nothing failed but checks were skipped for want of
// a key; 130 (migrate) paused by Ctrl-C, resumable. Any other failure — an error no verb expected, or
// a write to stdout or stderr that fails (EPIPE when the reader went away) — ends as one line on
// stderr, `pqdb: [CODE] message`, and status 2: never a stack trace.

/// <reference types="node" />
import { parseArgs } from 'node:util';
import { loadKeys, wipeKeys, type Keys } from './_keys';
import { UsageError, errorText } from './_report';
import { verify } from './verify';
import { migrate } from './migrate';
import { status } from './status';

const USAGE = `usage: pqdb verify <location> [--unlock FILE] [--signer-public FILE] [--expect-checkpoint HASH|SIZE] [--json] [--quiet]
       pqdb migrate <location> --to SUITE [--collection NAME] [--chunk N] [--retire] [--unlock FILE] [--signer FILE --signer-public FILE] [--json]
       pqdb status <location> [--unlock FILE] [--json]

  verify   opens the store at <location> read-only and checks every page, record, Merkle leaf,
           checkpoint signature and proof; prints a summary (--json: the full report);
           --expect-checkpoint: a checkpoint hash (store.info().checkpoint.hash) or log size the
           store must still hold, else it is an older copy (a ROLLBACK problem, exit 1)
  migrate  moves every record (of NAME, or of every collection) to SUITE (gcmsiv-hkdf256,
           gcmsiv-hkdf384, cnsa2-gcm-hkdf384-commit) while the store stays usable; resumes an
           unfinished migration; Ctrl-C pauses it; prints the accounting; --retire then retires
           the older key generations (their pages deleted, their roots destroyed)
  status   the store's generations, suites and their states, collections, checkpoints and migration

keys (base64 in the environment, raw or base64 in files):
  --unlock FILE          or PQDB_UNLOCK          recipient secret key: decrypt and authenticate
  --signer-public FILE   or PQDB_SIGNER_PUBLIC   trusted ML-DSA-87 public key of the checkpoints
  --signer FILE          or PQDB_SIGNER          ML-DSA-87 secret key: migrate signs its checkpoint

exit status: 0 all checks hold, 1 a check failed, 2 usage error or unreadable store,
             3 no failure but checks skipped for want of a key`;

const VERBS = ['verify', 'migrate', 'status'] as const;

/**
 * Runs the command line; returns the exit status. Never throws: a failure no verb reports itself
 * is written as one line on stderr and gives status 2.
 * @example
 * process.exitCode = await main(process.argv.slice(2));
 */
export async function main(argv: string[]): Promise<number> {
  reportStreamErrors(process.stdout);
  reportStreamErrors(process.stderr);
  let code: number;
  try {
    code = await run(argv);
  } catch (e) {
    process.stderr.write(`pqdb: ${errorText(e)}\n`);
    code = 2;
  }
  // A failed write is an 'error' event a tick later: one during the run is seen here, a later one
  // sets process.exitCode itself (onStreamError).
  return outputFailed ? 2 : code;
}

/** Parses `argv`, loads the keys and runs the verb; wipes the keys after it. */
async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        unlock: { type: 'string' },
        'signer-public': { type: 'string' },
        signer: { type: 'string' },
        to: { type: 'string' },
        collection: { type: 'string' },
        chunk: { type: 'string' },
        retire: { type: 'boolean', default: false },
        json: { type: 'boolean', default: false },
        quiet: { type: 'boolean', default: false },
        'expect-checkpoint': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (e) {
    process.stderr.write(`pqdb: ${errorText(e)}\n${USAGE}\n`);
    return 2;
  }
  const { values, positionals } = parsed;
  if (values.help || positionals.length === 0) {
    (values.help ? process.stdout : process.stderr).write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  const [command, location, ...rest] = positionals;
  if (!(VERBS as readonly string[]).includes(command)) {
    process.stderr.write(`pqdb: unknown command "${command}"\n${USAGE}\n`);
    return 2;
  }
  if (location === undefined || rest.length > 0) {
    process.stderr.write(`pqdb ${command}: expected exactly one <location>\n${USAGE}\n`);
    return 2;
  }
  let keys: Keys;
  try {
    keys = loadKeys(values, process.env);
  } catch (e) {
    process.stderr.write(`pqdb ${command}: ${errorText(e)}\n`);
    return 2;
  }
  try {
    if (command === 'migrate') return await migrate(location, values, keys);
    if (command === 'status') return await status(location, values, keys);
    return await verify(location, values, keys);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    process.stderr.write(`pqdb ${command}: ${e.message}\n${e.usage ? `${USAGE}\n` : ''}`);
    return 2;
  } finally {
    wipeKeys(keys);
  }
}

// Process-wide like the streams it watches: set once a write to stdout or stderr failed.
let outputFailed = false;

/** Listens once per stream for a failed write (an unhandled 'error' event would print a stack trace). */
function reportStreamErrors(stream: NodeJS.WriteStream): void {
  if (!stream.listeners('error').includes(onStreamError)) stream.on('error', onStreamError);
}

function onStreamError(this: NodeJS.WriteStream, e: Error): void {
  outputFailed = true;
  process.exitCode = 2;
  // Reported on stderr unless stderr is what failed.
  if (this !== process.stderr) process.stderr.write(`pqdb: stdout: ${errorText(e)}\n`);
}
