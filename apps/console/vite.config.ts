import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vite';

// Workspace packages are read from their TypeScript sources (the "@vouch/source" condition),
// and @vouch/audit's `#sha256` picks its portable implementation (no `node` condition here).
export default defineConfig({
  root: fileURLToPath(new URL('.', import.meta.url)),
  base: '/ui/',
  resolve: { conditions: ['@vouch/source', 'browser', 'module', 'development|production'] },
  oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // One script and one stylesheet, no inline code: the server's CSP allows nothing else.
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
  logLevel: 'warn',
});
