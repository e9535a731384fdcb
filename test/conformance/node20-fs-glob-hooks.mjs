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
  const fromConformance = context.parentURL?.includes('/@modelcontextprotocol/conformance/') ?? false;
  if (fromConformance && (specifier === 'fs' || specifier === 'node:fs')) {
    return { url: SHIM, shortCircuit: true };
  }
  return nextResolve(specifier, context);
}
