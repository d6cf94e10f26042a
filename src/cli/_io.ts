// Where the pqdb verbs write, read stdin and find the key variables: the process's own streams and
// environment when bin/pqdb.mjs runs them (main in index.ts), the caller's when the command line
// runs in-process (run in index.ts). One run at a time: run queues the calls, sets `io` for one and
// puts the process's back after it. Node only.

/// <reference types="node" />
import { readFileSync } from 'node:fs';

/** A stream the verbs write to: a string or bytes per call; `isTTY` as on process.stdout. */
export interface CliOutput {
  write(chunk: string | Uint8Array): unknown;
  readonly isTTY?: boolean;
}

export interface CliIO {
  stdout: CliOutput;
  stderr: CliOutput;
  /** All of stdin, read when a verb takes its input from "-" (or put without a value). */
  readStdin(): Buffer;
  /** Where the key variables (PQDB_UNLOCK, PQDB_SIGNER, PQDB_SIGNER_PUBLIC) are read. */
  env: Record<string, string | undefined>;
  /** A second SIGINT or SIGTERM while replicate waits: the process exits at once with `code`. */
  exitNow(code: number): void;
}

/** The process's own: what bin/pqdb.mjs runs with. */
export function processIO(): CliIO {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    readStdin: () => readFileSync(0),
    env: process.env,
    exitNow: (code) => process.exit(code),
  };
}

/** The streams and environment of the run under way (index.ts sets it for each run). */
export const io: CliIO = processIO();
