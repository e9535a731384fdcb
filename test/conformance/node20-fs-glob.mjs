// Preload for running `@modelcontextprotocol/conformance` on Node 20: its bundle imports
// `globSync` from `fs`, which exists only from Node 22, so on Node 20 the import fails before
// any scenario runs. This resolve hook hands that one package a copy of `fs` with a
// `globSync` added; nothing else in the process sees a changed `fs`. The server scenarios
// never call it (only the `tier-check` command does), so the stand-in refuses loudly.
// Use: node --import ./test/conformance/node20-fs-glob.mjs node_modules/@modelcontextprotocol/conformance/dist/index.js …
import fs from 'node:fs';
import { register } from 'node:module';

if (typeof fs.globSync !== 'function') {
  register(new URL('./node20-fs-glob-hooks.mjs', import.meta.url));
}
