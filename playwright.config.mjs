import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS } from './browser-tests/chromium-args.mjs';

const port = Number(process.env.PQDB_TEST_PORT ?? 41731);

export default defineConfig({
  testDir: 'browser-tests',
  testMatch: '**/*.spec.mjs',
  timeout: 180_000,
  workers: 1,
  reporter: [['list'], ['./browser-tests/summary-reporter.mjs']],
  outputDir: 'test-results',
  use: {
    baseURL: `http://127.0.0.1:${port}`,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [...CHROMIUM_ARGS],
    },
  },
  webServer: {
    command: `node browser-tests/server.mjs ${port}`,
    url: `http://127.0.0.1:${port}/`,
    reuseExistingServer: false,
    timeout: 60_000,
  },
});
