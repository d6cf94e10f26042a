// In-process replication sessions for tests: two connected MessageSession ends, primary first. What
// the primary sends may be watched, changed or dropped (`tap`) and slowed (`delay`: its `send`
// resolves once the message is delivered, as over a slow link). A closed end rejects every pending
// and later receive with a NOT_OPEN error, as a closed channel does.
import type { MessageSession } from '../../src/replication/primary';

export interface SessionPairOptions {
  /** Sees each message the primary sends; returns what to deliver (undefined: drop it). */
  tap?: (bytes: Uint8Array) => Uint8Array | undefined;
  /** Awaited before each message of the primary is delivered. */
  delay?: () => Promise<void>;
}

const closedError = () => Object.assign(new Error('closed'), { code: 'NOT_OPEN' });

function inbox() {
  const queued: Uint8Array[] = [];
  const waiting: { resolve: (b: Uint8Array) => void; reject: (e: unknown) => void }[] = [];
  let closed = false;
  return {
    push(b: Uint8Array) {
      if (closed) return;
      const w = waiting.shift();
      if (w) w.resolve(b);
      else queued.push(b);
    },
    receive: (): Promise<Uint8Array> =>
      queued.length > 0
        ? Promise.resolve(queued.shift()!)
        : closed
          ? Promise.reject(closedError())
          : new Promise((resolve, reject) => waiting.push({ resolve, reject })),
    close() {
      closed = true;
      for (const w of waiting.splice(0)) w.reject(closedError());
    },
  };
}

/** A connected pair: [the primary's end, the replica's end]. Each delivered message is a copy. */
export function sessionPair(options: SessionPairOptions = {}): [MessageSession, MessageSession] {
  const toPrimary = inbox();
  const toReplica = inbox();
  const close = () => (toPrimary.close(), toReplica.close());
  const primary: MessageSession = {
    send: async (bytes) => {
      if (options.delay !== undefined) await options.delay();
      const out = options.tap !== undefined ? options.tap(bytes) : bytes;
      if (out !== undefined) toReplica.push(out.slice());
    },
    receive: () => toPrimary.receive(),
    close,
  };
  const replica: MessageSession = {
    send: async (bytes) => toPrimary.push(bytes.slice()),
    receive: () => toReplica.receive(),
    close,
  };
  return [primary, replica];
}
