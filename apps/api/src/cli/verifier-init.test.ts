import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { runVerifiers } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal } from '@vouch/verifier-sdk/testing';
import { createGuardedFetch, loadVerifierConfig } from '@vouch/verifiers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';
import { buildVerifierSdk } from '../testing/verifier-sdk-build';

const run = promisify(execFile);
const repo = path.resolve(import.meta.dirname, '../../../..');
const TSC = path.join(repo, 'node_modules/typescript/bin/tsc');

async function step(what: string, args: string[], cwd: string): Promise<string> {
  try {
    return (await run(process.execPath, args, { cwd, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${what} failed:\n${stdout}\n${stderr}`);
  }
}

/** Link a dependency into `dir/node_modules` as `npm install` would put it there. */
function link(dir: string, name: string, target: string): void {
  const at = path.join(dir, 'node_modules', name);
  mkdirSync(path.dirname(at), { recursive: true });
  symlinkSync(target, at, 'dir');
}

describe('vouch verifier init', { timeout: 120_000 }, () => {
  let work: string;
  let plugin: string;
  let sdk: string;
  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'vouch-verifier-init-'));
    plugin = path.join(work, 'acme-item-done');
    // The scaffold imports the SDK as a package: a private build of it, as an install would give.
    sdk = await buildVerifierSdk(work);
  }, 120_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  describe('when DIR is new', () => {
    it('writes a package that builds, passes its harness tests and loads from vouch.config.json', async () => {
      const made = await runVouch(['verifier', 'init', 'acme-item-done', '--id', 'acme/item-done'], {
        cwd: work,
        env: {},
      });
      expect(made.code, made.err).toBe(0);
      expect(JSON.parse(made.out)).toMatchObject({
        id: 'acme/item-done',
        files: expect.arrayContaining(['package.json', 'src/index.ts', 'src/index.test.ts']),
      });
      const manifest = JSON.parse(readFileSync(path.join(plugin, 'package.json'), 'utf8'));
      expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js' });

      // What `npm install` would provide, from this repository's tree (no network).
      link(plugin, '@vouch/verifier-sdk', sdk);
      link(plugin, 'zod', path.join(repo, 'node_modules/zod'));
      link(plugin, '@types/node', path.join(repo, 'node_modules/@types/node'));
      await step('tsc of the scaffold', [TSC, '-p', 'tsconfig.json'], plugin);
      const tested = await step('node --test of the scaffold', ['--test', 'dist/'], plugin);
      expect(tested).toMatch(/# pass [1-9]/);
      expect(tested).toMatch(/# fail 0/);

      // A project that installed the package next to its vouch.config.json.
      const project = path.join(work, 'project');
      mkdirSync(project);
      link(project, 'acme-item-done', plugin);
      const example = JSON.parse(readFileSync(path.join(plugin, 'vouch.config.example.json'), 'utf8'));
      expect(example.verifiers[0].use).toBe('acme-item-done');
      writeFileSync(path.join(project, 'vouch.config.json'), JSON.stringify(example));
      const loaded = await loadVerifierConfig(path.join(project, 'vouch.config.json'));
      try {
        expect(loaded.registry.entries.map((e) => e.name)).toEqual(['acme/item-done']);
        // Run it: items.example is not resolvable here, so the guarded fetch cannot read it.
        const outcome = await runVerifiers({
          registry: loaded.registry,
          grants: { fetch: createGuardedFetch() },
          proposal: exampleProposal({ postconditions: [{ name: 'item.done' }] }),
          observation: exampleObservation(),
        });
        expect(outcome.checks).toHaveLength(1);
        expect(outcome.checks[0]).toMatchObject({ status: 'error', verifier: { id: 'acme/item-done' } });
      } finally {
        await loaded.close();
      }
    });
  });

  describe('when DIR is not empty or the id is malformed', () => {
    it.each([[['verifier', 'init', 'acme-item-done']], [['verifier', 'init', 'other', '--id', 'NoVendor']]])(
      'refuses %j with exit 2 and writes nothing',
      async (argv) => {
        const before = existsSync(path.join(work, 'other'));
        const { code } = await runVouch(argv, { cwd: work, env: {} });
        expect(code).toBe(2);
        expect(existsSync(path.join(work, 'other'))).toBe(before);
      },
    );
  });
});
