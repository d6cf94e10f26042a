// Every tab of an origin served by one writer (docs/tabs.md): the worker that takes a store's Web
// Lock (`pqdb:<location>`) opens it and serves it, to its own page and to the workers of the other
// tabs; the others find it on a BroadcastChannel of the store's name, and each gets a channel of its
// own to it. A waiting worker asks for the lock too: when the serving tab closes, reloads or
// crashes, the browser gives the lock to one of them, which opens the store (its recovery runs as
// after a crash) and serves from then on.
//
// A tab is served once it proves it holds one of the store's recipient secret keys: the server
// wraps a fresh secret to the recipient public key the tab names (a KEM envelope), and the tab
// answers with an HMAC of the exchange under it. No key crosses between tabs. What crosses after
// that (values, in clear) stays inside the origin: BroadcastChannel reaches only the origin's own
// contexts, which the web platform does not separate from one another (a script of the origin can
// load the app in a frame and drive it).

import { PqdbError } from '../errors';
import { b64, unb64 } from '../_encoding';
import { concatBytes, equalBytes } from '../_bytes';
import { hkdf, hmac } from '../kernels/hmac';
import { sha384 } from '../kernels/sha2';
import { wrapRoot, unwrapRoot } from '../crypto/envelope';
import { publicKeysOf } from '../engine/keys';
import type { Store } from '../engine/store';

/** The part of the Web Locks API used here (`navigator.locks`). */
export interface LockManagerLike {
  /** The locks held and waited for (`navigator.locks.query()`), where there is one. */
  query?(): Promise<{ held?: { name?: string; clientId?: string }[] }>;
  request(
    name: string,
    options: { ifAvailable?: boolean; signal?: AbortSignal },
    callback: (lock: unknown) => Promise<unknown>,
  ): Promise<unknown>;
}

/** A port or a BroadcastChannel, as the connections use them. */
export interface PortLike {
  postMessage(message: unknown, transfer?: Transferable[]): void;
  onmessage: ((e: MessageEvent) => void) | null;
  close(): void;
}

/** @internal What a platform offers for serving several tabs: the browser's locks and channels. */
export interface TabsPlatform {
  readonly locks: LockManagerLike;
  channel(name: string): PortLike;
}

/** How long a tab looks for the serving tab before it gives up (a server that is still opening answers later). */
export const JOIN_TIMEOUT_MS = 10_000;
const HELLO_EVERY_MS = 100;
/** The most tabs one worker serves a store to (handshakes included). */
export const MAX_TABS = 256;
const LABEL = new TextEncoder().encode('pqdb tab auth v1');

type TabMessage =
  | { t: 'hello'; client: string; keys: string[] }
  | { t: 'challenge'; envelope: Uint8Array; nonce: Uint8Array }
  | { t: 'answer'; mac: Uint8Array }
  | { t: 'welcome' }
  | { t: 'refused'; message: string }
  | { t: 'server' }
  | { t: 'bye' };

/** Posts unless the channel closed meanwhile (a tab's connection ended). */
function tell(port: PortLike, m: TabMessage): void {
  try {
    port.postMessage(m);
  } catch {
    // closed
  }
}

const randomBytes = (n: number) => globalThis.crypto.getRandomValues(new Uint8Array(n));
const lockName = (location: string) => `pqdb:${location}`;
const channelName = (location: string) => `pqdb-tabs:${location}`;
const clientChannel = (location: string, client: string) => `pqdb-tabs:${location}:${client}`;

function transcript(client: string, nonce: Uint8Array, envelope: Uint8Array): Uint8Array {
  return sha384(concatBytes([LABEL, new TextEncoder().encode(client), new Uint8Array(1), nonce, envelope]));
}

/**
 * What the exchange's secret gives both sides: the tab's answer, and the name of the channel the
 * tab is served on from then on (known only to holders of the secret: a context that watched the
 * handshake cannot post calls there nor read the replies).
 */
function keysOf(secret: Uint8Array, t: Uint8Array, location: string): { mac: Uint8Array; session: string } {
  // Keyed by a key of its own derived from the secret: whatever envelope a challenge carries (one
  // of the store's own, say), the answers are MACs under no key the store uses.
  const key = hkdf(sha384, secret, undefined, LABEL, 48);
  const mac = hmac(sha384, key, concatBytes([t, Uint8Array.of(1)]));
  const session = `pqdb-tabs:${location}:s:${b64(hmac(sha384, key, concatBytes([t, Uint8Array.of(2)])).subarray(0, 24))}`;
  key.fill(0);
  return { mac, session };
}

