// The replication verbs (docs/replication.md), a group under `pqdb replicate`:
//   serve <location> --identity FILE --trust FILE…          store.serveReplication until a signal
//   follow <location> --identity FILE --primary HOST:PORT --primary-key FILE [--once]   a replica
// Both run until SIGINT or SIGTERM (a second one ends the process at once, status 130), printing a
// status line every second, or with --json one JSON object per line. `serve` opens the store for
// writing (its writer lock: nothing else writes it while it serves, so the records/s it reports are
// what this process commits, none: it serves what was written before it started); `follow` follows
// into its own directory, a file store holding the primary's sealed pages and manifest that get,
// scan and search read read-only when no follower runs.
//
// Peers are ML-DSA-87 pairs from `pqdb keygen --signer`: --identity FILE is this side's secret
// key, its public half read from FILE.pub; the primary trusts replicas by their public keys
// (--trust), a replica pins the primary's (--primary-key). The identity's secret key is wiped when
// the verb ends; the base64 text it was read from cannot be.
//
// follow opens the replica itself (as openReplica does, src/replication/node.ts) so that it sees
// its sessions: a first handshake refused with AUTH_FAILED (the primary does not trust this
// identity, or it is not the pinned key), or a fresh replica's first commit whose manifest does not
// open with --unlock (or is of another store than --store-id), ends the verb with one line and
// status 2 instead of being retried for ever;
// other losses and refusals are retried with backoff and shown in the status line. `--once` waits for the primary to report its commit (a STATUS or COMMIT
// message) and exits when the replica has applied it; `--timeout MS` bounds that wait. Records/s
// counts record writes (puts and deletes: the leaves the store's Merkle logs grew by), read from
// the manifest of the page store at most once a second and only when its commit changed.
//
// Exit status: 0 done (closed by a signal; --once caught up); 1 --once did not catch up within
// --timeout; 2 a bad argument, a missing key, a store that cannot be opened or a refusal (above);
// 130 a signal before --once caught up. Node only.

/// <reference types="node" />
import { io } from './_io';
import { setTimeout as sleep } from 'node:timers/promises';
import { openNodeFsPageStore } from '../storage/node-fs';
import type { PageStore } from '../storage/page-store';
import { readManifest, unlockManifest } from '../engine/manifest';
import { Replica, type ReplicaStatus } from '../replication/replica';
import type { MessageSession } from '../replication/primary';
import { connect } from '../replication/tcp';
import { decodeMessage, MSG_COMMIT, MSG_STATUS } from '../replication/messages';
import { PqdbError } from '../errors';
import { keyPairFile, publicKeyFile, publicKeyFiles } from './_keys';
import { UsageError, cannotOpen } from './_report';
import { openCliStore, requireSigner, requireUnlock } from './_store';
import { PIN_HELP, PIN_OPTIONS } from './_pin';
import { KEY_OPTIONS, str, whole, type Verb, type VerbArgs, type VerbGroup } from './_verb';

/** How often a status line is printed. */
const STATUS_MS = 1000;
/** How often `follow --once` looks whether it has caught up. */
const CATCH_UP_CHECK_MS = 20;

const UNLOCK_HELP = '  --unlock FILE          or PQDB_UNLOCK          the recipient secret key';

const count = (x: number) => x.toLocaleString('en-US');

/** `host:port`, bracketing an IPv6 address. */
const address = (host: string, port: number) => `${host.includes(':') ? `[${host}]` : host}:${port}`;

/** A line on stdout: `json` as one line of JSON with --json, else `text`. */
const emit = (args: VerbArgs, json: Record<string, unknown>, text: string) =>
  io.stdout.write(args.values.json === true ? `${JSON.stringify(json)}\n` : `${text}\n`);

/**
 * The --identity pair.
 * @throws UsageError when it is not given; as `keyPairFile`.
 */
function identityOf(args: VerbArgs): { secretKey: Uint8Array; publicKey: Uint8Array } {
  const file = str(args.values, 'identity');
  if (file === undefined)
    throw new UsageError('--identity FILE is required (an ML-DSA-87 pair from pqdb keygen --signer)');
  return keyPairFile('identity', file);
}

/**
 * `HOST:PORT` or `[IPv6]:PORT`.
 * @throws UsageError for anything else, or a port outside 1–65535.
 */
