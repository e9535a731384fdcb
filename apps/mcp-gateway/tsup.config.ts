import { defineConfig } from 'tsup';

export default defineConfig({
  entry: ['src/index.ts', 'src/testing.ts', 'src/bin.ts'],
  format: ['esm'],
  // Declarations of other @vouch packages come from their built dist/ (turbo builds them first),
  // not from their sources: each package's types are checked once, not once per dependant.
  dts: { compilerOptions: { customConditions: [] } },
  clean: true,
  sourcemap: true,
  target: 'node20',
});
