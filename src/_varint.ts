// Canonical unsigned LEB128 varints of safe integers, as the record codec, the lexical index and
// the page format write them: at most 8 bytes, no redundant zero continuation bytes.

/**
 * Reads the varint at bytes[at] (not past `end`); returns [value, index after it].
 * @throws the error `fail(why)` returns, for truncated, over-long or non-canonical encodings.
 */
export function readVarint(bytes: Uint8Array, at: number, end: number, fail: (why: string) => Error): [number, number] {
  let v = 0;
  let scale = 1;
  for (let i = 0; ; i++) {
    if (at >= end) throw fail('truncated');
    const b = bytes[at++];
    if (i > 0 && b === 0) throw fail('non-canonical varint');
    v += (b & 0x7f) * scale;
    if (b < 0x80) break;
    scale *= 0x80;
    if (i >= 7) throw fail('varint too long');
  }
  if (!Number.isSafeInteger(v)) throw fail('varint out of range');
  return [v, at];
}
