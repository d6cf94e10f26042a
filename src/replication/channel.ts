// The post-quantum authenticated channel replication runs over (DESIGN §10, §11; the byte layouts,
// key schedule and the reason for every check are in docs/replication.md, "The channel").
//
//   client                                                     server
//   ClientHello  "pqdb-replication" ‖ version ‖ suites ‖ client id ‖ random ‖ ephemeral KEM key  →
//             ←  ServerHello  version ‖ suite ‖ server id ‖ random ‖ KEM ciphertext ‖ sig_S(H₁)
//   ClientFinished  sig_C(H₂) ‖ HMAC(client confirmation key, H₃)                               →
//             ←  ServerFinished  HMAC(server confirmation key, H₄)
//
// Both sides hold ML-DSA-87 identity keys (from `generateSigner()`) and pin their peer: the client
// one server key, the server a list of client keys. Key establishment is pqdb's ML-KEM-1024 + X25519
// hybrid KEM to a fresh ephemeral key per session; H₁…H₄ are SHA-384 over every handshake record
// so far (the server's signature over H₁ covers the client's offer, so a downgrade breaks it); the
// confirmation and traffic keys come from the hybrid secret by HKDF-SHA384 with a transcript hash
// as salt. No application data moves before both confirmations (no 0-RTT). Security caveats: the
// identities (key hashes) travel in the clear; the server signs before it has authenticated the
// client, so an unauthenticated party can make it spend one signature per connection (tcp.ts bounds
// concurrent handshakes); an alert is unauthenticated (it can only end a session, as cutting the
// connection can). The ephemeral KEM secret, the shared secret and every derived key are wiped on
// every path; the identity secret key belongs to the caller.

import { bytes, copyBytes, integer } from '../_args';
import { equalBytes } from '../_bytes';
import { utf8 } from '../_utf8';
import { hex } from '../_encoding';
import { PqdbError } from '../errors';
import { ml_kem1024_x25519 } from '../crypto/kem';
import { hmac } from '../kernels/hmac';
import { ML_DSA87_LENGTHS, ml_dsa87 } from '../kernels/mldsa';
import { randomBytes } from '../kernels/mlkem';
import { sha384 } from '../kernels/sha2';
import { shake256 } from '../kernels/sha3';
import {
  alertFor,
  asPqdbError,
  authFailed,
  protocolError,
  record,
  RecordReader,
  CLIENT_FINISHED,
  CLIENT_HELLO,
  RECORD_HEADER_BYTES,
  SERVER_FINISHED,
  SERVER_HELLO,
  type Accept,
  type Received,
  type Transport,
} from './_records';
import { ChannelSession, derive, rekeyLimits, type RekeyAfter, type Session } from './_session';

export type { Transport } from './_records';
export type { RekeyAfter, Session } from './_session';
export { MAX_MESSAGE_BYTES } from './_records';
export { REKEY_BYTES, REKEY_FRAMES } from './_session';

export const PROTOCOL_NAME = 'pqdb-replication';
export const PROTOCOL_VERSION = 1;

/** A channel suite: the algorithms of one session, by the id both sides negotiate. */
export interface ChannelSuite {
  readonly id: number;
  readonly name: string;
  readonly kem: string;
  readonly signature: string;
  readonly kdf: string;
  readonly aead: string;
}

/** The suites this implementation speaks, strongest first (a server chooses the first one offered). */
export const CHANNEL_SUITES: readonly ChannelSuite[] = /* @__PURE__ */ Object.freeze([
  Object.freeze({
    id: 0x0001,
    name: 'mlkem1024-x25519_mldsa87_hkdf-sha384_aes256gcm',
    kem: 'ML-KEM-1024 + X25519 (pqdb hybrid, FIPS 203)',
    signature: 'ML-DSA-87 (FIPS 204, pure, with context)',
    kdf: 'HKDF-SHA384 (RFC 5869)',
    aead: 'AES-256-GCM (SP 800-38D)',
  }),
]);

