// The worker of the browser bench (bench/browser.mjs): pqdb's worker engine as an app runs it,
// bundled into one file as an app's bundler bundles a worker (browser-tests/server.mjs), and, for the
// bench alone, the same small get timed inside the worker (the store opened here directly, once the
// page has closed its WorkerStore).
import { serveWorkerEngine } from '../../src/worker';
import { openStore } from '../../src/browser';

serveWorkerEngine();

addEventListener('message', async (e: MessageEvent) => {
  const m = e.data;
  if (m?.pqdbBench === 'gets') {
    const store = await openStore({ storage: m.storage, location: m.name, unlock: new Uint8Array(m.unlock) });
    const c = store.collection('synsets', { schema: m.schema });
    for (const id of m.ids) await c.get(id); // warm, as the page's gets were (after the ingest)
    const times: number[] = [];
    for (const id of m.ids) {
      const t = performance.now();
      await c.get(id);
      times.push(performance.now() - t);
    }
    await store.close();
    postMessage({ pqdbBench: 'gets', times });
  }
});
