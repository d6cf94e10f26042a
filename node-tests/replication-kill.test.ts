// The replication campaign in small (bench/replication.mjs runs the article's 240-second one): a
// primary writes distinct typed records on a schedule; a replica in its own process follows it
// over the post-quantum channel on TCP, is SIGKILLed, stays down, and is started again on the same
// retained store. It must resume from its own watermark (not from zero), read new content soon
// after the restart, and end with every record, typed and equal to the primary's, at the same
// watermark.
import { describe, it, expect } from 'vitest';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openStore, openReplica, generateRecipient, generateSigner } from '../src/node';

const b64 = (b: Uint8Array) => Buffer.from(b).toString('base64');
const schema = { lemma: 'string', n: 'integer' } as const;

interface Line {
  event: string;
  ms: number;
  records?: number;
  appliedWatermark: number;
  commitWatermark: number;
}

function startReplica(dir: string, port: number, env: Record<string, string>): { child: ChildProcess; lines: Line[] } {
  const child = spawn(process.execPath, ['node-tests/support/replica-proc.mjs', dir, '127.0.0.1', String(port)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines: Line[] = [];
  let buf = '';
  child.stdout!.on('data', (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      lines.push(JSON.parse(buf.slice(0, i)) as Line);
      buf = buf.slice(i + 1);
    }
  });
  return { child, lines };
}

const until = async (test: () => boolean, ms: number, what: string) => {
  const end = Date.now() + ms;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
};

describe('replication: a replica killed and restarted', () => {
  it('resumes from its own watermark, reads new content soon after, and ends equal to the primary', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'pqdb-repl-'));
    const recipient = generateRecipient();
    const signer = generateSigner();
    const primaryId = generateSigner();
    const replicaId = generateSigner();
    const store = await openStore({
      location: join(dir, 'primary'),
      create: true,
      recipients: [recipient.publicKey],
      unlock: recipient.secretKey,
      signer: signer.secretKey,
      signerPublicKey: signer.publicKey,
      suite: 'cnsa2-gcm-hkdf384-commit',
    });
    const server = await store.serveReplication({ port: 0, identity: primaryId, trustedPeers: [replicaId.publicKey] });
    const env = {
      PQDB_TEST_UNLOCK: b64(recipient.secretKey),
      PQDB_TEST_ID_PUB: b64(replicaId.publicKey),
      PQDB_TEST_ID_SEC: b64(replicaId.secretKey),
      PQDB_TEST_PRIMARY_PUB: b64(primaryId.publicKey),
    };
    const words = store.collection('words', { schema });
    const TOTAL = 96;
    let written = 0;
    const writer = (async () => {
      // One record every 40 ms: about 4 s of writing.
      while (written < TOTAL) {
        await words.put(`w${String(written).padStart(3, '0')}`, { lemma: `lemma ${written}`, n: written });
        written++;
        await new Promise((r) => setTimeout(r, 40));
      }
    })();
    const replicaDir = join(dir, 'replica');
    let run = startReplica(replicaDir, server.port, env);
    try {
      await until(() => written >= 30 && (run.lines.at(-1)?.records ?? 0) >= 20, 10_000, 'the replica to follow');
      run.child.kill('SIGKILL');
      await new Promise((r) => run.child.once('exit', r));
      const retained = run.lines.at(-1)!;
      await new Promise((r) => setTimeout(r, 1000)); // down for a second while writes go on
      const restartAt = written;
      run = startReplica(replicaDir, server.port, env);
      await until(() => run.lines.length > 0, 10_000, 'the replica to reopen');
      const opened = run.lines[0];
      expect(opened.appliedWatermark).toBeGreaterThanOrEqual(retained.appliedWatermark); // its own store, not zero
      await until(() => (run.lines.at(-1)?.records ?? 0) > restartAt, 10_000, 'new content after the restart');
      const resumed = run.lines.find((l) => (l.records ?? 0) > restartAt)!;
      await writer;
      await until(() => run.lines.at(-1)?.appliedWatermark === store.info().commit, 10_000, 'the final drain');
      run.child.kill('SIGKILL');
      await new Promise((r) => run.child.once('exit', r));
      // A full typed reread on both sides, against the schedule the writer followed.
      const replica = await openReplica({
        location: replicaDir,
        unlock: recipient.secretKey,
        identity: replicaId,
        primary: { host: '127.0.0.1', port: server.port, publicKey: primaryId.publicKey },
      });
      await replica.applied(store.info().commit);
      const rw = replica.collection<{ lemma: string; n: number }>('words', { schema });
      for (let i = 0; i < TOTAL; i++) {
        const id = `w${String(i).padStart(3, '0')}`;
        const expected = { lemma: `lemma ${i}`, n: i };
        expect(await words.get(id)).toEqual(expected);
        expect(await rw.get(id)).toEqual(expected);
      }
      expect(rw.size).toBe(TOTAL);
      const s = replica.status();
      expect(s.appliedWatermark).toBe(store.info().commit);
      expect(s.commitWatermark).toBe(store.info().commit);
      console.log(
        `[replication] retained ${retained.records} records at the kill, reopened at watermark ${opened.appliedWatermark} in ${opened.ms.toFixed(0)} ms, new content ${resumed.ms.toFixed(0)} ms after the restart; both at ${s.appliedWatermark}`,
      );
      await replica.close();
    } finally {
      run.child.kill('SIGKILL');
      await writer.catch(() => undefined);
      await server.close();
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
