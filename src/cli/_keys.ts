// Key loading for the pqdb command (Node only). Keys come from outside the store: a FILE named by an
// option holds the raw key bytes or their base64; an environment variable holds base64. The option
// wins over the variable. `pqdb keygen` writes key files as base64 on one line (keygen.ts); a
// signer's public half is read from `FILE.pub` beside `--signer FILE` unless given itself. Caveat: the bytes read from a file or decoded from base64 are copied into
// the returned keys; the caller owns them and wipes them with `wipeKeys` in a `finally`. Strings
// (the environment, a base64 file's text) cannot be wiped. A secret key file that others may read
// or change (mode bits 0077 set, as ssh checks) is used, with one warning line on stderr. A
// recipient key file that holds a secret key (one with FILE.pub beside it, the --unlock key, or 32
// bytes that are no X25519 public key) is refused.

/// <reference types="node" />
import { io } from './_io';
import { closeSync, existsSync, fstatSync, openSync, readFileSync, statSync } from 'node:fs';
import { shake256 } from '../kernels/sha3';
import { equalBytes } from '../_bytes';
import { isX25519PublicKey } from '../crypto/envelope';
import type { StorePin } from './_pin';
import { UsageError } from './_report';

/**
 * Accepted key lengths in bytes: the recipient secret key; the ML-DSA-87 public and secret keys
 * (FIPS 204 Table 2) of a checkpoint signer (and the public key a restore trusts), of a policy
 * authority and of a replication peer (its identity, the replicas a primary trusts, the primary a
 * replica pins); a recipient public key (hybrid ML-KEM-1024 ‖ X25519, or X25519 alone).
 */
export const LENGTHS = {
  unlock: [32],
  'signer-public': [2592],
  'trusted-signer': [2592],
  signer: [4896],
  authority: [2592],
  'authority-key': [4896],
  identity: [4896],
  trust: [2592],
  'primary-key': [2592],
  recipient: [1600, 32],
} as const;

export type KeyName = keyof typeof LENGTHS;

/** The keys a verb may use; absent ones were not given. */
export interface Keys {
  /** Recipient secret key: decrypt and authenticate. */
  unlock?: Uint8Array;
  /** Trusted ML-DSA-87 public key of the checkpoints. */
  signerPublicKey?: Uint8Array;
  /** ML-DSA-87 secret key: migrate signs its checkpoint. */
  signer?: Uint8Array;
  /** What the store opened must be (--store-id, --min-commit, --pin-file: _pin.ts). */
  pin?: StorePin;
}

/** The key options whose FILE holds a secret key. */
const SECRET_KEYS: ReadonlySet<KeyName> = new Set(['unlock', 'signer', 'authority-key', 'identity']);
// The files warned about in this run (index.ts empties it when a run starts).
const warned = new Set<string>();

/** Forgets the files warned about: each run warns once per file, as each process does. */
export function forgetWarnings(): void {
  warned.clear();
}

/**
 * Warns (once per file) when the file of secret key option `--<option>` has mode bits 0077 set.
 * @example
 * warnUnprotected('unlock', 'alice', statSync('alice').mode);
 */
function warnUnprotected(option: KeyName, file: string, mode: number): void {
  if (!SECRET_KEYS.has(option) || (mode & 0o077) === 0 || process.platform === 'win32' || warned.has(file)) return;
  warned.add(file);
  io.stderr.write(
    `pqdb: warning: UNPROTECTED SECRET KEY FILE ${file} (--${option}): mode 0${(mode & 0o777).toString(8)} lets others read or change it; chmod 600 ${file}\n`,
  );
}

/** The bytes of a key file and its mode (from the same open file). */
function readKeyFile(file: string): { raw: Buffer; mode: number } {
  const fd = openSync(file, 'r');
  try {
    const mode = fstatSync(fd).mode;
    return { raw: readFileSync(fd), mode };
  } finally {
    closeSync(fd);
  }
}