const NAME = /* @__PURE__ */ utf8(PROTOCOL_NAME);
const SERVER_CONTEXT = /* @__PURE__ */ utf8('pqdb replication server v1');
const CLIENT_CONTEXT = /* @__PURE__ */ utf8('pqdb replication client v1');
const MAX_OFFERED = 16;
const ID_BYTES = 48; // an identity on the wire: SHA-384(ML-DSA-87 public key)
const KEY_ID_BYTES = 16; // the key id pqdb names a signer by: the first 16 bytes of that hash
const RANDOM_BYTES = 32;
const MAC_BYTES = 48;
const SIG = ML_DSA87_LENGTHS.signature;
const KEM = ml_kem1024_x25519.lengths;
/** ClientHello body without its suite list: name ‖ version ‖ count ‖ … ‖ id ‖ random ‖ KEM public key. */
const HELLO_FIXED = NAME.length + 2 + 1 + ID_BYTES + RANDOM_BYTES + KEM.publicKey;
const SERVER_HELLO_BYTES = 2 + 2 + ID_BYTES + RANDOM_BYTES + KEM.cipherText + SIG;
const CLIENT_FINISHED_BYTES = SIG + MAC_BYTES;
export const DEFAULT_HANDSHAKE_TIMEOUT_MS = 10_000;

const accept = (type: number, min: number, max = min): Accept => new Map([[type, [min, max] as const]]);
const CLIENT_HELLO_ACCEPT = accept(CLIENT_HELLO, HELLO_FIXED + 2, HELLO_FIXED + 2 * MAX_OFFERED);
const SERVER_HELLO_ACCEPT = accept(SERVER_HELLO, SERVER_HELLO_BYTES);
const CLIENT_FINISHED_ACCEPT = accept(CLIENT_FINISHED, CLIENT_FINISHED_BYTES);
const SERVER_FINISHED_ACCEPT = accept(SERVER_FINISHED, MAC_BYTES);

/** An ML-DSA-87 key pair, as `generateSigner()` makes it. */
export interface Identity {
  publicKey: Uint8Array;
  secretKey: Uint8Array;
}

export interface HandshakeOptions {
  /** This side's ML-DSA-87 identity key pair (kept by the caller; never copied into the session). */
  identity: Identity;
  /** The whole handshake must finish within this (default 10,000 ms), or it fails with PROTOCOL_ERROR. */
  handshakeTimeoutMs?: number;
  /** How often this side rekeys what it sends; only lowers the protocol's maxima (REKEY_FRAMES, REKEY_BYTES). */
  rekeyAfter?: RekeyAfter;
}

export interface ClientOptions extends HandshakeOptions {
  /** The one server ML-DSA-87 public key this client accepts. */
  serverPublicKey: Uint8Array;
}

export interface ServerOptions extends HandshakeOptions {
  /** The ML-DSA-87 public keys of the clients this server accepts. */
  trustedPeers: readonly Uint8Array[];
}

interface Common {
  identity: Identity;
  id: Uint8Array;
  timeoutMs: number;
  rekey: { frames: number; bytes: number };
}
/** Checked client options. @internal */
export interface ClientConfig extends Common {
  serverPublicKey: Uint8Array;
  serverId: Uint8Array;
}
/** Checked server options, with the trusted keys by identity. @internal */
export interface ServerConfig extends Common {
  trusted: ReadonlyMap<string, Uint8Array>;
}

function checkPublicKey(name: string, key: unknown): Uint8Array {
  return copyBytes(bytes(name, key, ML_DSA87_LENGTHS.publicKey));
}

function common(options: HandshakeOptions): Common {
  if (typeof options !== 'object' || options === null) throw new TypeError('"options" expected an object');
  const identity = options.identity;
  if (typeof identity !== 'object' || identity === null)
    throw new TypeError('"identity" expected { publicKey, secretKey } from generateSigner()');
  const publicKey = checkPublicKey('identity.publicKey', identity.publicKey);
  const secretKey = bytes('identity.secretKey', identity.secretKey, ML_DSA87_LENGTHS.secretKey);
  // FIPS 204 Algorithm 24: the secret key holds tr = H(pk, 64) at bytes [64, 128).
  if (!equalBytes(secretKey.subarray(64, 128), shake256(publicKey, { dkLen: 64 })))
    throw new RangeError('"identity.publicKey" is not the public key of "identity.secretKey"');
  const t = options.handshakeTimeoutMs;
  return {
    identity: { publicKey, secretKey },
    id: sha384(publicKey),
    timeoutMs: t === undefined ? DEFAULT_HANDSHAKE_TIMEOUT_MS : integer('handshakeTimeoutMs', t, 1, 2 ** 31 - 1),
    rekey: rekeyLimits(options.rekeyAfter),
  };
}

/** Checks client options once (tcp.ts checks them before it connects). @internal */
export function clientConfig(options: ClientOptions): ClientConfig {
  const c = common(options);
  const serverPublicKey = checkPublicKey('serverPublicKey', options.serverPublicKey);
  return { ...c, serverPublicKey, serverId: sha384(serverPublicKey) };
}

