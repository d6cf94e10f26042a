// `expect(got, label).toEqual(want)` for byte arrays at memcmp speed: vitest's deep equality walks a
// typed array element by element (seconds for a few hundred KiB), so the deep comparison (and its
// diff) runs only when the bytes differ.

import { expect } from 'vitest';

export function expectBytes(got: unknown, want: Uint8Array, label?: string): void {
  if (
    got instanceof Uint8Array &&
    Buffer.from(got.buffer, got.byteOffset, got.byteLength).equals(
      Buffer.from(want.buffer, want.byteOffset, want.byteLength),
    )
  )
    return;
  expect(got, label).toEqual(want);
}
