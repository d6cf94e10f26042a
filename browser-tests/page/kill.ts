// The page of the kill tests (browser-tests/kill-run.mjs): a store in a dedicated worker on OPFS,
// written to by single puts and small batches, each acknowledgement reported to the test at once
// (window.pqdbAcked, a Playwright binding) before the next write, and each id before it is sent
// (window.pqdbSending); the test then kills the page's
// renderer, closes its target, or has the page terminate its worker, at a random moment. `check`
// reads the store back in a fresh worker.
import { openStore } from '../../src/client';

const u8 = (a: number[]) => new Uint8Array(a);
const schema = { n: 'number', pad: 'string' } as const;
declare const pqdbAcked: (ids: number[]) => Promise<void>;
declare const pqdbSending: (ids: number[]) => Promise<void>;

interface WriteOptions {
  name: string;
  from: number;
  unlock: number[];
  recipient: number[];
  signer: number[];
  signerPublicKey: number[];
  /** Terminates the worker this many ms after the first write (never when undefined). */
  terminateAfterMs?: number;
}

const api = {
  /** Writes ids from `from` on until the page dies; reports each acknowledged id. */
  async write(o: WriteOptions): Promise<void> {
    const worker = new Worker('/page/kill-worker.js', { type: 'module' });
    const store = await openStore({
      worker,
      location: o.name,
      storage: 'opfs',
      create: true,
      recipients: [u8(o.recipient)],
      unlock: u8(o.unlock),
      signer: u8(o.signer),
      signerPublicKey: u8(o.signerPublicKey),
    });
    const c = store.collection('k', { schema });
    (globalThis as { pqdbOpen?: boolean }).pqdbOpen = true;
    if (o.terminateAfterMs !== undefined) setTimeout(() => worker.terminate(), o.terminateAfterMs);
    const pad = 'x'.repeat(200);
    for (let i = o.from; ;) {
      if (i % 3 === 2) {
        const ids = [i, i + 1, i + 2, i + 3];
        await pqdbSending(ids);
        await store.batch((tx) => {
          for (const n of ids) tx.put(c, `k${n}`, { n, pad });
        });
        await pqdbAcked(ids);
        i += ids.length;
      } else {
        await pqdbSending([i]);
        await c.put(`k${i}`, { n: i, pad });
        await pqdbAcked([i]);
        i++;
      }
      if (i % 40 === 0) await store.checkpoint(); // a signed checkpoint now and then, inside the run
    }
  },
  /** What the store holds, read in a fresh worker after a kill (kill-worker.ts). */
  check(o: { name: string; unlock: number[]; signerPublicKey: number[] }): Promise<{
    ok: boolean;
    problems: string[];
    records: [string, number][];
  }> {
    const worker = new Worker('/page/kill-worker.js', { type: 'module' });
    return new Promise((resolve) => {
      worker.onmessage = (e) => {
        if (e.data?.pqdbKill !== 'checked') return;
        worker.terminate();
        resolve(e.data);
      };
      worker.postMessage({ pqdbKill: 'check', ...o });
    });
  },
};
(globalThis as unknown as { pqdbKill: typeof api }).pqdbKill = api;
