// The order a migration verifies its records in: the live records of the target generation
// gathered from the directory in steps (gather), then visited page by page (byPage), so each page
// is read once.

import { CLOCK_STEP, sliceSpent, yieldToEventLoop } from '../../_yield';
import type { Location } from '../directory';

/**
 * The ids of a collection's live records in `generation` and the page each is in, gathered in steps
 * (edits meanwhile are tolerated: each record is looked up again when it is verified), and how many
 * live records are in other generations. Records in a page of `verified` are left out: they were
 * opened and decoded as their copy committed (#verifyCopies), and that page cannot change.
 */
export async function gather(
  table: Iterable<[string, Location]>,
  generation: number,
  verified: ReadonlySet<number>,
  live: () => void,
): Promise<{ ids: string[]; pageIds: Uint32Array; behind: number }> {
  const ids: string[] = [];
  let pageIds = new Uint32Array(1024);
  let behind = 0;
  let n = 0;
  for (const [id, loc] of table) {
    if (++n % CLOCK_STEP === 0 && sliceSpent()) {
      await yieldToEventLoop(); // reads first
      live();
    }
    if (loc.generation !== generation) {
      behind++;
      continue;
    }
    if (verified.has(loc.pageId)) continue;
    if (ids.length === pageIds.length) {
      const grown = new Uint32Array(pageIds.length * 2);
      grown.set(pageIds);
      pageIds = grown;
    }
    pageIds[ids.length] = loc.pageId;
    ids.push(id);
  }
  return { ids, pageIds: pageIds.subarray(0, ids.length), behind };
}

/**
 * A counting sort of records by page id: `order` lists record numbers page by page (in their order
 * within a page), `pages` the distinct page ids ascending, and page `pages[p]`'s records are
 * `order[starts[p]]` up to `order[starts[p + 1]]`. O(records + pages), no comparison sort: a sort
 * of a million entries would hold the event loop for hundreds of milliseconds.
 */
export function byPage(pageIds: Uint32Array): { order: Uint32Array; pages: Uint32Array; starts: Uint32Array } {
  const n = pageIds.length;
  if (n === 0) return { order: new Uint32Array(0), pages: new Uint32Array(0), starts: new Uint32Array(1) };
  let lo = pageIds[0];
  let hi = pageIds[0];
  for (let i = 1; i < n; i++) {
    const p = pageIds[i];
    if (p < lo) lo = p;
    else if (p > hi) hi = p;
  }
  const count = new Uint32Array(hi - lo + 1);
  for (let i = 0; i < n; i++) count[pageIds[i] - lo]++;
  let distinct = 0;
  for (let p = 0; p < count.length; p++) if (count[p] !== 0) distinct++;
  const pages = new Uint32Array(distinct);
  const starts = new Uint32Array(distinct + 1);
  const next = new Uint32Array(count.length); // where the next record of each page goes
  for (let p = 0, d = 0, at = 0; p < count.length; p++) {
    if (count[p] === 0) continue;
    pages[d] = p + lo;
    starts[d++] = at;
    next[p] = at;
    at += count[p];
  }
  starts[distinct] = n;
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[next[pageIds[i] - lo]++] = i;
  return { order, pages, starts };
}
