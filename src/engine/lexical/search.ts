// Query evaluation for the lexical index: query terms become groups of postings (an exact term, or
// the range of terms a prefix expands to), scanned rarest first into per-doc counters ('all') or
// merged ('any'), and the best `limit` ids are kept by a bounded heap (top.ts).
//
// Security caveats: search time depends on the data and the query (it is not constant-time).

import type { Postings } from './postings';
import { tokenize } from './tokenizer';
import { Top } from './top';

/** Default number of ids `search` returns. */
export const DEFAULT_SEARCH_LIMIT = 100;

export interface SearchOptions {
  /** 'all' (default): ids containing every query term; 'any': ids containing at least one. */
  mode?: 'all' | 'any';
  /** The last query term matches every indexed term that starts with it (search as you type). */
  prefix?: boolean;
  /** At most this many ids (default 100). */
  limit?: number;
}

/**
 * Terms added since the sorted term array was last built are scanned linearly by prefix searches
 * up to this many; beyond it the next prefix search merges them in (O(terms)). Keeps a search that
 * follows a put cheap while the merge cost stays amortised over ≥ 1024 new terms.
 */
const FRESH_SCAN_MAX = 1024;
/**
 * In an 'all' search, once fewer than size/PROBE_COST ids remain, a term is checked against those
 * ids' own term lists (~14 terms each for WordNet glosses) rather than by scanning its postings.
 */
const PROBE_COST = 16;

/**
 * One query term's postings: an exact term (`t`, with `extra` = [t]), or a prefix term (`t` = -1):
 * the terms sorted[lo, hi) plus the fresh terms in `extra`.
 */
interface Group {
  term: string;
  t: number;
  lo: number;
  hi: number;
  extra: number[];
  /** Number of postings (an upper bound on the ids it matches). */
  size: number;
}

/**
 * Search scratch, indexed by doc number; zeroed again for every doc a search touches, so one
 * index reuses it across searches (grown, never shrunk).
 */
export class SearchScratch {
  matched = new Uint32Array(0);
  seen = new Uint32Array(0);
  tf = new Float64Array(0);
  /** Doc numbers a search touched. A typed buffer, not push(): growing a JS array by push cost
   * ~60 ns per element here (heap allocation), 50x the rest of the accumulation loop. */
  touched = new Int32Array(0);

  /** Room for doc numbers below `cap` (doubling). */
  fit(cap: number): void {
    if (this.matched.length < cap) {
      const n = Math.max(cap, this.matched.length * 2);
      this.matched = new Uint32Array(n);
      this.seen = new Uint32Array(n);
      this.tf = new Float64Array(n);
      this.touched = new Int32Array(n);
    }
  }
}

/**
 * 'all' mode, group `g` (0-based), one posting region post[from, to): an id takes part only when it
 * matched groups 0..g-1 (matched = g); its first posting in the group raises it to g + 1, later
 * ones (other terms of the same prefix range) only add their frequency. Group 0 appends the ids it
 * raises to `touched` from `at`. Returns how many ids it raised. Mutates `matched`, `tf`, `touched`.
 */
function scanAll(
  post: Int32Array,
  from: number,
  to: number,
  g: number,
  matched: Uint32Array,
  tf: Float64Array,
  touched: Int32Array,
  at: number,
): number {
  const next = g + 1;
  let raised = 0;
  for (let i = from; i < to; i += 3) {
    const d = post[i];
    const m = matched[d];
    if (m === g) {
      matched[d] = next;
      if (g === 0) touched[at + raised] = d;
      raised++;
      tf[d] += post[i + 1];
    } else if (m === next) {
      tf[d] += post[i + 1];
    }
  }
  return raised;
}

/**
 * 'any' mode, one posting region post[from, to) of the group marked `mark`: an id counts the group
 * once (`seen`), however many of the group's terms it holds, and adds every frequency. Returns the
 * new number of touched ids. Mutates `matched`, `seen`, `tf`, `touched`.
 */
function scanAny(
  post: Int32Array,
  from: number,
  to: number,
  mark: number,
  matched: Uint32Array,
  seen: Uint32Array,
  tf: Float64Array,
  touched: Int32Array,
  nTouched: number,
): number {
  for (let i = from; i < to; i += 3) {
    const d = post[i];
    if (seen[d] !== mark) {
      seen[d] = mark;
      if (matched[d]++ === 0) touched[nTouched++] = d;
    }
    tf[d] += post[i + 1];
  }
  return nTouched;
}

/**
 * The terms starting with `prefix`: sorted[lo, hi) (stale ones empty) plus the fresh ones
 * (`extra`). Returned as a range, not a list of terms: a one-letter prefix spans thousands of
 * terms. Mutates `p` (merges its fresh terms into `sorted` when there are many).
 */
