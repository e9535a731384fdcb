// Module resolve hook: prefer the "@vouch/source" export condition so workspace
// packages resolve to their TypeScript sources when run from the repository.
export async function resolve(specifier, context, nextResolve) {
  return nextResolve(specifier, { ...context, conditions: ['@vouch/source', ...context.conditions] });
}