/**
 * Takes the store's lock if it is free: resolves with its release (the lock is held until it is
 * called), or with undefined when another context holds it.
 */
export async function tryLock(tabs: TabsPlatform, location: string): Promise<(() => void) | undefined> {
  let granted!: (release: (() => void) | undefined) => void;
  const got = new Promise<(() => void) | undefined>((resolve) => (granted = resolve));
  tabs.locks
    .request(lockName(location), { ifAvailable: true }, async (lock) => {
      if (lock === null) return granted(undefined);
      await new Promise<void>((release) => granted(release));
    })
    .catch(() => granted(undefined)); // no lock to be had here
  return got;
}

/** Which of `keys` (base64) is a recipient key of `store`, if any. */
export function recipientAmong(store: Pick<Store, 'recipientKeys'>, keys: readonly unknown[]): string | undefined {
  const known = new Set(store.recipientKeys().map((k) => b64(k)));
  return keys.find((k): k is string => typeof k === 'string' && known.has(k));
}

/** The client id of the context holding the store's lock, where the platform says (else undefined). */
export async function lockHolder(tabs: TabsPlatform, location: string): Promise<string | undefined> {
  try {
    return (await tabs.locks.query?.())?.held?.find((l) => l.name === lockName(location))?.clientId;
  } catch {
    return undefined;
  }
}

/** Waits for the store's lock: `onGranted` runs once it is this context's, holding it until its release is called. */
export function waitForLock(
  tabs: TabsPlatform,
  location: string,
  onGranted: (release: () => void) => void,
): { cancel(): void } {
  const abort = new AbortController();
  tabs.locks
    .request(lockName(location), { signal: abort.signal }, async () => {
      await new Promise<void>((release) => onGranted(release));
    })
    .catch(() => undefined); // cancelled
  return { cancel: () => abort.abort() };
}

/**
 * Serves `store` to the other tabs: answers hellos on the store's channel, challenges each tab for
 * a recipient key of the store, and hands each one that answers to `serve` (with its channel).
 * Returns the function that stops serving (telling the tabs it served).
 */
export function serveTabs(
  tabs: TabsPlatform,
  location: string,
  store: Pick<Store, 'recipientKeys'>,
  serve: (port: PortLike) => void,
): () => void {
  const main = tabs.channel(channelName(location));
  const clients = new Map<string, PortLike>();
  const refuse = (client: string, port: PortLike, message: string) => {
    clients.delete(client);
    tell(port, { t: 'refused', message });
    port.close();
  };
  main.onmessage = (e: MessageEvent<TabMessage>) => {
    const m = e.data;
    if (m?.t !== 'hello' || typeof m.client !== 'string' || clients.has(m.client) || !Array.isArray(m.keys)) return;
    if (clients.size >= MAX_TABS) return; // a flood of hellos costs a bounded number of channels
    const port = tabs.channel(clientChannel(location, m.client));
    clients.set(m.client, port);
    const key = recipientAmong(store, m.keys);
    if (key === undefined) return refuse(m.client, port, 'the tab holds no recipient key of this store');
    const secret = randomBytes(32);
    const nonce = randomBytes(32);
    const envelope = wrapRoot(secret, unb64(key), 'gcmsiv-hkdf384', 0);
    const { mac: want, session } = keysOf(secret, transcript(m.client, nonce, envelope), location);
    secret.fill(0);
    // A handshake not answered in time gives its place back.
    const expire = setTimeout(() => refuse(m.client, port, 'no answer in time'), JOIN_TIMEOUT_MS);
    port.onmessage = (a: MessageEvent<TabMessage>) => {
      const r = a.data;
      port.onmessage = null;
      clearTimeout(expire);
      if (r?.t !== 'answer' || !(r.mac instanceof Uint8Array) || !equalBytes(r.mac, want))
        return refuse(m.client, port, 'the tab did not prove it holds a recipient key of this store');
      const channel = tabs.channel(session);
      // Closed when the tab's connection closes: it no longer counts against MAX_TABS.
      const served: PortLike = {
        postMessage: (message) => channel.postMessage(message),
        get onmessage() {
          return channel.onmessage;
        },
        set onmessage(h) {
          channel.onmessage = h;
        },
        close: () => (clients.delete(m.client), channel.close()),
      };
      clients.set(m.client, served);
      tell(port, { t: 'welcome' });
      port.close();
      serve(served);
      // The tab holds its session's lock while it lives: once the lock is free (the tab closed,
      // reloaded or crashed), its connection ends here as if it had said bye.
      void tabs.locks
        .request(`${session}:alive`, {}, async () => {
          if (clients.get(m.client) === served) served.onmessage?.({ data: { t: 'bye' } } as MessageEvent);
        })
        .catch(() => undefined);
    };
    port.postMessage({ t: 'challenge', envelope, nonce } satisfies TabMessage);
  };
  main.postMessage({ t: 'server' } satisfies TabMessage); // tabs waiting for one say hello again
  return () => {
    main.onmessage = null;
    tell(main, { t: 'bye' });
    main.close();
    for (const port of clients.values()) {
      tell(port, { t: 'bye' });
      port.close();
    }
    clients.clear();
  };
}

