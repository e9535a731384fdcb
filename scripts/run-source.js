// Runs a command's TypeScript entry inside the repository, with no build step: workspace
// packages resolve to their sources (the "@vouch/source" export condition) and tsx compiles
// them on the fly. Both apps' bin launchers call it; it is not part of any package, so an
// installed package never loads tsx and runs its dist/ build instead.
import { register } from 'node:module';

/** Import `entry` (a `file:` URL of a .ts file) with the repository's source resolution. */
export async function runSource(entry) {
  register('./source-condition.js', import.meta.url);
  const { register: registerTsx } = await import('tsx/esm/api');
  registerTsx();
  await import(entry.href);
}
