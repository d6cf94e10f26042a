// Hex and base64 (RFC 4648 §4, padded) of bytes: the one copy every module uses. Plain functions of
// their input, no state; base64 uses the platform's `btoa`/`atob` (Node 20 and every browser).

import { PqdbError } from './errors';

/** Bytes per `String.fromCharCode` call (its arguments go on the stack). */
const CHUNK = 0x2000;

/**
 * Lower-case hex digits of `b`.
 * @example hex(Uint8Array.of(1, 255)); // '01ff'
 */
export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/**
 * The bytes of hex digits `s`, two per byte (a trailing odd digit is ignored). It does not check its
 * input: callers pass ids they checked (a store id, a copy id).
 * @example fromHex('01ff'); // Uint8Array [1, 255]
 */
export const fromHex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));

/**
 * Base64 (padded) of `b`.
 * @example b64(Uint8Array.of(1, 2, 3)); // 'AQID'
 */
export function b64(b: Uint8Array): string {
  if (b.length <= CHUNK) return btoa(String.fromCharCode(...b));
  let s = '';
  for (let i = 0; i < b.length; i += CHUNK) s += String.fromCharCode(...b.subarray(i, i + CHUNK));
  return btoa(s);
}

/** `Uint8Array.fromBase64` (ES2026; Chromium 140, Firefox 133, Safari 18.2), where the platform has it. */
const native = Uint8Array as unknown as { fromBase64?: (s: string) => Uint8Array };

/**
 * The bytes of base64 text `s`, for text pqdb itself embeds (the WebAssembly builds).
 * @throws SyntaxError (`fromBase64`) or DOMException (`atob`) when `s` is not base64.
 * @example decodeBase64('AQID'); // Uint8Array [1, 2, 3]
 */
export function decodeBase64(s: string): Uint8Array {
  if (native.fromBase64 !== undefined) return native.fromBase64(s); // atob and a loop: 7 ms of a worker's start
  const bin = atob(s);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/**
 * The bytes of base64 text `s` read from storage or the network.
 * @throws PqdbError CORRUPTION when `s` is not base64.
 * @example unb64('AQID'); // Uint8Array [1, 2, 3]
 */
export function unb64(s: string): Uint8Array {
  try {
    return decodeBase64(s);
  } catch (cause) {
    throw new PqdbError('CORRUPTION', 'bad base64', { cause });
  }
}