/**
 * Connects to the tab serving the store at `location`, proving the recipient secret key `unlock`:
 * resolves with the channel to it once it welcomed this tab.
 * @throws PqdbError AUTH_FAILED (refused: no recipient key of the store), LOCKED (no serving tab
 * answered within JOIN_TIMEOUT_MS)
 */
export async function joinTab(
  tabs: TabsPlatform,
  location: string,
  unlock: Uint8Array,
  signal?: AbortSignal,
): Promise<PortLike> {
  const client = b64(randomBytes(12));
  const publicKeys = publicKeysOf(unlock);
  const hello: TabMessage = { t: 'hello', client, keys: publicKeys.map((k) => b64(k)) };
  const main = tabs.channel(channelName(location));
  const port = tabs.channel(clientChannel(location, client));
  let session: PortLike | undefined;
  let aliveLock: AbortController | undefined;
  try {
    return await new Promise<PortLike>((resolve, reject) => {
      const timer = setTimeout(() => {
        done(); // the hellos stop before the channel closes
        reject(new PqdbError('LOCKED', `no tab serving store "${location}" answered within ${JOIN_TIMEOUT_MS} ms`));
      }, JOIN_TIMEOUT_MS);
      const again = setInterval(() => tell(main, hello), HELLO_EVERY_MS);
      const done = () => (clearTimeout(timer), clearInterval(again), signal?.removeEventListener('abort', stop));
      const stop = () => (done(), reject(new PqdbError('ABORTED', 'no longer looking for the serving tab')));
      signal?.addEventListener('abort', stop, { once: true });
      main.onmessage = (e: MessageEvent<TabMessage>) => e.data?.t === 'server' && tell(main, hello);
      port.onmessage = (e: MessageEvent<TabMessage>) => {
        const m = e.data;
        if (
          m?.t === 'challenge' &&
          session === undefined &&
          m.envelope instanceof Uint8Array &&
          m.nonce instanceof Uint8Array
        ) {
          let secret: Uint8Array;
          try {
            secret = unwrapRoot(m.envelope, unlock, publicKeys);
          } catch (cause) {
            done();
            return reject(
              new PqdbError('AUTH_FAILED', 'the serving tab sent a challenge this key does not open', { cause }),
            );
          }
          const keys = keysOf(secret, transcript(client, m.nonce, m.envelope), location);
          secret.fill(0);
          session = tabs.channel(keys.session); // before the welcome: nothing is posted there until this tab calls
          // Held while this tab's connection lives (the server waits on it to know when the tab went).
          // The answer goes once the lock is held: the server asks for it only after the answer.
          const alive = new AbortController();
          aliveLock = alive;
          void tabs.locks
            .request(`${keys.session}:alive`, { signal: alive.signal }, () => {
              port.postMessage({ t: 'answer', mac: keys.mac } satisfies TabMessage);
              return new Promise<void>((r) => alive.signal.addEventListener('abort', () => r()));
            })
            .catch(() => undefined);
        } else if (m?.t === 'welcome' && session !== undefined) {
          done();
          port.onmessage = null;
          port.close();
          const s = session;
          // Closing the session lets its lock go.
          resolve({
            postMessage: (x, t) => s.postMessage(x, t),
            get onmessage() {
              return s.onmessage;
            },
            set onmessage(h) {
              s.onmessage = h;
            },
            close: () => (aliveLock?.abort(), s.close()),
          });
        } else if (m?.t === 'refused') {
          done();
          reject(new PqdbError('AUTH_FAILED', `the tab serving store "${location}" refused this one: ${m.message}`));
        }
      };
      main.postMessage(hello);
    });
  } catch (e) {
    port.close();
    session?.close();
    aliveLock?.abort();
    throw e;
  } finally {
    main.onmessage = null;
    main.close();
  }
}
