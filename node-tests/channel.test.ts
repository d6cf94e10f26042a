// The replication channel (src/replication, docs/replication.md "The channel") with real crypto:
// handshakes over an in-memory pair whose man in the middle alters, replays, reorders, drops and
// cuts records; the frame layer's checks; rekeying; secret hygiene; and TCP on 127.0.0.1 with a scan
// of the raw wire. The kernels the channel derives secrets with are wrapped (not replaced) so the
// test can see which secrets were made: the results pass through unchanged.
import { describe, it, expect, vi, afterEach } from 'vitest';
import { connect as netConnect } from 'node:net';
import { randomFillSync } from 'node:crypto';
import { PqdbError } from '../src/errors';
import { generateSigner } from '../src/index';
import { sha384 } from '../src/kernels/sha2';
import {
  clientConfig,
  clientHandshake,
  handshakeClient,
  handshakeServer,
  serverConfig,
  serverHandshake,
  type ClientConfig,
  type ServerConfig,
  MAX_MESSAGE_BYTES,
  type ClientOptions,
  type ServerOptions,
  type Session,
} from '../src/replication/channel';
import { connect, listen, socketTransport, type Listener } from '../src/replication/tcp';
import { END, memoryPair, records, tap, type Side, type Tamper } from './support/transport';

const seen = vi.hoisted(() => ({
  /** Every secret the channel's key schedule and KEM made: the array itself and a copy taken then. */
  secrets: [] as { ref: Uint8Array; copy: Uint8Array; what: string }[],
  /** Every keyed AEAD made. */
  aeads: [] as { encrypt(n: Uint8Array, p: Uint8Array, a?: Uint8Array): Uint8Array }[],
}));

vi.mock('../src/kernels/hmac', async (importOriginal) => {
  const m = await importOriginal<typeof import('../src/kernels/hmac')>();
  const prefix = 'pqdb replication v1 ';
  return {
    ...m,
    hkdf: (...args: Parameters<typeof m.hkdf>) => {
      const out = m.hkdf(...args);
      const info = new TextDecoder().decode(args[3] ?? new Uint8Array(0));
      if (info.startsWith(prefix)) seen.secrets.push({ ref: out, copy: new Uint8Array(out), what: info });
      return out;
    },
  };
});
vi.mock('../src/crypto/kem', async (importOriginal) => {
  const m = await importOriginal<typeof import('../src/crypto/kem')>();
  const h = m.ml_kem1024_x25519;
  const keep = (ref: Uint8Array, what: string) => seen.secrets.push({ ref, copy: new Uint8Array(ref), what });
  const hybrid: typeof h = Object.freeze({
    ...h,
    keygen: (seed?: Uint8Array) => {
      const r = h.keygen(seed);
      keep(r.secretKey, 'ephemeral KEM seed');
      return r;
    },
    encapsulate: (pk: Uint8Array, msg?: Uint8Array) => {
      const r = h.encapsulate(pk, msg);
      keep(r.sharedSecret, 'shared secret (server)');
      return r;
    },
    decapsulate: (ct: Uint8Array, sk: Uint8Array) => {
      const r = h.decapsulate(ct, sk);
      keep(r, 'shared secret (client)');
      return r;
    },
  });
  return { ...m, ml_kem1024_x25519: hybrid };
});
vi.mock('../src/kernels/aead', async (importOriginal) => {
  const m = await importOriginal<typeof import('../src/kernels/aead')>();
  const gcm = Object.freeze(
    Object.assign((k: Uint8Array, n: Uint8Array, a?: Uint8Array) => m.gcm(k, n, a), {
      ...m.gcm,
      withKey: (key: Uint8Array) => {
        const keyed = m.gcm.withKey(key);
        seen.aeads.push(keyed);
        return keyed;
      },
    }),
  );
  return { ...m, gcm };
});

const clientId = generateSigner();
const serverId = generateSigner();
const stranger = generateSigner();
const enc = new TextEncoder();
const dec = new TextDecoder();
const clientOptions: ClientOptions = { identity: clientId, serverPublicKey: serverId.publicKey };
const serverOptions: ServerOptions = { identity: serverId, trustedPeers: [stranger.publicKey, clientId.publicKey] };
const keyId = (pk: Uint8Array) => sha384(pk).slice(0, 16);
/** Byte equality (vitest's deep equality walks a megabyte array element by element, for seconds). */
const same = (a: Uint8Array, b: Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.length).equals(b);

