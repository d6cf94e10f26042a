import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['node-tests/**/*.test.ts'],
    reporters: ['default', './node-tests/support/summary-reporter.ts'],
    testTimeout: 120_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
