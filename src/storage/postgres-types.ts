// The public types of the postgres page store (`pqdb/postgres`): its options, the store's own
// methods beyond PageStore (following a writer: view, watch, refresh) and what a watcher hears.
// The adapter is postgres.ts; tables and transactions are in docs/postgres.md.
//
// Security caveat: the server and whoever can write its tables are the adversary (DESIGN §11):
// everything read through these methods is opaque sealed bytes, authenticated one layer up.

import type { FollowablePageStore, PageStoreView } from './page-store';

/** Options of `openPostgresPageStore`. */
export interface PostgresPageStoreOptions {
  /** The server, as a connection URI (`postgresql://app@db.internal:5432/app`; see the pg docs). */
  connectionString?: string;
  /**
   * Further settings for pg's `Client` and `Pool` (`host`, `password`, `ssl`, `statement_timeout`,
   * …); `connectionString` wins over a `connectionString` given here.
   */
  connection?: Readonly<Record<string, unknown>>;
  /** The store (several share the tables): 1-48 letters, digits or `_`, not starting with a digit. */
  name: string;
  /** The PostgreSQL schema that holds the tables (default `public`; same rule as `name`). */
  schema?: string;
  /**
   * Writers: create the tables (when missing; needs the CREATE privilege) and the store's manifest
   * row (when missing). Default true. Without it a missing store is NOT_FOUND.
   */
  create?: boolean;
  /**
   * Open for reading only: no lock, `commit` rejects with READ_ONLY, reads see the snapshot taken at
   * open or at the last `refresh()`; `watch()` follows the writer's commits.
   */
  readOnly?: boolean;
  /** Connections of the read pool (default 4; the writer has one more of its own). */
  maxConnections?: number;
}

/** A new manifest version seen by a follower (`watch`), after its view was refreshed to it. */
export interface ManifestChange {
  /** The manifest version now in the view (`store.version`). */
  readonly version: number;
}

/**
 * A PageStore in PostgreSQL (`kind` 'postgres'), with what only it has: a manifest version and, for
 * read-only openers, following the writer.
 */
export interface PostgresPageStore extends FollowablePageStore {
  readonly kind: 'postgres';
  /** The store name. */
  readonly name: string;
  /** True when opened with `readOnly`. */
  readonly readOnly: boolean;
  /**
   * The manifest version of this opener's view: for the writer the version its last commit wrote,
   * for a reader the one of its last snapshot. Each commit adds one.
   */
  readonly version: number;
  /**
   * Readers: takes a new snapshot of the manifest and page list when the version changed.
   * Resolves true when the view changed. Writers: resolves false (their view is always current).
   * @throws PqdbError NOT_OPEN after close, NOT_FOUND when the store is gone, IO_ERROR
   * @example if (await reader.refresh()) reopenTheEngine();
   */
  refresh(): Promise<boolean>;
  /**
   * Readers: calls `listener` after each refresh to a new manifest version, learnt through
   * LISTEN/NOTIFY on the store's channel (the writer notifies inside its commit transaction). A
   * dropped LISTEN connection is reopened with backoff and followed by a refresh, so no commit is
   * missed for long. `onError` hears failed refreshes and lost connections. Returns the
   * unsubscribe function; `ready()` tells when LISTEN is in place.
   * @throws TypeError on a writer, PqdbError NOT_OPEN after close
   * @example const stop = reader.watch(({ version }) => console.log('manifest', version));
   */
  watch(listener: (change: ManifestChange) => void, onError?: (error: Error) => void): () => void;
  /** Resolves once the LISTEN of `watch` is in place (at once when nothing watches). */
  ready(): Promise<void>;
  /**
   * The view now, in one piece: manifest version, manifest and live pages (id → length) of the
   * last snapshot (readers) or commit (the writer). What a following `Store` pins its reads to.
   * @example const { version, pages } = reader.view();
   */
  view(): PageStoreView;
}
