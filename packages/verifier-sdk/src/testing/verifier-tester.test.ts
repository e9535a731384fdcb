import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { CheckResult } from '../check';
import { defineVerifier, VERIFIER_API_VERSION } from '../define-verifier';
import { sourceUnavailable } from '../errors';
import { MAX_CHECK_RESULT_BYTES } from '../run-verifiers';
import { VerifierTester } from './verifier-tester';

// A tiny, well-behaved verifier: the "ticket store" is an in-memory map standing in for a source.
const tickets = new Map([
  ['T-1', 'closed'],
  ['T-2', 'open'],
]);
const ticketClosed = defineVerifier({
  id: 'acme/ticket-closed',
  version: '1.0.0',
  apiVersion: VERIFIER_API_VERSION,
  handles: ['ticket.closed'],
  options: z.object({ source: z.string().min(1).default('ticket-store') }).strict(),
  async check({ proposal, options, signal }) {
    signal.throwIfAborted();
    const state = tickets.get(proposal.target.id);
    if (state === undefined) {
      return {
        name: 'ticket.closed',
        status: 'inconclusive',
        source: options.source,
        reason: 'TICKET_UNKNOWN',
      };
    }
    return {
      name: 'ticket.closed',
      status: state === 'closed' ? 'pass' : 'fail',
      source: options.source,
      observed: state,
      expected: 'closed',
    };
  },
});

const target = (id: string) => ({ target: { kind: 'ticket', id, env: 'test' } });
const goodCases = {
  pass: [{ name: 'a closed ticket', proposal: target('T-1') }],
  fail: [{ name: 'an open ticket', proposal: target('T-2') }],
  inconclusive: [{ name: 'an unknown ticket', proposal: target('T-9'), reason: 'TICKET_UNKNOWN' }],
  invalidOptions: [{ name: 'an empty source', options: { source: '' }, field: '/options/source' }],
};

// The harness registering its own tests under vitest: these appear as ordinary tests.
new VerifierTester({ describe, it }).run('VerifierTester on a conforming verifier', ticketClosed, goodCases);

async function failures(
  verifier: Parameters<VerifierTester['verify']>[0],
  cases: Parameters<VerifierTester['verify']>[1],
) {
  const outcomes = await new VerifierTester({ abortGraceMs: 200 }).verify(verifier, cases);
  return outcomes
    .filter((o) => !o.ok)
    .map((o) => ({ title: o.title, code: (o.error as { code?: string }).code }));
}

