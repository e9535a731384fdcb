import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

// Workspace packages resolve to their TypeScript sources through the "@vouch/source"
// export condition, so tests never need a build first. No `module` condition: vitest hands
// the conditions to Node, and Node would then load bundler-only builds (prom-client's
// @opentelemetry/api has one, with extensionless imports).
const conditions = ['@vouch/source', 'node', 'development|production'];

export default defineConfig({
  resolve: { conditions },
  ssr: { resolve: { conditions, externalConditions: ['@vouch/source'] } },
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'test/**/*.test.ts',
      'docs/**/*.test.ts',
      'bench/src/**/*.test.ts',
    ],
    setupFiles: ['./vitest.setup.ts'],
    // Bundles the `vouch` CLI once for the run; the end-to-end helpers spawn that build.
    globalSetup: ['./test/global-setup.ts'],
    // Generous: the end-to-end files start real servers and CLIs, and a loaded CI machine can
    // take tens of seconds to spawn them. A limit is a hang detector here, never a speed check.
    testTimeout: 90_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Most files wait on Postgres, child processes and sockets rather than compute, so one more
    // file than there are cores keeps the cores busy (vitest's default is one fewer).
    maxWorkers: availableParallelism() + 1,
  },
});
