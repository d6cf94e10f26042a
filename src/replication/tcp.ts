// The replication channel over TCP (Node only): a Transport over a node:net socket, a listener that
// runs the server handshake for each connection, and a client connect. Backpressure both ways: a
// write resolves when the socket's buffer has room again ('drain'), and a socket whose received but
// unread bytes pass HIGH_WATER_BYTES is paused until the channel has read them. A listener runs at
// most `maxHandshakes` handshakes at once, and `maxHandshakesPerSource` from one address (each
// costs it an ML-DSA-87 signature before the client has proved anything); a connection that
// arrives at a source's bound ends that source's oldest unauthenticated one, and one at the overall
// bound the oldest of the source with the most (a silent one first: one that has not sent a whole
// first record), so connections held open until their deadline cannot keep a trusted peer out; each handshake has its deadline
// (channel.ts). Security caveat: TCP adds nothing to the channel's guarantees; everything
// on the socket is a channel record (docs/replication.md).

import { createServer, connect as netConnect, type Server, type Socket } from 'node:net';
import { integer } from '../_args';
import { PqdbError } from '../errors';
import {
  clientConfig,
  handshakeClient,
  handshakeServer,
  serverConfig,
  type ClientOptions,
  type ServerOptions,
  type Session,
  type Transport,
} from './channel';
import { RECORD_HEADER_BYTES } from './_records';

/**
 * Received bytes the transport holds for the channel before it pauses the socket, and written bytes
 * the socket may buffer before a write waits for 'drain'. Node's own 16 KiB mark would make every
 * record over 16 KiB wait until the socket has sent everything, so the sender could not seal the
 * next record while the previous one is on its way.
 */
const HIGH_WATER_BYTES = 4 << 20;
const DEFAULT_MAX_HANDSHAKES = 32;
const DEFAULT_MAX_HANDSHAKES_PER_SOURCE = 4;
/** How long a closed transport waits for its last bytes to be taken before it destroys the socket. */
const CLOSE_GRACE_MS = 5_000;

/** Resolves after `ms` without keeping the process alive. */
function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

function ioError(message: string, cause?: unknown): PqdbError {
  return new PqdbError('IO_ERROR', message, cause === undefined ? undefined : { cause });
}

/**
 * A channel Transport over a connected socket. Socket errors surface as PqdbError IO_ERROR from
 * `read` and `write`; `close` flushes what was written, then ends the socket.
 * @example const session = await clientHandshake(socketTransport(socket), options)
 */
export function socketTransport(socket: Socket): Transport {
  const queue: Uint8Array[] = [];
  let queued = 0;
  let ended = false;
  let closed = false;
  let failure: PqdbError | undefined;
  let waiter: (() => void) | undefined;
  const wake = (): void => {
    const w = waiter;
    waiter = undefined;
    w?.();
  };
  socket.setNoDelay(true);
  socket.on('data', (chunk: Buffer) => {
    if (closed) return;
    queue.push(chunk);
    queued += chunk.length;
    if (queued >= HIGH_WATER_BYTES) socket.pause();
    wake();
  });
  socket.on('end', () => {
    ended = true;
    wake();
  });
  socket.on('error', (e) => {
    failure ??= ioError('the replication connection failed', e);
    wake();
  });
  socket.on('close', () => {
    ended = true;
    wake();
  });

  async function read(): Promise<Uint8Array | null> {
    for (;;) {
      const chunk = queue.shift();
      if (chunk !== undefined) {
        queued -= chunk.length;
        if (queued < HIGH_WATER_BYTES && socket.isPaused() && !socket.destroyed) socket.resume();
        return chunk;
      }
      if (failure !== undefined) throw failure;
      if (ended) return null;
      await new Promise<void>((resolve) => (waiter = resolve));
    }
  }

  function write(chunk: Uint8Array): Promise<void> {
    if (failure !== undefined) return Promise.reject(failure);
    if (socket.destroyed || socket.writableEnded)
      return Promise.reject(ioError('the replication connection is closed'));
    return new Promise((resolve, reject) => {
      if (socket.write(chunk) || socket.writableLength <= HIGH_WATER_BYTES) return resolve();
      const done = (): void => {
        socket.off('drain', done);
        socket.off('close', done);
        if (socket.destroyed) reject(failure ?? ioError('the replication connection closed'));
        else resolve();
      };
      socket.on('drain', done);
      socket.on('close', done);
    });
  }

  function close(): void {
    if (closed) return;
    closed = ended = true;
    queue.length = 0;
    queued = 0;
    wake();
    if (socket.destroyed) return;
    socket.end(() => socket.destroy()); // after the last write is flushed
    socket.resume(); // unread bytes are dropped; 'end' and 'close' can come
    // A peer that never takes the last bytes does not keep the socket open.
    setTimeout(() => socket.destroy(), CLOSE_GRACE_MS).unref();
  }

  return { read, write, close };
}

