import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { drizzle } from 'drizzle-orm/pglite';
import { migrate } from 'drizzle-orm/pglite/migrator';

// This module imports no other workspace code: test/global-setup.ts loads it without the
// @vouch/source condition. Same folder as `migrationsFolder` in migrate.ts.
const migrationsFolder = fileURLToPath(new URL('../migrations', import.meta.url));

/**
 * A migrated, empty PGlite saved as a tarball (PGlite's `dumpDataDir`), so tests open fresh
 * databases by loading it instead of creating and migrating one each time (creating costs
 * several times more CPU). Testing only: the product always creates and migrates.
 */

/**
 * What the template depends on: the migration SQL and journal, and the PGlite version that
 * wrote the dump. Any added or edited migration gives a new key, so a stale template is never
 * loaded.
 */
export function pgliteTemplateKey(folder: string = migrationsFolder): string {
  const hash = createHash('sha256');
  hash.update(`pglite ${pgliteVersion()}\n`);
  const files = [...readdirSync(folder).filter((name) => name.endsWith('.sql')), 'meta/_journal.json'].sort();
  for (const file of files) {
    hash.update(`${file}\n`);
    hash.update(readFileSync(join(folder, file)));
  }
  return hash.digest('hex').slice(0, 24);
}

/**
 * Where the template for `key` lives: one file per key in the project's own
 * `node_modules/.cache` (the nearest one above this package, as Node resolves), not in the
 * machine's shared temp directory, where anyone could plant a template.
 */
export function pgliteTemplatePath(key: string = pgliteTemplateKey()): string {
  return join(templateCache(), `vouch-pglite-template-${key}.tar`);
}

function templateCache(): string {
  let dir = fileURLToPath(new URL('..', import.meta.url));
  while (!existsSync(join(dir, 'node_modules'))) {
    const parent = dirname(dir);
    if (parent === dir) return tmpdir();
    dir = parent;
  }
  return join(dir, 'node_modules', '.cache', 'vouch-pglite-template');
}

/**
 * Make the template for the current migrations unless it exists. Written to a temporary file
 * and renamed, so a reader never sees half a tarball.
 */
export async function writePgliteTemplate(path: string = pgliteTemplatePath()): Promise<string> {
  if (readTemplateFile(path)) return path;
  mkdirSync(dirname(path), { recursive: true });
  const client = await PGlite.create();
  try {
    await migrate(drizzle({ client }), { migrationsFolder });
    const dump = await client.dumpDataDir('none');
    const temporary = `${path}.${process.pid}.${Date.now()}.tmp`;
    writeFileSync(temporary, new Uint8Array(await dump.arrayBuffer()));
    renameSync(temporary, path);
  } finally {
    await client.close();
  }
  return path;
}

const loaded = new Map<string, Blob | undefined>();

/** The template for the current migrations, read once per process; undefined when not made. */
export function readPgliteTemplate(path: string = pgliteTemplatePath()): Blob | undefined {
  if (!loaded.has(path)) {
    const bytes = readTemplateFile(path);
    loaded.set(path, bytes ? new Blob([new Uint8Array(bytes)]) : undefined);
  }
  return loaded.get(path);
}

function readTemplateFile(path: string): Buffer | undefined {
  try {
    return readFileSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** The installed PGlite's version (its package.json is not exported, so found from its entry). */
function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  const packageDir = entry.slice(0, entry.lastIndexOf(PGLITE_DIR) + PGLITE_DIR.length);
  const manifest = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
  return manifest.version;
}

const PGLITE_DIR = join('@electric-sql', 'pglite');
