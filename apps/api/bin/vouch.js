#!/usr/bin/env node
// The `vouch` command. Installed from a package it runs the build (dist/cli.js). In the
// repository, where src/ sits beside bin/, the shared scripts/run-source.js runs the TypeScript
// sources instead, so `npx --no-install vouch` works right after `npm ci` with no build step.
import { existsSync } from 'node:fs';

const source = new URL('../src/cli.ts', import.meta.url);
if (existsSync(source)) await (await import('../../../scripts/run-source.js')).runSource(source);
else await import('../dist/cli.js');
