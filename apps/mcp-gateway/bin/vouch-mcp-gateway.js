#!/usr/bin/env node
// The `vouch-mcp-gateway` command. Inside the repository it runs the TypeScript sources
// directly (tsx + the "@vouch/source" export condition), so it works right after `npm ci`
// with no build step; a published install without src/ runs dist/.
import { existsSync } from 'node:fs';
import { register } from 'node:module';

const source = new URL('../src/bin.ts', import.meta.url);
if (existsSync(source)) {
  register('./source-condition.js', import.meta.url);
  const { register: registerTsx } = await import('tsx/esm/api');
  registerTsx();
  await import(source.href);
} else {
  await import(new URL('../dist/bin.js', import.meta.url).href);
}
