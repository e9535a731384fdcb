import { defineConfig } from 'tsup';

export default defineConfig({
  entry: [
    'src/index.ts',
    'src/testing.ts',
    // Browser-safe: the signature rules the console judges records by.
    'src/signature-rules.ts',
    'src/internal/benchmark.ts',
    // Started as a worker thread by verify-chain-parts (parallel verifyChain), by its file name.
    'src/verify-part-worker.ts',
  ],
  format: ['esm'],
  // Declarations of other @vouch packages come from their built dist/ (turbo builds them first),
  // not from their sources: each package's types are checked once, not once per dependant.
  dts: { compilerOptions: { customConditions: [] } },
  clean: true,
  sourcemap: true,
  target: 'node20',
  // tsup leaves dependencies and peers out of the bundle, not optional dependencies: PGlite must
  // stay an import, loaded from node_modules only when used (and reported missing by name).
  external: ['@electric-sql/pglite'],
});
