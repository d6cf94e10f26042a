import { availableParallelism } from 'node:os';
import { configDefaults, defineConfig } from 'vitest/config';
import LongestFirst from './node-tests/support/sequencer.ts';

// PQDB_TEST_TIER=quick (`npm run test:quick`) runs the edit loop's subset: every file except those
// below, which `npm test` (the full suite) still runs:
// - packaging and type checks of the packed package: build, bundle-size, package, types;
// - the CLI's suites and the documents' samples run through it: cli*.test.ts, readme, examples;
// - the long kill and fuzz loops: fork-fuzz, crash, writers, replication-kill;
// - the PostgreSQL page store (each file starts its own cluster): postgres*.test.ts;
// - the benchmark-shape checks: scale-bench, copies-bench, component-bench, migration-eval.
const QUICK_SKIPS = [
  'build',
  'bundle-size',
  'package',
  'types',
  'cli*',
  'readme',
  'examples',
  'fork-fuzz',
  'crash',
  'writers',
  'replication-kill',
  'postgres*',
  'scale-bench',
  'copies-bench',
  'component-bench',
  'migration-eval',
].map((name) => `node-tests/${name}.test.ts`);

export default defineConfig({
  test: {
    include: ['node-tests/**/*.test.ts'],
    exclude: [...configDefaults.exclude, ...(process.env.PQDB_TEST_TIER === 'quick' ? QUICK_SKIPS : [])],
    reporters: ['default', './node-tests/support/summary-reporter.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    // A process per file (the kernels' WebAssembly memory, the flavor switch and process.env are
    // per-process state the files set), so isolation stays on. Vitest's default is one worker less
    // than the cores, a single worker on 2 cores: much of a file's time is fsync, child processes and
    // sockets, so as many workers as cores (at least 2) keep both busy.
    pool: 'forks',
    maxWorkers: Math.max(2, availableParallelism()),
    sequence: { sequencer: LongestFirst },
  },
});
