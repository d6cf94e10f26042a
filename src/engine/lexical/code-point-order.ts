// Code point order (= UTF-8 byte order) for strings, which `<` does not give (it compares UTF-16
// code units): the order of every list in the serialized index and of the indexed field names.
// sortCodePointsSteps sorts in bounded steps so a large index never holds the event loop long.
//
// Security caveats: comparison time depends on the strings compared (not constant-time).

/** Strings per sorted run, and strings merged between two yields, in sortCodePointsSteps. */
const SORT_RUN = 1024;

/**
 * Compares strings by code point (= UTF-8 byte order), unlike `<`, which compares UTF-16 units.
 * @example ['\u{1f600}', '\ufffd'].sort(compareCodePoints) // ['\ufffd', '\u{1f600}'] (`<` puts U+1F600 first)
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    // Surrogates (astral code points) sort after U+E000..U+FFFF in code point order.
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

/**
 * Sorts strings in code point order in bounded steps: runs of SORT_RUN strings are sorted, then
 * merged pairwise, yielding after each run and every SORT_RUN merged strings, so sorting 100,000
 * ids never holds the event loop for more than a few milliseconds. Returns the sorted array (`a`
 * itself or a second array; mutates `a`).
 */
export function* sortCodePointsSteps(a: string[]): Generator<void, string[]> {
  const n = a.length;
  for (let i = 0; i < n; i += SORT_RUN) {
    const run = a.slice(i, i + SORT_RUN).sort(compareCodePoints);
    for (let j = 0; j < run.length; j++) a[i + j] = run[j];
    if (n > SORT_RUN) yield;
  }
  let src = a;
  let dst: string[] = new Array(n);
  let budget = 0;
  for (let width = SORT_RUN; width < n; width *= 2) {
    for (let lo = 0; lo < n; lo += 2 * width) {
      const mid = Math.min(lo + width, n);
      const hi = Math.min(lo + 2 * width, n);
      let i = lo;
      let j = mid;
      for (let k = lo; k < hi; k++) {
        dst[k] = i < mid && (j >= hi || compareCodePoints(src[i], src[j]) <= 0) ? src[i++] : src[j++];
        if (++budget === SORT_RUN) {
          budget = 0;
          yield;
        }
      }
    }
    [src, dst] = [dst, src];
  }
  return src;
}