/** Record layouts (docs/replication.md): [field, offset in the record, length]. */
const FIELDS: Record<string, [string, number, number][]> = {
  ClientHello: [
    ['type', 0, 1],
    ['length', 1, 4],
    ['protocol name', 5, 16],
    ['version', 21, 2],
    ['suite count', 23, 1],
    ['suite', 24, 2],
    ['client identity', 26, 48],
    ['client random', 74, 32],
    ['ML-KEM ephemeral key', 106, 1568],
    ['X25519 ephemeral key', 1674, 32],
  ],
  ServerHello: [
    ['type', 0, 1],
    ['length', 1, 4],
    ['version', 5, 2],
    ['chosen suite', 7, 2],
    ['server identity', 9, 48],
    ['server random', 57, 32],
    ['ML-KEM ciphertext', 89, 1568],
    ['X25519 ciphertext', 1657, 32],
    ['server signature', 1689, 4627],
  ],
  ClientFinished: [
    ['type', 0, 1],
    ['length', 1, 4],
    ['client signature', 5, 4627],
    ['client confirmation', 4632, 48],
  ],
  ServerFinished: [
    ['type', 0, 1],
    ['length', 1, 4],
    ['server confirmation', 5, 48],
  ],
};
/** Which side writes each handshake record, and its index among that side's writes. */
const WRITTEN: Record<string, [Side, number]> = {
  ClientHello: ['client', 0],
  ServerHello: ['server', 0],
  ClientFinished: ['client', 1],
  ServerFinished: ['server', 1],
};

const at = (side: Side, index: number, edit: (chunk: Uint8Array) => (Uint8Array | typeof END)[]): Tamper => {
  return (from, i, chunk) => (from === side && i === index ? edit(chunk) : undefined);
};

/** Both handshakes over one pair; each side's session, or the PqdbError it failed with. */
async function handshake(
  tamper?: Tamper,
  extra: { client?: Partial<ClientOptions>; server?: Partial<ServerOptions> } = {},
) {
  const { client, server } = memoryPair(tamper);
  const [c, s] = await Promise.allSettled([
    clientHandshake(client, { ...clientOptions, ...extra.client }),
    serverHandshake(server, { ...serverOptions, ...extra.server }),
  ]);
  return { c, s };
}

/**
 * Runs a handshake that must fail and returns each side's error: a side whose handshake completed
 * (the server, when the client refuses its last message) reports what its first receive threw, and
 * is listed in `completed`.
 */
async function refused(tamper?: Tamper, extra: Parameters<typeof handshake>[1] = {}) {
  const { c, s } = await handshake(tamper, extra);
  if (c.status === 'fulfilled' && s.status === 'fulfilled') throw new Error('both handshakes succeeded');
  const errorOf = async (r: PromiseSettledResult<Session>) =>
    r.status === 'rejected'
      ? r.reason
      : r.value.receive().then(
          () => new Error('data was delivered'),
          (e) => e,
        );
  const [client, server] = [await errorOf(c), await errorOf(s)];
  for (const e of [client, server]) expect(e, String(e)).toBeInstanceOf(PqdbError);
  const completed = [c.status === 'fulfilled' && 'client', s.status === 'fulfilled' && 'server'].filter(Boolean);
  return { client: client as PqdbError, server: server as PqdbError, completed };
}

/** Two established sessions over a pair with `tamper` (handshake records are writes 0 and 1 of each side). */
async function sessions(tamper?: Tamper, extra: Parameters<typeof handshake>[1] = {}) {
  const { c, s } = await handshake(tamper, extra);
  if (c.status === 'rejected') throw c.reason;
  if (s.status === 'rejected') throw s.reason;
  return { client: c.value, server: s.value };
}

/** What `session` delivers until it throws: the messages, then the error. */
async function drain(session: Session): Promise<{ got: string[]; error: PqdbError }> {
  const got: string[] = [];
  for (;;) {
    try {
      got.push(dec.decode(await session.receive()));
    } catch (e) {
      expect(e).toBeInstanceOf(PqdbError);
      return { got, error: e as PqdbError };
    }
  }
}

