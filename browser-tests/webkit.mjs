// The browser suites in WebKitGTK (Debian's webkit2gtk-driver): WebKitWebDriver drives its
// MiniBrowser over WebDriver classic, headed under Xvfb (MiniBrowser has no headless mode): the
// checks of browser-tests/engines/checks.mjs. WebKitGTK has IndexedDB, Web Locks, workers and
// WebAssembly but not OPFS, which the run reports as unavailable. It is not Safari (docs/testing.md).
// Usage: node browser-tests/webkit.mjs   (after npm run build; WEBKIT_DRIVER, MINIBROWSER override)

import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { runEngine } from './engines/harness.mjs';

const driverPath = process.env.WEBKIT_DRIVER ?? '/usr/bin/WebKitWebDriver';
const miniBrowser =
  process.env.MINIBROWSER ??
  ['/usr/lib/x86_64-linux-gnu', '/usr/lib/aarch64-linux-gnu', '/usr/lib']
    .flatMap((d) =>
      existsSync(d)
        ? readdirSync(d)
            .filter((n) => /^webkit2?gtk-/.test(n))
            .map((n) => `${d}/${n}/MiniBrowser`)
        : [],
    )
    .find((p) => existsSync(p));
if (!existsSync(driverPath) || miniBrowser === undefined) {
  console.log(
    `webkit: WebKitWebDriver or MiniBrowser is missing (apt-get install webkit2gtk-driver xvfb; .ci/run installs them)`,
  );
  process.exit(1);
}

const children = [];
const display = process.env.DISPLAY ?? ':97';
if (process.env.DISPLAY === undefined) {
  children.push(spawn('Xvfb', [display, '-screen', '0', '1280x1024x24', '-nolisten', 'tcp'], { stdio: 'ignore' }));
  await new Promise((r) => setTimeout(r, 500));
}
const driverPort = Number(process.env.PQDB_WEBKIT_DRIVER_PORT ?? 41762);
children.push(
  spawn(driverPath, [`--port=${driverPort}`], { stdio: 'ignore', env: { ...process.env, DISPLAY: display } }),
);

const wdBase = `http://127.0.0.1:${driverPort}`;
async function wd(method, path, body) {
  const r = await fetch(`${wdBase}${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const j = await r.json();
  if (j.value?.error !== undefined) throw new Error(`WebDriver ${j.value.error}: ${j.value.message}`);
  return j.value;
}

for (let i = 0; ; i++) {
  try {
    await wd('GET', '/status');
    break;
  } catch (e) {
    if (i > 50) throw e;
    await new Promise((r) => setTimeout(r, 200));
  }
}

await runEngine('webkit', Number(process.env.PQDB_WEBKIT_PORT ?? 41761), async (base) => {
  const session = await wd('POST', '/session', {
    capabilities: {
      alwaysMatch: { 'webkitgtk:browserOptions': { binary: miniBrowser, args: ['--automation'] } },
    },
  });
  const id = session.sessionId;
  await wd('POST', `/session/${id}/timeouts`, { script: 600_000, pageLoad: 60_000 });
  /** Runs `fn(arg)` in the page and resolves with its (awaited) result, JSON-cloned. */
  const evaluate = async (fn, arg) => {
    const script = `const done = arguments[arguments.length - 1];
      Promise.resolve().then(() => (${fn.toString()})(arguments[0]))
        .then((v) => done({ ok: v === undefined ? null : v }), (e) => done({ err: String((e && e.stack) || e) }));`;
    const r = await wd('POST', `/session/${id}/execute/async`, { script, args: [arg ?? null] });
    if (r.err !== undefined) throw new Error(r.err);
    return r.ok;
  };
  // Each page of the checks is a window: the first one reused, one opened for each page a check
  // opens while another is open (a second tab) and closed when that check is done with it. Calls
  // go to the window of the page they were made on.
  const first = await wd('GET', `/session/${id}/window`);
  let current = first;
  const focus = async (handle) => {
    if (current === handle) return;
    await wd('POST', `/session/${id}/window`, { handle });
    current = handle;
  };
  let open = 0;
  return {
    version: `WebKitGTK ${session.capabilities?.browserVersion ?? ''}`.trim(),
    async onPage(path, ready, body) {
      const nested = open > 0;
      const handle = nested ? (await wd('POST', `/session/${id}/window/new`, { type: 'tab' })).handle : first;
      open++;
      try {
        await focus(handle);
        await wd('POST', `/session/${id}/url`, { url: `${base}${path}` });
        // Classic WebDriver reports no page errors: the page collects its own ('error' and
        // 'unhandledrejection' events) from here on.
        await evaluate(() => {
          globalThis.__errors ??= [];
          addEventListener('error', (e) => globalThis.__errors.push(String(e.message)));
          addEventListener('unhandledrejection', (e) => globalThis.__errors.push(String(e.reason)));
        });
        for (const started = Date.now(); !(await evaluate(ready));) {
          if (Date.now() - started > 300_000) throw new Error(`${path}: not ready after 300 s`);
          await new Promise((r) => setTimeout(r, 200));
        }
        // The errors the page collected so far, refreshed after each call.
        const errors = [];
        const page = {
          async evaluate(fn, arg) {
            await focus(handle);
            const v = await evaluate(fn, arg);
            errors.splice(0, errors.length, ...(await evaluate(() => globalThis.__errors ?? [])));
            return v;
          },
        };
        return await body(page, errors);
      } finally {
        open--;
        if (nested) {
          // The tab closes, as a user closes it.
          await focus(handle);
          await wd('DELETE', `/session/${id}/window`);
          current = undefined;
        }
      }
    },
    close: async () => {
      await wd('DELETE', `/session/${id}`).catch(() => undefined);
      for (const c of children) c.kill();
    },
  };
});
