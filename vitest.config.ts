import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Runs once POST /contract-calls/batch (extensions.md section 4) exists: then drop this line.
    exclude: ['**/node_modules/**', 'test/client/client-batch.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
  },
});