export interface ListenOptions extends ServerOptions {
  /** Address to bind (default '127.0.0.1'). */
  host?: string;
  /** Port to bind; 0 picks a free one (see `Listener.port`). */
  port: number;
  /** Called with each session whose handshake succeeded; a throw or rejection closes that session. */
  onSession(session: Session): void | Promise<void>;
  /** Called with each failed handshake or onSession error (default: ignored). */
  onError?(error: unknown): void;
  /**
   * Handshakes (connections not yet authenticated) run at once (default 32). A connection that
   * arrives at the bound ends the oldest one of the source with the most (ties: the source whose
   * oldest is oldest), one that has not sent a whole first record first.
   */
  maxHandshakes?: number;
  /**
   * Handshakes run at once from one source (an IPv4 address, an IPv6 /64; default 4, at most
   * maxHandshakes). A connection from a source at its bound ends that source's oldest one.
   */
  maxHandshakesPerSource?: number;
}

/** A handshake under way: its socket, its source, whether the peer has sent a whole first record. */
interface Pending {
  socket: Socket;
  source: string;
  spoke: boolean;
}

/** The source a connection counts against: its IPv4 address, or the /64 of its IPv6 address. */
export function sourceOf(address: string | undefined): string {
  if (address === undefined) return '';
  const v4 = /^(?:::ffff:)?(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (v4 !== null) return v4[1];
  const [head, tail = ''] = address.toLowerCase().split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = address.includes('::')
    ? [...left, ...Array(8 - left.length - right.length).fill('0'), ...right]
    : left;
  return groups
    .slice(0, 4)
    .map((g) => g.replace(/^0+(?=.)/, ''))
    .join(':');
}

export interface Listener {
  readonly host: string;
  readonly port: number;
  /** Stops accepting, aborts handshakes under way and closes every session it made. */
  close(): Promise<void>;
}

/**
 * Listens for replication clients: each connection runs the server handshake against `trustedPeers`.
 * @throws TypeError/RangeError for bad options; PqdbError IO_ERROR when the address cannot be bound.
 * @example const l = await listen({ port: 0, identity: primary, trustedPeers: [replica.publicKey], onSession })
 */
export async function listen(options: ListenOptions): Promise<Listener> {
  const config = serverConfig(options);
  const host = options.host ?? '127.0.0.1';
  if (typeof host !== 'string') throw new TypeError('"host" expected a string');
  integer('port', options.port, 0, 65535);
  if (typeof options.onSession !== 'function') throw new TypeError('"onSession" expected a function');
  const onError = options.onError ?? (() => undefined);
  const max =
    options.maxHandshakes === undefined
      ? DEFAULT_MAX_HANDSHAKES
      : integer('maxHandshakes', options.maxHandshakes, 1, 2 ** 16);
  const perSource =
    options.maxHandshakesPerSource === undefined
      ? Math.min(DEFAULT_MAX_HANDSHAKES_PER_SOURCE, max)
      : integer('maxHandshakesPerSource', options.maxHandshakesPerSource, 1, max);
  let closing = false;
  const sockets = new Map<Socket, Session | undefined>();
  /** Handshakes under way, oldest first. */
  const pending = new Map<Socket, Pending>();

  /** Ends the oldest handshake of `among` (one that has not sent a whole record first) to make room. */
  const evict = (among: Pending[]): void => {
    const victim = among.find((p) => !p.spoke) ?? among[0];
    pending.delete(victim.socket);
    victim.socket.destroy();
  };
  /** At the overall bound: ends one of the source with the most handshakes (ties: the oldest source's). */
  const evictBusiest = (): void => {
    const bySource = new Map<string, Pending[]>();
    for (const p of pending.values()) {
      const list = bySource.get(p.source);
      if (list === undefined) bySource.set(p.source, [p]);
      else list.push(p);
    }
    let busiest: Pending[] = [];
    for (const list of bySource.values()) if (list.length > busiest.length) busiest = list;
    evict(busiest);
  };

  const server: Server = createServer((socket) => {
    if (closing) return void socket.destroy();
    const source = sourceOf(socket.remoteAddress);
    const mine = [...pending.values()].filter((p) => p.source === source);
    if (mine.length >= perSource) evict(mine);
    else if (pending.size >= max) evictBusiest();
    const entry: Pending = { socket, source, spoke: false };
    pending.set(socket, entry);
    sockets.set(socket, undefined);
    socket.on('close', () => {
      sockets.delete(socket);
      pending.delete(socket);
    });
    // It has spoken once its first record is whole (a byte or a header alone is not enough).
    const head = new Uint8Array(RECORD_HEADER_BYTES);
    let got = 0;
    const heard = (chunk: Buffer): void => {
      head.set(chunk.subarray(0, Math.max(0, RECORD_HEADER_BYTES - got)), Math.min(got, RECORD_HEADER_BYTES));
      got += chunk.length;
      if (got < RECORD_HEADER_BYTES) return;
      if (got < RECORD_HEADER_BYTES + new DataView(head.buffer).getUint32(1)) return;
      entry.spoke = true;
      socket.off('data', heard);
    };
    socket.on('data', heard);
    handshakeServer(socketTransport(socket), config).then(
      (session) => {
        pending.delete(socket);
        if (closing) return void session.close();
        sockets.set(socket, session);
        Promise.resolve()
          .then(() => options.onSession(session))
          .catch((e: unknown) => {
            onError(e);
            return session.close();
          });
      },
      (e: unknown) => {
        pending.delete(socket);
        onError(e);
      },
    );
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (e) => reject(ioError(`cannot listen on ${host}:${options.port}`, e)));
    server.listen(options.port, host, () => resolve());
  });
  server.on('error', onError);
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;

  return {
    host,
    port,
    async close() {
      if (closing) return;
      closing = true;
      const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
      await Promise.all(
        [...sockets].map(async ([socket, session]) => {
          // A peer that no longer reads must not hold the close up: its socket goes after a grace period.
          if (session !== undefined) await Promise.race([session.close(), delay(CLOSE_GRACE_MS)]);
          socket.destroy();
        }),
      );
      await stopped;
    },
  };
}

