// Kills in Chromium (browser-tests/kill-run.mjs): a writer's renderer crashed, its tab closed, its
// worker terminated, at random moments inside a stream of puts, batches and checkpoints on OPFS;
// after each the store verifies and holds exactly the acknowledged writes (and any write in flight
// that committed, which then stays). `npm run bench:kill` runs the long variant.
import { test, expect } from '@playwright/test';
import { kills } from './kill-run.mjs';

test('a writer killed at random points inside its commits (renderer crash, tab closed, worker terminated): every acknowledged write kept, nothing else', async ({
  context,
}) => {
  const rounds = Number(process.env.PQDB_KILL_ROUNDS ?? 6);
  const r = await kills(context, rounds, { seed: 20261207 });
  console.log(
    `[chromium kills] ${r.rounds} kills (${Object.entries(r.perKind)
      .map(([k, n]) => `${n} ${k}`)
      .join(
        ', ',
      )}): ${r.acknowledged} writes acknowledged and kept, ${r.inFlightKept} in flight committed, ${r.problems.length} problems`,
  );
  expect(r.problems).toEqual([]);
  expect(r.acknowledged).toBeGreaterThan(r.rounds);
});
