// `vouch verifier run`, through the real CLI process: the configured verifiers run once for one
// observation against a live HTTP source (a real server on loopback), with no Vouch server,
// no keys and no database. The story it reads comes from the API itself.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exampleObservation, exampleProposal } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness } from '../apps/api/src/testing/app-harness';
import {
  closedPort,
  sendJson,
  startServer,
  type TestServer,
} from '../packages/verifiers/src/test-support/http-server';
import { runVouchWithEnv } from './helpers/server';

const repo = join(import.meta.dirname, '..');
let work: string;
let billing: TestServer;
/** A story as `GET /v1/proposals/{id}` answers it, for a refund whose source says it succeeded. */
let story: unknown;

const refunds: Record<string, unknown> = {
  'r-1': { id: 'r-1', status: 'succeeded' },
  'r-2': { id: 'r-2', status: 'pending' },
};

/** A vouch.config.json whose `refund-api` entry reads `baseUrl`/refunds/{refund_id}. */
function config(file: string, baseUrl: string, options: Record<string, unknown> = {}): string {
  const path = join(work, file);
  writeFileSync(
    path,
    JSON.stringify({
      connections: { 'billing-api': { type: 'http', allowHosts: ['127.0.0.1'] } },
      verifiers: [
        {
          use: 'http-json',
          name: 'refund-api',
          handles: ['refund.recorded'],
          connection: 'billing-api',
          timeoutMs: 3000,
          options: {
            url: `${baseUrl}/refunds/{arguments.refund_id}`,
            assertions: [{ op: 'equals', pointer: '/status', value: 'succeeded' }],
            ...options,
          },
        },
      ],
    }),
  );
  return path;
}

function json(file: string, value: unknown): string {
  const path = join(work, file);
  writeFileSync(path, JSON.stringify(value));
  return path;
}

/** A proposal + observation pair for refund `id`. */
function pair(id: string) {
  const proposal = exampleProposal({
    id: `prp_${id}`,
    arguments: { refund_id: id },
    postconditions: [{ name: 'refund.recorded' }],
  });
  return { proposal, observation: exampleObservation({ proposal_id: proposal.id }) };
}

const vouch = (args: string[]) => runVouchWithEnv(['verifier', 'run', ...args], {}, work);

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'vouch-verifier-run-'));
  billing = await startServer((req, res) => {
    const id = decodeURIComponent(req.url?.split('/').pop() ?? '');
    const refund = refunds[id];
    if (refund === undefined) sendJson(res, 404, { error: 'no such refund' });
    else sendJson(res, 200, refund);
  });
  // The story of a real proposal, observed through the API.
  const h = await createHarness();
  try {
    const admin = await h.keyFor('user:root', ['admin']);
    const gateway = await h.keyFor('agent:gw', ['gateway']);
    const auditor = await h.keyFor('user:audrey', ['auditor']);
    const tool = { server_id: 'pay', tool_name: 'refund_lookup', side_effect: 'read_only' };
    expect((await h.json('POST', '/v1/tools', admin, tool)).status).toBe(201);
    const proposed = await h.json('POST', '/v1/proposals', gateway, {
      idempotency_key: 'verifier-run-1',
      action: 'refund.check',
      ...tool,
      target: { kind: 'refund', id: 'r-1', env: 'production' },
      arguments: { refund_id: 'r-1' },
      postconditions: [{ name: 'refund.recorded' }],
    });
    expect(proposed.status).toBe(201);
    const id = proposed.body.proposal.id as string;
    expect((await h.json('POST', `/v1/proposals/${id}/authorize`, gateway, {})).status).toBe(200);
    const observed = await h.json('POST', '/v1/observations', gateway, {
      proposal_id: id,
      outcome: 'succeeded',
      result: { refund_id: 'r-1' },
    });
    expect(observed.status).toBe(201);
    const told = await h.json('GET', `/v1/proposals/${id}`, auditor);
    expect(told.status).toBe(200);
    story = told.body;
    json('unobserved.json', { ...told.body, observation: null });
    writeFileSync(join(work, 'not-json.txt'), 'proposal: yes');
  } finally {
    await h.close();
  }
}, 120_000);

