// Replication for Node (docs/replication.md): a store serves its replicas over the post-quantum
// channel on TCP (tcp.ts), and a replica follows a primary into its own file store.

import { Primary } from './primary';
import { Replica, type ReplicaOptions } from './replica';
import { listen, connect } from './tcp';
import type { ReplicationServer, ReplicationSource, ServeReplicationOptions } from '../engine/store-options';
import type { PageStore } from '../storage/page-store';

/** Serves the store of `source`: each session that completes the handshake becomes a follower. */
export async function servePrimary(
  source: ReplicationSource,
  options: ServeReplicationOptions,
): Promise<ReplicationServer> {
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const primary = new Primary(source);
  try {
    const listener = await listen({
      host: options.host ?? '127.0.0.1',
      port: options.port ?? 0,
      identity: options.identity,
      trustedPeers: options.trustedPeers,
      ...(options.maxHandshakes !== undefined ? { maxHandshakes: options.maxHandshakes } : {}),
      ...(options.maxHandshakesPerSource !== undefined
        ? { maxHandshakesPerSource: options.maxHandshakesPerSource }
        : {}),
      ...(options.handshakeTimeoutMs !== undefined ? { handshakeTimeoutMs: options.handshakeTimeoutMs } : {}),
      onSession: (session) => primary.accept(session),
    });
    return {
      port: listener.port,
      followers: () => primary.followers,
      async close() {
        await primary.close();
        await listener.close();
      },
    };
  } catch (e) {
    await primary.close();
    throw e;
  }
}

/** Options of `openReplica`. */
export interface OpenReplicaOptions extends Pick<
  ReplicaOptions,
  'unlock' | 'storeId' | 'backoffMs' | 'idleTimeoutMs' | 'pageDigests'
> {
  /** The replica's own directory (created when missing). */
  location: string;
  /** This replica's ML-DSA-87 identity key pair (from generateSigner()). */
  identity: { publicKey: Uint8Array; secretKey: Uint8Array };
  /** The primary to follow and its pinned ML-DSA-87 public key. */
  primary: { host: string; port: number; publicKey: Uint8Array };
  /** Each TCP connect to the primary must succeed within this (default 1,500 ms). */
  connectTimeoutMs?: number;
}

/** Opens a replica on `pages`, following `options.primary` over the channel. */
export function followPrimary(pages: PageStore, options: OpenReplicaOptions): Promise<Replica> {
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const { host, port, publicKey } = options.primary ?? ({} as OpenReplicaOptions['primary']);
  return Replica.open(pages, {
    unlock: options.unlock,
    ...(options.storeId !== undefined ? { storeId: options.storeId } : {}),
    ...(options.backoffMs !== undefined ? { backoffMs: options.backoffMs } : {}),
    ...(options.idleTimeoutMs !== undefined ? { idleTimeoutMs: options.idleTimeoutMs } : {}),
    ...(options.pageDigests !== undefined ? { pageDigests: options.pageDigests } : {}),
    connect: () =>
      connect({
        host,
        port,
        identity: options.identity,
        serverPublicKey: publicKey,
        ...(options.connectTimeoutMs !== undefined ? { connectTimeoutMs: options.connectTimeoutMs } : {}),
      }),
  });
}
