// The browser benches' Chromium: the project's test server (browser-tests/server.mjs, which serves
// dist/ and the test pages) on a free port, and Debian's Chromium (CHROMIUM_PATH overrides) with the
// tests' flags (browser-tests/chromium-args.mjs), which keep it from doing work of its own.

import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { freePort } from './migration/common.mjs';
import { CHROMIUM_ARGS } from '../browser-tests/chromium-args.mjs';

/**
 * Debian's Chromium on a fresh profile on disk, as a user's browser has one. A context without a
 * profile (Playwright's newContext) is incognito: OPFS and IndexedDB live in memory there, and every
 * call on a sync access handle is an IPC to the browser's process (a 400-byte write 0.8-1.4 ms, ~0.01
 * ms with a profile on this host), so storage figures taken that way measure another medium.
 * `browser` offers what the benches call: version(), newPage(), and newContext() (the one profile).
 * @param {string[]} [args] Chromium flags besides the tests' own
 */
export async function launchChromiumProfile(args = []) {
  const profile = await mkdtemp(join(tmpdir(), 'pqdb-bench-chromium-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [...CHROMIUM_ARGS, ...args],
    });
  } catch (e) {
    await rm(profile, { recursive: true, force: true });
    throw e;
  }
  // A persistent context has no Browser object: the version comes from the DevTools protocol (the
  // user agent string names only the major version).
  const close = async () => {
    await context.close();
    await rm(profile, { recursive: true, force: true });
  };
  let version;
  try {
    const cdp = await context.newCDPSession(context.pages()[0] ?? (await context.newPage()));
    const { product } = await cdp.send('Browser.getVersion');
    await cdp.detach();
    version = product.split('/')[1] ?? product;
  } catch (e) {
    await close();
    throw e;
  }
  const browser = {
    version: () => version,
    newPage: () => context.newPage(),
    newContext: async () => context,
  };
  return { browser, context, close };
}

/**
 * Starts the test server and Chromium (launchChromiumProfile); `close()` stops both.
 * @returns {Promise<{ browser: { version(): string, newPage(): Promise<import('playwright-core').Page>, newContext(): Promise<import('playwright-core').BrowserContext> }, base: string, port: number, close: () => Promise<void> }>}
 */
export async function startChromium() {
  const port = await freePort();
  const server = spawn(
    process.execPath,
    [fileURLToPath(new URL('../browser-tests/server.mjs', import.meta.url)), String(port)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  await new Promise((resolve) => server.stdout.once('data', resolve));
  let chrome;
  try {
    chrome = await launchChromiumProfile();
  } catch (e) {
    server.kill();
    throw e;
  }
  return {
    browser: chrome.browser,
    port,
    base: `http://127.0.0.1:${port}`,
    close: async () => {
      await chrome.close();
      server.kill();
    },
  };
}
