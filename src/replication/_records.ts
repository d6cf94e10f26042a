// The record layer of the replication channel (docs/replication.md, "The channel"): every message on
// the wire is a record `type (1) ‖ be32 body length ‖ body`. This file holds the record types, the
// size limits, the abstract duplex `Transport` the channel runs over, and the reader that assembles
// records from a transport's chunks. The reader checks a record's type and declared length against
// what the caller accepts *before* it buffers the body, so a hostile length prefix costs nothing.
// Nothing here is secret: records are ciphertext or public handshake data.

import { PqdbError } from '../errors';

/**
 * An abstract duplex byte stream (a TCP socket, an in-memory pair in tests). The channel never
 * overlaps two `write` calls and never overlaps two `read` calls.
 */
export interface Transport {
  /** Queues `chunk` (the channel does not touch it afterwards); resolves when the transport can take more. */
  write(chunk: Uint8Array): Promise<void>;
  /** The next chunk of received bytes (any size), or null once the stream has ended or was closed. */
  read(): Promise<Uint8Array | null>;
  /** Ends the stream in both directions; idempotent. A pending `read` resolves null. */
  close(): void;
}

export const RECORD_HEADER_BYTES = 5;

/** Record types (the first byte of every record). */
export const CLIENT_HELLO = 0x01;
export const SERVER_HELLO = 0x02;
export const CLIENT_FINISHED = 0x03;
export const SERVER_FINISHED = 0x04;
export const DATA = 0x10;
export const REKEY = 0x11;
export const CLOSE = 0x12;
/** An unauthenticated notice that the sender ended the session; body = one reason byte. */
export const ALERT = 0x15;

/** Largest message one `send` carries: 16 MiB. */
export const MAX_MESSAGE_BYTES = 2 ** 24;
/** Sealed record body = be64 counter ‖ ciphertext ‖ 16-byte tag. */
export const COUNTER_BYTES = 8;
export const SEALED_HEADER_BYTES = RECORD_HEADER_BYTES + COUNTER_BYTES;
export const MIN_SEALED_BODY = COUNTER_BYTES + 16;
export const MAX_SEALED_BODY = COUNTER_BYTES + MAX_MESSAGE_BYTES + 16;

/** Alert reasons and the error each one ends the receiving side's session with. */
const ALERT_REASONS = { 1: 'AUTH_FAILED', 2: 'PROTOCOL_ERROR' } as const;

/** A typed PROTOCOL_ERROR (the peer broke the protocol; the session is over). */
export function protocolError(message: string, cause?: unknown): PqdbError {
  return new PqdbError('PROTOCOL_ERROR', message, cause === undefined ? undefined : { cause });
}

/** A typed AUTH_FAILED that never says which check failed. */
export function authFailed(cause?: unknown): PqdbError {
  return new PqdbError('AUTH_FAILED', 'authentication failed', cause === undefined ? undefined : { cause });
}

/** `err` as a PqdbError: anything else a transport or kernel threw becomes IO_ERROR with it as cause. */
export function asPqdbError(err: unknown): PqdbError {
  if (err instanceof PqdbError) return err;
  return new PqdbError('IO_ERROR', 'the replication transport failed', { cause: err });
}

/** A record: header ‖ body in one new array (the unit the channel writes, one `write` each). */
export function record(type: number, body: Uint8Array | number): Uint8Array {
  const len = typeof body === 'number' ? body : body.length;
  const out = new Uint8Array(RECORD_HEADER_BYTES + len);
  out[0] = type;
  new DataView(out.buffer).setUint32(1, len);
  if (typeof body !== 'number') out.set(body, RECORD_HEADER_BYTES);
  return out;
}

/** The alert record for an error this side ends the session with. */
export function alertFor(err: PqdbError): Uint8Array {
  return record(ALERT, Uint8Array.of(err.code === 'AUTH_FAILED' ? 1 : 2));
}

/** The error a received alert ends this side's session with. */
function alertError(body: Uint8Array): PqdbError {
  const code = body.length === 1 ? ALERT_REASONS[body[0] as 1 | 2] : undefined;
  if (code === undefined) return protocolError('the peer ended the session with a malformed alert');
  return new PqdbError(code, `the peer ended the session (${code})`);
}

/** A record as read: `bytes` = header ‖ body (what the transcript hashes), `body` a view of it. */
export interface Received {
  type: number;
  bytes: Uint8Array;
  body: Uint8Array;
}

/** Which records a read accepts: each accepted type with its body length range. */
export type Accept = ReadonlyMap<number, readonly [min: number, max: number]>;

/**
 * Assembles records from a transport's chunks. `next` returns null when the stream ends exactly at
 * a record boundary (the caller decides whether that is a clean end), and throws PROTOCOL_ERROR for
 * an unexpected type, a length outside the accepted range (before reading the body) or a stream that
 * ends inside a record. An ALERT is accepted everywhere and thrown as the error it names.
 */
export class RecordReader {
  readonly #transport: Transport;
  readonly #chunks: Uint8Array[] = [];
  #buffered = 0;
  #ended = false;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Reads until `n` bytes are buffered; false if the stream ended first. */
  async #fill(n: number): Promise<boolean> {
    while (this.#buffered < n) {
      if (this.#ended) return false;
      const chunk = await this.#transport.read();
      if (chunk === null) {
        this.#ended = true;
        return false;
      }
      if (chunk.length > 0) {
        this.#chunks.push(chunk);
        this.#buffered += chunk.length;
      }
    }
    return true;
  }

  /** The first `n` buffered bytes, removed from the buffer, in a new array (chunks are never kept as views). */
  #take(n: number): Uint8Array {
    const out = new Uint8Array(n);
    let at = 0;
    while (at < n) {
      const c = this.#chunks[0];
      const k = Math.min(c.length, n - at);
      out.set(c.subarray(0, k), at);
      at += k;
      if (k === c.length) this.#chunks.shift();
      else this.#chunks[0] = c.subarray(k);
    }
    this.#buffered -= n;
    return out;
  }

  async next(accept: Accept): Promise<Received | null> {
    if (!(await this.#fill(RECORD_HEADER_BYTES))) {
      if (this.#buffered === 0) return null;
      throw protocolError('the connection ended inside a record header (truncated)');
    }
    const head = this.#peekHeader();
    const type = head[0];
    const length = new DataView(head.buffer, head.byteOffset).getUint32(1);
    const range = type === ALERT ? ([1, 1] as const) : accept.get(type);
    if (range === undefined) throw protocolError(`unexpected record type 0x${type.toString(16).padStart(2, '0')}`);
    if (length < range[0] || length > range[1])
      throw protocolError(`record of type 0x${type.toString(16)} has a length (${length}) outside [${range}]`);
    if (!(await this.#fill(RECORD_HEADER_BYTES + length)))
      throw protocolError('the connection ended inside a record (truncated)');
    const bytes = this.#take(RECORD_HEADER_BYTES + length);
    const body = bytes.subarray(RECORD_HEADER_BYTES);
    if (type === ALERT) throw alertError(body);
    return { type, bytes, body };
  }

  /** The 5 header bytes, without consuming them (they may span chunks). */
  #peekHeader(): Uint8Array {
    const first = this.#chunks[0];
    if (first.length >= RECORD_HEADER_BYTES) return first.subarray(0, RECORD_HEADER_BYTES);
    const head = this.#take(RECORD_HEADER_BYTES);
    this.#chunks.unshift(head);
    this.#buffered += RECORD_HEADER_BYTES;
    return head;
  }
}
