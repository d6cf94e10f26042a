// Errors: PqdbError shape and codes; argument checks with the documented message style.
import { describe, it, expect } from 'vitest';
import * as api from '../src/crypto';
import { PqdbError, ERROR_CODES } from '../src/index';
import { readFileSync } from 'node:fs';

describe('errors', () => {
  it('PqdbError carries a stable code, a name and an ES2022 cause', () => {
    const cause = new Error('disk');
    const e = new PqdbError('IO_ERROR', 'write failed', { cause });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('PqdbError');
    expect(e.code).toBe('IO_ERROR');
    expect(e.cause).toBe(cause);
    expect(api.PqdbError).toBe(PqdbError);
  });

  it('every error code is listed in the README', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    for (const code of ERROR_CODES) expect(readme, code).toContain(`\`${code}\``);
  });

  it('programmer mistakes throw TypeError/RangeError with the documented message style', () => {
    expect(() => api.sha384('abc' as unknown as Uint8Array)).toThrow(
      new TypeError('"msg" expected Uint8Array, got string'),
    );
    expect(() => api.sha384([1, 2] as unknown as Uint8Array)).toThrow(TypeError);
    expect(() => api.hmac(api.sha384, null as unknown as Uint8Array, new Uint8Array(1))).toThrow(
      new TypeError('"key" expected Uint8Array, got null'),
    );
    expect(() =>
      api.hmac((() => new Uint8Array(32)) as unknown as typeof api.sha256, new Uint8Array(1), new Uint8Array(1)),
    ).toThrow(TypeError);
    expect(() => api.hkdf(api.sha384, new Uint8Array(1), undefined, undefined, 255 * 48 + 1)).toThrow(
      new RangeError('"length" expected an integer in [0, 12240], got 12241'),
    );
    expect(() => api.hkdf(api.sha256, new Uint8Array(1), undefined, undefined, -1)).toThrow(RangeError);
    expect(() => api.hkdf(api.sha256, new Uint8Array(1), undefined, undefined, 1.5)).toThrow(TypeError);
    expect(() => api.merkle.nodeHash(new Uint8Array(48), new Uint8Array(16))).toThrow(
      new RangeError('"right" expected Uint8Array of length 48, got length=16'),
    );
    expect(() => api.setWasmFlavor('avx' as unknown as 'simd')).toThrow(RangeError);
  });

  it('HKDF accepts a zero length and absent salt/info like RFC 5869', () => {
    expect(api.hkdf(api.sha384, new Uint8Array(4), undefined, undefined, 0)).toEqual(new Uint8Array(0));
    expect(api.hkdf(api.sha384, new Uint8Array(4), undefined, undefined, 48)).toEqual(
      api.hkdf(api.sha384, new Uint8Array(4), new Uint8Array(48), new Uint8Array(0), 48),
    );
  });
});