function hostPort(text: string): { host: string; port: number } {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(text) ?? /^([^:[\]]+):(\d+)$/.exec(text);
  const port = Number(m?.[2]);
  if (m === null || port < 1 || port > 65535)
    throw new UsageError(`--primary expected HOST:PORT (a port of 1 to 65535), got "${text}"`);
  return { host: m[1], port };
}

/**
 * SIGINT and SIGTERM as an abort of `signal`, its reason the signal's name (a second signal exits
 * 130 at once); `abort` ends the wait for another reason.
 */
function interrupts(): { signal: AbortSignal; abort(reason: string): void; dispose(): void } {
  const stop = new AbortController();
  const on = (name: NodeJS.Signals) => {
    if (stop.signal.aborted) io.exitNow(130);
    stop.abort(name);
  };
  process.on('SIGINT', on);
  process.on('SIGTERM', on);
  return {
    signal: stop.signal,
    abort: (reason) => stop.abort(reason),
    dispose() {
      process.off('SIGINT', on);
      process.off('SIGTERM', on);
    },
  };
}

/** Waits `ms`; false when `signal` aborted first (or already had). */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch {
    return false;
  }
}

/**
 * Record writes per second at a page store: the leaves of its Merkle logs (every put and delete
 * appends one), read from its manifest when its commit changed. Reads the manifest the store's
 * owner writes; opens it with `unlock` (the caller's, not copied).
 */
class WriteRate {
  readonly #pages: PageStore;
  readonly #unlock: Uint8Array;
  #commit = -1;
  #writes = 0;
  #at = 0;
  #last = 0;

  constructor(pages: PageStore, unlock: Uint8Array) {
    this.#pages = pages;
    this.#unlock = unlock;
  }

  /** Starts counting from the page store's current commit. */
  async start(): Promise<this> {
    this.#last = await this.#count();
    this.#at = Date.now();
    return this;
  }

