// Resolve hooks for node20-fs-glob.mjs: `fs` imported by the conformance package resolves to
// a module re-exporting `node:fs` plus a `globSync` that says it is not available.
const SHIM = `data:text/javascript,${encodeURIComponent(`
import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export function globSync() {
  throw new Error('fs.globSync needs Node 22; the conformance server scenarios do not use it');
}
`)}`;

export async function resolve(specifier, context, nextResolve) {
  // The 0.1 line under its own name, the 0.2 line under its alias (test/package.json).
  const fromConformance = /\/(@modelcontextprotocol\/conformance|mcp-conformance-2026)\//.test(
    context.parentURL ?? '',
  );
  if (fromConformance && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: SHIM, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
