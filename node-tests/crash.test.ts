// Durability: a forked writer is SIGKILLed at random points while committing; after each kill the
// store reopens with every acknowledged commit present and readable, and nothing corrupt. On
// node-fs only: the writer is a child process writing the store's directory, and the kill loop is
// long (20 rounds, each a process start-up).
import { describe, it, expect } from 'vitest';
import { generateRecipient, verifyStore } from '../src/node';
import { openNodeFsPageStore } from '../src/storage/node-fs';
import { Rng } from './cases/_util';
import { runUntilKilled } from './support/kill';
import { nodeFsStoreFixture, perTest } from './support/store-fixtures';

const KILLS = Number(process.env.PQDB_CRASH_KILLS ?? 20);
const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');
const schema = { round: 'integer', i: 'integer', payload: 'string' } as const;

async function runAndKill(
  dir: string,
  round: number,
  pub: string,
  sec: string,
  batch: number,
  delayMs: number,
): Promise<string[]> {
  const acked: string[] = [];
  const writer = new URL('./support/crash-writer.mjs', import.meta.url);
  await runUntilKilled<{ ready?: boolean; acked?: number; count?: number }>(
    writer,
    [dir, String(round), pub, sec, String(batch)],
    (m, kill) => {
      if (m.ready) kill(delayMs);
      if (m.acked !== undefined) for (let j = m.acked; j < m.acked + (m.count ?? 1); j++) acked.push(`r${round}-${j}`);
    },
  );
  return acked;
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

  it('kills during compaction: every record keeps its last acknowledged value or a later one, and the store verifies', async () => {
    const f = await fresh();
    const r = generateRecipient('classical');
    const rng = new Rng(Number(process.env.PQDB_SEED ?? 7));
    let acked = -1;
    let compactions = 0;
    for (let kill = 0; kill < Math.max(4, Math.round(KILLS / 3)); kill++) {
      await runUntilKilled<{ ready?: boolean; acked?: number; compacted?: number }>(
        new URL('./support/compact-writer.mjs', import.meta.url),
        [f.dir, String(acked + 1), hex(r.publicKey), hex(r.secretKey)],
        (m, kill) => {
          if (m.ready) kill(150 + rng.int(400));
          if (m.acked !== undefined) acked = Math.max(acked, m.acked);
          if (m.compacted !== undefined) compactions++;
        },
      );
      const store = await f.open({ unlock: r.secretKey });
      const c = store.collection('k', { schema: { round: 'integer', payload: 'string' } });
      if (acked >= 0)
        for (let j = 0; j < 200; j++) expect((await c.get(`k${j}`))?.round, `k${j}`).toBeGreaterThanOrEqual(acked);
      await store.close();
    }
    const pages = await openNodeFsPageStore(f.dir, { readOnly: true });
    const report = await verifyStore(pages, { unlock: r.secretKey });
    await pages.close();
    expect(report.problems).toEqual([]);
    expect(acked).toBeGreaterThan(0);
    expect(compactions).toBeGreaterThan(0);
  }, 240_000);
});
