// The pqdb command line (Node), built into dist/cli.js and run by bin/pqdb.mjs. One file per group
// of verbs, each verb declared as a `Verb` (_verb.ts: synopsis, help, positionals, options):
//   keygen                               key pairs in files (keygen.ts)
//   init, checkpoint, compact, verify, migrate, status, posture   the store as a whole (admin.ts; verify.ts,
//                                        migrate.ts, status.ts, posture.ts do the work of the last four)
//   put, get, delete, scan, search       one record or query (records.ts)
//   import, export                       many records; sealed exports (import.ts, export.ts)
//   policy sign, policy set, policy show signed authority policies (policy.ts)
//   backup, restore, copies list, copies retire   managed copies and their inventory (copies.ts)
//   replicate serve, replicate follow    a primary serving replicas, a replica following (replicate.ts)
// This file finds the verb (its first word, or two for a group: `policy sign`), parses its
// arguments, loads the keys it declares (_keys.ts), runs it and wipes the keys after it: `main` for
// the process (bin/pqdb.mjs), `run` in-process with the caller's streams, stdin, environment and
// directory (the tests; not a public entry), both through the `io` of _io.ts. Keys come
// from outside the store: --unlock FILE or PQDB_UNLOCK (the recipient secret key), --signer FILE or
// PQDB_SIGNER (the ML-DSA-87 secret key; its public half from FILE.pub), --signer-public FILE or
// PQDB_SIGNER_PUBLIC; a FILE holds the raw key bytes or their base64, the variables base64. The
// policy verbs load their authority keys themselves (policy.ts). A verb that opens a store takes
// --store-id, --min-commit and --pin-file too (_pin.ts), read here into the keys' pin.
//
// Exit status: 0 success; 1 a check failed, a record was not found or a migration failed; 2 a usage
// error (one line: `pqdb: <what> (see pqdb <verb> --help)`) or any failure (one line, `pqdb: [CODE]
// message`, or `pqdb <verb>: cannot open …`); 3 (verify) nothing failed but checks were skipped for
// want of a key; 130 (migrate) paused by Ctrl-C, resumable; (replicate follow --once) 1 not caught
// up within --timeout, 130 interrupted before it caught up. A write to stdout or stderr that fails
// (EPIPE when the reader went away) also ends with one line and status 2: never a stack trace.

/// <reference types="node" />
import { VERSION } from '../index';
import { forgetWarnings, loadKeys, wipeKeys, type Keys } from './_keys';
import { io, processIO, type CliIO, type CliOutput } from './_io';
import { UsageError, errorText } from './_report';
import { KEY_OPTIONS, groupUsage, parseVerb, str, verbUsage, type Verb, type VerbGroup } from './_verb';
import { PIN_OPTIONS, pinFrom } from './_pin';
import { keygen } from './keygen';
import { init, checkpoint, compactVerb, verify, migrate, status, schemaVerb, posture } from './admin';
import { put, get, del, scan, search, query } from './records';
import { importVerb } from './import';
import { policy } from './policy';
import { exportVerb } from './export';
import { backup, copies, restore } from './copies';
import { replicate } from './replicate';

/** Every verb and group of verbs, in the order `pqdb --help` lists them. */
export const VERBS: readonly (Verb | VerbGroup)[] = [
  keygen,
  init,
  put,
  get,
  del,
  scan,
  search,
  query,
  importVerb,
  exportVerb,
  checkpoint,
  compactVerb,
  verify,
  migrate,
  status,
  schemaVerb,
  posture,
  policy,
  backup,
  restore,
  copies,
  replicate,
];

const USAGE = `usage: pqdb <command> [arguments] [--json] [--progress]
       pqdb <command> --help | pqdb --version

${VERBS.map((v) => `  ${v.name.padEnd(12)}${v.summary}`).join('\n')}

keys (base64 in the environment, raw or base64 in files; pqdb keygen writes them):
  --unlock FILE          or PQDB_UNLOCK          recipient secret key: decrypt and authenticate
  --signer FILE          or PQDB_SIGNER          ML-DSA-87 secret key (its public half from FILE.pub)
  --signer-public FILE   or PQDB_SIGNER_PUBLIC   trusted ML-DSA-87 public key of the checkpoints

--json prints what a command reports as JSON; --progress draws progress bars on stderr even when it
is not a terminal. exit status: 0 done, 1 a check failed or a record was not found (replicate
follow --once: not caught up in time), 2 usage error or failure, 3 (verify) checks skipped for want
of a key, 130 (migrate) paused, (replicate follow --once) interrupted`;

const KEY_ENV = { unlock: 'PQDB_UNLOCK', signer: 'PQDB_SIGNER', 'signer-public': 'PQDB_SIGNER_PUBLIC' } as const;

/** What `run` takes in place of the process's own streams, stdin, environment and directory. */
export interface RunOptions {
  /** Default: process.stdout. */
  stdout?: CliOutput;
  /** Default: process.stderr. */
  stderr?: CliOutput;
  /** All of stdin, for a verb reading "-". Default: nothing (an empty stdin). */
  stdin?: string | Uint8Array;
  /** Where the key variables are read. Default: process.env. */
  env?: Record<string, string | undefined>;
  /** The directory relative paths name: the process's for the run (process.chdir). */
  cwd?: string;
}

/**
 * Runs the command line; returns the exit status. Never throws: a failure no verb reports itself
 * is written as one line on stderr and gives status 2.
 * @example
 * process.exitCode = await main(process.argv.slice(2));
 */
export async function main(argv: string[]): Promise<number> {
  reportStreamErrors(process.stdout);
  reportStreamErrors(process.stderr);
  const code = await runWith(argv, processIO());
  // A failed write is an 'error' event a tick later: one during the run is seen here, a later one
  // sets process.exitCode itself (onStreamError).
  return outputFailed ? 2 : code;
}

