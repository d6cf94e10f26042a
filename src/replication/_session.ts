// An established replication channel session (docs/replication.md, "Frames"): AES-256-GCM records
// with a per-direction 64-bit counter, rekeying and an authenticated close.
//
//   sealed record = type (1) ‖ be32 length ‖ be64 counter ‖ AES-256-GCM(key, nonce, aad, plaintext) ‖ tag (16)
//   nonce         = 0x00000000 ‖ be64 counter             aad = the 13 bytes before the ciphertext
//   length        = 8 + |plaintext| + 16                  types: DATA, REKEY (empty), CLOSE (empty)
//   rekey         = key′ = HKDF-SHA384(ikm = key, salt = none, info = "pqdb replication v1 <dir> rekey", 32)
//
// The counter starts at 0 after the handshake and counts every sealed record in its direction; it
// is not reset by a rekey, so a record names its place in the session. A receiver accepts exactly
// the counter it expects: a duplicated, replayed, reordered or dropped record ends the session, as
// does any record whose tag fails, whatever its type. Nothing of a bad record is delivered.
// A direction's raw key is kept (it derives the next one) with its expansion in a keyed AEAD; both
// are wiped by a rekey, a close or a failure. Security caveat: the record type and length travel in
// the clear (authenticated, not hidden): an observer sees message sizes and timing.

import { bytes, integer } from '../_args';
import { getU64, setU64 } from '../_bytes';
import { PqdbError } from '../errors';
import { gcm, type KeyedAead } from '../kernels/aead';
import { hkdf } from '../kernels/hmac';
import { sha384 } from '../kernels/sha2';
import {
  alertFor,
  asPqdbError,
  authFailed,
  protocolError,
  CLOSE,
  DATA,
  MAX_MESSAGE_BYTES,
  MAX_SEALED_BODY,
  MIN_SEALED_BODY,
  REKEY,
  SEALED_HEADER_BYTES,
  type Accept,
  type Received,
  type RecordReader,
  type Transport,
} from './_records';

/** AES-GCM invocations under one key before the sender must rekey (data records; see the docs' bound). */
export const REKEY_FRAMES = 2 ** 24;
/** Plaintext bytes under one key before the sender must rekey: 2^32 bytes = 2^28 AES blocks. */
export const REKEY_BYTES = 2 ** 32;

const LABEL_PREFIX = 'pqdb replication v1 ';
const EMPTY = new Uint8Array(0);
const SEALED: Accept = new Map([
  [DATA, [MIN_SEALED_BODY, MAX_SEALED_BODY]],
  [REKEY, [MIN_SEALED_BODY, MIN_SEALED_BODY]],
  [CLOSE, [MIN_SEALED_BODY, MIN_SEALED_BODY]],
] as const);

/** The HKDF info of a channel label: "pqdb replication v1 " ‖ name. */
export function label(name: string): Uint8Array {
  return new TextEncoder().encode(LABEL_PREFIX + name);
}

/** HKDF-SHA384(ikm, salt, "pqdb replication v1 " ‖ name, length): a fresh array the caller wipes. */
export function derive(ikm: Uint8Array, salt: Uint8Array | undefined, name: string, length: number): Uint8Array {
  return hkdf(sha384, ikm, salt, label(name), length);
}

/** How often the sending side rekeys; values only lower the protocol's maxima. */
export interface RekeyAfter {
  /** Data records under one key (1 ≤ frames ≤ 2^24; default 2^24). */
  frames?: number;
  /** Plaintext bytes under one key (1 ≤ bytes ≤ 2^32; default 2^32): rekey before a message would pass it. */
  bytes?: number;
}

/** Checks a rekeyAfter option and fills in the protocol maxima. */
export function rekeyLimits(r: RekeyAfter | undefined): { frames: number; bytes: number } {
  if (r === undefined) return { frames: REKEY_FRAMES, bytes: REKEY_BYTES };
  if (typeof r !== 'object' || r === null) throw new TypeError('"rekeyAfter" expected { frames?, bytes? }');
  return {
    frames: r.frames === undefined ? REKEY_FRAMES : integer('rekeyAfter.frames', r.frames, 1, REKEY_FRAMES),
    bytes: r.bytes === undefined ? REKEY_BYTES : integer('rekeyAfter.bytes', r.bytes, 1, REKEY_BYTES),
  };
}

/** One direction's key, counter and usage since the last rekey. */
class Direction {
  #key: Uint8Array;
  #aead: KeyedAead;
  #nonce = new Uint8Array(12);
  readonly #rekeyName: string;
  /** The counter of the next sealed record in this direction. */
  counter = 0;
  /** Data records and plaintext bytes under the current key. */
  frames = 0;
  bytes = 0;

  /** Takes ownership of `key` (wiped by rekey and wipe). */
  constructor(key: Uint8Array, name: 'c2s' | 's2c') {
    this.#key = key;
    this.#aead = gcm.withKey(key);
    this.#rekeyName = `${name} rekey`;
  }

