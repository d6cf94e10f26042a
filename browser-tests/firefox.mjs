// The browser suites in Firefox ESR (Debian's firefox-esr), driven by puppeteer-core over WebDriver
// BiDi (Playwright drives only its own patched Firefox): the checks of browser-tests/engines/checks.mjs.
// navigator.storage.persist() is never called: under automation it closes the tab.
// Usage: node browser-tests/firefox.mjs   (after npm run build; FIREFOX_PATH overrides the binary)

import { existsSync } from 'node:fs';
import puppeteer from 'puppeteer-core';
import { runEngine } from './engines/harness.mjs';

const executablePath = process.env.FIREFOX_PATH ?? '/usr/bin/firefox-esr';
if (!existsSync(executablePath)) {
  console.log(`firefox: ${executablePath} is missing (apt-get install firefox-esr; .ci/run installs it)`);
  process.exit(1);
}

await runEngine('firefox', Number(process.env.PQDB_FIREFOX_PORT ?? 41741), async (base) => {
  const browser = await puppeteer.launch({ browser: 'firefox', executablePath, headless: true });
  return {
    version: await browser.version(),
    async onPage(path, ready, body) {
      const page = await browser.newPage();
      const errors = [];
      page.on('pageerror', (e) => errors.push(String(e)));
      try {
        await page.goto(`${base}${path}`);
        await page.waitForFunction(ready, { timeout: 300_000, polling: 200 });
        return await body(page, errors);
      } finally {
        await page.close();
      }
    },
    close: () => browser.close(),
  };
});
