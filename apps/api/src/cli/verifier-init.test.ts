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
/** Link a dependency into `dir/node_modules` as `npm install` would put it there. */
function link(dir: string, name: string, target: string): void {
  const at = path.join(dir, 'node_modules', name);
  mkdirSync(path.dirname(at), { recursive: true });
  symlinkSync(target, at, 'dir');
}

/** Run `line` in a shell, as a user pastes it; on failure the error carries its output. */
async function shell(what: string, line: string, cwd: string, env: NodeJS.ProcessEnv): Promise<string> {
  try {
    return (await run('/bin/sh', ['-c', line], { cwd, env, maxBuffer: 16 * 1024 * 1024 })).stdout;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${what} failed:\n${stdout}\n${stderr}`);
  }
}

const repo = path.resolve(import.meta.dirname, '../../../..');

/**
 * Stand in for the registry that serves zod, typescript and @types/node to a plugin author: a
 * package-lock.json pinning them to this repository's lockfile (version and integrity), so
 * `npm install` takes them from the npm cache that installing this repository filled, without
 * asking the registry. The SDK is pinned to the tarball the scaffold names, as npm would.
 */
function pinRegistryDependencies(dir: string): void {
  const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const repoLock = JSON.parse(readFileSync(path.join(repo, 'package-lock.json'), 'utf8')).packages;
  const sdkTarball = path.resolve(dir, manifest.devDependencies['@vouch/verifier-sdk'].slice('file:'.length));
  const { name, version, dependencies, devDependencies, peerDependencies } = manifest;
  const packages: Record<string, unknown> = {
    '': { name, version, dependencies, devDependencies, peerDependencies },
    'node_modules/@vouch/verifier-sdk': {
      version: '0.1.0',
      resolved: manifest.devDependencies['@vouch/verifier-sdk'],
      dependencies: { '@marcbachmann/cel-js': '8.0.0' },
    },
  };
  expect(existsSync(sdkTarball)).toBe(true);
  const queue = ['@marcbachmann/cel-js', ...Object.keys(dependencies), ...Object.keys(devDependencies)];
  for (let dep = queue.shift(); dep !== undefined; dep = queue.shift()) {
    const at = `node_modules/${dep}`;
    if (packages[at] !== undefined) continue;
    const entry = repoLock[at];
    expect(entry, `${dep} in this repository's package-lock.json`).toBeDefined();
    const { dev: _dev, devOptional: _devOptional, peer: _peer, ...kept } = entry;
    packages[at] = kept;
    queue.push(...Object.keys(entry.dependencies ?? {}));
  }
  writeFileSync(
    path.join(dir, 'package-lock.json'),
    JSON.stringify({ name, version, lockfileVersion: 3, requires: true, packages }, null, 2),
  );
}

// npm with the registry out of reach: everything comes from the npm cache that installing this
// repository filled, or from a path. A public @vouch/* name would fail here, as it 404s there.
const offlineNpm = {
  ...process.env,
  npm_config_offline: 'true',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
  npm_config_update_notifier: 'false',
};

describe('vouch verifier init', { timeout: 300_000 }, () => {
  let work: string;
  let plugin: string;
  let tarball: string;
  beforeAll(async () => {
    work = mkdtempSync(path.join(tmpdir(), 'vouch-verifier-init-'));
    plugin = path.join(work, 'acme-item-done');
    // The SDK as scripts/pack-workspaces.mjs packs it: a private build (never the workspace's
    // dist/, which other test files rebuild), packed into a tarball in a DEST of its own.
    const sdk = await buildVerifierSdk(work);
    mkdirSync(path.join(work, 'vouch-dist'));
    await shell(
      'npm pack of the SDK',
      'npm pack --ignore-scripts --silent --pack-destination ../vouch-dist',
      sdk,
      offlineNpm,
    );
    tarball = path.join(work, 'vouch-dist', 'vouch-verifier-sdk-0.1.0.tgz');
    expect(existsSync(tarball)).toBe(true);
  }, 300_000);
  afterAll(() => rmSync(work, { recursive: true, force: true }));

  describe('when DIR is new and --sdk names the packed SDK', () => {
    it('writes a package that its printed steps install offline, build and test, and that loads from vouch.config.json', async () => {
      const made = await runVouch(
        ['verifier', 'init', 'acme-item-done', '--id', 'acme/item-done', '--sdk', 'vouch-dist'],
        { cwd: work, env: {} },
      );
      expect(made.code, made.err).toBe(0);
      expect(JSON.parse(made.out)).toMatchObject({
        id: 'acme/item-done',
        sdk: 'file:../vouch-dist/vouch-verifier-sdk-0.1.0.tgz',
        files: expect.arrayContaining(['package.json', 'src/index.ts', 'src/index.test.ts']),
      });
      const manifest = JSON.parse(readFileSync(path.join(plugin, 'package.json'), 'utf8'));
      expect(manifest.exports['.']).toEqual({ types: './dist/index.d.ts', import: './dist/index.js' });
      expect(manifest.devDependencies['@vouch/verifier-sdk']).toBe(
        'file:../vouch-dist/vouch-verifier-sdk-0.1.0.tgz',
      );

      // Follow the printed steps, word for word, with npm offline.
      pinRegistryDependencies(plugin);
      const next = /^next: (.+)$/m.exec(made.err)?.[1];
      expect(next).toBe('cd acme-item-done && npm install && npm test');
      const tested = await shell('the printed next steps', next!, work, offlineNpm);
      expect(tested).toMatch(/# pass [1-9]/);
      expect(tested).toMatch(/# fail 0/);
      const installed = JSON.parse(
        readFileSync(path.join(plugin, 'node_modules/@vouch/verifier-sdk/package.json'), 'utf8'),
      );
      expect(installed).toMatchObject({ name: '@vouch/verifier-sdk', version: '0.1.0' });

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

  describe('when --sdk is absent', () => {
    it('takes the tarball from the current directory, as in a pack-workspaces DEST', async () => {
      const made = await runVouch(['verifier', 'init', '../from-dest'], {
        cwd: path.join(work, 'vouch-dist'),
        env: {},
      });
      expect(made.code, made.err).toBe(0);
      expect(JSON.parse(made.out).sdk).toBe('file:../vouch-dist/vouch-verifier-sdk-0.1.0.tgz');
    });

    it('refuses with exit 2, says how to pack the SDK, and writes nothing, when none is found', async () => {
      const made = await runVouch(['verifier', 'init', 'no-sdk'], { cwd: work, env: {} });
      expect(made.code).toBe(2);
      expect(made.err).toContain('node scripts/pack-workspaces.mjs');
      expect(existsSync(path.join(work, 'no-sdk'))).toBe(false);
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
