#!/usr/bin/env node
// The `vouch-mcp-gateway` command. Installed from a package it runs the build (dist/bin.js). In
// the repository, where src/ sits beside bin/, the shared scripts/run-source.js runs the
// TypeScript sources instead, so it works right after `npm ci` with no build step.
import { existsSync } from 'node:fs';

const source = new URL('../src/bin.ts', import.meta.url);
if (existsSync(source)) await (await import('../../../scripts/run-source.js')).runSource(source);
else await import('../dist/bin.js');
