// The store manifest's sealing (DESIGN §6, §11, docs/format.md), format 2:
//   "PQDM" ‖ 2 ‖ be32(|header|) ‖ header ‖ nonce(12) ‖ AES-256-GCM-SIV(K_manifest, nonce, aad = every byte before the nonce).encrypt(body)
//   header = JSON { v: 2, storeId, commit, envelopes: [[generation, [envelope (base64)…]]…] }
//   body   = JSON of every other field (collections, schemas, registry, counters, page lists,
//            recipients, migrations, and each generation's suite, salt and binding)
//   K_manifest = HKDF-SHA384(S, "", "pqdb manifest key v2", 32), S the store secret (keys.ts,
//            generation 0), storeId = hex(HKDF-SHA384(S, "", "pqdb store id v1", 16))
// Only what unlocking needs is readable: the store id, the commit counter and the key envelopes
// (which name their recipients by key id). The body's tag authenticates the header too, under a key
// only a holder of a recipient secret key can derive. The header is untrusted until the body opens:
// readManifest checks its shape (checks.ts) before unwrapping anything, and the body is validated
// field by field (types, ranges, known suites and states) before anything uses it.

import { PqdbError } from '../../errors';
import { gcmsiv } from '../../kernels/aead';
import { hex } from '../../_encoding';
import { KeyRing, openStoreSecret, publicKeysOf, withStoreKey } from '../keys';
import { generationRecords, MANIFEST_VERSION, type Manifest, type ManifestHeader } from './schema';
import { base64, checkHeader, checkManifest, parseJson } from './checks';

const MANIFEST_MAGIC = [0x50, 0x51, 0x44, 0x4d]; // PQDM
/** Magic, version and the header's length. */
const MANIFEST_HEAD_BYTES = 9;
const NONCE_BYTES = 12;
const TAG_BYTES = 16;
/** Labels of the keys derived from the store secret. */
export const MANIFEST_KEY_LABEL = 'pqdb manifest key v2';
export const STORE_ID_LABEL = 'pqdb store id v1';
const enc = new TextEncoder();

/** A manifest as read, before its body is opened. */
export interface SealedManifest {
  readonly header: ManifestHeader;
  /** The store secret's envelopes. */
  readonly storeEnvelopes: Uint8Array[];
  /** Opens and validates the body under K_manifest. @throws PqdbError AUTH_FAILED, CORRUPTION */
  open(manifestKey: Uint8Array): Manifest;
}

/** Seals the manifest under `manifestKey` (K_manifest) with a fresh nonce. */
export function encodeManifest(m: Manifest, manifestKey: Uint8Array): Uint8Array {
  const { v, storeId, commit, keyring, ...rest } = m;
  const header: ManifestHeader = { v, storeId, commit, envelopes: keyring.map((k) => [k.generation, k.envelopes]) };
  const body = { ...rest, keyring: keyring.map(({ envelopes: _, ...k }) => k) };
  const head = enc.encode(JSON.stringify(header));
  const plain = enc.encode(JSON.stringify(body));
  const at = MANIFEST_HEAD_BYTES + head.length;
  const out = new Uint8Array(at + NONCE_BYTES + plain.length + TAG_BYTES);
  out.set(MANIFEST_MAGIC);
  out[4] = MANIFEST_VERSION;
  new DataView(out.buffer).setUint32(5, head.length);
  out.set(head, MANIFEST_HEAD_BYTES);
  const nonce = out.subarray(at, at + NONCE_BYTES);
  globalThis.crypto.getRandomValues(nonce);
  const aead = gcmsiv.withKey(manifestKey);
  try {
    aead.encrypt(nonce, plain, out.subarray(0, at), out.subarray(at + NONCE_BYTES));
  } finally {
    aead.destroy();
    plain.fill(0);
  }
  return out;
}

