// UTF-8 helpers for hot paths: short ASCII strings (ids, collection names, field values) are
// encoded by a plain loop, which in V8 is several times faster than TextEncoder.encode for strings
// of tens of bytes (measured: TextEncoder was the largest single cost of a store ingest).

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** The UTF-8 bytes of `s` (a fresh array). */
export function utf8(s: string): Uint8Array {
  if (!isAscii(s)) return encoder.encode(s);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

/** Number of UTF-8 bytes of `s`. */
export function utf8Length(s: string): number {
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        n += 4;
        i++;
      } else n += 3; // lone surrogate: TextEncoder writes U+FFFD (3 bytes)
    } else n += 3;
  }
  return n;
}

/** Writes the UTF-8 bytes of `s` into `buf` at `at` (room for utf8Length(s) bytes); returns the end. */
export function writeUtf8(s: string, buf: Uint8Array, at: number): number {
  if (isAscii(s)) {
    for (let i = 0; i < s.length; i++) buf[at + i] = s.charCodeAt(i);
    return at + s.length;
  }
  return at + encoder.encodeInto(s, buf.subarray(at)).written;
}

/**
 * The string whose UTF-8 encoding is b[from, to). Short ASCII runs are decoded by a plain loop
 * (TextDecoder's per-call cost dominates for ids and names of tens of bytes).
 * @throws TypeError when the bytes are not valid UTF-8 (as TextDecoder with `fatal`)
 */
export function decodeUtf8(b: Uint8Array, from: number, to: number): string {
  const n = to - from;
  if (n <= 64) {
    const codes = new Array<number>(n);
    let high = 0;
    for (let i = 0; i < n; i++) high |= codes[i] = b[from + i];
    if (high < 0x80) return String.fromCharCode.apply(null, codes);
  }
  return decoder.decode(b.subarray(from, to));
}
