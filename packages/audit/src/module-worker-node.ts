import { Worker } from 'node:worker_threads';

/**
 * Start a worker thread on the module `file` (a URL next to the caller's own module, in
 * `src/` as `.ts` or in `dist/` as `.js`: pass the caller's `import.meta.url` and the
 * file's name without its extension).
 *
 * Run from the repository's TypeScript (tsx, vitest), the worker loads the sources through
 * tsx too, with the "@vouch/source" condition the workspace packages resolve by: a worker
 * does not inherit the loader hooks of the thread that starts it.
 *
 * @example
 * const worker = startModuleWorker(import.meta.url, './bundle-worker-node');
 */
export function startModuleWorker(callerUrl: string, name: string): Worker {
  const fromSource = callerUrl.endsWith('.ts');
  const file = new URL(`${name}.${fromSource ? 'ts' : 'js'}`, callerUrl);
  if (!fromSource) return new Worker(file);
  const tsx = import.meta.resolve('tsx/esm/api');
  const condition =
    'export async function resolve(specifier, context, next) { return next(specifier, { ...context, conditions: ["@vouch/source", ...context.conditions] }); }';
  return new Worker(
    `require('node:module').register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(condition)}));
import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import(${JSON.stringify(file.href)}); });`,
    { eval: true },
  );
}
