// Durability: a forked writer is SIGKILLed at random points while committing; after each kill the
// store reopens with every acknowledged commit present and readable, and nothing corrupt. On
// node-fs only: the writer is a child process writing the store's directory, and the kill loop is
// long (20 rounds, each a process start-up).
import { describe, it, expect } from 'vitest';
import { fork } from 'node:child_process';
import { generateRecipient } from '../src/node';
import { Rng } from './cases/_util';
import { nodeFsStoreFixture, perTest } from './support/store-fixtures';

const KILLS = Number(process.env.PQDB_CRASH_KILLS ?? 20);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const schema = { round: 'integer', i: 'integer', payload: 'string' } as const;

function runAndKill(
  dir: string,
  round: number,
  pub: string,
  sec: string,
  batch: number,
  delayMs: number,
): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const acked: string[] = [];
    const child = fork(
      new URL('./support/crash-writer.mjs', import.meta.url),
      [dir, String(round), pub, sec, String(batch)],
      { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] },
    );
    let stderr = '';
    child.stderr?.on('data', (d) => (stderr += d));
    child.on('message', (m: { ready?: boolean; acked?: number; count?: number }) => {
      if (m.ready) setTimeout(() => child.kill('SIGKILL'), delayMs);
      if (m.acked !== undefined) for (let j = m.acked; j < m.acked + (m.count ?? 1); j++) acked.push(`r${round}-${j}`);
    });
    child.on('exit', (code, signal) => {
      if (signal === 'SIGKILL') resolve(acked);
      else reject(new Error(`writer exited with ${code}: ${stderr}`));
    });
  });
}

describe('crash safety (SIGKILL during commits)', () => {
  const fresh = perTest(nodeFsStoreFixture);

  it(
    `${KILLS} kills: every acknowledged commit survives, nothing else is corrupt`,
    async () => {
      const f = await fresh();
      const r = generateRecipient('classical'); // classical keeps the writer's start-up short; the format is the same
      const rng = new Rng(Number(process.env.PQDB_SEED ?? 99));
      const allAcked = new Set<string>();
      let recoveries = 0;
      for (let round = 0; round < KILLS; round++) {
        const acked = await runAndKill(
          f.dir,
          round,
          hex(r.publicKey),
          hex(r.secretKey),
          round % 3 === 0 ? 25 : 1,
          20 + rng.int(180),
        );
        acked.forEach((k) => allAcked.add(k));
        const store = await f.open({ unlock: r.secretKey });
        const c = store.collection('crash', { schema });
        // Every acknowledged record is there and decrypts to what was written.
        for (const key of allAcked) {
          const v = await c.get(key);
          expect(v, key).toBeDefined();
          expect(`r${v!.round}-${v!.i}`).toBe(key);
        }
        // Everything present (acknowledged or not yet acknowledged when killed) opens cleanly.
        let n = 0;
        for await (const _ of c.scan()) n++;
        expect(n).toBeGreaterThanOrEqual(allAcked.size);
        if (!(store.info().storage === 'node-fs')) throw new Error('expected the file store');
        await store.close();
        recoveries++;
      }
      console.log(`crash test: ${KILLS} kills, ${allAcked.size} acknowledged records all present after each reopen`);
      expect(recoveries).toBe(KILLS);
      expect(allAcked.size).toBeGreaterThan(KILLS);
    },
    Math.max(240_000, KILLS * 5000),
  );
});
