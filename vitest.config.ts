import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // expect.poll waits for an event it cannot subscribe to (a metric, a counter); its default
    // 1 s is too short on a loaded two-core CI machine, and waiting longer costs nothing when
    // the event comes early.
    expect: { poll: { timeout: 15_000, interval: 25 } },
  },
});
