// The browser benches' Chromium: the project's test server (browser-tests/server.mjs, which serves
// dist/ and the test pages) on a free port, and Debian's Chromium (CHROMIUM_PATH overrides) with the
// tests' flags (browser-tests/chromium-args.mjs), which keep it from doing work of its own.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { freePort } from './migration/common.mjs';
import { CHROMIUM_ARGS } from '../browser-tests/chromium-args.mjs';

/**
 * Starts the test server and Chromium; `close()` stops both.
 * @returns {Promise<{ browser: import('playwright-core').Browser, base: string, port: number, close: () => Promise<void> }>}
 */
export async function startChromium() {
  const port = await freePort();
  const server = spawn(
    process.execPath,
    [fileURLToPath(new URL('../browser-tests/server.mjs', import.meta.url)), String(port)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((resolve) => server.stdout.once('data', resolve));
  let browser;
  try {
    browser = await chromium.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [...CHROMIUM_ARGS],
    });
  } catch (e) {
    server.kill();
    throw e;
  }
  return {
    browser,
    port,
    base: `http://127.0.0.1:${port}`,
    close: async () => {
      await browser.close();
      server.kill();
    },
  };
}