/** Checks server options once (a listener checks them before it binds). @internal */
export function serverConfig(options: ServerOptions): ServerConfig {
  const c = common(options);
  if (!Array.isArray(options.trustedPeers)) throw new TypeError('"trustedPeers" expected an array of public keys');
  const trusted = new Map<string, Uint8Array>();
  options.trustedPeers.forEach((k, i) => {
    const key = checkPublicKey(`trustedPeers[${i}]`, k);
    trusted.set(hex(sha384(key)), key);
  });
  return { ...c, trusted };
}

/** The handshake records so far; `hash` = SHA-384 over them (and `tail`, a record's signed prefix). */
class Transcript {
  readonly #records: Uint8Array[] = [];
  add(rec: Uint8Array): void {
    this.#records.push(rec);
  }
  hash(tail?: Uint8Array): Uint8Array {
    const h = sha384.create();
    for (const r of this.#records) h.update(r);
    if (tail !== undefined) h.update(tail);
    return h.digest();
  }
}

/** Confirmation keys from the hybrid secret with salt H₂ = SHA-384(ClientHello ‖ ServerHello). */
function confirmationKeys(ss: Uint8Array, h2: Uint8Array): { c2s: Uint8Array; s2c: Uint8Array } {
  return { c2s: derive(ss, h2, 'c2s confirm', MAC_BYTES), s2c: derive(ss, h2, 's2c confirm', MAC_BYTES) };
}

/** Traffic keys from the hybrid secret with salt H₄ = SHA-384(ClientHello ‖ ServerHello ‖ ClientFinished). */
function trafficKeys(ss: Uint8Array, h4: Uint8Array): { c2s: Uint8Array; s2c: Uint8Array } {
  return { c2s: derive(ss, h4, 'c2s key', 32), s2c: derive(ss, h4, 's2c key', 32) };
}

/** A kernel's INVALID_KEY for a key share the peer chose is the peer breaking the protocol. */
function peerShare<T>(fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof PqdbError && e.code === 'INVALID_KEY')
      throw protocolError('the peer sent an invalid key share', e);
    throw e;
  }
}

/** The ClientHello record: name ‖ be16 version ‖ count ‖ be16 suites ‖ identity ‖ random ‖ ephemeral key. */
function clientHello(offered: readonly number[], id: Uint8Array, ephemeral: Uint8Array): Uint8Array {
  const rec = record(CLIENT_HELLO, HELLO_FIXED + 2 * offered.length);
  const dv = new DataView(rec.buffer);
  const suites = RECORD_HEADER_BYTES + NAME.length + 3;
  rec.set(NAME, RECORD_HEADER_BYTES);
  dv.setUint16(suites - 3, PROTOCOL_VERSION);
  rec[suites - 1] = offered.length;
  offered.forEach((suite, i) => dv.setUint16(suites + 2 * i, suite));
  const rest = suites + 2 * offered.length;
  rec.set(id, rest);
  rec.set(randomBytes(RANDOM_BYTES), rest + ID_BYTES);
  rec.set(ephemeral, rest + ID_BYTES + RANDOM_BYTES);
  return rec;
}

async function expect(reader: RecordReader, what: Accept): Promise<Received> {
  const rec = await reader.next(what);
  if (rec === null) throw protocolError('the connection ended during the handshake');
  return rec;
}

/**
 * Runs one side's handshake under its deadline. On failure it tells the peer with an alert, ends
 * the transport and throws a PqdbError (PROTOCOL_ERROR when the deadline passed).
 */
