// The dedicated worker of browser-tests/page/kill.html: pqdb's worker engine as an app runs it and,
// for the kill tests alone, `check`: the store on OPFS verified as it lies (verifyStore: every page,
// the manifest, every record opened), then opened and read in full, so the test compares what it
// holds with what the killed page was told was acknowledged.
import { serveWorkerEngine } from '../../src/worker';
import { openStore, verifyStore } from '../../src/browser';
import { openOpfsPageStore } from '../../src/storage/opfs';

serveWorkerEngine();

async function retryLocked<T>(open: () => Promise<T>): Promise<T> {
  for (let waited = 0; ; waited += 20) {
    try {
      return await open();
    } catch (e) {
      if ((e as { code?: string }).code !== 'LOCKED' || waited > 5_000) throw e;
      await new Promise((r) => setTimeout(r, 20));
    }
  }
}

addEventListener('message', async (e: MessageEvent) => {
  const m = e.data;
  if (m?.pqdbKill !== 'check') return;
  try {
    const unlock = new Uint8Array(m.unlock);
    const signerPublicKey = new Uint8Array(m.signerPublicKey);
    // The killed worker's access handles are let go by the browser soon after it dies, not at once.
    const pages = await retryLocked(() => openOpfsPageStore(m.name));
    let report;
    try {
      report = await verifyStore(pages, { unlock, signerPublicKey });
    } finally {
      await pages.close();
    }
    const store = await retryLocked(() => openStore({ storage: 'opfs', location: m.name, unlock }));
    const records: [string, number][] = [];
    try {
      const c = store.collection('k', { schema: { n: 'number', pad: 'string' } });
      for await (const { id, value } of c.scan()) records.push([id, value.n]);
    } finally {
      await store.close();
    }
    postMessage({
      pqdbKill: 'checked',
      ok: report.ok,
      problems: report.problems.slice(0, 5).map((p) => `${p.where}: ${p.message}`),
      records,
    });
  } catch (err) {
    postMessage({ pqdbKill: 'checked', ok: false, problems: [String((err as Error)?.stack ?? err)], records: [] });
  }
});