// The runs in-process, one after the other: `io` and the working directory are the process's.
let queue: Promise<unknown> = Promise.resolve();

/**
 * Runs the command line in-process with the given streams, stdin, environment and directory, as
 * `main` does for the process (the same output and status), but never exits: a second SIGINT or
 * SIGTERM while replicate waits only stops it, as the first does. Runs one at a time (each waits
 * for those before it); the directory is put back after each.
 * @throws as process.chdir, for a `cwd` that is not a directory (or in a worker thread).
 * @example
 * let out = '';
 * const code = await run(['status', 'store'], { stdout: { write: (s) => (out += s) }, cwd: dir });
 */
export function run(argv: string[], options: RunOptions = {}): Promise<number> {
  const next = queue.then(async () => {
    const home = process.cwd();
    if (options.cwd !== undefined) process.chdir(options.cwd);
    try {
      const stdin = options.stdin ?? '';
      return await runWith(argv, {
        stdout: options.stdout ?? process.stdout,
        stderr: options.stderr ?? process.stderr,
        readStdin: () => (typeof stdin === 'string' ? Buffer.from(stdin, 'utf8') : Buffer.from(stdin)),
        env: options.env ?? process.env,
        exitNow: () => undefined,
      });
    } finally {
      process.chdir(home);
    }
  });
  queue = next.catch(() => undefined);
  return next;
}

/** One run with `streams` as `io`; the process's are put back after it. */
async function runWith(argv: string[], streams: CliIO): Promise<number> {
  const before = { ...io };
  Object.assign(io, streams);
  forgetWarnings();
  try {
    return await dispatch(argv);
  } catch (e) {
    io.stderr.write(`pqdb: ${errorText(e)}\n`);
    return 2;
  } finally {
    Object.assign(io, before);
  }
}

/** Finds the verb, parses `argv`, loads the keys and runs the verb; wipes the keys after it. */
async function dispatch(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  if (first === '--version' || first === '-V') {
    io.stdout.write(`pqdb ${VERSION}\n`);
    return 0;
  }
  if (first === '--help' || first === '-h' || (first === 'help' && rest.length === 0)) {
    io.stdout.write(`${USAGE}\n`);
    return 0;
  }
  if (first === undefined) return usageError('missing command', undefined);
  // `pqdb help <command> [<verb>]` prints what `pqdb <command> [<verb>] --help` does.
  const helpOnly = first === 'help';
  const [name, ...after] = helpOnly ? rest : argv;
  const command = VERBS.find((v) => v.name === name);
  if (command === undefined)
    return usageError(first.startsWith('-') ? `unknown option ${first}` : `unknown command "${name}"`, undefined);
  let verb: Verb;
  let args = after;
  if ('verbs' in command) {
    const [word, ...more] = after;
    if ((helpOnly && word === undefined) || word === '--help' || word === '-h') {
      io.stdout.write(`${groupUsage(command)}\n`);
      return 0;
    }
    const words = command.verbs.map((v) => v.name.slice(command.name.length + 1));
    if (word === undefined || word.startsWith('-'))
      return usageError(`missing ${words.join('|')} after "${command.name}"`, command);
    const found = command.verbs.find((v) => v.name === `${command.name} ${word}`);
    if (found === undefined) return usageError(`unknown command "${command.name} ${word}"`, command);
    verb = found;
    args = more;
  } else verb = command;
  if (helpOnly) {
    io.stdout.write(`${verbUsage(verb)}\n`);
    return 0;
  }
  let parsed;
  try {
    parsed = parseVerb(verb, args);
  } catch (e) {
    if (e instanceof UsageError) return usageError(e.message, verb);
    throw e;
  }
  const { values, positionals } = parsed;
  if (values.help === true) {
    io.stdout.write(`${verbUsage(verb)}\n`);
    return 0;
  }
  let pin;
  try {
    // Verbs that open a store declare --pin-file (and, but for init, --store-id and --min-commit).
    if (verb.options['pin-file'] === PIN_OPTIONS['pin-file'])
      pin = pinFrom({
        'store-id': str(values, 'store-id'),
        'min-commit': str(values, 'min-commit'),
        'pin-file': str(values, 'pin-file'),
      });
  } catch (e) {
    if (e instanceof UsageError) return usageError(e.message, verb);
    throw e;
  }
  let keys: Keys = {};
  const declared = (Object.keys(KEY_ENV) as (keyof typeof KEY_ENV)[]).filter((k) => verb.options[k] === KEY_OPTIONS[k]);
  if (declared.length > 0) {
    const files = Object.fromEntries(declared.map((k) => [k, values[k] as string | undefined]));
    const env = Object.fromEntries(declared.map((k) => [KEY_ENV[k], io.env[KEY_ENV[k]]]));
    try {
      keys = loadKeys(files, env);
    } catch (e) {
      io.stderr.write(`pqdb ${verb.name}: ${errorText(e)}\n`);
      return 2;
    }
  }
  if (pin !== undefined) keys.pin = pin;
  const progress = values.json !== true && (values.progress === true || io.stderr.isTTY === true);
  try {
    return await verb.run({ positionals, values, keys, progress });
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    return usageError(e.message, verb);
  } finally {
    wipeKeys(keys);
  }
}

/** Writes `pqdb: <message> (see pqdb [<verb>] --help)`; returns status 2. */
function usageError(message: string, verb: Verb | VerbGroup | undefined): number {
  io.stderr.write(`pqdb: ${message} (see pqdb ${verb !== undefined ? `${verb.name} ` : ''}--help)\n`);
  return 2;
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