/**
 * One key from a file (raw bytes of an accepted length, else base64 text) or from an environment
 * variable's base64; the file wins. Returns undefined when neither is given. A secret key file
 * that others may read or change gets a warning on stderr once the key is read (`option`, the
 * option named in it, is `name` by default; false: no warning, the caller warns).
 * @throws UsageError for text that is not base64 or a key of the wrong length; the file system's
 * error when the file cannot be read.
 * @example
 * const unlock = keyFrom('unlock', values.unlock, process.env.PQDB_UNLOCK || undefined);
 */
export function keyFrom(
  name: KeyName,
  file: string | undefined,
  env: string | undefined,
  option: KeyName | false = name,
): Uint8Array | undefined {
  const lengths: readonly number[] = LENGTHS[name];
  let text: string | undefined = env;
  let mode = 0;
  if (file !== undefined) {
    const read = readKeyFile(file);
    mode = read.mode;
    if (lengths.includes(read.raw.length)) {
      if (option !== false) warnUnprotected(option, file, mode);
      return new Uint8Array(read.raw);
    }
    text = read.raw.toString('latin1');
  }
  if (text === undefined) return undefined;
  const clean = text.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(clean)) throw new UsageError(`--${name}: expected the key's raw bytes or base64`);
  const key = new Uint8Array(Buffer.from(clean, 'base64'));
  if (!lengths.includes(key.length))
    throw new UsageError(`--${name}: expected a key of ${lengths.join(' or ')} bytes, got ${key.length}`);
  if (file !== undefined && option !== false) warnUnprotected(option, file, mode);
  return key;
}

/**
 * The recipient public keys `--recipient FILE...` name (hybrid 1,600 bytes or X25519 32 bytes).
 * @throws UsageError for a file that holds a secret key: one with FILE.pub beside it (keygen's
 * secret half), the --unlock key itself, or 32 bytes that are no X25519 public key; as `keyFrom`.
 * @example
 * const recipients = recipientKeys(['alice.pub', 'bob.pub'], unlock);
 */
export function recipientKeys(files: readonly string[], unlock?: Uint8Array): Uint8Array[] {
  const keys: Uint8Array[] = [];
  for (const f of files) {
    const key = keyFrom('recipient', f, undefined)!;
    const beside = existsSync(`${f}.pub`);
    if (key.length === 32 && (beside || (unlock !== undefined && equalBytes(key, unlock)) || !isX25519PublicKey(key))) {
      key.fill(0);
      throw new UsageError(`--recipient ${f}: a secret key, not a public key${beside ? ` (give ${f}.pub)` : ''}`);
    }
    keys.push(key);
  }
  return keys;
}

/**
 * The three keys from `--unlock`, `--signer-public`, `--signer` or PQDB_UNLOCK, PQDB_SIGNER_PUBLIC,
 * PQDB_SIGNER (an empty variable counts as unset); without `--signer-public` or its variable, the
 * signer's public key is read from `<--signer FILE>.pub` when that file exists. On a failure the keys already loaded are wiped.
 * @throws as `keyFrom`.
 * @example
 * const keys = loadKeys(values, process.env);
 * try { … } finally { wipeKeys(keys); }
 */
export function loadKeys(
  files: { unlock?: string; 'signer-public'?: string; signer?: string },
  env: Record<string, string | undefined>,
): Keys {
  const keys: Keys = {};
  try {
    keys.unlock = keyFrom('unlock', files.unlock, env.PQDB_UNLOCK || undefined);
    keys.signer = keyFrom('signer', files.signer, env.PQDB_SIGNER || undefined);
    // The public half beside the secret key file (as keygen writes it) unless named itself.
    const beside = files.signer !== undefined && existsSync(`${files.signer}.pub`) ? `${files.signer}.pub` : undefined;
    const publicEnv = env.PQDB_SIGNER_PUBLIC || undefined;
    keys.signerPublicKey = keyFrom(
      'signer-public',
      files['signer-public'] ?? (publicEnv === undefined ? beside : undefined),
      publicEnv,
    );
    return keys;
  } catch (e) {
    wipeKeys(keys);
    throw e;
  }
}

/**
 * One ML-DSA-87 public key (2,592 bytes) from FILE for option `--<name>`.
 * @throws UsageError for a key of the wrong length (naming FILE; a secret key given instead is
 * told so); as `keyFrom`.
 * @example
 * const primaryKey = publicKeyFile('primary-key', 'primary.pub');
 */
