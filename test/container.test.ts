// The container image, checked without a docker daemon (CI has none): the Dockerfile must
// build from the same artifacts as the pack-and-run smoke test (scripts/pack-workspaces.mjs,
// then `npm ci --offline` of the project it writes) and run them as the smoke test does. The
// smoke test itself (test/pack-and-run.test.ts) runs the image's HEALTHCHECK and ENTRYPOINT
// against the installed packages.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { execForm, healthcheckCommand, lastOf, readDockerfile } from './helpers/dockerfile';

const repo = fileURLToPath(new URL('..', import.meta.url));
const stages = readDockerfile();
const runtime = stages.at(-1)!;
const packStage = stages.find((stage) => stage.name === 'pack');

describe('the Dockerfile', () => {
  describe('when it builds', () => {
    it('packs with scripts/pack-workspaces.mjs and installs that project offline with npm ci', () => {
      expect(packStage, 'a stage named pack').toBeDefined();
      const runs = packStage!.instructions.filter((i) => i.keyword === 'RUN').map((i) => i.args);
      const script = runs.join(' && ');
      const packed = /node scripts\/pack-workspaces\.mjs (\S+)/.exec(script);
      expect(packed, 'RUN node scripts/pack-workspaces.mjs DIR').not.toBeNull();
      const dir = packed![1]!;
      // The install must happen in the directory the script wrote, from the cache only.
      expect(script.indexOf(`cd ${dir}`)).toBeGreaterThan(packed!.index);
      expect(script).toMatch(/npm ci --offline --omit=dev\b/);
      expect(lastOf(runtime, 'COPY')).toBe(`--from=pack ${dir} /app`);
    });

    it('starts from a clean tree: node_modules and dist/ are not copied in', () => {
      const ignored = readFileSync(`${repo}/.dockerignore`, 'utf8').split('\n');
      expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '**/dist']));
    });
  });

  describe('when it runs', () => {
    it('runs the installed vouch launcher that @vouch/api names as its bin', () => {
      const api = JSON.parse(readFileSync(`${repo}/apps/api/package.json`, 'utf8')) as {
        bin: { vouch: string };
      };
      const entrypoint = execForm(lastOf(runtime, 'ENTRYPOINT')!);
      expect(entrypoint).toEqual([
        'node',
        `/app/node_modules/@vouch/api/${api.bin.vouch.replace(/^\.\//, '')}`,
      ]);
      expect(execForm(lastOf(runtime, 'CMD')!)).toEqual(['serve']);
    });

    it('runs as an unprivileged user, with its data on a volume, listening beyond loopback', () => {
      expect(lastOf(runtime, 'USER')).toMatch(/^(?!root$|0$)\S+$/);
      expect(execForm(lastOf(runtime, 'VOLUME')!)).toEqual(['/data']);
      const env = lastOf(runtime, 'ENV')!;
      expect(env).toMatch(/\bVOUCH_DATA_DIR=\/data\b/);
      expect(env).toMatch(/\bHOST=0\.0\.0\.0\b/);
    });

    it('checks its health on /readyz', () => {
      expect(healthcheckCommand(runtime)?.join(' ')).toContain('/readyz');
    });
  });
});

describe('deploy/compose.yaml', () => {
  const compose = readFileSync(`${repo}/deploy/compose.yaml`, 'utf8');
  const service = (name: string) => {
    const start = compose.indexOf(`\n  ${name}:\n`);
    expect(start, `service ${name}`).toBeGreaterThan(-1);
    const rest = compose.slice(start + 1);
    const end = rest.slice(1).search(/\n {2}\S|\n\S/);
    return end === -1 ? rest : rest.slice(0, end + 1);
  };

  describe('when it starts Vouch on Postgres', () => {
    it('creates the owner role on first start with CREATEROLE and without superuser', () => {
      const init = readFileSync(`${repo}/deploy/postgres-init.sh`, 'utf8');
      expect(service('postgres')).toContain('./postgres-init.sh:/docker-entrypoint-initdb.d/');
      const createRole = init.split('\n').find((line) => line.startsWith('CREATE ROLE vouch_owner'));
      expect(createRole).toMatch(/^CREATE ROLE vouch_owner LOGIN CREATEROLE PASSWORD /);
      expect(createRole).not.toMatch(/SUPERUSER/i);
      expect(init).toMatch(/CREATE DATABASE vouch OWNER vouch_owner/);
    });

    it('migrates as the owner role, which creates the runtime role', () => {
      const migrate = service('migrate');
      expect(migrate).toMatch(/DATABASE_URL: postgres:\/\/vouch_owner:/);
      expect(migrate).toContain(
        '"migrate", "--runtime-role", "vouch_app", "--runtime-password-env", "VOUCH_APP_PASSWORD"',
      );
    });

    it('serves as the runtime role, after the migration, with a signing key', () => {
      const vouch = service('vouch');
      expect(vouch).toMatch(/DATABASE_URL: postgres:\/\/vouch_app:/);
      expect(vouch).toMatch(/migrate: \{ condition: service_completed_successfully \}/);
      expect(vouch).toMatch(/VOUCH_LOG_SIGNING_KEY: \$\{VOUCH_LOG_SIGNING_KEY:\?/);
      expect(vouch).toMatch(/read_only: true/);
    });
  });
});