  #nonceFor(counter: number): Uint8Array {
    setU64(new DataView(this.#nonce.buffer), 4, counter);
    return this.#nonce;
  }

  /** A sealed record of `type` carrying `plaintext`, at the next counter. */
  seal(type: number, plaintext: Uint8Array): Uint8Array {
    if (this.counter >= Number.MAX_SAFE_INTEGER) throw protocolError('the session counter is exhausted');
    const rec = new Uint8Array(SEALED_HEADER_BYTES + plaintext.length + 16);
    const dv = new DataView(rec.buffer);
    rec[0] = type;
    dv.setUint32(1, 8 + plaintext.length + 16);
    setU64(dv, 5, this.counter);
    this.#aead.encrypt(
      this.#nonceFor(this.counter),
      plaintext,
      rec.subarray(0, SEALED_HEADER_BYTES),
      rec.subarray(SEALED_HEADER_BYTES),
    );
    this.counter++;
    return rec;
  }

  /**
   * The plaintext of a sealed record read at this direction's next counter.
   * @throws PqdbError AUTH_FAILED for another counter or a tag that fails (nothing is returned).
   */
  open(rec: Received): Uint8Array {
    const counter = getU64(new DataView(rec.bytes.buffer, rec.bytes.byteOffset), 5);
    if (counter !== this.counter) throw authFailed();
    const pt = this.#aead.decrypt(
      this.#nonceFor(this.counter), // the nonce is the expected counter whatever the header says
      rec.bytes.subarray(SEALED_HEADER_BYTES),
      rec.bytes.subarray(0, SEALED_HEADER_BYTES),
    );
    this.counter++;
    return pt;
  }

  /** key′ = HKDF-SHA384(key, "… <dir> rekey"); the old key and its expansion are wiped. */
  rekey(): void {
    const next = derive(this.#key, undefined, this.#rekeyName, 32);
    this.wipe();
    this.#key = next;
    this.#aead = gcm.withKey(next);
    this.frames = 0;
    this.bytes = 0;
  }

  wipe(): void {
    this.#key.fill(0);
    this.#aead.destroy();
  }
}

/**
 * An authenticated, encrypted session with one pinned peer. Messages arrive whole and in order;
 * any fault ends the session for good with a typed error.
 * @example
 * await session.send(page);
 * for await (const message of session) apply(message); // ends when the peer closes
 */
export interface Session extends AsyncIterable<Uint8Array> {
  /** The peer's 16-byte key id: SHA-384(its ML-DSA-87 public key)[0, 16), as checkpoints name signers. */
  readonly peer: Uint8Array;
  /** The peer's ML-DSA-87 public key (the pinned one). */
  readonly peerPublicKey: Uint8Array;
  /** The negotiated suite id (docs/replication.md). */
  readonly suite: number;
  /**
   * Seals and sends one message (at most 16 MiB; `message` is not kept or changed). Resolves when
   * the transport takes it (backpressure).
   * @throws RangeError over 16 MiB; PqdbError NOT_OPEN after a close, the session's error after a fault.
   */
  send(message: Uint8Array): Promise<void>;
  /**
   * The next message (calls queue up and resolve in order).
   * @throws PqdbError NOT_OPEN once either side closed; AUTH_FAILED for a record that fails its tag or
   * counter; PROTOCOL_ERROR for a malformed, oversized or truncated record; IO_ERROR from the transport.
   */
  receive(): Promise<Uint8Array>;
  /** Sends the authenticated close record, ends the transport and wipes the keys; idempotent. */
  close(): Promise<void>;
}

export interface SessionParts {
  transport: Transport;
  reader: RecordReader;
  /** Owned by the session from here on (wiped on close). */
  sendKey: Uint8Array;
  receiveKey: Uint8Array;
  role: 'client' | 'server';
  peerPublicKey: Uint8Array;
  peer: Uint8Array;
  suite: number;
  rekey: { frames: number; bytes: number };
}

type State = { open: true } | { open: false; error: PqdbError };

const noop = (): void => undefined;

/** The Session implementation (created by the handshake only). */
export class ChannelSession implements Session {
  readonly peer: Uint8Array;
  readonly peerPublicKey: Uint8Array;
  readonly suite: number;
  readonly #transport: Transport;
  readonly #reader: RecordReader;
  readonly #tx: Direction;
  readonly #rx: Direction;
  readonly #rekey: { frames: number; bytes: number };
  #state: State = { open: true };
  #reading: Promise<unknown> = Promise.resolve();
  #writing: Promise<unknown> = Promise.resolve();
  #pendingWrites = 0;
  /** Resolves when the session stops (close or fault), releasing a receive that waits on the transport. */
  readonly #stopped: Promise<null>;
  #stop: () => void = noop;

