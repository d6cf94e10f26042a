// The known-answer test page: loads the vector files from /vectors/, runs every suite with the
// bundled dist/ build on both WebAssembly builds, and shows one table per build. Playwright reads
// the result from window.katResult.

import * as api from 'pqdb/crypto';
import { allKatSuites, katProblems } from '../../node-tests/cases/kat';
import type { Summary } from '../../node-tests/cases/_util';

async function load(path: string): Promise<unknown> {
  const res = await fetch(`/vectors/${path}`);
  if (!res.ok) throw new Error(`GET /vectors/${path}: ${res.status}`);
  return res.json();
}

function table(flavor: string, suites: Summary[], ms: number): HTMLElement {
  const section = document.createElement('section');
  const h = document.createElement('h2');
  h.textContent = `${flavor} build — ${(ms / 1000).toFixed(1)} s`;
  section.append(h);
  const t = document.createElement('table');
  t.innerHTML =
    '<thead><tr><th>file</th><th>passed</th><th>failed</th><th>skipped</th><th>skip reason</th></tr></thead>';
  const body = document.createElement('tbody');
  for (const s of suites) {
    const tr = document.createElement('tr');
    tr.className = s.failures.length ? 'fail' : 'ok';
    for (const v of [s.name, s.passed, s.failures.length, s.skipped, s.note ?? '']) {
      const td = document.createElement('td');
      td.textContent = String(v);
      tr.append(td);
    }
    body.append(tr);
  }
  t.append(body);
  section.append(t);
  return section;
}

async function run(): Promise<void> {
  const status = document.getElementById('status')!;
  const result: { flavor: string; suites: Summary[]; problems: string[] }[] = [];
  for (const flavor of ['simd', 'scalar'] as const) {
    status.textContent = `running the ${flavor} build…`;
    api.setWasmFlavor(flavor);
    const t0 = performance.now();
    const suites = await allKatSuites(load, api, false);
    result.push({ flavor, suites, problems: katProblems(suites) });
    document.getElementById('tables')!.append(table(flavor, suites, performance.now() - t0));
    await new Promise((r) => setTimeout(r, 0)); // let the page paint between builds
  }
  const problems = result.flatMap((r) => r.problems);
  status.textContent =
    problems.length === 0
      ? 'all known-answer tests passed'
      : `${problems.length} problems: ${problems.slice(0, 5).join('; ')}`;
  status.className = problems.length === 0 ? 'ok' : 'fail';
  (globalThis as unknown as { katResult: unknown }).katResult = result;
}

run().catch((e) => {
  document.getElementById('status')!.textContent = `error: ${e}`;
  (globalThis as unknown as { katResult: unknown }).katResult = { error: String(e) };
});
