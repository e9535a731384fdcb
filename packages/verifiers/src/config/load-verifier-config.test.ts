import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isVerifierError, runVerifiers } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ResolveHost } from '../net/guarded-fetch';
import { sendJson, startServer, type TestServer } from '../test-support/http-server';
import { loadVerifierConfig } from './load-verifier-config';

const fixture = (name: string) => path.join(import.meta.dirname, 'fixtures', name);
const resolveHost: ResolveHost = async () => {
  throw Object.assign(new Error('no DNS in tests'), { code: 'ENOTFOUND' });
};
let dir: string;
let api: TestServer;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'vouch-config-'));
  api = await startServer((_req, res) => sendJson(res, 200, { id: 're_1' }));
});
afterAll(async () => {
  await api.close();
  await rm(dir, { recursive: true, force: true });
});

let counter = 0;
async function write(config: unknown): Promise<string> {
  const file = path.join(dir, `vouch.config.${++counter}.json`);
  await writeFile(file, typeof config === 'string' ? config : JSON.stringify(config));
  return file;
}

async function refusal(config: unknown, env: Record<string, string> = {}) {
  const file = await write(config);
  try {
    await loadVerifierConfig(file, { env, resolveHost });
  } catch (error) {
    if (isVerifierError(error))
      return { code: error.code, file: error.file, verifier: error.verifier, field: error.field };
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

const httpEntry = (more: Record<string, unknown> = {}) => ({
  use: 'http-json',
  name: 'refund-api',
  handles: ['refund.recorded'],
  options: {
    // Case tables are built before beforeAll runs; those cases never reach the server.
    url: `${api?.url ?? 'http://api.test'}/refunds/{arguments.refund_id}`,
    assertions: [{ op: 'exists', pointer: '/id' }],
  },
  ...more,
});

describe('loadVerifierConfig', () => {
  describe('when the configuration is valid', () => {
    it('registers built-ins and plugins with their grants', async () => {
      const file = await write({
        connections: {
          'ledger-db': { type: 'postgres', urlEnv: 'LEDGER_DATABASE_URL' },
          'refund-api': { type: 'http', allowHosts: ['127.0.0.1'] },
        },
        verifiers: [
          httpEntry({ connection: 'refund-api' }),
          {
            use: 'sql',
            name: 'refund-row',
            handles: ['refund.recorded'],
            connection: 'ledger-db',
            timeoutMs: 2000,
            options: {
              query: 'select 1 from refunds where id = $1',
              params: [{ from: 'arguments.refund_id' }],
              expect: { op: 'exists' },
            },
          },
          { use: 'file', options: { roots: ['./checkout'] } },
          { use: fixture('acme-ticket-verifier.mjs'), options: { board: 'ops' } },
        ],
      });
      const loaded = await loadVerifierConfig(file, {
        env: { LEDGER_DATABASE_URL: 'postgres://u@127.0.0.1:1/x' },
        resolveHost,
      });
      try {
        expect(loaded.registry.entries.map((e) => [e.name, e.verifier.id, Object.keys(e.grants)])).toEqual([
          ['refund-api', 'http-json', ['fetch']],
          ['refund-row', 'sql', ['sql']],
          ['file', 'file', []],
          ['acme/ticket-closed', 'acme/ticket-closed', []],
        ]);
        expect(loaded.registry.get('file')?.options).toMatchObject({ roots: [path.join(dir, 'checkout')] });
        expect(loaded.registry.get('refund-row')?.timeoutMs).toBe(2000);
        expect(Object.keys(loaded.connections)).toEqual(['ledger-db', 'refund-api']);

        // The http connection is a guarded fetch that allows loopback, as configured.
        const outcome = await runVerifiers({
          registry: loaded.registry,
          postconditions: [{ name: 'refund.recorded' }],
          proposal: exampleProposal({ arguments: { refund_id: 're_1' } }),
          observation: exampleObservation(),
        });
        expect(outcome.checks.find((c) => c.verifier?.name === 'refund-api')?.status).toBe('pass');
      } finally {
        await loaded.close();
      }
    });

    it('gives a network verifier without a connection the default guard, which refuses loopback', async () => {
      const loaded = await loadVerifierConfig(await write({ verifiers: [httpEntry()] }), { resolveHost });
      const outcome = await runVerifiers({
        registry: loaded.registry,
        proposal: exampleProposal({
          arguments: { refund_id: 're_1' },
          postconditions: [{ name: 'refund.recorded' }],
        }),
        observation: exampleObservation(),
      });
      expect(outcome.checks[0]).toMatchObject({ status: 'error', reason: 'SOURCE_FORBIDDEN' });
      await loaded.close();
    });

    it('loads a TypeScript configuration', async () => {
      const loaded = await loadVerifierConfig(fixture('vouch.config.ts'));
      expect(loaded.registry.entries.map((e) => [e.name, e.options])).toEqual([
        ['acme/ticket-closed', { board: 'ops' }],
        ['by-path', { board: 'dev' }],
      ]);
      await loaded.close();
    });
  });

  describe('when it names mysql and redis connections', () => {
    it('gives the sql verifier a MySQL grant and the redis verifier a Redis grant', async () => {
      const file = await write({
        connections: {
          'orders-db': { type: 'mysql', urlEnv: 'ORDERS_DB' },
          cache: {
            type: 'redis',
            url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
            keyPrefix: 'vouch-config-test:',
          },
        },
        verifiers: [
          {
            use: 'sql',
            name: 'orders',
            handles: ['refund.recorded'],
            connection: 'orders-db',
            options: {
              query: "select 'mariadb' as kind from dual where version() like $1",
              params: [{ value: '%' }],
              expect: { op: 'exists' },
            },
          },
          {
            use: 'redis',
            handles: ['refund.recorded'],
            connection: 'cache',
            options: { command: 'GET', key: 'nothing-here', successCondition: 'result == null' },
          },
        ],
      });
      const loaded = await loadVerifierConfig(file, {
        resolveHost,
        env: { ORDERS_DB: process.env.MYSQL_URL ?? 'mysql://root@127.0.0.1:3306/mysql' },
      });
      try {
        const outcome = await runVerifiers({
          registry: loaded.registry,
          proposal: exampleProposal({ postconditions: [{ name: 'refund.recorded' }] }),
          observation: exampleObservation(),
        });
        expect(outcome.checks.map((c) => [c.source, c.status])).toEqual([
          ['orders-db', 'pass'],
          ['cache', 'pass'],
        ]);
      } finally {
        await loaded.close();
      }
    });

    it('refuses a redis verifier without a redis connection', async () => {
      expect(
        await refusal({
          verifiers: [{ use: 'redis', options: { command: 'GET', key: 'k', successCondition: 'true' } }],
        }),
      ).toMatchObject({ code: 'CONFIG_INVALID', field: '/verifiers/0/connection' });
    });
  });

  describe('when a plugin package exports only an `import` condition', () => {
    it("is resolved from the config file's directory, not from Vouch's", async () => {
      // An installed package next to the config, as `npm install acme-vouch-plugin` leaves it.
      const project = path.join(dir, 'import-only');
      const pkg = path.join(project, 'node_modules', 'acme-vouch-plugin');
      await mkdir(path.join(pkg, 'dist'), { recursive: true });
      await writeFile(
        path.join(pkg, 'package.json'),
        JSON.stringify({
          name: 'acme-vouch-plugin',
          type: 'module',
          exports: { '.': { import: './dist/index.js' } },
        }),
      );
      await writeFile(
        path.join(pkg, 'dist', 'index.js'),
        `export default { id: 'acme/always', version: '1.0.0', apiVersion: 1, handles: ['acme.always'],
          check: () => ({ name: 'acme.always', status: 'pass', source: 'acme-source' }) };`,
      );
      const file = path.join(project, 'vouch.config.json');
      await writeFile(file, JSON.stringify({ verifiers: [{ use: 'acme-vouch-plugin' }] }));
      const loaded = await loadVerifierConfig(file, { resolveHost });
      try {
        expect(loaded.registry.entries.map((e) => e.name)).toEqual(['acme/always']);
      } finally {
        await loaded.close();
      }
    });

    it('names the package when it is not installed there', async () => {
      expect(await refusal({ verifiers: [{ use: 'acme-not-installed' }] })).toMatchObject({
        code: 'CONFIG_INVALID',
        field: '/verifiers/0/use',
      });
    });
  });

  describe('when the configuration is wrong', () => {
    it('throws CONFIG_NOT_FOUND for a missing file', async () => {
      await expect(loadVerifierConfig(path.join(dir, 'nope.json'))).rejects.toMatchObject({
        code: 'CONFIG_NOT_FOUND',
      });
    });

    it('throws CONFIG_INVALID for a file that is not JSON', async () => {
      expect(await refusal('{ "verifiers": [')).toMatchObject({ code: 'CONFIG_INVALID', field: '' });
    });

    it('names the file, the verifier and the field for an invalid option', async () => {
      const file = await write({
        verifiers: [{ use: 'file', options: { roots: ['/r'] } }, httpEntry({ options: { url: 'ftp://x' } })],
      });
      await expect(loadVerifierConfig(file, { resolveHost })).rejects.toMatchObject({
        name: 'VerifierError',
        code: 'OPTIONS_INVALID',
        file,
        verifier: 'refund-api',
        field: '/verifiers/1/options/url',
      });
    });

    describe("when a verifier reads the tool's result without binding it to the proposal", () => {
      // The attack from issue #32: the gateway names another order's refund of the same
      // amount, and a lookup built from the result reads it.
      const byResult = {
        url: 'https://bank.test/refunds/{observation.result.refund_id}',
        assertions: [{ op: 'equals', pointer: '/amount', from: 'arguments.amount' }],
      };
      it.each([
        ['an http-json URL', 'http-json', byResult, '/options/url'],
        [
          'an http-json URL with bind but no evidenceRef',
          'http-json',
          { ...byResult, bind: [{ pointer: '/order_id', from: 'arguments.order_id' }] },
          '/options/url',
        ],
        [
          'a sql parameter',
          'sql',
          {
            query: 'select amount from refunds where refund_id = $1',
            params: [{ from: 'observation.result.refund_id' }],
            expect: { op: 'exists' },
          },
          '/options/params/0/from',
        ],
        [
          'a redis key',
          'redis',
          {
            command: 'GET',
            key: 'refund:{observation.result.refund_id}',
            successCondition: 'result != null',
          },
          '/options/key',
        ],
        [
          'a prometheus query',
          'prometheus',
          {
            url: 'https://prometheus.test',
            query: 'up{job="{observation.result.job}"}',
            successCondition: 'value == 1.0',
          },
          '/options/query',
        ],
        ['a file path', 'file', { roots: ['/r'], path: '{observation.result.path}' }, '/options/path'],
        [
          'a condition',
          'http-json',
          {
            url: 'https://bank.test/refunds/{arguments.refund_id}',
            successCondition: 'result.id == observation.result.refund_id',
          },
          '/options/successCondition',
        ],
      ])('refuses %s at startup (OPTIONS_INVALID at the field)', async (_label, use, options, field) => {
        const connections = {
          db: { type: 'postgres', url: 'postgres://x@127.0.0.1:1/x' },
          cache: { type: 'redis', url: 'redis://127.0.0.1:1' },
        };
        const connection = use === 'sql' ? 'db' : use === 'redis' ? 'cache' : undefined;
        const file = await write({
          connections,
          verifiers: [{ use, ...(connection ? { connection } : {}), options }],
        });
        const error = await loadVerifierConfig(file, { resolveHost }).catch((e: unknown) => e);
        expect(error).toMatchObject({ code: 'OPTIONS_INVALID', field: `/verifiers/0${field}` });
        expect((error as Error).message).toMatch(/observation/);
      });

      it('loads it once it binds what is read to the proposal and names it', async () => {
        const file = await write({
          verifiers: [
            {
              use: 'http-json',
              options: {
                ...byResult,
                bind: [{ pointer: '/order_id', from: 'arguments.order_id' }],
                evidenceRef: 'refund:{result.id}',
              },
            },
          ],
        });
        const loaded = await loadVerifierConfig(file, { resolveHost });
        await loaded.close();
      });
    });

    it('names the verifier, the field and the position for a CEL condition that does not compile', async () => {
      const file = await write({
        verifiers: [
          httpEntry({
            options: { url: 'http://api.test/refunds/1', successCondition: 'result.status == "ok" &&' },
          }),
        ],
      });
      const error = await loadVerifierConfig(file, { resolveHost }).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'OPTIONS_INVALID',
        verifier: 'refund-api',
        field: '/verifiers/0/options/successCondition',
      });
      expect((error as Error).message).toMatch(/line 1, column 25/);
    });

    it.each([
      ['a misspelt key', { verifiers: [{ use: 'file', optoins: {} }] }, '/verifiers/0/optoins', 'file'],
      [
        'a memory limit on a built-in, which runs in the server',
        { verifiers: [{ use: 'file', memoryMb: 64, options: { roots: ['/r'] } }] },
        '/verifiers/0/memoryMb',
        'file',
      ],
      [
        'a user for a built-in, which runs in the server',
        { verifiers: [{ use: 'file', user: { uid: 65534, gid: 65534 }, options: { roots: ['/r'] } }] },
        '/verifiers/0/user',
        'file',
      ],
      [
        'a memory limit below 64 MB (Node itself takes about 45 MB resident)',
        { verifiers: [{ use: fixture('acme-ticket-verifier.mjs'), memoryMb: 32, options: { board: 'x' } }] },
        '/verifiers/0/memoryMb',
        undefined,
      ],
      [
        'an unknown connection',
        { verifiers: [httpEntry({ connection: 'nope' })] },
        '/verifiers/0/connection',
        'http-json',
      ],
      [
        'a sql verifier without a database',
        { verifiers: [{ use: 'sql', options: { query: 'select 1', expect: { op: 'exists' } } }] },
        '/verifiers/0/connection',
        'sql',
      ],
      [
        'two http connections on one verifier',
        {
          connections: { a: { type: 'http' }, b: { type: 'http' } },
          verifiers: [httpEntry({ connection: ['a', 'b'] })],
        },
        '/verifiers/0/connection',
        'http-json',
      ],
      [
        'an unset environment variable',
        { connections: { db: { type: 'postgres', urlEnv: 'NOPE' } } },
        '/connections/db/urlEnv',
        undefined,
      ],
      [
        'a connection with url and urlEnv',
        { connections: { db: { type: 'postgres', url: 'x', urlEnv: 'Y' } } },
        '/connections/db/url',
        undefined,
      ],
      [
        'a bad allow-list entry',
        { connections: { a: { type: 'http', allowHosts: ['http://x/'] } } },
        '/connections/a/allowHosts/0',
        undefined,
      ],
      [
        'a module that does not exist',
        { verifiers: [{ use: './missing.ts' }] },
        '/verifiers/0/use',
        './missing.ts',
      ],
      [
        'a plugin without a vendor prefix',
        { verifiers: [{ use: fixture('acme-ticket-verifier.mjs'), export: 'unprefixed' }] },
        '/verifiers/0/use',
        'ticket-closed',
      ],
      [
        'an export that is not there',
        { verifiers: [{ use: fixture('acme-ticket-verifier.mjs'), export: 'nothing' }] },
        '/verifiers/0/export',
        undefined,
      ],
    ])('throws CONFIG_INVALID for %s', async (_label, config, field, verifier) => {
      const found = await refusal(config);
      expect(found).toMatchObject({ code: 'CONFIG_INVALID', field });
      expect(found.file).toMatch(/vouch\.config\.\d+\.json$/);
      if (verifier !== undefined) expect(found.verifier).toContain(verifier);
    });

    it('throws VERIFIER_API_UNSUPPORTED for a plugin written for another contract', async () => {
      expect(
        await refusal({
          verifiers: [
            { use: fixture('acme-ticket-verifier.mjs'), export: 'future', options: { board: 'x' } },
          ],
        }),
      ).toMatchObject({
        code: 'VERIFIER_API_UNSUPPORTED',
        verifier: 'acme/ticket-closed',
        field: '/verifiers/0/use',
      });
    });

    it("throws OPTIONS_INVALID at the field a plugin's own schema refuses, validated in its process", async () => {
      expect(
        await refusal({ verifiers: [{ use: fixture('acme-ticket-verifier.mjs'), options: { board: 3 } }] }),
      ).toMatchObject({
        code: 'OPTIONS_INVALID',
        verifier: 'acme/ticket-closed',
        field: '/verifiers/0/options/board',
      });
    });

    it('throws VERIFIER_DUPLICATE for a name used twice', async () => {
      expect(
        await refusal({
          verifiers: [
            { use: 'file', options: { roots: ['/a'] } },
            { use: 'file', options: { roots: ['/b'] } },
          ],
        }),
      ).toMatchObject({
        code: 'VERIFIER_DUPLICATE',
        verifier: 'file',
        field: '/verifiers/1/name',
      });
    });

    it('refuses a measurement policy that could never pass, naming the field', async () => {
      expect(
        await refusal({
          verifiers: [
            {
              use: 'file',
              options: { roots: ['/a'] },
              measurement: { count: 2, consecutiveSuccessLimit: 3 },
            },
          ],
        }),
      ).toMatchObject({
        code: 'VERIFIER_INVALID',
        field: '/verifiers/0/measurement/consecutiveSuccessLimit',
      });
    });
  });

  describe('when an entry has a measurement policy and a connection', () => {
    it('registers the policy, and the connection as the source of its checks', async () => {
      const loaded = await loadVerifierConfig(
        await write({
          connections: { 'refund-api': { type: 'http', allowHosts: ['127.0.0.1'] } },
          verifiers: [httpEntry({ connection: 'refund-api', measurement: { interval: '1s', count: 5 } })],
        }),
        { resolveHost },
      );
      const entry = loaded.registry.entries[0]!;
      expect(entry.measurement).toMatchObject({ intervalMs: 1000, count: 5 });
      expect(entry.source).toBe('refund-api');
      await loaded.close();
    });
  });
});