async function run<T>(transport: Transport, timeoutMs: number, steps: (r: RecordReader) => Promise<T>): Promise<T> {
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    transport.close(); // a pending read resolves null, a pending write ends
  }, timeoutMs);
  try {
    return await steps(new RecordReader(transport));
  } catch (e) {
    const err = timedOut ? protocolError(`the handshake did not finish within ${timeoutMs} ms`, e) : asPqdbError(e);
    transport
      .write(alertFor(err))
      .catch(() => undefined)
      .finally(() => transport.close());
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Runs the client side of the handshake over `transport` and returns the session. The transport
 * belongs to the session from here on (and is closed when the handshake fails).
 * @throws TypeError/RangeError for bad options; PqdbError AUTH_FAILED (the server is not the pinned
 * key, or a signature or confirmation fails), PROTOCOL_ERROR (a malformed or unexpected message, no
 * common suite, the deadline), IO_ERROR (the transport failed).
 * @example const session = await clientHandshake(transport, { identity: replica, serverPublicKey: primary.publicKey })
 */
export function clientHandshake(transport: Transport, options: ClientOptions): Promise<Session> {
  return handshakeClient(transport, clientConfig(options));
}

/** clientHandshake with options already checked. @internal */
export function handshakeClient(transport: Transport, c: ClientConfig): Promise<Session> {
  return run(transport, c.timeoutMs, async (reader) => {
    const transcript = new Transcript();
    const eph = ml_kem1024_x25519.keygen();
    let ss: Uint8Array | undefined;
    let confirm: { c2s: Uint8Array; s2c: Uint8Array } | undefined;
    let traffic: { c2s: Uint8Array; s2c: Uint8Array } | undefined;
    try {
      // ClientHello
      const offered = CHANNEL_SUITES.map((s) => s.id);
      const ch = clientHello(offered, c.id, eph.publicKey);
      transcript.add(ch);
      await transport.write(ch);

      // ServerHello: version, a suite we offered, the pinned server, its signature over H₁
      const sh = await expect(reader, SERVER_HELLO_ACCEPT);
      const body = sh.body;
      const bv = new DataView(body.buffer, body.byteOffset, body.length);
      if (bv.getUint16(0) !== PROTOCOL_VERSION) throw protocolError('the server chose another protocol version');
      const suite = bv.getUint16(2);
      if (!offered.includes(suite)) throw protocolError('the server chose a suite that was not offered');
      if (!equalBytes(body.subarray(4, 4 + ID_BYTES), c.serverId)) throw authFailed();
      const signedEnd = RECORD_HEADER_BYTES + body.length - SIG;
      const h1 = transcript.hash(sh.bytes.subarray(0, signedEnd));
      const sig = sh.bytes.subarray(signedEnd);
      if (!ml_dsa87.verify(sig, h1, c.serverPublicKey, { context: SERVER_CONTEXT })) throw authFailed();
      const ct = body.subarray(4 + ID_BYTES + RANDOM_BYTES, 4 + ID_BYTES + RANDOM_BYTES + KEM.cipherText);
      ss = peerShare(() => ml_kem1024_x25519.decapsulate(ct, eph.secretKey));
      eph.secretKey.fill(0);
      transcript.add(sh.bytes);

      // ClientFinished: our signature over H₂, then our confirmation over H₃
      const h2 = transcript.hash();
      confirm = confirmationKeys(ss, h2);
      const cf = record(CLIENT_FINISHED, CLIENT_FINISHED_BYTES);
      cf.set(ml_dsa87.sign(h2, c.identity.secretKey, { context: CLIENT_CONTEXT }), RECORD_HEADER_BYTES);
      const h3 = transcript.hash(cf.subarray(0, RECORD_HEADER_BYTES + SIG));
      cf.set(hmac(sha384, confirm.c2s, h3), RECORD_HEADER_BYTES + SIG);
      transcript.add(cf);
      await transport.write(cf);

      // ServerFinished: the server's confirmation over H₄
      const h4 = transcript.hash();
      const sf = await expect(reader, SERVER_FINISHED_ACCEPT);
      if (!equalBytes(sf.body, hmac(sha384, confirm.s2c, h4))) throw authFailed();
      traffic = trafficKeys(ss, h4);
      const session = new ChannelSession({
        transport,
        reader,
        sendKey: traffic.c2s,
        receiveKey: traffic.s2c,
        role: 'client',
        peerPublicKey: c.serverPublicKey,
        peer: c.serverId.slice(0, KEY_ID_BYTES),
        suite,
        rekey: c.rekey,
      });
      traffic = undefined; // the session owns them now
      return session;
    } finally {
      eph.secretKey.fill(0);
      ss?.fill(0);
      confirm?.c2s.fill(0);
      confirm?.s2c.fill(0);
      traffic?.c2s.fill(0);
      traffic?.s2c.fill(0);
    }
  });
}

/**
 * Runs the server side of the handshake over `transport` and returns the session once the client
 * has proved its identity and key. The transport belongs to the session from here on.
 * @throws TypeError/RangeError for bad options; PqdbError AUTH_FAILED (the client is not trusted, or
 * its signature or confirmation fails), PROTOCOL_ERROR, IO_ERROR as for clientHandshake.
 * @example const session = await serverHandshake(transport, { identity: primary, trustedPeers: [replica.publicKey] })
 */
export function serverHandshake(transport: Transport, options: ServerOptions): Promise<Session> {
  return handshakeServer(transport, serverConfig(options));
}

/** serverHandshake with options already checked. @internal */
export function handshakeServer(transport: Transport, c: ServerConfig): Promise<Session> {
  return run(transport, c.timeoutMs, async (reader) => {
    const transcript = new Transcript();
    let ss: Uint8Array | undefined;
    let confirm: { c2s: Uint8Array; s2c: Uint8Array } | undefined;
    let traffic: { c2s: Uint8Array; s2c: Uint8Array } | undefined;
    try {
      // ClientHello: our protocol and version, a suite both speak, a trusted client
      const ch = await expect(reader, CLIENT_HELLO_ACCEPT);
      const hello = ch.body;
      const dv = new DataView(hello.buffer, hello.byteOffset, hello.length);
      if (!equalBytes(hello.subarray(0, NAME.length), NAME)) throw protocolError('not a pqdb-replication client');
      let at = NAME.length;
      if (dv.getUint16(at) !== PROTOCOL_VERSION) throw protocolError('unsupported protocol version');
      const count = hello[(at += 2)];
      at += 1;
      if (count < 1 || count > MAX_OFFERED || hello.length !== HELLO_FIXED + 2 * count)
        throw protocolError('malformed suite list');
      const offered = Array.from({ length: count }, (_, i) => dv.getUint16(at + 2 * i));
      at += 2 * count;
      const suite = CHANNEL_SUITES.find((s) => offered.includes(s.id));
      if (suite === undefined) throw protocolError('no channel suite both sides support');
      const clientId = hello.subarray(at, at + ID_BYTES);
      const clientKey = c.trusted.get(hex(clientId));
      if (clientKey === undefined) throw authFailed();
      const ephemeral = hello.subarray(at + ID_BYTES + RANDOM_BYTES);
      transcript.add(ch.bytes);

      // ServerHello: our choice, identity, random and KEM ciphertext, signed over H₁
      const enc = peerShare(() => ml_kem1024_x25519.encapsulate(ephemeral));
      ss = enc.sharedSecret;
      const sh = record(SERVER_HELLO, SERVER_HELLO_BYTES);
      const sv = new DataView(sh.buffer);
      sv.setUint16(RECORD_HEADER_BYTES, PROTOCOL_VERSION);
      sv.setUint16(RECORD_HEADER_BYTES + 2, suite.id);
      sh.set(c.id, RECORD_HEADER_BYTES + 4);
      sh.set(randomBytes(RANDOM_BYTES), RECORD_HEADER_BYTES + 4 + ID_BYTES);
      sh.set(enc.cipherText, RECORD_HEADER_BYTES + 4 + ID_BYTES + RANDOM_BYTES);
      const signedEnd = sh.length - SIG;
      const h1 = transcript.hash(sh.subarray(0, signedEnd));
      sh.set(ml_dsa87.sign(h1, c.identity.secretKey, { context: SERVER_CONTEXT }), signedEnd);
      transcript.add(sh);
      await transport.write(sh);

      // ClientFinished: the client's signature over H₂ and its confirmation over H₃
      const h2 = transcript.hash();
      confirm = confirmationKeys(ss, h2);
      const cf = await expect(reader, CLIENT_FINISHED_ACCEPT);
      const sig = cf.body.subarray(0, SIG);
      const h3 = transcript.hash(cf.bytes.subarray(0, RECORD_HEADER_BYTES + SIG));
      const signed = ml_dsa87.verify(sig, h2, clientKey, { context: CLIENT_CONTEXT });
      const confirmed = equalBytes(cf.body.subarray(SIG), hmac(sha384, confirm.c2s, h3));
      if (!signed || !confirmed) throw authFailed();
      transcript.add(cf.bytes);

      // ServerFinished: our confirmation over H₄; the session starts
      const h4 = transcript.hash();
      traffic = trafficKeys(ss, h4);
      await transport.write(record(SERVER_FINISHED, hmac(sha384, confirm.s2c, h4)));
      const session = new ChannelSession({
        transport,
        reader,
        sendKey: traffic.s2c,
        receiveKey: traffic.c2s,
        role: 'server',
        peerPublicKey: clientKey,
        peer: copyBytes(clientId, 0, KEY_ID_BYTES),
        suite: suite.id,
        rekey: c.rekey,
      });
      traffic = undefined; // the session owns them now
      return session;
    } finally {
      ss?.fill(0);
      confirm?.c2s.fill(0);
      confirm?.s2c.fill(0);
      traffic?.c2s.fill(0);
      traffic?.s2c.fill(0);
    }
  });
}