function expand(p: Postings, prefix: string): Group {
  if (p.fresh.size > FRESH_SCAN_MAX || p.stale > FRESH_SCAN_MAX + (p.sorted.length >>> 1)) p.rebuildSorted();
  const a = p.sorted;
  const lo = p.lowerBound(prefix);
  let hi = lo;
  let size = 0;
  for (; hi < a.length && p.termStr[a[hi]].startsWith(prefix); hi++) size += p.pLen[a[hi]];
  const extra: number[] = [];
  for (const t of p.fresh) {
    if (!p.termStr[t].startsWith(prefix)) continue;
    extra.push(t);
    size += p.pLen[t];
  }
  return { term: prefix, t: -1, lo, hi, extra, size };
}

/** Scans `group`'s postings with `scan(from, to)`: its fresh terms, then its `sorted` range. */
function eachRegion(p: Postings, group: Group, scan: (from: number, to: number) => void): void {
  for (const t of group.extra) scan(p.pAt[t], p.pAt[t] + 3 * p.pLen[t]);
  for (let i = group.lo; i < group.hi; i++) {
    const t = p.sorted[i];
    scan(p.pAt[t], p.pAt[t] + 3 * p.pLen[t]);
  }
}

/**
 * The ids of `p` matching `query`, best first, at most `limit` (LexicalIndex.search, whose
 * arguments it receives checked). Mutates `scratch` (left zeroed) and `p` (see expand).
 */
export function searchPostings(
  p: Postings,
  scratch: SearchScratch,
  query: string,
  all: boolean,
  prefix: boolean,
  limit: number,
): string[] {
  const tokens = tokenize(query);
  if (tokens.length === 0) return [];
  const last = prefix ? tokens.pop()! : undefined;
  const groups: Group[] = [];
  for (const s of new Set(tokens)) {
    const t = p.termNo.get(s);
    if (t === undefined || p.pLen[t] === 0) {
      if (all) return [];
      continue;
    }
    groups.push({ term: s, t, lo: 0, hi: 0, extra: [t], size: p.pLen[t] });
  }
  if (last !== undefined) {
    const g = expand(p, last);
    if (g.size > 0) groups.push(g);
    else if (all) return [];
  }
  if (groups.length === 0) return [];
  const post = p.post.data;
  // One exact term: each id occurs once in its postings, so they are ranked as they stand (tf,
  // then id), without per-doc counters to fill and zero again.
  if (groups.length === 1 && groups[0].t >= 0) {
    const top = new Top(limit, p.idOf, p.key0, p.key1);
    const t = groups[0].t;
    for (let i = p.pAt[t], end = i + 3 * p.pLen[t]; i < end; i += 3) top.offer(post[i], 1, post[i + 1]);
    return top.ids();
  }
  // 'all': the rarest term first, so later terms only advance ids that matched every earlier one.
  if (all) groups.sort((x, y) => x.size - y.size);

  scratch.fit(p.idOf.length);
  const matched = scratch.matched;
  const seen = scratch.seen;
  const tf = scratch.tf;
  const touched = scratch.touched;
  const dterm = p.dterm.data;
  let nTouched = 0;
  let alive = 0; // 'all': ids that matched every group so far
  for (let g = 0; g < groups.length; g++) {
    const group = groups[g];
    if (all && g > 0 && alive * PROBE_COST < group.size) {
      // Few ids left: look the term up in their own term lists instead of scanning its postings.
      let next = 0;
      for (let j = 0; j < nTouched; j++) {
        const d = touched[j];
        if (matched[d] !== g) continue;
        let hit = false;
        for (let at = p.dAt[d], end = at + 2 * p.dLen[d]; at < end; at += 2) {
          const t = dterm[at];
          if (group.t >= 0 ? t === group.t : p.termStr[t].startsWith(group.term)) {
            tf[d] += post[p.pAt[t] + 3 * dterm[at + 1] + 1];
            hit = true;
          }
        }
        if (hit) {
          matched[d]++;
          next++;
        }
      }
      alive = next;
    } else if (all) {
      alive = 0;
      eachRegion(p, group, (from, to) => (alive += scanAll(post, from, to, g, matched, tf, touched, nTouched + alive)));
      if (g === 0) nTouched = alive;
    } else {
      eachRegion(
        p,
        group,
        (from, to) => (nTouched = scanAny(post, from, to, g + 1, matched, seen, tf, touched, nTouched)),
      );
    }
    if (all && alive === 0) break;
  }

  const need = all ? groups.length : 1;
  const top = new Top(limit, p.idOf, p.key0, p.key1);
  for (let j = 0; j < nTouched; j++) {
    const d = touched[j];
    const m = matched[d];
    if (m >= need) top.offer(d, m, tf[d]);
    matched[d] = 0;
    seen[d] = 0;
    tf[d] = 0;
  }
  return top.ids();
}
