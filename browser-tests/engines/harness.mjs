// What every browser engine's run shares: the test server on its own port, the report lines
// (`[engine] ok|FAIL name: detail`) and the closing line `engine: N passed, N failed, N features
// unavailable`, and the exit code.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { engineChecks } from './checks.mjs';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Starts the server on `port`, then `start(base)` → { version, onPage, close } (the engine's driver),
 * runs every check and exits.
 */
export async function runEngine(engine, port, start) {
  const server = spawn(process.execPath, [join(here, '..', 'server.mjs'), String(port)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise((resolve, reject) => {
    server.stdout.on('data', (d) => String(d).includes('pqdb test page') && resolve());
    server.on('exit', (code) => reject(new Error(`the test server exited (${code})`)));
  });
  const results = { passed: 0, failed: 0, unavailable: [] };
  const report = (name, ok, detail = '') => {
    console.log(`[${engine}] ${ok ? 'ok  ' : 'FAIL'} ${name}${detail ? `: ${detail}` : ''}`);
    if (ok) results.passed++;
    else results.failed++;
  };
  let driver;
  try {
    driver = await start(`http://127.0.0.1:${port}`);
    console.log(`[${engine}] ${driver.version}`);
    await engineChecks({
      onPage: driver.onPage,
      tabs: driver.tabs !== false,
      report,
      unavailable: (u) => results.unavailable.push(u),
    });
  } catch (e) {
    report(`the ${engine} run`, false, String(e?.stack ?? e));
  } finally {
    await driver?.close().catch(() => undefined);
    server.kill();
  }
  for (const u of results.unavailable) console.log(`[${engine}] unavailable in ${driver?.version ?? engine}: ${u}`);
  console.log(
    `${engine}: ${results.passed} passed, ${results.failed} failed, ${results.unavailable.length} features unavailable`,
  );
  process.exit(results.failed > 0 ? 1 : 0);
}
