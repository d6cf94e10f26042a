// How many seeded random cases a differential test against @noble or node:crypto runs. The default
// (the `n` each test passes) keeps `npm test` short; every primitive and every input class the
// generators cycle through (by case index) is in it. PQDB_DIFF_CASES=<n> runs n cases in each of
// them instead (`npm run bench:diff` runs 1,000).

export function diffCases(n: number): number {
  const set = process.env.PQDB_DIFF_CASES;
  if (set === undefined || set === '') return n;
  const k = Number(set);
  if (!Number.isInteger(k) || k < 1) throw new RangeError(`PQDB_DIFF_CASES must be a positive integer, not ${set}`);
  return k;
}
