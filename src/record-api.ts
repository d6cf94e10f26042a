// Internal barrel for the record, key and envelope formats (used by the engine and its tests).
export { suites, suite, DEFAULT_SUITE, type Suite, type SuiteName } from './crypto/suites';
export {
  deriveDataKey,
  canonicalGovernance,
  sealRecord,
  openRecord,
  readHeader,
  sealedLength,
  HEADER_BYTES,
  TAG_BYTES,
  COMMITMENT_BYTES,
  RECORD_VERSION,
  type Governance,
  type RecordAddress,
  type RecordHeader,
} from './crypto/record';
export {
  generateRecipient,
  wrapRoot,
  unwrapRoot,
  readEnvelope,
  recipientId,
  type EnvelopeType,
} from './crypto/envelope';