/**
 * Reads a manifest's framing and header (untrusted until `open` succeeds).
 * @throws PqdbError CORRUPTION (not a manifest, bad framing or header), FORMAT_VERSION (another
 * format, such as a store of an earlier pre-release).
 */
export function readManifest(bytes: Uint8Array): SealedManifest {
  if (
    !(bytes instanceof Uint8Array) ||
    bytes.length < MANIFEST_HEAD_BYTES ||
    MANIFEST_MAGIC.some((m, i) => bytes[i] !== m)
  )
    throw new PqdbError('CORRUPTION', 'not a pqdb manifest');
  if (bytes[4] !== MANIFEST_VERSION)
    throw new PqdbError(
      'FORMAT_VERSION',
      bytes[4] === 1
        ? 'this store was written by an earlier pre-release of pqdb (manifest format 1), which it cannot open: recreate the store'
        : `manifest format ${bytes[4]} is not supported`,
    );
  const len = new DataView(bytes.buffer, bytes.byteOffset).getUint32(5);
  const at = MANIFEST_HEAD_BYTES + len;
  if (at + NONCE_BYTES + TAG_BYTES > bytes.length) throw new PqdbError('CORRUPTION', 'the manifest is truncated');
  const header = checkHeader(parseJson(bytes.subarray(MANIFEST_HEAD_BYTES, at), 'header'));
  const store = header.envelopes.find(([g]) => g === 0);
  if (store === undefined) throw new PqdbError('CORRUPTION', 'the manifest has no store secret');
  return {
    header,
    storeEnvelopes: store[1].map((e) => base64(e, 'an envelope')),
    open(manifestKey: Uint8Array): Manifest {
      const aead = gcmsiv.withKey(manifestKey);
      let plain: Uint8Array;
      try {
        plain = aead.decrypt(
          bytes.subarray(at, at + NONCE_BYTES),
          bytes.subarray(at + NONCE_BYTES),
          bytes.subarray(0, at),
        );
      } catch (cause) {
        throw new PqdbError('AUTH_FAILED', 'the manifest does not authenticate', { cause });
      } finally {
        aead.destroy();
      }
      const body = parseJson(plain, 'body');
      plain.fill(0);
      return checkManifest(header, body);
    },
  };
}

/**
 * Opens a manifest with a recipient secret key: unwraps the store secret, checks that the store id
 * is derived from it (and equals `storeId` when the caller pins one), opens and validates the body,
 * and unlocks every key generation (each must be bound to the store secret).
 * @throws PqdbError AUTH_FAILED (wrong key, altered manifest, a generation not bound to the store,
 * another store than the pinned one), CORRUPTION, FORMAT_VERSION.
 */
export function unlockManifest(
  raw: Uint8Array,
  secretKey: Uint8Array,
  options: { keyCacheSize?: number; storeId?: string } = {},
): { manifest: Manifest; keys: KeyRing } {
  const sealed = readManifest(raw);
  if (options.storeId !== undefined && options.storeId.toLowerCase() !== sealed.header.storeId)
    throw new PqdbError('AUTH_FAILED', `this is not the store ${options.storeId} (its id is ${sealed.header.storeId})`);
  const publicKeys = publicKeysOf(secretKey); // once for the store secret and every generation
  const secret = openStoreSecret(sealed.storeEnvelopes, secretKey, publicKeys);
  let keys: KeyRing | undefined;
  try {
    if (withStoreKey(secret, STORE_ID_LABEL, hex, 16) !== sealed.header.storeId)
      throw new PqdbError('AUTH_FAILED', 'the manifest does not authenticate');
    const manifest = withStoreKey(secret, MANIFEST_KEY_LABEL, (k) => sealed.open(k));
    keys = new KeyRing(generationRecords(manifest), options.keyCacheSize);
    keys.unlock(secretKey, secret, publicKeys);
    return { manifest, keys };
  } catch (e) {
    if (keys !== undefined) keys.close();
    else secret.fill(0);
    throw e;
  }
}
