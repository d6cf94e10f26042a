// PqdbError: the one error type pqdb throws for faults and bad data (never for programmer mistakes,
// which are TypeError/RangeError). Codes are stable strings; the README lists every one.

/** Every error code pqdb uses. Codes never change meaning once released. */
export const ERROR_CODES = [
  'AUTH_FAILED', // a tag, MAC or signature did not verify (never says which check)
  'CORRUPTION', // stored bytes fail their checksum or structure checks
  'FORMAT_VERSION', // data written by an unknown format version
  'IO_ERROR', // the storage layer failed
  'LOCKED', // another writer holds the store
  'NOT_OPEN', // the store (or page store, key ring) is closed
  'QUOTA_EXCEEDED', // the storage quota is exhausted
  'SUITE_QUARANTINED', // the crypto suite refuses new writes
  'SUITE_RETIRED', // the crypto suite refuses reads
  'AUTHORITY_DENIED', // current authority does not allow the operation
  'ABORTED', // the operation was cancelled
  'WASM_UNAVAILABLE', // the WebAssembly kernels cannot be instantiated
  'INVALID_KEY', // a key fails its validity check (FIPS 203 §7 key checks, low-order X25519 points)
  'SCHEMA_MISMATCH', // a record value does not match its collection's schema (nothing is written)
  'READ_ONLY', // the store or page store was opened for reading only
  'GENERATION_IN_USE', // a key generation cannot be retired: a live record or a migration still needs it
  'ROLLBACK', // the store is older than a freshness pin or its own signed checkpoints (an older copy)
  'CONFLICT', // another writer changed the store since this one read it
  'NOT_FOUND', // no pqdb store at this location (open without create, verify, delete)
  'NOT_CHECKPOINTED', // no signed checkpoint covers the record, and a new one would not (an export of it)
  'HISTORY_PRUNED', // the history asked for lies below a generation's history floor (a compaction dropped it)
  'INTERNAL', // a broken engine invariant: a pqdb bug, never bad data; report it
  'PROTOCOL_ERROR', // a replication channel peer broke the protocol: malformed, unexpected, oversized or truncated bytes, no common suite, a handshake not finished in time
  'UNSUPPORTED', // this platform lacks what the operation needs (OPFS sync access handles outside a dedicated worker)
  'HANDOVER', // the tab serving the store went away with the call in flight; the store is served again: call again
] as const;

export type PqdbErrorCode = (typeof ERROR_CODES)[number];

/**
 * A fault or bad data reported by pqdb, with a stable `code`.
 * @example
 * try { open(ct) } catch (e) { if (e instanceof PqdbError && e.code === 'AUTH_FAILED') … }
 */
export class PqdbError extends Error {
  readonly code: PqdbErrorCode;

  constructor(code: PqdbErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PqdbError';
    this.code = code;
  }
}
