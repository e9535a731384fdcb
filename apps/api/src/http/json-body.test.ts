import { testBackends } from '@vouch/ledger/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

// biome-ignore lint/suspicious/noExplicitAny: response bodies are read loosely, then pinned with toMatchObject
type Json = Record<string, any>;

describe.each(testBackends())('JSON numbers in request bodies on $name', ({ open }) => {
  let h: Harness;
  let gateway: string;
  let n = 0;

  beforeAll(async () => {
    h = await createHarness({ open });
    const admin = await h.keyFor('user:root', ['admin']);
    gateway = await h.keyFor('agent:gw', ['gateway']);
    const tool = { server_id: 'pay', tool_name: 'refund', side_effect: 'compensatable' };
    expect((await h.call('POST', '/v1/tools', { key: admin, body: tool })).status).toBe(201);
  });
  afterAll(async () => {
    await h?.close();
  });

  /** A proposal body with `args` spliced in as raw JSON text, so the literal reaches the server as written. */
  const proposalText = (args: string) => {
    n++;
    const body = JSON.stringify({
      idempotency_key: `num-${n}`,
      action: 'pay.refund',
      server_id: 'pay',
      tool_name: 'refund',
      target: { kind: 'order', id: `o-${n}`, env: 'staging' },
      arguments: { placeholder: true },
      side_effect: 'compensatable',
    });
    return body.replace('{"placeholder":true}', args);
  };

  describe('when a number cannot be stored exactly', () => {
    it.each([
      ['an integer past 2^53 - 1', '{"amount":9007199254740993}', '/arguments/amount'],
      ['a value that underflows to 0', '{"rate":1e-400}', '/arguments/rate'],
      ['a value that overflows', '{"lines":[1,{"qty":1e400}]}', '/arguments/lines/1/qty'],
      ['more precision than a double', '{"amount":1.0000000000000001}', '/arguments/amount'],
    ])('refuses %s with NUMBER_NOT_EXACT and its path, and writes nothing', async (_name, args, path) => {
      const before = await h.rowCounts();
      const response = await h.call('POST', '/v1/proposals', { key: gateway, body: proposalText(args) });
      const body = (await response.json()) as Json;
      expect(response.status).toBe(400);
      expect(body.error).toMatchObject({ code: 'NUMBER_NOT_EXACT', details: { path } });
      expect(await h.rowCounts()).toEqual(before);
    });
  });

  describe('when a number is spelled differently but carried exactly', () => {
    it('stores its value, and a big amount sent as a decimal string verbatim', async () => {
      const response = await h.call('POST', '/v1/proposals', {
        key: gateway,
        body: proposalText('{"a":1.50,"b":1e2,"big":"9007199254740993.25"}'),
      });
      const body = (await response.json()) as Json;
      expect(response.status).toBe(201);
      expect(body.proposal.arguments).toEqual({ a: 1.5, b: 100, big: '9007199254740993.25' });
    });
  });
});