describe('VerifierTester', () => {
  describe('when every case and conformance test holds', () => {
    it('reports every generated test as ok', async () => {
      const outcomes = await new VerifierTester().verify(ticketClosed, goodCases);
      expect(outcomes.every((o) => o.ok)).toBe(true);
      expect(outcomes.map((o) => o.title)).toContain('conformance > settles promptly once its signal aborts');
    });
  });

  describe('when a case gets another verdict than expected', () => {
    it('fails that case with CASE_FAILED', async () => {
      expect(
        await failures(ticketClosed, {
          pass: [{ name: 'wrong', proposal: target('T-2') }],
          fail: goodCases.fail,
        }),
      ).toEqual([{ title: 'pass > wrong', code: 'CASE_FAILED' }]);
    });

    it('fails when the expected reason is missing', async () => {
      expect(
        await failures(ticketClosed, {
          ...goodCases,
          inconclusive: [{ name: 'r', proposal: target('T-9'), reason: 'OTHER' }],
        }),
      ).toEqual([{ title: 'inconclusive > r', code: 'CASE_FAILED' }]);
    });

    it('rejects from run() when no test framework is given', async () => {
      await expect(
        new VerifierTester().run('x', ticketClosed, {
          pass: [{ proposal: target('T-2') }],
          fail: goodCases.fail,
        }),
      ).rejects.toMatchObject({ name: 'VerifierError', code: 'CASE_FAILED' });
    });
  });

  describe('when an inconclusive case is really a crash', () => {
    it('does not accept VERIFIER_CRASHED as inconclusive', async () => {
      const crashes = defineVerifier({
        ...ticketClosed,
        check: (ctx) =>
          ctx.proposal.target.id === 'T-9' ? Promise.reject(new TypeError('bug')) : ticketClosed.check(ctx),
      });
      expect(await failures(crashes, { ...goodCases, invalidOptions: [] })).toEqual([
        { title: 'inconclusive > an unknown ticket', code: 'CASE_FAILED' },
      ]);
    });
  });

  describe('when there is no fail case', () => {
    it('fails conformance', async () => {
      expect(await failures(ticketClosed, { pass: goodCases.pass, fail: [] })).toEqual([
        { title: 'conformance > has cases that pass and cases that fail', code: 'CONFORMANCE_FAILED' },
      ]);
    });
  });

  describe('when a verifier returns values the ledger cannot record', () => {
    it('fails its cases and the JSON conformance test', async () => {
      const dated = defineVerifier({
        ...ticketClosed,
        check: async (ctx) =>
          ({ ...((await ticketClosed.check(ctx)) as object), observed: new Date(0) }) as never,
      });
      const titles = (await failures(dated, goodCases)).map((f) => f.title);
      expect(titles).toContain('conformance > returns plain canonicalizable JSON that names its source');
      expect(titles).toContain('pass > a closed ticket');
    });
  });

  describe('when a verifier returns a result over MAX_CHECK_RESULT_BYTES', () => {
    it('fails its cases and the JSON conformance test', async () => {
      const verbose = defineVerifier({
        ...ticketClosed,
        check: async (ctx) => ({
          ...((await ticketClosed.check(ctx)) as CheckResult),
          evidence: { log: 'x'.repeat(MAX_CHECK_RESULT_BYTES) },
        }),
      });
      const titles = (await failures(verbose, goodCases)).map((f) => f.title);
      expect(titles).toContain('conformance > returns plain canonicalizable JSON that names its source');
      expect(titles).toContain('fail > an open ticket');
    });
  });

  describe('when a verifier mutates its input', () => {
    it('fails the mutation conformance test', async () => {
      const vandal = defineVerifier({
        ...ticketClosed,
        check: (ctx) => {
          (ctx.proposal as { arguments: Record<string, unknown> }).arguments = {};
          return ticketClosed.check(ctx);
        },
      });
      // Under the host the inputs are frozen, so the cases crash as well.
      expect(await failures(vandal, goodCases)).toContainEqual({
        title: 'conformance > does not mutate its inputs',
        code: 'CONFORMANCE_FAILED',
      });
    });
  });

  describe('when a verifier ignores its abort signal', () => {
    it('fails the abort conformance test', async () => {
      const stubborn = defineVerifier({
        ...ticketClosed,
        timeoutMs: 2_000,
        // Keeps working for a while once aborted, instead of giving up.
        check: async (ctx) => {
          await new Promise((resolve) => setImmediate(resolve));
          if (ctx.signal.aborted) await new Promise((resolve) => setTimeout(resolve, 800));
          return ticketClosed.check({ ...ctx, signal: new AbortController().signal });
        },
      });
      expect(await failures(stubborn, { pass: goodCases.pass, fail: goodCases.fail })).toEqual([
        { title: 'conformance > settles promptly once its signal aborts', code: 'CONFORMANCE_FAILED' },
      ]);
    });
  });

  describe('when a verifier accepts any options', () => {
    it('fails the options conformance test and the invalid-options cases', async () => {
      const lax = defineVerifier({
        ...ticketClosed,
        options: z.any().transform(() => ({ source: 'ticket-store' })),
      });
      expect(await failures(lax, goodCases)).toEqual([
        { title: 'invalid options > an empty source', code: 'CONFORMANCE_FAILED' },
        { title: 'conformance > refuses options that are not options', code: 'CONFORMANCE_FAILED' },
      ]);
    });
  });

  describe('when an invalid-options case names the wrong field', () => {
    it('fails that case', async () => {
      expect(
        await failures(ticketClosed, {
          ...goodCases,
          invalidOptions: [{ options: { source: '' }, field: '/options/other' }],
        }),
      ).toEqual([{ title: 'invalid options > invalid options #1', code: 'CONFORMANCE_FAILED' }]);
    });
  });

  describe('when the verifier is not valid for this host', () => {
    it('fails the validity conformance test with the registry code', async () => {
      const future = { ...ticketClosed, apiVersion: 99 };
      const found = await failures(future, goodCases);
      expect(found).toContainEqual({
        title: 'conformance > is a valid verifier for this host',
        code: 'VERIFIER_API_UNSUPPORTED',
      });
    });
  });

  describe('when the source is down', () => {
    // A verifier over an HTTP "ticket API" reached through the host's fetch grant.
    const api = defineVerifier({
      id: 'acme/ticket-api',
      version: '1.0.0',
      apiVersion: VERIFIER_API_VERSION,
      handles: ['ticket.closed'],
      requires: ['fetch'],
      async check({ proposal, fetch, signal }) {
        const res = await fetch!(`https://tickets.test/${proposal.target.id}`, { signal });
        if (!res.ok) throw sourceUnavailable(`ticket API answered ${res.status}`);
        const { state } = (await res.json()) as { state: string };
        return { name: 'ticket.closed', status: state === 'closed' ? 'pass' : 'fail', source: 'ticket-api' };
      },
    });
    const ticketApi = async (input: string | URL) => {
      const state = tickets.get(String(input).split('/').pop()!);
      return Response.json({ state });
    };
    const apiCases = {
      pass: [{ name: 'closed', proposal: target('T-1') }],
      fail: [{ name: 'open', proposal: target('T-2') }],
    };

    it('accepts a verifier that reports it as unavailable', async () => {
      const outcomes = await new VerifierTester({ grants: { fetch: ticketApi } }).verify(api, apiCases);
      expect(outcomes.filter((o) => !o.ok)).toEqual([]);
      expect(outcomes.map((o) => o.title)).toContain(
        'conformance > reports a source that is down as inconclusive, never pass or fail',
      );
    });

    it('fails a verifier that turns "could not read" into fail', async () => {
      const swallows = defineVerifier({
        ...api,
        async check(ctx) {
          try {
            return await api.check(ctx);
          } catch {
            return { name: 'ticket.closed', status: 'fail', source: 'ticket-api', message: 'no answer' };
          }
        },
      });
      const outcomes = await new VerifierTester({ grants: { fetch: ticketApi } }).verify(swallows, apiCases);
      const failed = outcomes.filter((o) => !o.ok);
      expect(failed.map((o) => [o.title, (o.error as { code?: string }).code])).toEqual([
        [
          'conformance > reports a source that is down as inconclusive, never pass or fail',
          'CONFORMANCE_FAILED',
        ],
      ]);
    });

    it('fails a verifier that passes when an answer is not ok', async () => {
      const trusting = defineVerifier({
        ...api,
        async check({ fetch, proposal, signal }) {
          const res = await fetch!(`https://tickets.test/${proposal.target.id}`, { signal });
          const body = (await res.json()) as { state?: string };
          return {
            name: 'ticket.closed',
            status: body.state === 'open' ? 'fail' : 'pass',
            source: 'ticket-api',
          };
        },
      });
      const outcomes = await new VerifierTester({ grants: { fetch: ticketApi } }).verify(trusting, apiCases);
      expect(
        outcomes
          .filter((o) => !o.ok)
          .map((o) => (o.error as { evidence?: { fault?: string } }).evidence?.fault),
      ).toEqual(['failing']);
    });

    it('takes the source down the way a case says with sourceDown', async () => {
      const optionsDown = defineVerifier({
        ...ticketClosed,
        check: (ctx) =>
          ctx.options.source === 'down'
            ? { name: 'ticket.closed', status: 'pass', source: 'down' }
            : ticketClosed.check(ctx),
      });
      const found = await failures(optionsDown, {
        pass: [{ name: 'closed', proposal: target('T-1'), sourceDown: { options: { source: 'down' } } }],
        fail: goodCases.fail,
      });
      expect(found).toEqual([
        {
          title: 'conformance > reports a source that is down as inconclusive, never pass or fail',
          code: 'CONFORMANCE_FAILED',
        },
      ]);
    });
  });

  describe('when the status matches but the reason does not', () => {
    it('says which reason it got and why the case failed', async () => {
      const crashes = defineVerifier({
        ...ticketClosed,
        check: (ctx) =>
          ctx.proposal.target.id === 'T-9' ? Promise.reject(new TypeError('bug')) : ticketClosed.check(ctx),
      });
      const outcomes = await new VerifierTester().verify(crashes, { ...goodCases, invalidOptions: [] });
      const message = String((outcomes.find((o) => !o.ok)?.error as Error | undefined)?.message);
      expect(message).toContain('got inconclusive with reason VERIFIER_CRASHED');
      expect(message).not.toMatch(/should be inconclusive with reason TICKET_UNKNOWN, got inconclusive:/);
    });
  });
});

