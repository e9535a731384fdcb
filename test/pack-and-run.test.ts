// The pack-and-run smoke test: what someone outside this repository gets. Every publishable
// workspace is packed (its prepack script builds dist/), the tarballs are installed into an
// empty project with `npm ci --offline` (the npm cache that `npm ci` filled here, nothing but
// loopback), and the installed packages must work with none of this repository around them:
// `vouch serve` on PGlite, `vouch export` + `vouch verify --bundle`, and a verifier package
// compiled against the packed @vouch/verifier-sdk passing its harness tests.
import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs script (the Dockerfile runs the same one), without declarations
import { packWorkspaces } from '../scripts/pack-workspaces.mjs';
import { healthcheckCommand, readDockerfile } from './helpers/dockerfile';
import { runVouchWithEnv, startVouchServer } from './helpers/server';

const run = promisify(execFile);
const repo = fileURLToPath(new URL('..', import.meta.url));
const TSC = join(repo, 'node_modules/typescript/bin/tsc');

/** A step that must succeed; on failure the error carries the command's own output. */
async function step(what: string, file: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout } = await run(file, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env } });
    return stdout;
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    throw new Error(`${what} failed:\n${stdout}\n${stderr}`);
  }
}

/** The container's HEALTHCHECK command, run here against a server on `port`: its exit code. */
async function containerHealthcheck(port: string): Promise<number> {
  const [command, ...args] = healthcheckCommand(readDockerfile().at(-1)!) ?? [];
  expect(command, 'the Dockerfile HEALTHCHECK runs node').toBe('node');
  try {
    await run(process.execPath, args, { env: { PATH: process.env.PATH, PORT: port } });
    return 0;
  } catch (error) {
    return (error as { code?: number }).code ?? -1;
  }
}

type Manifest = {
  name: string;
  exports?: Record<string, { types?: string; default?: string }>;
  bin?: Record<string, string>;
};

