// The messages between a page and the engine it runs in a worker (docs/worker.md). A page opens a
// store by posting `connect` with a MessagePort to the worker; every later message travels on that
// port. Calls carry an id; each gets exactly one `ok` or `err` reply, and, for a migration, `event`s
// (its progress) before it. Values cross by structured clone; keys cross transferred.
//
// Security caveat: the page and its worker are one origin and one application: the port carries
// plaintext values and, at the open, the unlock key. Nothing here is exposed to another origin, and
// the worker never sends key material back (dataKeyFor is refused).

import { ERROR_CODES, PqdbError, type PqdbErrorCode } from '../errors';

/** The store (handle 0) or a collection the page declared (its handle). */
export type Target = number;

export type PageMessage =
  | { readonly t: 'open'; readonly id: number; readonly options: Record<string, unknown>; readonly context?: unknown }
  | {
      readonly t: 'restore';
      readonly id: number;
      /** A managed copy's name, or a backup file's bytes. */
      readonly copy: string | Uint8Array;
      readonly options: Record<string, unknown>;
      readonly context?: unknown;
    }
  | { readonly t: 'call'; readonly id: number; readonly target: Target; readonly op: string; readonly args: unknown[] }
  | { readonly t: 'abort'; readonly id: number };

export type WorkerMessage =
  | { readonly t: 'ok'; readonly id: number; readonly value: unknown }
  | { readonly t: 'err'; readonly id: number; readonly error: SentError }
  | { readonly t: 'event'; readonly id: number; readonly value: unknown };

/** What `connect` carries, posted to the worker itself. */
export interface ConnectMessage {
  readonly pqdb: 'connect';
  readonly port: MessagePort;
}

/** An error as it crosses: PqdbError keeps its code, TypeError and RangeError their kind. */
export interface SentError {
  readonly name: string;
  readonly message: string;
  readonly code?: string;
}

export function sendError(e: unknown): SentError {
  if (e instanceof PqdbError) return { name: 'PqdbError', code: e.code, message: e.message };
  if (e instanceof Error) return { name: e.name, message: e.message };
  return { name: 'Error', message: String(e) };
}

/** The error a page rethrows: the same class and code it would have got from the engine in its own thread. */
export function receivedError(s: SentError): Error {
  if (s.name === 'PqdbError' && (ERROR_CODES as readonly string[]).includes(s.code ?? ''))
    return new PqdbError(s.code as PqdbErrorCode, s.message);
  if (s.name === 'TypeError') return new TypeError(s.message);
  if (s.name === 'RangeError') return new RangeError(s.message);
  const e = new Error(s.message);
  e.name = s.name;
  return e;
}

/** Records a scan chunk carries (the page asks for the next one once it has taken this one). */
export const SCAN_CHUNK = 256;

/** A scan chunk: records in id order, the ids withheld among them, and whether the scan ended. */
export interface ScanChunk {
  readonly records: { id: string; value: unknown }[];
  readonly withheld: string[];
  readonly done: boolean;
}
