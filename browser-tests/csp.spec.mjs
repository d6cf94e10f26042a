// A page whose Content-Security-Policy does not allow WebAssembly compilation: the kernels fail with
// WASM_UNAVAILABLE and the message itself names the directive the page needs; the same page with
// 'wasm-unsafe-eval' works. Served through page.route so the CSP header is the test's own.
import { test, expect } from '@playwright/test';

const page = (csp) => ({
  status: 200,
  headers: { 'content-type': 'text/html', 'content-security-policy': csp },
  body: `<!doctype html><meta charset="utf-8"><script type="module">
    const report = (e) => ({ code: e?.code, message: String(e?.message), cause: String(e?.cause) });
    globalThis.pqdbCsp = (async () => {
      const out = {};
      const crypto = await import('/dist/crypto.js');
      try { out.hash = Array.from(crypto.sha384(new Uint8Array(3))).length; } catch (e) { out.hash = report(e); }
      const pqdb = await import('/dist/browser.js');
      try {
        const r = pqdb.generateRecipient();
        const store = await pqdb.openStore({ storage: 'memory', create: true, recipients: [r.publicKey], unlock: r.secretKey });
        await store.collection('c', { schema: { v: 'integer' } }).put('a', { v: 1 });
        out.store = 'opened';
        await store.close();
      } catch (e) { out.store = report(e); }
      return out;
    })();
  </script>`,
});

async function run(p, csp) {
  await p.route('**/csp', (route) => route.fulfill(page(csp)));
  await p.goto('/csp');
  await p.waitForFunction(() => 'pqdbCsp' in globalThis);
  return p.evaluate(() => globalThis.pqdbCsp);
}

test("without 'wasm-unsafe-eval': WASM_UNAVAILABLE whose message names the CSP directive", async ({ page: p }) => {
  const out = await run(p, "default-src 'self'; script-src 'self' 'unsafe-inline'");
  for (const r of [out.hash, out.store]) {
    expect(r.code).toBe('WASM_UNAVAILABLE');
    expect(r.message).toContain('Content-Security-Policy');
    expect(r.message).toContain("script-src 'wasm-unsafe-eval'");
    expect(r.cause).toMatch(/CompileError/);
  }
});

test("with 'wasm-unsafe-eval' the same page hashes and opens a store", async ({ page: p }) => {
  const out = await run(p, "default-src 'self'; script-src 'self' 'unsafe-inline' 'wasm-unsafe-eval'");
  expect(out).toEqual({ hash: 48, store: 'opened' });
});