// Each step spawns node processes that open PGlite: generous limits for a loaded CI machine.
describe('the packed packages', { timeout: 300_000 }, () => {
  let work: string;
  let project: string;
  let names: string[];
  const installed = (name: string) => join(project, 'node_modules', name);
  const manifest = (name: string): Manifest =>
    JSON.parse(readFileSync(join(installed(name), 'package.json'), 'utf8'));
  const vouchBin = () => join(installed('@vouch/api'), manifest('@vouch/api').bin!.vouch!);

  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'vouch-pack-'));
    project = join(work, 'project');
    const { tarballs } = packWorkspaces(project) as { tarballs: Map<string, unknown> };
    names = [...tarballs.keys()];
    await step(
      'npm ci --offline of the packed tarballs (a dependency missing from the npm cache: run `npm ci` first)',
      'npm',
      ['ci', '--offline', '--no-audit', '--no-fund', '--ignore-scripts'],
      project,
    );
  }, 900_000);
  afterAll(async () => {
    if (work) await rm(work, { recursive: true, force: true });
  }, 300_000);

  describe('when installed from their tarballs into an empty project', () => {
    it('packs every publishable workspace', () => {
      expect(names.sort()).toEqual([
        '@vouch/api',
        '@vouch/audit',
        '@vouch/client',
        '@vouch/ledger',
        '@vouch/mcp-gateway',
        '@vouch/records',
        '@vouch/telemetry',
        '@vouch/verifier-sdk',
        '@vouch/verifiers',
      ]);
    });

    it('ships every file that exports, types and bin name, and each entry imports', async () => {
      const missing: string[] = [];
      const entries: string[] = [];
      for (const name of names) {
        const { exports = {}, bin = {} } = manifest(name);
        for (const [path, targets] of Object.entries(exports)) {
          for (const file of [targets.default, targets.types]) {
            if (file && !existsSync(join(installed(name), file)))
              missing.push(`${name}: ${file} (exports "${path}")`);
          }
          entries.push(path === '.' ? name : `${name}/${path.slice(2)}`);
        }
        for (const [command, file] of Object.entries(bin)) {
          if (!existsSync(join(installed(name), file))) missing.push(`${name}: ${file} (bin ${command})`);
        }
      }
      expect(missing, 'files the package.json names but the tarball lacks').toEqual([]);
      // One process imports them all, as a consumer would, and reports each failure by entry.
      const script = `const failed = [];
for (const entry of ${JSON.stringify(entries)}) {
  try { await import(entry); } catch (error) { failed.push(entry + ': ' + error.message); }
}
console.log(JSON.stringify(failed));`;
      const failed = JSON.parse(
        await step(
          'importing the package entries',
          process.execPath,
          ['--input-type=module', '-e', script],
          project,
        ),
      ) as string[];
      expect(failed, 'package entry points that do not import').toEqual([]);
    });

    it('installs no TypeScript runner and no sources', () => {
      expect(existsSync(installed('tsx')), 'tsx is installed: some package depends on it at run time').toBe(
        false,
      );
      const sources = names.filter((name) => existsSync(join(installed(name), 'src')));
      expect(sources, 'packages that ship src/').toEqual([]);
    });

    it('does not install typescript (an optional peer), and `vouch check-execute-path` says how to', async () => {
      expect(existsSync(installed('typescript')), 'typescript is installed: some package depends on it').toBe(
        false,
      );
      const result = await runVouchWithEnv(['check-execute-path', '.'], {}, project, vouchBin());
      expect(result.stderr).toContain('npm install --save-dev typescript');
      expect(result.code).toBe(2);
    });

    it('runs `vouch serve` on PGlite, answering /healthz, and exports a bundle that `vouch verify --bundle` accepts', async () => {
      const dataDir = join(work, 'data');
      const server = await startVouchServer({
        storage: { VOUCH_DATA_DIR: dataDir },
        cwd: work,
        bin: vouchBin(),
      });
      try {
        expect((await server.call('GET', '/healthz')).status).toBe(200);
        expect(await containerHealthcheck(new URL(server.url).port), 'the container HEALTHCHECK').toBe(0);
        const created = await server.call('POST', '/v1/keys', {
          key: server.adminKey,
          body: { identity: 'user:audrey', roles: ['auditor'] },
        });
        expect(created.status).toBe(201);
      } finally {
        await server.stop();
      }
      expect(
        await containerHealthcheck(new URL(server.url).port),
        'the HEALTHCHECK of a stopped server',
      ).toBe(1);
      const env = { VOUCH_DATA_DIR: dataDir };
      const publicKey = await runVouchWithEnv(['keys', 'log-public'], env, work, vouchBin());
      expect(publicKey.code, publicKey.stderr).toBe(0);
      const exported = await runVouchWithEnv(['export', '--log', 'system'], env, work, vouchBin());
      expect(exported.code, exported.stderr).toBe(0);
      const bundle = join(work, 'system.bundle.jsonl');
      writeFileSync(bundle, exported.stdout);
      const verify = (file: string) =>
        runVouchWithEnv(
          ['verify', '--bundle', file, '--public-key', publicKey.stdout.trim(), '--json'],
          {},
          work,
          vouchBin(),
        );
      const verified = await verify(bundle);
      expect(verified.code, verified.stderr).toBe(0);

      // The same check refuses a bundle whose events were changed after signing.
      const lines = exported.stdout.trimEnd().split('\n');
      const audrey = lines.findIndex((line) => line.includes('user:audrey'));
      expect(audrey, 'the event of the key made above').toBeGreaterThan(0);
      lines[audrey] = lines[audrey]!.replace('user:audrey', 'user:mallory');
      writeFileSync(bundle, `${lines.join('\n')}\n`);
      expect((await verify(bundle)).code).toBe(1);
    });

    it('builds a verifier package against the packed SDK, and its harness tests pass', async () => {
      const plugin = join(project, 'order-shipped');
      mkdirSync(plugin);
      for (const file of ['order-shipped.ts', 'fake-carrier.ts', 'order-shipped.test.ts']) {
        // The tutorial's verifier, as an outside author writes it for Node16 resolution: explicit
        // .js extensions, and the harness run by node:test instead of vitest.
        const text = readFileSync(join(repo, 'docs/tutorial', file), 'utf8')
          .replace(/from '(\.\/[^']+)'/g, "from '$1.js'")
          .replace("from 'vitest'", "from 'node:test'");
        writeFileSync(join(plugin, file), text);
      }
      writeFileSync(
        join(plugin, 'package.json'),
        JSON.stringify({ name: 'acme-order-shipped', type: 'module' }),
      );
      writeFileSync(
        join(plugin, 'tsconfig.json'),
        JSON.stringify({
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            strict: true,
            outDir: 'dist',
            // node:test and fetch's Response come from @types/node, a dev tool like tsc itself.
            typeRoots: [join(repo, 'node_modules/@types')],
            types: ['node'],
            skipLibCheck: true,
          },
          include: ['*.ts'],
        }),
      );
      await step(
        'tsc against the packed @vouch/verifier-sdk',
        process.execPath,
        [TSC, '-p', 'tsconfig.json'],
        plugin,
      );
      const out = await step(
        'node --test of the verifier harness',
        process.execPath,
        ['--test', 'dist/order-shipped.test.js'],
        plugin,
      );
      expect(out).toMatch(/# pass [1-9]/);
      expect(out).toMatch(/# fail 0/);
    });

    it('scaffolds a verifier with `vouch verifier init`, packs it, and `vouch serve` runs its check into a story', async () => {
      // The author's side: scaffold, build against the packed SDK, pack.
      const author = join(project, 'acme-item-done');
      const init = await runVouchWithEnv(
        ['verifier', 'init', author, '--id', 'acme/item-done'],
        {},
        project,
        vouchBin(),
      );
      expect(init.code, init.stderr).toBe(0);
      await step(
        'tsc of the scaffold against the packed @vouch/verifier-sdk',
        process.execPath,
        [TSC, '-p', 'tsconfig.json', '--typeRoots', join(repo, 'node_modules/@types')],
        author,
      );
      const harness = await step(
        'node --test of the scaffold',
        process.execPath,
        ['--test', 'dist/'],
        author,
      );
      expect(harness).toMatch(/# fail 0/);
      const tarball = (
        await step('npm pack of the scaffold', 'npm', ['pack', '--ignore-scripts', '--silent'], author)
      )
        .trim()
        .split('\n')
        .at(-1)!;

      // The operator's side: a directory outside the repository with the tarball unpacked into
      // node_modules (what `npm install ./acme-item-done-0.1.0.tgz` leaves), next to vouch.config.json.
      const site = join(work, 'site');
      mkdirSync(join(site, 'node_modules'), { recursive: true });
      await step('tar', '/bin/tar', ['-xzf', join(author, tarball), '-C', join(site, 'node_modules')], site);
      renameSync(join(site, 'node_modules/package'), join(site, 'node_modules/acme-item-done'));
      // Its dependencies come from the packed install (zod, @vouch/verifier-sdk).
      writeFileSync(
        join(site, 'package.json'),
        JSON.stringify({ name: 'site', private: true, type: 'module' }),
      );
      for (const dep of ['zod', '@vouch']) {
        symlinkSync(installed(dep), join(site, 'node_modules', dep), 'dir');
      }
      const items = createServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ status: 'done' }));
      });
      await new Promise<void>((resolve) => items.listen(0, '127.0.0.1', resolve));
      const itemsUrl = `http://127.0.0.1:${(items.address() as AddressInfo).port}`;
      writeFileSync(
        join(site, 'vouch.config.json'),
        JSON.stringify({
          $schema: './node_modules/@vouch/api/vouch.config.schema.json',
          connections: { 'items-api': { type: 'http', allowHosts: ['127.0.0.1'] } },
          verifiers: [
            {
              use: 'acme-item-done',
              connection: 'items-api',
              options: { baseUrl: itemsUrl, source: 'items-api' },
            },
          ],
        }),
      );
      const server = await startVouchServer({
        storage: { VOUCH_DATA_DIR: join(work, 'site-data') },
        cwd: site,
        bin: vouchBin(),
      });
      try {
        const issue = async (identity: string, roles: string[], extra: Record<string, unknown> = {}) => {
          const created = await server.call('POST', '/v1/keys', {
            key: server.adminKey,
            body: { identity, roles, ...extra },
          });
          expect(created.status).toBe(201);
          return ((await created.json()) as { secret: string }).secret;
        };
        const gateway = await issue('agent:item-bot', ['gateway'], {
          scopes: ['items:write'],
          environments: ['test'],
        });
        const verifier = await issue('service:checker', ['verifier']);
        const auditor = await issue('user:audrey', ['auditor']);
        const tool = await server.call('POST', '/v1/tools', {
          key: server.adminKey,
          body: {
            server_id: 'items',
            tool_name: 'item.finish',
            side_effect: 'idempotent',
            required_scopes: ['items:write'],
            allowed_environments: ['test'],
            approval_required: false,
          },
        });
        expect(tool.status, await tool.clone().text()).toBe(201);
        const proposed = await server.call('POST', '/v1/proposals', {
          key: gateway,
          body: {
            idempotency_key: 'finish-item-1',
            action: 'item.finish',
            server_id: 'items',
            tool_name: 'item.finish',
            target: { kind: 'item', id: 'item-1', env: 'test' },
            arguments: {},
            side_effect: 'idempotent',
            postconditions: [{ name: 'item.done' }],
          },
        });
        expect(proposed.status, await proposed.clone().text()).toBe(201);
        const { proposal, decision } = (await proposed.json()) as {
          proposal: { id: string };
          decision: { verdict: string };
        };
        expect(decision.verdict).toBe('allow');
        const authorized = await server.call('POST', `/v1/proposals/${proposal.id}/authorize`, {
          key: gateway,
        });
        expect(authorized.status, await authorized.clone().text()).toBe(200);
        const observed = await server.call('POST', '/v1/observations', {
          key: gateway,
          body: {
            proposal_id: proposal.id,
            outcome: 'succeeded',
            result: { ok: true },
            transport_status: 200,
          },
        });
        expect(observed.status, await observed.clone().text()).toBe(201);
        const { observation } = (await observed.json()) as { observation: { id: string } };
        const verified = await server.call('POST', `/v1/observations/${observation.id}/verify`, {
          key: verifier,
        });
        expect(verified.status, await verified.clone().text()).toBe(201);
        const story = await server.call('GET', `/v1/proposals/${proposal.id}`, { key: auditor });
        expect(story.status).toBe(200);
        // The story carries the plugin's check. Its source is the configured system the host
        // lent it (the `items-api` connection), which is not the tool's server (`items`).
        const { verifications } = (await story.json()) as {
          verifications: Array<{ checks: Array<Record<string, unknown>> }>;
        };
        expect(verifications.flatMap((v) => v.checks)).toContainEqual(
          expect.objectContaining({
            postcondition: 'item.done',
            status: 'pass',
            source: 'items-api',
            verifier: expect.objectContaining({ id: 'acme/item-done' }),
          }),
        );
      } finally {
        await server.stop();
        await new Promise((resolve) => items.close(resolve));
      }
    });

    it('refuses a .ts plugin on plain node with a message saying to build it', async () => {
      const site = join(project, 'ts-plugin-site');
      mkdirSync(site);
      writeFileSync(join(site, 'plugin.ts'), 'export default { id: "acme/x" } as const;\n');
      writeFileSync(join(site, 'vouch.config.json'), JSON.stringify({ verifiers: [{ use: './plugin.ts' }] }));
      const out = await step(
        'loadVerifierConfig from the packed @vouch/verifiers',
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { loadVerifierConfig } from '@vouch/verifiers';
           try { await loadVerifierConfig('vouch.config.json'); console.log('{}'); }
           catch (e) { console.log(JSON.stringify({ code: e.code, field: e.field, message: e.message })); }`,
        ],
        site,
      );
      const refused = JSON.parse(out);
      expect(refused).toMatchObject({ code: 'CONFIG_INVALID', field: '/verifiers/0/use' });
      expect(refused.message).toMatch(/build the plugin to JavaScript/);
    });

    it('without the optional PGlite package, `vouch serve` names the package to install', async () => {
      const pglite = installed('@electric-sql/pglite');
      const aside = `${pglite}.aside`;
      renameSync(pglite, aside);
      try {
        const result = await runVouchWithEnv(
          ['serve'],
          { VOUCH_DATA_DIR: join(work, 'no-pglite'), PORT: '0', HOST: '127.0.0.1' },
          work,
          vouchBin(),
        );
        expect(result.code).not.toBe(0);
        expect(result.stderr).toContain('npm install @electric-sql/pglite');
      } finally {
        renameSync(aside, pglite);
      }
    });
  });
});
