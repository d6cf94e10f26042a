// The build: generated constants, the embedded WebAssembly builds of every module, flavour selection, and a
// smoke test of the bundled dist/ entries as a user imports them.
import { describe, it, expect } from 'vitest';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import * as api from '../src/crypto';
import { wasmBinary, WASM_MODULES } from '../src/wasm/builds';
import { isCspRefusal } from '../src/wasm/loader';
// @ts-expect-error plain ESM script without types
import { renderConstants } from '../scripts/gen-sha2-constants.mjs';
// @ts-expect-error plain ESM script without types
import { renderConstants as renderMlkemConstants } from '../scripts/gen-mlkem-constants.mjs';
// @ts-expect-error plain ESM script without types
import { renderVpermTables } from '../scripts/gen-aes-vperm.mjs';
// @ts-expect-error plain ESM script without types
import { renderConstants as renderMldsaConstants } from '../scripts/gen-mldsa-constants.mjs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const repo = new URL('..', import.meta.url);

describe('build', () => {
  it('the committed SHA-2 constants equal their FIPS 180-4 definitions', () => {
    expect(readFileSync(new URL('assembly/sha2/_constants.ts', repo), 'utf8')).toBe(renderConstants());
  });

  it('the other generated kernel sources are current: ML-KEM and ML-DSA constants, AES vperm tables, AES rounds', () => {
    expect(readFileSync(new URL('assembly/mlkem/_constants.ts', repo), 'utf8')).toBe(renderMlkemConstants());
    expect(readFileSync(new URL('assembly/aes/_vperm-tables.ts', repo), 'utf8')).toBe(renderVpermTables());
    expect(readFileSync(new URL('assembly/mldsa/_constants.ts', repo), 'utf8')).toBe(renderMldsaConstants());
    const out = join(mkdtempSync(join(tmpdir(), 'pqdb-gen-')), 'rounds.ts');
    execFileSync(process.execPath, ['scripts/gen-aes-rounds.mjs', '--out', out], { cwd: new URL('.', repo) });
    expect(readFileSync(out, 'utf8')).toBe(readFileSync(new URL('assembly/aes/_rounds.ts', repo), 'utf8'));
  });

  it('every module has both builds, each matching its recorded SHA-256, importing nothing, flagged by SIMD', () => {
    const builds = api.wasmBuilds();
    expect(Object.keys(builds).sort()).toEqual(WASM_MODULES.flatMap((m) => [`${m}.scalar`, `${m}.simd`]).sort());
    for (const name of WASM_MODULES) {
      for (const flavor of ['simd', 'scalar'] as const) {
        const bin = wasmBinary(name, flavor);
        expect(bin.length).toBe(builds[`${name}.${flavor}`].bytes);
        expect(createHash('sha256').update(bin).digest('hex')).toBe(builds[`${name}.${flavor}`].sha256);
        const mod = new WebAssembly.Module(bin);
        expect(WebAssembly.Module.imports(mod)).toEqual([]);
        const inst = new WebAssembly.Instance(mod, {});
        // keccak and x25519 have no SIMD code: one build (SIMD = 0) serves both flavours; every other
        // module has two.
        const shared = builds[`${name}.simd`].sha256 === builds[`${name}.scalar`].sha256;
        expect(shared, name).toBe(name === 'keccak' || name === 'x25519');
        expect((inst.exports.SIMD as WebAssembly.Global).value, `${name}.${flavor}`).toBe(
          flavor === 'simd' && !shared ? 1 : 0,
        );
        expect(inst.exports.MEM_IN, name).toBeInstanceOf(WebAssembly.Global);
        expect(inst.exports.MEM_OUT, name).toBeInstanceOf(WebAssembly.Global);
      }
    }
  });

  it('each module exports only its own family: ABI prefixes per module', () => {
    const prefixes: Record<string, RegExp> = {
      sha2: /^(sha2|hmac|hkdf|merkle)(_|$)/,
      aead: /^(aes|aead|polyval|ghash)_/,
      keccak: /^keccak_/,
      mlkem: /^mlkem_/,
      mldsa: /^mldsa_/,
      x25519: /^x25519_/,
    };
    for (const name of WASM_MODULES) {
      const fns = WebAssembly.Module.exports(new WebAssembly.Module(wasmBinary(name, 'simd')))
        .filter((e) => e.kind === 'function')
        .map((e) => e.name);
      expect(fns.length, name).toBeGreaterThan(0);
      for (const fn of fns) expect(fn, `${name} exports ${fn}`).toMatch(prefixes[name]);
    }
  });

  it('a CSP refusal is told apart from other compile failures (its WASM_UNAVAILABLE message names the directive)', () => {
    const chromium = new WebAssembly.CompileError(
      "WebAssembly.Module(): Refused to compile or instantiate WebAssembly module because 'unsafe-eval' is not an " +
        'allowed source of script in the following Content Security Policy directive: "script-src \'self\'"',
    );
    expect(isCspRefusal(chromium)).toBe(true);
    expect(isCspRefusal(new EvalError('call to WebAssembly.Module() blocked by CSP'))).toBe(true);
    let invalid: unknown;
    try {
      new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 99]));
    } catch (e) {
      invalid = e;
    }
    expect(invalid).toBeInstanceOf(WebAssembly.CompileError);
    expect(isCspRefusal(invalid)).toBe(false);
    expect(isCspRefusal(new TypeError('Content Security Policy'))).toBe(false);
  });

  it('setWasmFlavor switches builds and wasmFlavor reports it; SIMD is the default here', () => {
    api.setWasmFlavor('scalar');
    expect(api.wasmFlavor()).toBe('scalar');
    const a = api.sha384(new Uint8Array(1000));
    api.setWasmFlavor('simd');
    expect(api.wasmFlavor()).toBe('simd');
    expect(api.sha384(new Uint8Array(1000))).toEqual(a);
    api.setWasmFlavor(undefined);
    expect(api.simdSupported()).toBe(true);
    expect(api.wasmFlavor()).toBe(process.env.PQDB_WASM ?? 'simd');
  });

  it('dist/ bundles run in a plain Node process, and PQDB_WASM=scalar forces the scalar build', () => {
    const script = `
      import { sha384, merkle, wasmFlavor } from 'pqdb/crypto';
      import { VERSION, PqdbError } from 'pqdb';
      const d = sha384(new TextEncoder().encode('abc'));
      console.log(JSON.stringify({ flavor: wasmFlavor(), d: Buffer.from(d).toString('hex'), v: VERSION,
        root: Buffer.from(merkle.root([new Uint8Array([1])])).toString('hex'), e: typeof PqdbError }));`;
    for (const env of [{}, { PQDB_WASM: 'scalar' }]) {
      const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
        cwd: new URL('.', repo),
        env: { ...process.env, PQDB_WASM: undefined, ...env },
      }).toString();
      const r = JSON.parse(out);
      expect(r.flavor).toBe('PQDB_WASM' in env ? 'scalar' : 'simd');
      expect(r.d).toBe(createHash('sha384').update('abc').digest('hex'));
      expect(r.root).toBe(
        createHash('sha384')
          .update(Buffer.from([0, 1]))
          .digest('hex'),
      );
      expect(r.e).toBe('function');
    }
  });

  it('the published types hold the documented API, not the engine internals', () => {
    const types = (f: string) => readFileSync(new URL(`dist/types/${f}`, repo), 'utf8');
    const store = types('engine/store.d.ts');
    const collection = types('engine/collection.d.ts');
    for (const name of ['commitOps', ' read(', 'lexicalOf', 'buildIndex']) expect(store, name).not.toContain(name);
    for (const name of ['checkpoint(', 'migrate(', 'retireGenerations(', 'collection(', 'batch('])
      expect(store, name).toContain(name);
    expect(collection).not.toMatch(
      /get lexical|constructor\(|encodeOps|stageOps|writeSuite|PendingOp|CollectionEngine/,
    );
    expect(collection).toMatch(/search\(query/);
    expect(types('engine/commit.d.ts')).not.toMatch(/\baborted\(|\bcommitted\(|editedKeyring/);
  });
});
