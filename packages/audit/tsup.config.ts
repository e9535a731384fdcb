import { defineConfig } from 'tsup';

export default defineConfig({
  entry: [
    'src/index.ts',
    'src/merkle-entry.ts',
    'src/transport-entry.ts',
    'src/witness-entry.ts',
    'src/node-entry.ts',
    // Started as a worker thread by node-entry (verifyBundleFile), by its file name.
    'src/bundle-worker-node.ts',
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