  /** Record writes per second since the last call (or `start`). */
  async perSecond(): Promise<number> {
    const writes = await this.#count();
    const now = Date.now();
    const rate = ((writes - this.#last) / Math.max(1, now - this.#at)) * 1000;
    this.#last = writes;
    this.#at = now;
    return Math.max(0, Math.round(rate));
  }

  async #count(): Promise<number> {
    const raw = await this.#pages.readManifest();
    if (raw === undefined) return 0;
    const { commit } = readManifest(raw).header;
    if (commit !== this.#commit) {
      const { manifest, keys } = unlockManifest(raw, this.#unlock);
      keys.close();
      this.#writes = Object.values(manifest.heads ?? {}).reduce((n, h) => n + h.size, 0);
      this.#commit = commit;
    }
    return this.#writes;
  }
}

export const replicateServe: Verb = {
  name: 'replicate serve',
  synopsis: '<location> --unlock FILE --identity FILE --trust FILE... [--host H] [--port N] [--signer FILE] [--json]',
  summary: 'serves the store to its replicas over the post-quantum channel until SIGINT or SIGTERM',
  help: `  Opens the store at <location> for writing (its writer lock) and serves replicas over TCP on
  the post-quantum channel: only a replica whose ML-DSA-87 public key is given with --trust
  completes a handshake. Prints "listening on HOST:PORT", then a status line every second (the
  store's commit, followers connected and live, records/s committed); SIGINT or SIGTERM closes the
  sessions and the store and exits 0.
  --identity FILE   this primary's ML-DSA-87 secret key, its public half in FILE.pub (the key the
                    replicas pin: pqdb keygen --signer)
  --trust FILE      a replica's ML-DSA-87 public key (its FILE.pub); repeat or separate with commas
  --host H          the address to listen on (default 127.0.0.1)
  --port N          the port (default 0: a free one, printed)
  --signer FILE     or PQDB_SIGNER: the checkpoint signer to open the store with (its public half
                    from FILE.pub, or --signer-public FILE)
  --json            one JSON object per line: { event: "listening", host, port, storeId, commit },
                    { event: "status", time, commit, followers: { connected, live },
                    recordsPerSecond }, { event: "closed", signal, commit }
${UNLOCK_HELP}
${PIN_HELP}`,
  positionals: { min: 1, max: 1 },
  options: {
    identity: { type: 'string' },
    trust: { type: 'string', multiple: true },
    host: { type: 'string' },
    port: { type: 'string' },
    ...KEY_OPTIONS,
    ...PIN_OPTIONS,
  },
  async run(args) {
    const [location] = args.positionals;
    const { values, keys } = args;
    const unlock = requireUnlock(keys);
    if (keys.signer !== undefined) requireSigner(keys);
    const host = str(values, 'host') ?? '127.0.0.1';
    const port = whole(values, 'port', 0) ?? 0;
    if (port > 65535) throw new UsageError(`--port expected a port of 0 to 65535, got ${port}`);
    const trustedPeers = publicKeyFiles('trust', values.trust as string[] | undefined);
    if (trustedPeers === undefined)
      throw new UsageError('at least one --trust FILE is required (a replica public key: pqdb keygen --signer)');
    const identity = identityOf(args);
    const stop = interrupts();
    try {
      const { store, pages } = await openCliStore(location, keys, { write: true });
      try {
        const server = await store.serveReplication({ host, port, identity, trustedPeers });
        try {
          const { storeId, commit } = store.info();
          emit(
            args,
            { event: 'listening', host, port: server.port, storeId, commit },
            `pqdb replicate serve: listening on ${address(host, server.port)} (store ${storeId} at commit ${commit}, ${trustedPeers.length} trusted replica(s))`,
          );
          const rate = await new WriteRate(pages, unlock).start();
          while (await pause(STATUS_MS, stop.signal)) {
            const { connected, live } = server.followers();
            const recordsPerSecond = await rate.perSecond();
            const c = store.info().commit;
            emit(
              args,
              {
                event: 'status',
                time: new Date().toISOString(),
                commit: c,
                followers: { connected, live },
                recordsPerSecond,
              },
              `commit ${c}, followers ${connected} connected / ${live} live, ${count(recordsPerSecond)} records/s committed`,
            );
          }
        } finally {
          await server.close();
        }
        const signal = stop.signal.reason as string;
        const { commit } = store.info();
        emit(args, { event: 'closed', signal, commit }, `pqdb replicate serve: ${signal}: closed at commit ${commit}`);
        return 0;
      } finally {
        await store.close();
      }
    } finally {
      stop.dispose();
      identity.secretKey.fill(0);
    }
  },
};

/**
 * What follow knows of its sessions beyond the replica's status: how many handshakes succeeded,
 * whether the primary has reported its commit, and a refusal that ends the verb.
 */
interface Link {
  sessions: number;
  reported: boolean;
  /** The first COMMIT's manifest has been opened with the --unlock key (a fresh replica only). */
  keyChecked: boolean;
  /** --store-id: a fresh replica's first COMMIT of another store is a refusal. */
  storeId?: string;
  refused?: PqdbError;
  /** Called once `refused` is set. */
  onRefused(): void;
}

/** Sets `link.refused` (the first refusal only) and tells `link.onRefused`. */
function refuse(link: Link, message: string, cause: unknown): void {
  if (link.refused !== undefined) return;
  link.refused = new PqdbError('AUTH_FAILED', message, { cause });
  link.onRefused();
}

/**
 * The replica's `connect`, watched: a first handshake refused with AUTH_FAILED, or a first commit
 * whose manifest does not open with `unlock`, sets `link.refused` (the replica would retry them for
 * ever, a fresh one fetching the whole store each time); a STATUS or COMMIT received sets
 * `link.reported` (the replica notes its commit before it reads on, in the same turn).
 */
function watchedConnect(
  link: Link,
  options: Parameters<typeof connect>[0],
  unlock: Uint8Array,
): () => Promise<MessageSession> {
  const primary = address(options.host, options.port);
  return async () => {
    let session: MessageSession;
    try {
      session = await connect(options);
    } catch (e) {
      if (link.sessions === 0 && e instanceof PqdbError && e.code === 'AUTH_FAILED')
        refuse(
          link,
          `the handshake with ${primary} failed: the primary does not trust this --identity, or it is not --primary-key`,
          e,
        );
      throw e;
    }
    link.sessions++;
    return {
      send: (bytes) => session.send(bytes),
      close: () => session.close(),
      async receive() {
        const bytes = await session.receive();
        if (bytes[0] === MSG_STATUS || bytes[0] === MSG_COMMIT) link.reported = true;
        if (bytes[0] === MSG_COMMIT && !link.keyChecked) {
          link.keyChecked = true;
          const m = decodeMessage(bytes);
          try {
            const got = m.type === MSG_COMMIT ? readManifest(m.manifest).header.storeId : undefined;
            if (got !== undefined && link.storeId !== undefined && got !== link.storeId)
              refuse(link, `${primary} serves store ${got}, not --store-id ${link.storeId}`, undefined);
            if (m.type === MSG_COMMIT) unlockManifest(m.manifest, unlock).keys.close();
          } catch (e) {
            // Anything else (a damaged manifest) the replica refuses and reports itself.
            if (e instanceof PqdbError && e.code === 'AUTH_FAILED')
              refuse(
                link,
                `the store ${primary} serves does not open with --unlock (not a recipient secret key of it)`,
                e,
              );
          }
        }
        return bytes;
      },
    };
  };
}

/**
 * Opens the replica in directory `location` (made if missing), following the primary through
 * `watchedConnect`; the replica owns its page store.
 * @throws as openNodeFsPageStore and Replica.open (AUTH_FAILED: the replica's commit does not open
 * with `unlock`; LOCKED: another follower has it)
 */
async function openFollower(
  location: string,
  unlock: Uint8Array,
  options: Parameters<typeof connect>[0],
  storeId: string | undefined,
  onRefused: () => void,
): Promise<{ pages: PageStore; replica: Replica; link: Link }> {
  const pages = await openNodeFsPageStore(location, { create: true });
  try {
    // A replica that holds a commit has opened it with --unlock (and --store-id) already (Replica.open).
    const keyChecked = (await pages.readManifest()) !== undefined;
    const link: Link = { sessions: 0, reported: false, keyChecked, onRefused, ...(storeId ? { storeId } : {}) };
    const replica = await Replica.open(pages, {
      unlock,
      connect: watchedConnect(link, options, unlock),
      ...(storeId !== undefined ? { storeId } : {}),
    });
    return { pages, replica, link };
  } catch (e) {
    await pages.close();
    throw e;
  }
}

/** One status line (text) of a replica. */
function replicaLine(s: ReplicaStatus, recordsPerSecond: number): string {
  const link = s.connected ? 'connected' : `disconnected${s.lastError !== undefined ? ` (${s.lastError})` : ''}`;
  return `applied ${s.appliedWatermark} / commit ${s.commitWatermark}, lag ${s.lagCommits} commit(s), ${Math.round(s.lagMs)} ms, ${count(recordsPerSecond)} records/s applied, ${link}`;
}

export const replicateFollow: Verb = {
  name: 'replicate follow',
  synopsis:
    '<location> --unlock FILE --identity FILE --primary HOST:PORT --primary-key FILE [--store-id ID] [--once [--timeout MS]] [--json]',
  summary: 'follows a primary into a replica directory, verifying every commit before applying it',
  help: `  Follows the primary at HOST:PORT into the directory <location> (made if missing; after a restart
  it resumes from the commit it holds): each commit the primary ships is verified (manifest,
  pages, checkpoint chain and signatures, store id, a commit counter that never goes back) before
  it is applied in one atomic commit. Prints a status line every second: the applied and commit
  watermarks, the lag in commits and ms, records/s applied, the connection (and the last error
  when disconnected); lost sessions are retried with backoff. SIGINT or SIGTERM closes the
  replica and exits 0. A first handshake refused with AUTH_FAILED (the primary does not trust
  this identity, or it is not --primary-key), or a first commit that does not open with
  --unlock, exits 2 at once. While no follower runs, get, scan and search read <location> like
  any store.
  --identity FILE      this replica's ML-DSA-87 secret key, its public half in FILE.pub (the key
                       the primary trusts: pqdb keygen --signer)
  --primary HOST:PORT  the primary ([IPv6]:PORT for an IPv6 address)
  --primary-key FILE   the primary's ML-DSA-87 public key (its --identity FILE.pub)
  --store-id ID        the store to follow (32 hex digits, as replicate serve prints it): a primary
                       serving another store is refused (exit 2), as is a replica directory
                       holding another; without it the replica pins the store of its first commit
  --once               exit 0 once the primary has reported its commit and the replica has
                       applied it (130 for a signal before)
  --timeout MS         with --once: exit 1 when not caught up after MS ms
  --json               one JSON object per line: { event: "following", location, primary,
                       applied }, { event: "status", time, commitWatermark, appliedWatermark,
                       lagCommits, lagMs, connected, lastError?, recordsPerSecond },
                       { event: "caught-up", storeId, commit } or { event: "closed", signal, … }
${UNLOCK_HELP}`,
  positionals: { min: 1, max: 1 },
  options: {
    identity: { type: 'string' },
    primary: { type: 'string' },
    'primary-key': { type: 'string' },
    'store-id': { type: 'string' },
    once: { type: 'boolean' },
    timeout: { type: 'string' },
    unlock: KEY_OPTIONS.unlock,
  },
  async run(args) {
    const [location] = args.positionals;
    const { values, keys } = args;
    const unlock = requireUnlock(keys);
    const primaryText = str(values, 'primary');
    if (primaryText === undefined) throw new UsageError('--primary HOST:PORT is required');
    const { host, port } = hostPort(primaryText);
    const keyFile = str(values, 'primary-key');
    if (keyFile === undefined)
      throw new UsageError("--primary-key FILE is required (the primary's public key: its --identity FILE.pub)");
    const serverPublicKey = publicKeyFile('primary-key', keyFile);
    const storeId = str(values, 'store-id')?.toLowerCase();
    if (storeId !== undefined && !/^[0-9a-f]{32}$/.test(storeId))
      throw new UsageError(`--store-id expected 32 hex digits, got "${storeId}"`);
    const once = values.once === true;
    const timeout = whole(values, 'timeout', 1);
    if (timeout !== undefined && !once) throw new UsageError('--timeout MS is for --once');
    const identity = identityOf(args);
    const stop = interrupts();
    try {
      let opened;
      try {
        opened = await openFollower(location, unlock, { host, port, identity, serverPublicKey }, storeId, () =>
          stop.abort('refused'),
        );
      } catch (e) {
        return cannotOpen('replicate follow', location, e);
      }
      const { pages, replica, link } = opened;
      try {
        const applied = replica.status().appliedWatermark;
        const primary = address(host, port);
        emit(
          args,
          { event: 'following', location, primary, applied },
          `pqdb replicate follow: following ${primary} into ${location} from commit ${applied}`,
        );
        const rate = await new WriteRate(pages, unlock).start();
        const started = Date.now();
        let printed = started;
        while (await pause(once ? CATCH_UP_CHECK_MS : STATUS_MS, stop.signal)) {
          const s = replica.status();
          if (once && link.reported && s.lagCommits === 0) {
            const raw = await pages.readManifest();
            const storeId = raw !== undefined ? readManifest(raw).header.storeId : undefined;
            emit(
              args,
              { event: 'caught-up', storeId, commit: s.appliedWatermark },
              `pqdb replicate follow: caught up: applied commit ${s.appliedWatermark} of store ${storeId}`,
            );
            return 0;
          }
          const now = Date.now();
          if (once && timeout !== undefined && now - started >= timeout) {
            const why = s.lastError !== undefined ? ` (${s.lastError})` : '';
            io.stderr.write(
              `pqdb replicate follow: not caught up within ${timeout} ms: applied ${s.appliedWatermark} of commit ${s.commitWatermark}${link.reported ? '' : ', the primary has not reported its commit'}${why}\n`,
            );
            return 1;
          }
          if (once && now - printed < STATUS_MS) continue;
          printed = now;
          const recordsPerSecond = await rate.perSecond();
          emit(
            args,
            { event: 'status', time: new Date(now).toISOString(), ...s, recordsPerSecond },
            replicaLine(s, recordsPerSecond),
          );
        }
        if (link.refused !== undefined) throw link.refused;
        const signal = stop.signal.reason as string;
        const s = replica.status();
        emit(
          args,
          { event: 'closed', signal, ...s },
          `pqdb replicate follow: ${signal}: closed at commit ${s.appliedWatermark}`,
        );
        return once ? 130 : 0;
      } finally {
        await replica.close();
      }
    } finally {
      stop.dispose();
      identity.secretKey.fill(0);
    }
  },
};

export const replicate: VerbGroup = {
  name: 'replicate',
  summary: 'replication over the post-quantum channel: serve a store, follow one into a replica',
  help: `  A primary (replicate serve) ships its sealed pages and manifests, never a key or plaintext, to
  the replicas it trusts; a replica (replicate follow) verifies each commit before applying it
  and reads like a store. Both sides are ML-DSA-87 pairs from pqdb keygen --signer: the primary
  trusts the replicas' public keys, each replica pins the primary's. Each replica needs a
  recipient secret key of the store (--unlock). docs/replication.md.`,
  verbs: [replicateServe, replicateFollow],
};
