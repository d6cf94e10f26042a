// The lexical index's tokenizer: NFKC, locale-independent lower case, words = a letter or number
// followed by letters, numbers and combining marks (UAX #44 general categories L, N, M through the
// regexp `u` flag), each capped at MAX_TOKEN_CODE_POINTS code points. Indexed text and queries are
// tokenized the same way.
//
// Security caveats: none of its own (it sees the plaintext it is given and keeps nothing).

/** Longest token, in code points; longer words are cut to their first 64 code points. */
export const MAX_TOKEN_CODE_POINTS = 64;
/** Longest token, in UTF-8 bytes (at most 4 bytes per code point). */
export const MAX_TOKEN_BYTES = 4 * MAX_TOKEN_CODE_POINTS;
/** Longest token, in UTF-16 code units (at most 2 units per code point). */
export const MAX_TOKEN_UNITS = 2 * MAX_TOKEN_CODE_POINTS;

const WORD = /[\p{L}\p{N}][\p{L}\p{N}\p{M}]*/gu;

function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/**
 * The index terms of `text`: NFKC, lower case, split on everything but letters, numbers and the
 * marks inside words; each token at most 64 code points.
 * @throws TypeError when `text` is not a string.
 * @example tokenize('Ｆｉｌｅ ﬁnder, Café!') // ['file', 'finder', 'café']
 */
export function tokenize(text: string): string[] {
  if (typeof text !== 'string') throw new TypeError(`"text" expected a string, got ${typeof text}`);
  // ASCII is NFKC-invariant and lower-cases to ASCII. Otherwise normalise again after lower-casing:
  // a few lower-case mappings leave text that NFKC changes (keeps tokenize idempotent).
  const s = isAscii(text) ? text.toLowerCase() : text.normalize('NFKC').toLowerCase().normalize('NFKC');
  const out: string[] = [];
  for (const m of s.matchAll(WORD)) {
    let t = m[0];
    if (t.length > MAX_TOKEN_CODE_POINTS) {
      const cps = Array.from(t);
      if (cps.length > MAX_TOKEN_CODE_POINTS) t = cps.slice(0, MAX_TOKEN_CODE_POINTS).join('');
    }
    out.push(t);
  }
  return out;
}
