import { defineConfig } from 'tsup';

export default defineConfig({
  entry: [
    'src/index.ts',
    'src/merkle-entry.ts',
    'src/transport-entry.ts',
    'src/witness-entry.ts',
    'src/sha256-node.ts',
    'src/sha256-portable.ts',
  ],
  format: ['esm'],
  dts: true,
  clean: true,
  sourcemap: true,
  target: 'es2022',
  external: ['#sha256'],
});