describe('VerifierTester with isolate', () => {
  it('runs every case and conformance check through the plugin `isolate` loads, with the case options, and closes each', async () => {
    const loaded: unknown[] = [];
    let open = 0;
    let ran = 0;
    const tester = new VerifierTester({
      abortGraceMs: 200,
      isolate: async (options) => {
        loaded.push(options);
        open++;
        const verifier = {
          ...ticketClosed,
          check: (context: Parameters<typeof ticketClosed.check>[0]) => {
            ran++;
            return ticketClosed.check(context);
          },
        };
        return { verifier, close: async () => void open-- };
      },
    });
    const outcomes = await tester.verify(ticketClosed, {
      pass: [{ name: 'a closed ticket', proposal: target('T-1'), options: { source: 'isolated' } }],
      fail: [{ name: 'an open ticket', proposal: target('T-2'), options: { source: 'isolated' } }],
    });
    expect(outcomes.filter((o) => !o.ok)).toEqual([]);
    // Two cases, then the JSON, mutation and (twice per case) abort conformance runs.
    expect(loaded).toHaveLength(2 + 2 + 2 + 4);
    expect(loaded.every((options) => (options as { source: string }).source === 'isolated')).toBe(true);
    expect(ran).toBe(loaded.length);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(open).toBe(0);
  });
});