afterAll(async () => {
  await billing?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('vouch verifier run', () => {
  describe('when the source confirms the postcondition', () => {
    it('prints a table with the pass and exits 0, reading a story from the API', async () => {
      const result = await vouch([
        '--config',
        config('pass.json', billing.url),
        '--observation',
        json('story.json', story),
      ]);
      expect(result.code, result.stderr).toBe(0);
      const [header, row] = result.stdout.split('\n');
      expect(header!.split(/\s{2,}/)).toEqual([
        'VERIFIER',
        'POSTCONDITION',
        'STATUS',
        'SOURCE',
        'REASON',
        'MESSAGE',
      ]);
      expect(row!.split(/\s{2,}/).slice(0, 5)).toEqual([
        'refund-api',
        'refund.recorded',
        'pass',
        'billing-api',
        '-',
      ]);
      expect(result.stdout).toMatch(/^status: passed \(1 pass\)$/m);
      expect(billing.requests.map((r) => r.url)).toContain('/refunds/r-1');
    });
  });

  describe('when the source contradicts the postcondition', () => {
    it('exits 1 and --json prints the checks, from a proposal + observation pair', async () => {
      const result = await vouch([
        '--config',
        config('fail.json', billing.url),
        '--observation',
        json('pair.json', pair('r-2')),
        '--json',
      ]);
      expect(result.code, result.stderr).toBe(1);
      const outcome = JSON.parse(result.stdout);
      expect(outcome.status).toBe('failed');
      expect(outcome.checks).toEqual([
        expect.objectContaining({
          postcondition: 'refund.recorded',
          status: 'fail',
          source: 'billing-api',
          verifier: expect.objectContaining({ id: 'http-json', name: 'refund-api' }),
        }),
      ]);
    });

    it('reads a bare observation with --proposal', async () => {
      const { proposal, observation } = pair('r-9');
      const result = await vouch([
        '--config',
        config('absent.json', billing.url),
        '--observation',
        json('observation.json', observation),
        '--proposal',
        json('proposal.json', proposal),
        '--json',
      ]);
      expect(result.code, result.stderr).toBe(1);
      expect(JSON.parse(result.stdout).checks[0]).toMatchObject({ status: 'fail' });
    });
  });

  describe('when --verifier and --postcondition narrow the run', () => {
    it('runs only that registration for only that postcondition', async () => {
      const down = `http://127.0.0.1:${await closedPort()}`;
      const file = config('two.json', billing.url);
      const two = JSON.parse(readFileSync(file, 'utf8'));
      two.verifiers.push({
        ...two.verifiers[0],
        name: 'refund-mirror',
        options: { url: `${down}/{arguments.refund_id}` },
      });
      writeFileSync(file, JSON.stringify(two));
      const { proposal, observation } = pair('r-1');
      const wider = { ...proposal, postconditions: [{ name: 'refund.recorded' }, { name: 'email.sent' }] };
      const observationFile = json('wider.json', { proposal: wider, observation });
      const all = await vouch(['--config', file, '--observation', observationFile, '--json']);
      expect(all.code, all.stderr).toBe(3);
      expect(
        JSON.parse(all.stdout)
          .checks.map((c: { reason: string | null }) => c.reason)
          .sort(),
      ).toEqual(['NO_VERIFIER', 'SOURCE_UNAVAILABLE', null]);
      const narrowed = await vouch([
        '--config',
        file,
        '--observation',
        observationFile,
        '--verifier',
        'refund-api',
        '--postcondition',
        'refund.recorded',
        '--json',
      ]);
      expect(narrowed.code, narrowed.stderr).toBe(0);
      expect(JSON.parse(narrowed.stdout).checks).toEqual([
        expect.objectContaining({
          status: 'pass',
          verifier: expect.objectContaining({ name: 'refund-api' }),
        }),
      ]);
    });
  });

  describe('when a plugin reaches past its grants', () => {
    it('runs it in its worker, as vouch serve does: the global fetch is refused, nothing arrives', async () => {
      const before = billing.requests.length;
      const hostile = join(repo, 'packages/verifiers/src/plugin/fixtures/hostile-plugins.mjs');
      const result = await vouch([
        '--config',
        json('plugin.json', {
          verifiers: [
            {
              use: hostile,
              export: 'globalFetch',
              handles: ['refund.recorded'],
              options: { url: billing.url },
            },
          ],
        }),
        '--observation',
        json('pair-3.json', pair('r-1')),
        '--json',
      ]);
      expect(result.code, result.stderr).toBe(3);
      expect(JSON.parse(result.stdout).checks).toEqual([
        expect.objectContaining({
          status: 'error',
          verifier: expect.objectContaining({ id: 'hostile/global-fetch' }),
        }),
      ]);
      expect(billing.requests.length).toBe(before);
    });
  });

  describe('when the source cannot be reached', () => {
    it('exits 3 with an inconclusive check that says why, never a fail', async () => {
      const down = `http://127.0.0.1:${await closedPort()}`;
      const result = await vouch([
        '--config',
        config('down.json', down),
        '--observation',
        json('pair-1.json', pair('r-1')),
      ]);
      expect(result.code, result.stderr).toBe(3);
      expect(result.stdout).toMatch(/refund-api\s+refund\.recorded\s+error\s+\S+\s+SOURCE_UNAVAILABLE/);
      expect(result.stdout).toMatch(/^status: inconclusive \(1 error\)$/m);
    });
  });

  describe('when the configuration or the arguments are wrong', () => {
    it('exits 2 naming the file and the field of a bad configuration, and reads no source', async () => {
      const before = billing.requests.length;
      const file = config('bad.json', billing.url, { assertions: 'all of them' });
      const result = await vouch(['--config', file, '--observation', json('pair-2.json', pair('r-1'))]);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain('OPTIONS_INVALID');
      expect(result.stderr).toContain('/verifiers/0/options/assertions');
      expect(result.stdout).toBe('');
      expect(billing.requests.length).toBe(before);
    });

    it.each([
      ['no --config', ['--observation', 'pair-2.json']],
      ['a missing configuration file', ['--config', 'nope.json', '--observation', 'pair-2.json']],
      ['an unknown --verifier', ['--config', 'pass.json', '--observation', 'pair-2.json', '--verifier', 'x']],
      [
        'a --postcondition the proposal lacks',
        ['--config', 'pass.json', '--observation', 'pair-2.json', '--postcondition', 'x.y'],
      ],
      [
        'both a story and --proposal',
        ['--config', 'pass.json', '--observation', 'story.json', '--proposal', 'proposal.json'],
      ],
      ['an observation without its proposal', ['--config', 'pass.json', '--observation', 'observation.json']],
      ['a story with no observation yet', ['--config', 'pass.json', '--observation', 'unobserved.json']],
      ['an observation file that does not exist', ['--config', 'pass.json', '--observation', 'nope.json']],
      ['an observation file that is not JSON', ['--config', 'pass.json', '--observation', 'not-json.txt']],
    ])('exits 2 for %s', async (_what, args) => {
      const result = await vouch(args);
      expect(result.code, result.stdout).toBe(2);
      expect(result.stderr).toMatch(/^vouch verifier run: /);
    });
  });
});
