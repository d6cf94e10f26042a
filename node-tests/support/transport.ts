// In-memory channel transports for tests: a connected pair whose bytes pass through a man in the
// middle that may alter, drop, inject, reorder or cut them, and a tap that records what a transport
// writes and reads (the raw wire). The channel writes each record with one `write`, so the man in
// the middle sees record `index` of its direction as one chunk.
import type { Transport } from '../../src/replication/channel';

export type Side = 'client' | 'server';
/** Ends the stream toward the receiver (after the chunks before it in the returned list). */
export const END = Symbol('end');
/**
 * What the man in the middle does with chunk `index` written by `from`: undefined delivers it as
 * written; a list delivers those chunks instead (empty = drop it), END cuts the stream there.
 */
export type Tamper = (from: Side, index: number, chunk: Uint8Array) => (Uint8Array | typeof END)[] | undefined;

class End implements Transport {
  readonly #inbox: (Uint8Array | null)[] = [];
  #waiter: (() => void) | undefined;
  #closed = false;
  #sent = 0;
  peer!: End;

  constructor(
    readonly side: Side,
    readonly tamper: Tamper | undefined,
  ) {}

  deliver(chunk: Uint8Array | null): void {
    this.#inbox.push(chunk);
    const w = this.#waiter;
    this.#waiter = undefined;
    w?.();
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (this.#closed) throw new Error('memory transport: closed');
    const copy = new Uint8Array(chunk); // the wire holds its own bytes
    const out = this.tamper?.(this.side, this.#sent++, copy) ?? [copy];
    for (const c of out) this.peer.deliver(c === END ? null : c);
  }

  async read(): Promise<Uint8Array | null> {
    for (;;) {
      if (this.#closed) return null;
      if (this.#inbox.length > 0) {
        const c = this.#inbox.shift()!;
        if (c === null) this.#inbox.unshift(null); // the end stays the end
        return c;
      }
      await new Promise<void>((resolve) => (this.#waiter = resolve));
    }
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.peer.deliver(null);
    this.deliver(null);
  }
}

/** A connected pair of transports, optionally through a man in the middle. */
export function memoryPair(tamper?: Tamper): { client: Transport; server: Transport } {
  const client = new End('client', tamper);
  const server = new End('server', tamper);
  client.peer = server;
  server.peer = client;
  return { client, server };
}

/** `t`, recording every chunk it writes (`sent`) and reads (`received`). */
export function tap(t: Transport): Transport & { sent: Uint8Array[]; received: Uint8Array[] } {
  const sent: Uint8Array[] = [];
  const received: Uint8Array[] = [];
  return {
    sent,
    received,
    write: (chunk) => (sent.push(new Uint8Array(chunk)), t.write(chunk)),
    read: async () => {
      const c = await t.read();
      if (c !== null) received.push(new Uint8Array(c));
      return c;
    },
    close: () => t.close(),
  };
}

/** The records in a byte stream (type and length), for counting record types on the wire. */
export function records(stream: Uint8Array): { type: number; length: number }[] {
  const out: { type: number; length: number }[] = [];
  const dv = new DataView(stream.buffer, stream.byteOffset, stream.byteLength);
  for (let at = 0; at + 5 <= stream.length;) {
    const length = dv.getUint32(at + 1);
    out.push({ type: stream[at], length });
    at += 5 + length;
  }
  return out;
}