export function publicKeyFile(name: 'authority' | 'trust' | 'primary-key', file: string): Uint8Array {
  try {
    return keyFrom(name, file, undefined)!;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    const secret = e.message.endsWith(`got ${LENGTHS.signer[0]}`) ? ': a secret key? give its FILE.pub' : '';
    throw new UsageError(`--${name} ${file}: ${e.message.replace(/^--[a-z-]+: /, '')}${secret}`, { cause: e });
  }
}

/**
 * The ML-DSA-87 public keys (2,592 bytes: keygen --signer's PREFIX.pub) that the options `--<name>`
 * give, each option a FILE or a comma-separated list of them; undefined when none is given.
 * @throws UsageError for a key of the wrong length or one named twice; as `keyFrom`.
 * @example
 * const pinned = publicKeyFiles('authority', ['auth1.pub,auth2.pub']); // two keys
 */
export function publicKeyFiles(
  name: 'authority' | 'trust',
  options: readonly string[] | undefined,
): Uint8Array[] | undefined {
  const files = (options ?? []).flatMap((o) => o.split(',').map((f) => f.trim())).filter((f) => f !== '');
  if (files.length === 0) return undefined;
  const keys = files.map((f) => publicKeyFile(name, f));
  const seen = new Set<string>();
  keys.forEach((k, i) => {
    const b = Buffer.from(k).toString('base64');
    if (seen.has(b)) throw new UsageError(`--${name}: ${files[i]} is a key already named`);
    seen.add(b);
  });
  return keys;
}

/**
 * The authority public keys `--authority` names (see `publicKeyFiles`).
 * @throws as `publicKeyFiles`.
 * @example
 * const pinned = authorityKeys(['auth1.pub,auth2.pub']); // two keys
 */
export function authorityKeys(options: readonly string[] | undefined): Uint8Array[] | undefined {
  return publicKeyFiles('authority', options);
}

/**
 * An ML-DSA-87 key pair as `pqdb keygen --signer` writes it, for option `--<name>`: the secret key
 * from FILE, the public key from FILE.pub, checked to be its public half (FIPS 204 Algorithm 6:
 * the secret key holds tr = SHAKE256(public key, 64) at bytes [64, 128)). The caller wipes the
 * secret key.
 * @throws UsageError for a missing FILE.pub, a key of the wrong length or halves of two pairs; the
 * file system's error when a file cannot be read.
 * @example
 * const identity = keyPairFile('identity', 'primary'); // primary and primary.pub
 */
export function keyPairFile(
  name: 'authority-key' | 'identity',
  file: string,
): { secretKey: Uint8Array; publicKey: Uint8Array } {
  if (!existsSync(`${file}.pub`))
    throw new UsageError(`--${name} ${file}: its public half ${file}.pub is missing (keygen --signer writes both)`);
  const named = <T>(load: () => T, what: string): T => {
    try {
      return load();
    } catch (e) {
      if (!(e instanceof UsageError)) throw e;
      throw new UsageError(`--${name} ${file}: ${what} ${e.message.replace(/^--[a-z-]+: /, '')}`, { cause: e });
    }
  };
  const publicKey = named(() => keyFrom('signer-public', `${file}.pub`, undefined)!, `${file}.pub:`);
  const secretKey = named(() => keyFrom('signer', file, undefined, false)!, 'the secret key:');
  if (!equalBytes(secretKey.subarray(64, 128), shake256(publicKey, { dkLen: 64 }))) {
    secretKey.fill(0);
    throw new UsageError(`--${name} ${file}: ${file}.pub is not the public half of this secret key`);
  }
  warnUnprotected(name, file, statSync(file).mode); // a pair refused above needs no warning
  return { secretKey, publicKey };
}

/**
 * Overwrites every key with zeros (mutates `keys`' arrays).
 * @example
 * wipeKeys(keys);
 */
export function wipeKeys(keys: Keys): void {
  keys.unlock?.fill(0);
  keys.signerPublicKey?.fill(0);
  keys.signer?.fill(0);
}
