// Handshake slots of a replication server (src/replication/tcp.ts): connections that never speak,
// held open until their deadline and opened again, must not keep a trusted replica out. The
// server bounds unauthenticated connections per source and overall, and a connection arriving at
// a bound ends the oldest (a silent one first). Loopback only: the attackers bind 127.0.0.2 … so
// that they are other sources than the trusted peer on 127.0.0.1; their reconnects are bounded.
import { describe, it, expect } from 'vitest';
import { connect as netConnect, type Socket } from 'node:net';
import { generateRecipient, generateSigner } from '../src/index';
import { openStore } from '../src/node';
import { connect, sourceOf } from '../src/replication/tcp';

const recipient = generateRecipient();
const primaryId = generateSigner();
const replicaId = generateSigner();

/** Silent connections from `localAddress`, each opened again when the server ends it (within `budget`). */
function silent(port: number, localAddress: string, count: number, budget: { left: number; stop: boolean }) {
  const open = new Set<Socket>();
  const one = () => {
    if (budget.stop || budget.left-- <= 0) return;
    const s = netConnect({ host: '127.0.0.1', port, localAddress });
    open.add(s);
    s.on('error', () => undefined);
    s.on('close', () => {
      open.delete(s);
      one();
    });
  };
  for (let i = 0; i < count; i++) one();
  return open;
}

describe('replication server: handshake slots', () => {
  it('a trusted replica gets in within one handshake while silent connections hold every slot', async () => {
    const store = await openStore({
      storage: 'memory',
      create: true,
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
    });
    const server = await store.serveReplication({ port: 0, identity: primaryId, trustedPeers: [replicaId.publicKey] });
    const budget = { left: 2000, stop: false };
    const attackers: Set<Socket>[] = [silent(server.port, '127.0.0.2', 40, budget)]; // one source, many
    for (let k = 3; k < 40; k++) attackers.push(silent(server.port, `127.0.0.${k}`, 1, budget)); // many sources
    try {
      await new Promise((r) => setTimeout(r, 300)); // every slot taken (32 by default)
      for (let attempt = 0; attempt < 3; attempt++) {
        const started = Date.now();
        const session = await connect({
          host: '127.0.0.1',
          port: server.port,
          identity: replicaId,
          serverPublicKey: primaryId.publicKey,
        }); // no retry: its first handshake (deadline 10 s) succeeds
        expect(Date.now() - started).toBeLessThan(10_000);
        await session.close();
      }
      expect(budget.left).toBeLessThan(2000 - 40 - 37); // the attackers were there, and reconnected
    } finally {
      budget.stop = true;
      for (const set of attackers) for (const s of set) s.destroy();
      await server.close();
      await store.close();
    }
  }, 30_000);

  it('groups sources: an IPv4 address (mapped too), an IPv6 /64', () => {
    expect(sourceOf('10.1.2.3')).toBe('10.1.2.3');
    expect(sourceOf('::ffff:10.1.2.3')).toBe('10.1.2.3');
    expect(sourceOf('2001:db8:1:2:aaaa::1')).toBe('2001:db8:1:2');
    expect(sourceOf('2001:db8:1:2::ffff')).toBe(sourceOf('2001:0db8:0001:0002:0:0:0:7'));
    expect(sourceOf('2001:db8:1:3::1')).not.toBe(sourceOf('2001:db8:1:2::1'));
    expect(sourceOf('::1')).toBe('0:0:0:0');
  });
});
