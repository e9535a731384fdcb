import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AnyVerifier } from '@vouch/verifier-sdk';
import { type TesterOutcome, type VerifierTestCases, VerifierTester } from '@vouch/verifier-sdk/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendJson, startServer, type TestServer } from '../test-support/http-server';
// @ts-expect-error: a plain JavaScript fixture, as a built plugin is
import * as fixtures from './fixtures/ticket-plugins.mjs';
import { loadIsolatedVerifier } from './isolated-verifier';

const fixtureUrl = pathToFileURL(path.join(import.meta.dirname, 'fixtures', 'ticket-plugins.mjs')).href;

let server: TestServer;
beforeAll(async () => {
  server = await startServer((req, res) =>
    sendJson(res, 200, { state: req.url === '/open' ? 'open' : 'closed' }),
  );
});
afterAll(() => server.close());

const cases = (): VerifierTestCases => ({
  pass: [{ name: 'closed', options: { url: `${server.url}/closed` } }],
  fail: [{ name: 'open', options: { url: `${server.url}/open` } }],
});

/** Run the tester over `exportName` without a test framework; the failed tests' titles and errors. */
async function failures(exportName: string, isolated: boolean): Promise<TesterOutcome[]> {
  const tester = new VerifierTester({
    grants: { fetch: (url, init) => fetch(url, init) },
    ...(isolated
      ? { isolate: (options: unknown) => loadIsolatedVerifier({ url: fixtureUrl, exportName, options }) }
      : {}),
  });
  const verifier = (fixtures as Record<string, AnyVerifier>)[exportName]!;
  return (await tester.verify(verifier, cases())).filter((outcome) => !outcome.ok);
}

describe('VerifierTester with `isolate` runs the cases where the server runs the plugin', () => {
  it('in-process, a plugin that calls the global fetch passes all its cases (the harness is fooled)', async () => {
    // Only the source-down conformance test notices, and only because it cannot take the source down.
    const failed = await failures('ticketClosedGlobalFetch', false);
    expect(failed.map((f) => f.title)).toEqual([
      'conformance > reports a source that is down as inconclusive, never pass or fail',
    ]);
  });

  it('isolated, the same plugin fails its cases: the global fetch is refused as in the server', async () => {
    const failed = await failures('ticketClosedGlobalFetch', true);
    expect(failed.map((f) => f.title)).toEqual(expect.arrayContaining(['pass > closed', 'fail > open']));
    expect(String((failed[0]!.error as Error).message)).toMatch(/PLUGIN_NETWORK_DENIED: globalThis\.fetch/);
  });

  it('isolated, a plugin that uses its granted fetch passes its cases and the conformance tests', async () => {
    expect(await failures('ticketClosed', true)).toEqual([]);
  });
});