export interface ConnectOptions extends ClientOptions {
  host: string;
  port: number;
  /**
   * The TCP connection must be made within this (default 1,500 ms; then the handshake has its own
   * deadline). Short, so that a caller retrying an unreachable host (a cut link) tries again soon
   * after the link is back instead of waiting out TCP's own retransmission backoff.
   */
  connectTimeoutMs?: number;
}

/** Default deadline of the TCP connect (room for one SYN retransmission, at 1 s). */
export const DEFAULT_CONNECT_TIMEOUT_MS = 1500;

/**
 * Connects to a replication server and runs the client handshake: the TCP connect within
 * `connectTimeoutMs`, then the handshake within `handshakeTimeoutMs`.
 * @throws TypeError/RangeError for bad options; PqdbError IO_ERROR (no connection), and the
 * handshake's AUTH_FAILED / PROTOCOL_ERROR.
 * @example const session = await connect({ host: '10.0.0.2', port: 7411, identity: replica, serverPublicKey })
 */
export async function connect(options: ConnectOptions): Promise<Session> {
  const config = clientConfig(options);
  if (typeof options.host !== 'string') throw new TypeError('"host" expected a string');
  integer('port', options.port, 1, 65535);
  const connectMs =
    options.connectTimeoutMs === undefined
      ? DEFAULT_CONNECT_TIMEOUT_MS
      : integer('connectTimeoutMs', options.connectTimeoutMs, 1, 2 ** 31 - 1);
  const socket = netConnect({ host: options.host, port: options.port });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      socket.destroy();
      reject(ioError(`no connection to ${options.host}:${options.port} within ${connectMs} ms`));
    }, connectMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.off('error', failed);
      resolve();
    });
    const failed = (e: Error): void => {
      clearTimeout(timer);
      reject(ioError(`cannot connect to ${options.host}:${options.port}`, e));
    };
    socket.once('error', failed);
  });
  return handshakeClient(socketTransport(socket), config);
}
