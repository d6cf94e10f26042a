// pqdb/postgres: the PostgreSQL page store (Node only). It imports the `pg` driver, a peer
// dependency the application installs; everything else comes from the same build as `pqdb` under
// Node, so errors are the same PqdbError class. docs/postgres.md has the setup.

export { openPostgresPageStore } from './storage/postgres';
export type { ManifestChange, PostgresPageStore, PostgresPageStoreOptions } from './storage/postgres';
