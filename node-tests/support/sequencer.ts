// The order vitest starts test files in: the files known to run longest first (so that no long file
// starts last and leaves the other worker idle), then the rest in vitest's own order (by the last
// run's durations when its cache has them, else the largest file first, as on a fresh CI clone).

import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Longest first, from per-file durations measured on 2 cores. */
const LONGEST = [
  'fork-fuzz',
  'hygiene',
  'cli-verbs',
  'cli-policy',
  'crash',
  'cli-copies',
  'writers',
  'types',
  'node-fs-compact',
  'cli-replicate',
  'page-store',
  'verify',
  'package',
  'mldsa',
  'merkle',
  'replication',
  'scale-bench',
].map((name) => `/node-tests/${name}.test.ts`);

const rank = (spec: TestSpecification): number => {
  const i = LONGEST.findIndex((suffix) => spec.moduleId.endsWith(suffix));
  return i < 0 ? LONGEST.length : i;
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files.filter((f) => rank(f) === LONGEST.length));
    return [...files.filter((f) => rank(f) < LONGEST.length).sort((a, b) => rank(a) - rank(b)), ...rest];
  }
}