  constructor(p: SessionParts) {
    this.#transport = p.transport;
    this.#reader = p.reader;
    const [tx, rx] = p.role === 'client' ? (['c2s', 's2c'] as const) : (['s2c', 'c2s'] as const);
    this.#tx = new Direction(p.sendKey, tx);
    this.#rx = new Direction(p.receiveKey, rx);
    this.#rekey = p.rekey;
    this.peer = p.peer;
    this.peerPublicKey = p.peerPublicKey;
    this.suite = p.suite;
    this.#stopped = new Promise((resolve) => (this.#stop = () => resolve(null)));
  }

  send(message: Uint8Array): Promise<void> {
    bytes('message', message);
    if (message.length > MAX_MESSAGE_BYTES)
      throw new RangeError(`"message" expected at most ${MAX_MESSAGE_BYTES} bytes, got length=${message.length}`);
    if (!this.#state.open) return Promise.reject(this.#state.error);
    const records: Uint8Array[] = [];
    const tx = this.#tx;
    if (tx.frames + 1 > this.#rekey.frames || tx.bytes + message.length > this.#rekey.bytes) {
      records.push(tx.seal(REKEY, EMPTY));
      tx.rekey();
    }
    records.push(tx.seal(DATA, message));
    tx.frames++;
    tx.bytes += message.length;
    return this.#enqueue(records).catch((e: unknown) => {
      throw this.#fail(asPqdbError(e));
    });
  }

  /** Writes records after those already queued, one `write` at a time. */
  #enqueue(records: readonly Uint8Array[]): Promise<void> {
    this.#pendingWrites++;
    const p = this.#writing.then(async () => {
      for (const r of records) await this.#transport.write(r);
    });
    const settled = p.finally(() => this.#pendingWrites--);
    this.#writing = settled.catch(noop);
    return settled;
  }

  receive(): Promise<Uint8Array> {
    const p = this.#reading.then(() => this.#receiveOne());
    this.#reading = p.catch(noop);
    return p;
  }

  async #receiveOne(): Promise<Uint8Array> {
    for (;;) {
      let stopped = this.#stoppedWith();
      if (stopped !== undefined) throw stopped;
      const next = this.#reader.next(SEALED);
      next.catch(noop); // the race below may leave it behind once the session has stopped
      let rec: Received | null;
      try {
        rec = await Promise.race([next, this.#stopped]);
      } catch (e) {
        throw this.#fail(asPqdbError(e));
      }
      stopped = this.#stoppedWith(); // closed or failed while this read waited
      if (stopped !== undefined) throw stopped;
      if (rec === null) throw this.#fail(protocolError('the connection ended without a close record (truncated)'));
      let pt: Uint8Array;
      try {
        pt = this.#open(rec);
      } catch (e) {
        throw this.#fail(asPqdbError(e));
      }
      if (rec.type === DATA) return pt;
      if (rec.type === REKEY) {
        this.#rx.rekey();
        continue;
      }
      const closed = new PqdbError('NOT_OPEN', 'the peer closed the session');
      this.#end(closed);
      this.#transport.close();
      throw closed;
    }
  }

  /** Checks the peer kept to the rekey bounds, then opens the record. */
  #open(rec: Received): Uint8Array {
    const rx = this.#rx;
    if (rec.type === DATA) {
      const len = rec.body.length - MIN_SEALED_BODY;
      if (rx.frames + 1 > REKEY_FRAMES || rx.bytes + len > REKEY_BYTES)
        throw protocolError('the peer did not rekey within the protocol bounds');
      const pt = rx.open(rec);
      rx.frames++;
      rx.bytes += len;
      return pt;
    }
    return rx.open(rec); // REKEY and CLOSE: the reader admitted only an empty plaintext's length
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Uint8Array> {
    for (;;) {
      try {
        yield await this.receive();
      } catch (e) {
        if (e instanceof PqdbError && e.code === 'NOT_OPEN') return;
        throw e;
      }
    }
  }

  async close(): Promise<void> {
    if (!this.#state.open) {
      await this.#writing;
      return;
    }
    const rec = this.#tx.seal(CLOSE, EMPTY);
    this.#end(new PqdbError('NOT_OPEN', 'the session is closed'));
    try {
      await this.#enqueue([rec]);
    } catch {
      // the transport already failed: nothing more to tell the peer
    } finally {
      this.#transport.close();
    }
  }

  /** The error every call now gets, once the session has stopped. */
  #stoppedWith(): PqdbError | undefined {
    return this.#state.open ? undefined : this.#state.error;
  }

  /** Stops the session with `error` for every later call, and wipes both directions' keys. */
  #end(error: PqdbError): void {
    if (!this.#state.open) return;
    this.#state = { open: false, error };
    this.#tx.wipe();
    this.#rx.wipe();
    this.#stop();
  }

  /**
   * Ends the session with `error` (the first fault wins and is returned), tells the peer with an
   * alert when no write is pending, and ends the transport.
   */
  #fail(error: PqdbError): PqdbError {
    if (!this.#state.open) return this.#state.error;
    this.#end(error);
    if (this.#pendingWrites === 0) {
      this.#transport
        .write(alertFor(error))
        .catch(noop)
        .finally(() => this.#transport.close());
    } else {
      this.#transport.close();
    }
    return error;
  }
}