const flip = (chunk: Uint8Array, offset: number, mask = 0x01) => {
  const out = new Uint8Array(chunk);
  out[offset] ^= mask;
  return out;
};

describe('channel handshake', { timeout: 20_000 }, () => {
  it('authenticates both sides and carries messages both ways', async () => {
    const { client, server } = await sessions();
    expect(client.peer).toEqual(keyId(serverId.publicKey));
    expect(server.peer).toEqual(keyId(clientId.publicKey));
    expect(client.peerPublicKey).toEqual(serverId.publicKey);
    expect(server.peerPublicKey).toEqual(clientId.publicKey);
    expect([client.suite, server.suite]).toEqual([1, 1]);
    const big = new Uint8Array(1 << 20).map((_, i) => i * 7);
    const sent = [enc.encode('page 1'), new Uint8Array(0), big];
    for (const m of sent) await client.send(m);
    for (const m of sent) expect(same(await server.receive(), m)).toBe(true);
    await server.send(enc.encode('ack 3'));
    expect(dec.decode(await client.receive())).toBe('ack 3');
    expect(big[1]).toBe(7); // inputs are left as they were
    await client.close();
    const after = [];
    for await (const m of server) after.push(m);
    expect(after).toEqual([]);
  });

  it('refuses a client the server does not trust, on both ends', async () => {
    const { client, server } = await refused(undefined, { server: { trustedPeers: [stranger.publicKey] } });
    expect([client.code, server.code]).toEqual(['AUTH_FAILED', 'AUTH_FAILED']);
  });

  it('refuses a server other than the pinned key, on both ends', async () => {
    const { client, server } = await refused(undefined, { client: { serverPublicKey: stranger.publicKey } });
    expect([client.code, server.code]).toEqual(['AUTH_FAILED', 'AUTH_FAILED']);
  });

  it('refuses an impostor server that claims the pinned identity without its key, before the client signs', async () => {
    const impostor: ServerConfig = {
      ...serverConfig({ ...serverOptions, identity: stranger }),
      id: sha384(serverId.publicKey), // claims the pinned server; signs with its own key
    };
    const written: number[] = [];
    const { client, server } = memoryPair(
      (from, _i, chunk) => (from === 'client' && written.push(chunk[0]), undefined),
    );
    const [c, s] = await Promise.allSettled([
      clientHandshake(client, clientOptions),
      handshakeServer(server, impostor),
    ]);
    expect(c).toMatchObject({ status: 'rejected', reason: { code: 'AUTH_FAILED' } });
    expect(s).toMatchObject({ status: 'rejected', reason: { code: 'AUTH_FAILED' } });
    expect(written).toEqual([0x01, 0x15]); // ClientHello, then the alert: no ClientFinished, no signature
  });

  it('refuses an impostor client that claims a trusted identity without its key', async () => {
    const impostor: ClientConfig = {
      ...clientConfig({ ...clientOptions, identity: stranger }),
      id: sha384(clientId.publicKey), // claims a trusted client; signs with another key
    };
    const { client, server } = memoryPair();
    const [c, s] = await Promise.allSettled([
      handshakeClient(client, impostor),
      serverHandshake(server, { ...serverOptions, trustedPeers: [clientId.publicKey] }),
    ]);
    expect(s).toMatchObject({ status: 'rejected', reason: { code: 'AUTH_FAILED' } });
    expect(c).toMatchObject({ status: 'rejected', reason: { code: 'AUTH_FAILED' } });
  });

  for (const [message, fields] of Object.entries(FIELDS)) {
    const [side, index] = WRITTEN[message];
    it(`refuses a ${message} with any field altered, on both ends`, async () => {
      for (const [field, offset, length] of fields) {
        for (const o of new Set([offset, offset + (length >> 1), offset + length - 1])) {
          const { client, server, completed } = await refused(at(side, index, (chunk) => [flip(chunk, o)]));
          const codes = [client.code, server.code];
          expect(['AUTH_FAILED', 'PROTOCOL_ERROR'], `${field} byte ${o}: ${codes}`).toEqual(
            expect.arrayContaining(codes),
          );
          // Only the last message reaches a side that has finished: the server, which then hears the refusal.
          expect(completed, `${field} byte ${o}`).toEqual(message === 'ServerFinished' ? ['server'] : []);
        }
      }
    });
  }

  it('refuses a ServerHello replayed from an earlier session', async () => {
    let old: Uint8Array | undefined;
    await sessions((from, i, chunk) => (from === 'server' && i === 0 ? ((old = chunk), undefined) : undefined));
    const { client, server } = await refused(at('server', 0, () => [old!]));
    expect([client.code, server.code]).toEqual(['AUTH_FAILED', 'AUTH_FAILED']);
  });

  it("refuses an earlier session's ClientHello and ClientFinished replayed to the server", async () => {
    const flight: Uint8Array[] = [];
    await sessions((from, i, chunk) => (from === 'client' ? (i < 2 && flight.push(chunk), undefined) : undefined));
    const { client: attacker, server } = memoryPair();
    const accepted = serverHandshake(server, serverOptions);
    await attacker.write(flight[0]);
    const answer = await attacker.read(); // a fresh ServerHello
    expect(answer?.[0]).toBe(0x02);
    await attacker.write(flight[1]);
    await expect(accepted).rejects.toMatchObject({ code: 'AUTH_FAILED' });
  });

  it('refuses a downgraded offer: no common suite left', async () => {
    const { client, server } = await refused(at('client', 0, (chunk) => [flip(chunk, 25, 0x80)])); // suite 1 → 0x0081
    expect([client.code, server.code]).toEqual(['PROTOCOL_ERROR', 'PROTOCOL_ERROR']);
    expect(server.message).toMatch(/no channel suite/);
  });

  it('refuses an edited offer even when the server still finds a suite (the offer is signed)', async () => {
    const { client, server } = await refused(
      at('client', 0, (chunk) => {
        // The offer becomes [0x00ff, 0x0001]: a well-formed list, one entry longer.
        const out = new Uint8Array(chunk.length + 2);
        out.set(chunk.subarray(0, 24));
        out.set([0x00, 0xff], 24);
        out.set(chunk.subarray(24), 26);
        out[23] = 2;
        new DataView(out.buffer).setUint32(1, out.length - 5);
        return [out];
      }),
    );
    expect([client.code, server.code]).toEqual(['AUTH_FAILED', 'AUTH_FAILED']);
  });

  it('refuses a chosen suite the client did not offer, and an edited protocol version', async () => {
    const suite = await refused(at('server', 0, (chunk) => [flip(chunk, 8, 0x02)])); // chosen 1 → 3
    expect(suite.client.code).toBe('PROTOCOL_ERROR');
    expect(suite.client.message).toMatch(/not offered/);
    const version = await refused(at('client', 0, (chunk) => [flip(chunk, 22, 0x03)])); // version 1 → 2
    expect([version.client.code, version.server.code]).toEqual(['PROTOCOL_ERROR', 'PROTOCOL_ERROR']);
  });

  it('sends no application data before both confirmations (data in place of ClientFinished)', async () => {
    const fake = new Uint8Array(13 + 16);
    fake[0] = 0x10;
    new DataView(fake.buffer).setUint32(1, 24);
    const { client, server } = await refused(at('client', 1, () => [fake]));
    expect([client.code, server.code]).toEqual(['PROTOCOL_ERROR', 'PROTOCOL_ERROR']);
  });

  it('fails a handshake that does not finish in time', async () => {
    const { client } = memoryPair(); // nobody answers
    const t0 = Date.now();
    await expect(clientHandshake(client, { ...clientOptions, handshakeTimeoutMs: 150 })).rejects.toMatchObject({
      code: 'PROTOCOL_ERROR',
      message: expect.stringMatching(/did not finish within 150 ms/),
    });
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('checks its options', async () => {
    const { client, server } = memoryPair();
    const swapped = { publicKey: clientId.publicKey, secretKey: serverId.secretKey };
    expect(() => clientHandshake(client, { ...clientOptions, identity: swapped })).toThrow(RangeError);
    expect(() => clientHandshake(client, { ...clientOptions, serverPublicKey: new Uint8Array(32) })).toThrow(
      new RangeError('"serverPublicKey" expected Uint8Array of length 2592, got length=32'),
    );
    expect(() => serverHandshake(server, { identity: serverId, trustedPeers: 'all' as never })).toThrow(TypeError);
    expect(() => clientHandshake(client, { ...clientOptions, rekeyAfter: { frames: 0 } })).toThrow(RangeError);
  });
});

describe('channel frames', { timeout: 20_000 }, () => {
  const messages = ['m0', 'm1', 'm2', 'm3'];
  /** Client writes: 0 ClientHello, 1 ClientFinished, then message i is write 2 + i. */
  const msg = (i: number) => 2 + i;
  async function attack(tamper: Tamper) {
    const { client, server } = await sessions(tamper);
    for (const m of messages) await client.send(enc.encode(m)).catch(() => undefined);
    const result = await drain(server);
    const back = await client.receive().catch((e: unknown) => e); // the alert reached the sender
    expect(back).toBeInstanceOf(PqdbError);
    return { ...result, sender: back as PqdbError };
  }

  it('a flipped bit in a frame ends the session; nothing of that frame or after it is delivered', async () => {
    for (const offset of [5, 12, 13, 14, 16]) {
      // counter bytes, first ciphertext byte, last ciphertext byte, tag
      const r = await attack(at('client', msg(1), (chunk) => [flip(chunk, Math.min(offset, chunk.length - 1))]));
      expect(r.got, `offset ${offset}`).toEqual(['m0']);
      expect(r.error.code).toBe('AUTH_FAILED');
      expect(r.sender.code).toBe('AUTH_FAILED');
    }
    const type = await attack(at('client', msg(1), (chunk) => [flip(chunk, 0)])); // DATA → REKEY
    expect([type.got, type.error.code]).toEqual([['m0'], 'PROTOCOL_ERROR']);
  });

  it('a replayed frame ends the session', async () => {
    let first: Uint8Array | undefined;
    const r = await attack((from, i, chunk) => {
      if (from !== 'client') return undefined;
      if (i === msg(0)) first = chunk;
      return i === msg(2) ? [first!, chunk] : undefined;
    });
    expect([r.got, r.error.code]).toEqual([['m0', 'm1'], 'AUTH_FAILED']);
    const dup = await attack(at('client', msg(0), (chunk) => [chunk, chunk]));
    expect([dup.got, dup.error.code]).toEqual([['m0'], 'AUTH_FAILED']);
  });

  it('reordered frames end the session', async () => {
    let held: Uint8Array | undefined;
    const r = await attack((from, i, chunk) => {
      if (from !== 'client') return undefined;
      if (i === msg(1)) return ((held = chunk), []);
      return i === msg(2) ? [chunk, held!] : undefined;
    });
    expect([r.got, r.error.code]).toEqual([['m0'], 'AUTH_FAILED']);
  });

  it('a dropped frame ends the session', async () => {
    const r = await attack(at('client', msg(1), () => []));
    expect([r.got, r.error.code]).toEqual([['m0'], 'AUTH_FAILED']);
  });

  it('a connection cut inside a frame, or between frames without a close record, ends with PROTOCOL_ERROR', async () => {
    const inside = await attack(at('client', msg(1), (chunk) => [chunk.subarray(0, 9), END]));
    expect([inside.got, inside.error.code]).toEqual([['m0'], 'PROTOCOL_ERROR']);
    expect(inside.error.message).toMatch(/truncated/);
    const between = await attack(at('client', msg(1), () => [END]));
    expect([between.got, between.error.code]).toEqual([['m0'], 'PROTOCOL_ERROR']);
    expect(between.error.message).toMatch(/without a close record/);
  });

  it('an oversized length prefix is refused before any of its body arrives', async () => {
    const header = (length: number) => {
      const h = new Uint8Array(5);
      h[0] = 0x10;
      new DataView(h.buffer).setUint32(1, length);
      return h;
    };
    for (const length of [MAX_MESSAGE_BYTES + 8 + 16 + 1, 0xffffffff, 3]) {
      const { client, server } = await sessions(at('client', msg(1), () => [header(length)]));
      await client.send(enc.encode('m0'));
      await client.send(enc.encode('m1')); // only its 5-byte header goes out; no body ever follows
      const r = await drain(server);
      expect([r.got, r.error.code], String(length)).toEqual([['m0'], 'PROTOCOL_ERROR']);
    }
  });

  it('rekeys across many frames in each direction, independently', async () => {
    const wire: Record<Side, Uint8Array[]> = { client: [], server: [] };
    const { client, server } = await sessions((from, _i, chunk) => (wire[from].push(chunk), undefined), {
      client: { rekeyAfter: { frames: 3 } },
      server: { rekeyAfter: { frames: 1000, bytes: 5000 } },
    });
    const n = 200;
    const toServer = Array.from({ length: n }, (_, i) => new Uint8Array(i % 50).fill(i));
    const toClient = Array.from({ length: n }, (_, i) => new Uint8Array(100 + i).fill(255 - i));
    await Promise.all([...toServer.map((m) => client.send(m)), ...toClient.map((m) => server.send(m))]);
    for (const m of toServer) expect(await server.receive()).toEqual(m);
    for (const m of toClient) expect(await client.receive()).toEqual(m);
    const count = (side: Side, type: number) =>
      wire[side].flatMap((c) => records(c)).filter((r) => r.type === type).length;
    expect(count('client', 0x11)).toBe(Math.floor((n - 1) / 3));
    const bytes = toClient.reduce((a, m) => a + m.length, 0);
    expect(count('server', 0x11)).toBeGreaterThanOrEqual(Math.floor(bytes / 5000));
    await server.close();
    await expect(client.receive()).rejects.toMatchObject({ code: 'NOT_OPEN' });
  });

  it('a session ends cleanly: NOT_OPEN for later calls; close releases a waiting receive', async () => {
    const { client, server } = await sessions();
    const waiting = server.receive();
    await server.close();
    await server.close(); // idempotent
    await expect(waiting).rejects.toMatchObject({ code: 'NOT_OPEN' });
    await expect(server.send(enc.encode('late'))).rejects.toMatchObject({ code: 'NOT_OPEN' });
    await expect(client.receive()).rejects.toMatchObject({ code: 'NOT_OPEN', message: /peer closed/ });
    await expect(client.send(enc.encode('late'))).rejects.toMatchObject({ code: 'NOT_OPEN' });
  });

  it('carries a message of the largest size, and refuses a larger one', async () => {
    const { client, server } = await sessions();
    const m = new Uint8Array(MAX_MESSAGE_BYTES).fill(0x5a);
    await client.send(m);
    expect((await server.receive()).every((b) => b === 0x5a)).toBe(true);
    expect(() => client.send(new Uint8Array(MAX_MESSAGE_BYTES + 1))).toThrow(RangeError);
    await client.close();
  });
});

describe('channel secrets', { timeout: 20_000 }, () => {
  it('wipes the ephemeral KEM seed, the shared secret and every derived key once used or closed', async () => {
    seen.secrets.length = 0;
    seen.aeads.length = 0;
    const { client, server } = await sessions(undefined, { client: { rekeyAfter: { frames: 2 } } });
    for (let i = 0; i < 5; i++) await client.send(enc.encode(`m${i}`));
    for (let i = 0; i < 5; i++) await server.receive();
    const whats = seen.secrets.map((s) => s.what);
    for (const w of ['ephemeral KEM seed', 'shared secret (client)', 'shared secret (server)'])
      expect(whats).toContain(w);
    for (const label of ['c2s confirm', 's2c confirm', 'c2s key', 's2c key', 'c2s rekey'])
      expect(whats).toContain(`pqdb replication v1 ${label}`);
    const handshakeOnly = seen.secrets.filter((s) => !/ (key|rekey)$/.test(s.what));
    for (const s of handshakeOnly)
      expect(
        s.ref.every((b) => b === 0),
        s.what,
      ).toBe(true);
    expect(seen.secrets.every((s) => s.copy.some((b) => b !== 0))).toBe(true);
    await client.close();
    await expect(server.receive()).rejects.toMatchObject({ code: 'NOT_OPEN' });
    for (const s of seen.secrets)
      expect(
        s.ref.every((b) => b === 0),
        s.what,
      ).toBe(true);
    for (const a of seen.aeads) expect(() => a.encrypt(new Uint8Array(12), new Uint8Array(1))).toThrow(/destroyed/);
  });
});

describe('channel over TCP', { timeout: 20_000 }, () => {
  let listener: Listener | undefined;
  afterEach(async () => {
    await listener?.close();
    listener = undefined;
  });

  const echo = async (session: Session) => {
    for await (const m of session) await session.send(m);
  };

  it('round-trips megabytes on 127.0.0.1; no plaintext or secret key byte is on the wire', async () => {
    seen.secrets.length = 0;
    listener = await listen({ port: 0, ...serverOptions, onSession: echo });
    expect(listener.port).toBeGreaterThan(0);
    const socket = netConnect({ host: '127.0.0.1', port: listener.port });
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    const wire = tap(socketTransport(socket));
    const session = await clientHandshake(wire, clientOptions);
    const marker = enc.encode('PLAINTEXT-MARKER: a known sentence that must never be seen on the wire');
    const sizes = [marker.length, 1, 65_536, 1 << 20, 3 << 20, 300_000];
    const sent = sizes.map((n, i) => (i === 0 ? marker : randomFillSync(new Uint8Array(n))));
    await Promise.all(sent.map((m) => session.send(m)));
    for (const m of sent) expect(same(await session.receive(), m)).toBe(true);
    await session.close();

    const raw = Buffer.concat([...wire.sent, ...wire.received]);
    expect(raw.length).toBeGreaterThan(2 * sent.reduce((a, m) => a + m.length, 0));
    const needles: [string, Uint8Array][] = [['marker', marker]];
    for (const [i, m] of sent.entries())
      for (const o of [0, m.length >> 1, Math.max(0, m.length - 24)])
        needles.push([`message ${i} at ${o}`, m.subarray(o, o + 24)]);
    for (const [who, sk] of [
      ['client', clientId.secretKey],
      ['server', serverId.secretKey],
    ] as const)
      for (let o = 0; o + 32 <= sk.length; o += 256)
        needles.push([`${who} identity secret key at ${o}`, sk.subarray(o, o + 32)]);
    expect(seen.secrets.length).toBeGreaterThanOrEqual(7);
    for (const s of seen.secrets) needles.push([s.what, s.copy]);
    for (const [what, needle] of needles) if (needle.length >= 16) expect(raw.indexOf(needle), what).toBe(-1);
    expect(raw.indexOf(clientId.publicKey.subarray(0, 32))).toBe(-1); // identities travel as hashes
  });

  it('applies backpressure: sends wait while the peer does not read, then everything arrives', async () => {
    let served: Session | undefined;
    listener = await listen({ port: 0, ...serverOptions, onSession: (s) => void (served = s) });
    const session = await connect({ host: '127.0.0.1', port: listener.port, ...clientOptions });
    await expect.poll(() => served).toBeDefined();
    const message = new Uint8Array(1 << 20).fill(0xa5);
    const waits = (p: Promise<void>) =>
      Promise.race([p.then(() => false), new Promise<boolean>((r) => setTimeout(r, 300, true))]);
    let sent = 0;
    let pending: Promise<void>;
    do {
      pending = session.send(message);
      sent++;
      if (sent > 128) throw new Error('128 MiB went out to a peer that reads nothing');
    } while (!(await waits(pending)));
    for (let i = 0; i < sent; i++) expect(same(await served!.receive(), message)).toBe(true);
    await pending; // released once the peer read
    await session.close();
  });

  it('connect(): a trusted client is served, an untrusted one refused on both ends, close ends sessions', async () => {
    const errors: unknown[] = [];
    const held: Session[] = [];
    listener = await listen({
      port: 0,
      ...serverOptions,
      onSession: (s) => void held.push(s),
      onError: (e) => void errors.push(e),
    });
    const port = listener.port;
    const session = await connect({ host: '127.0.0.1', port, ...clientOptions });
    expect(session.peer).toEqual(keyId(serverId.publicKey));
    await session.send(enc.encode('hello'));
    await expect.poll(() => held.length).toBe(1);
    expect(dec.decode(await held[0].receive())).toBe('hello');

    const intruder = generateSigner();
    await expect(connect({ host: '127.0.0.1', port, ...clientOptions, identity: intruder })).rejects.toMatchObject({
      code: 'AUTH_FAILED',
    });
    await expect.poll(() => errors.length).toBe(1);
    expect(errors[0]).toMatchObject({ code: 'AUTH_FAILED' });

    await listener.close();
    listener = undefined;
    await expect(session.receive()).rejects.toMatchObject({ code: 'NOT_OPEN' });
    await expect(connect({ host: '127.0.0.1', port, ...clientOptions })).rejects.toMatchObject({ code: 'IO_ERROR' });
  });
});
