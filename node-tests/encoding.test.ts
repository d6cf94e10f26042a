// src/_encoding.ts, the one hex and base64 module: against Node's Buffer encodings, at every length
// up to a few chunks and at 256 KiB (past what one String.fromCharCode call takes), and bad base64
// read back is CORRUPTION.
import { describe, it, expect } from 'vitest';
import { b64, decodeBase64, fromHex, hex, unb64 } from '../src/_encoding';
import { PqdbError } from '../src/errors';

const bytes = (n: number) => new Uint8Array(Buffer.alloc(n, 'pqdb\x00\xff'));

describe('_encoding', () => {
  it('hex and base64 equal Buffer and round-trip', () => {
    for (const n of [0, 1, 2, 3, 15, 16, 17, 255, 0x2000 - 1, 0x2000, 0x2000 + 1, 3 * 0x2000 + 5]) {
      const b = bytes(n);
      expect(hex(b)).toBe(Buffer.from(b).toString('hex'));
      expect(Buffer.from(fromHex(hex(b))).equals(b)).toBe(true);
      expect(b64(b)).toBe(Buffer.from(b).toString('base64'));
      expect(Buffer.from(unb64(b64(b))).equals(b)).toBe(true);
      expect(Buffer.from(decodeBase64(b64(b))).equals(b)).toBe(true);
    }
  });

  it('encodes 256 KiB in base64 (the argument list is chunked)', () => {
    const b = new Uint8Array(Buffer.alloc(1 << 18, 'pqdb'));
    const text = b64(b);
    expect(text).toBe(Buffer.from(b).toString('base64'));
    expect(Buffer.from(unb64(text)).equals(b)).toBe(true);
  });

  it('bad base64 read back is CORRUPTION', () => {
    for (const bad of ['A', 'AB=C', '@@@@', 'QUJD\u0100'])
      expect(() => unb64(bad)).toThrow(expect.objectContaining({ code: 'CORRUPTION' }) as PqdbError);
    expect(() => decodeBase64('A')).toThrow();
  });
});
