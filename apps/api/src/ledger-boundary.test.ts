import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const source = import.meta.dirname;

/** The server's own sources: not its tests, nor the test support under `testing/`. */
function serverSources(dir = source): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === 'testing' ? [] : serverSources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

// The API reaches the database only through the ledger's API: no SQL builder, no table, no
// ledger internals (docs/ARCHITECTURE.md, "The records service and the ledger's surface").
describe('apps/api sources', () => {
  it('finds the sources it checks', () => {
    expect(serverSources().length).toBeGreaterThan(20);
  });

  it('import neither drizzle-orm nor a subpath of @vouch/ledger', () => {
    const offending = serverSources().flatMap((file) =>
      [...readFileSync(file, 'utf8').matchAll(/from '(drizzle-orm[^']*|@vouch\/ledger\/[^']*)'/g)].map(
        (m) => `${relative(source, file)}: ${m[1]}`,
      ),
    );
    expect(offending).toEqual([]);
  });
});
