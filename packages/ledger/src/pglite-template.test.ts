import { cpSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'drizzle-orm';
import { afterAll, describe, expect, it } from 'vitest';
import { migrationsFolder } from './migrate';
import { pgliteTemplateKey, pgliteTemplatePath, readPgliteTemplate } from './pglite-template';
import { testBackends } from './testing';

const scratch = mkdtempSync(join(tmpdir(), 'vouch-template-key-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function copyOfMigrations(): string {
  const folder = mkdtempSync(join(scratch, 'migrations-'));
  cpSync(migrationsFolder, folder, { recursive: true });
  return folder;
}

describe('pgliteTemplateKey', () => {
  it('is the same for the same migrations', () => {
    expect(pgliteTemplateKey(copyOfMigrations())).toBe(pgliteTemplateKey(migrationsFolder));
  });

  it('changes when a migration is added, so tests never load a template without it', () => {
    const folder = copyOfMigrations();
    writeFileSync(join(folder, '9999_later.sql'), 'create table later (id int);');
    expect(pgliteTemplateKey(folder)).not.toBe(pgliteTemplateKey(migrationsFolder));
  });

  it('changes when a migration is edited', () => {
    const folder = copyOfMigrations();
    writeFileSync(join(folder, '0000_core.sql'), '-- edited\n', { flag: 'a' });
    expect(pgliteTemplateKey(folder)).not.toBe(pgliteTemplateKey(migrationsFolder));
  });

  it('changes when the journal changes', () => {
    const folder = copyOfMigrations();
    writeFileSync(join(folder, 'meta', '_journal.json'), '{"entries":[]}');
    expect(pgliteTemplateKey(folder)).not.toBe(pgliteTemplateKey(migrationsFolder));
  });
});

describe('readPgliteTemplate', () => {
  it('has no template for a key nobody wrote', () => {
    const path = pgliteTemplatePath('no-such-key');
    expect(existsSync(path)).toBe(false);
    expect(readPgliteTemplate(path)).toBeUndefined();
  });

  it('reads the template the test run wrote for the current migrations', () => {
    expect(readPgliteTemplate()?.size).toBeGreaterThan(0);
  });
});

describe('testBackends() PGlite from the template', () => {
  const [pglite] = testBackends();

  it('gives each open its own database', async () => {
    const first = await pglite!.open();
    const second = await pglite!.open();
    try {
      await first.rows(sql`create table only_in_first (id int)`);
      const [inSecond] = await second.rows<{ present: boolean }>(
        sql`select to_regclass('only_in_first') is not null as present`,
      );
      expect(inSecond?.present).toBe(false);
    } finally {
      await first.close();
      await second.close();
    }
  });
});
