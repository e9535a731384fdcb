import { randomBytes } from 'node:crypto';
import { createVerifierRegistry, type RedisReadCommand, runVerifiers } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal, VerifierTester } from '@vouch/verifier-sdk/testing';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closedPort } from '../test-support/http-server';
import { createRedisGrant, type OwnedRedisGrant } from './redis-grant';
import { redisVerifier } from './redis-verifier';

// The real Redis on this machine (REDIS_URL, default 127.0.0.1:6379); every key under a prefix of this run.
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const prefix = `vouch-test-${randomBytes(4).toString('hex')}:`;
let owner: Redis;
let cache: OwnedRedisGrant;
let down: OwnedRedisGrant;

beforeAll(async () => {
  owner = new Redis(redisUrl);
  // The refund as the payment processor's cache holds it: written by the processor, not by the tool server.
  await owner.hset(`${prefix}refund:re_1`, { status: 'succeeded', amount: '1250', currency: 'EUR' });
  await owner.hset(`${prefix}refund:re_2`, { status: 'pending', amount: '1250', currency: 'EUR' });
  // Refunds named by a tool's result, each with the payment it belongs to.
  await owner.hset(`${prefix}paid:re_own`, { id: 're_own', payment_id: 'pay_123', status: 'succeeded' });
  await owner.hset(`${prefix}paid:re_other`, { id: 're_other', payment_id: 'pay_999', status: 'succeeded' });
  await owner.set(`${prefix}doc:re_1`, JSON.stringify({ id: 're_1', lines: [{ sku: 'a' }] }));
  await owner.set('outside-the-prefix', 'secret');
  cache = createRedisGrant({ name: 'payments-cache', url: redisUrl, keyPrefix: prefix });
  down = createRedisGrant({
    name: 'payments-cache',
    url: `redis://127.0.0.1:${await closedPort()}`,
    connectTimeoutMs: 1_000,
  });
});
afterAll(async () => {
  await cache?.close();
  await down?.close();
  const keys = await owner.keys(`${prefix}*`);
  if (keys.length > 0) await owner.del(...keys);
  await owner.del('outside-the-prefix');
  owner.disconnect();
});

const refundHash = {
  command: 'HGETALL',
  key: 'refund:{arguments.refund_id}',
  successCondition: "result.status == 'succeeded' && int(result.amount) == arguments.amount",
};

async function verify(options: Record<string, unknown>, refundId = 're_1', grant?: OwnedRedisGrant) {
  const registry = createVerifierRegistry([
    { verifier: redisVerifier, handles: ['refund.recorded'], options, grants: { redis: grant ?? cache } },
  ]);
  const outcome = await runVerifiers({
    registry,
    proposal: exampleProposal({
      arguments: { amount: 1250, refund_id: refundId },
      postconditions: [{ name: 'refund.recorded' }],
    }),
    observation: exampleObservation({ server_id: 'payments-mcp', result: { refund_id: refundId } }),
  });
  return { status: outcome.status, check: outcome.checks[0]! };
}

describe('redis verifier', () => {
  describe('when the hash holds the refund the proposal asked for', () => {
    it('passes and records the command and the reply', async () => {
      const { status, check } = await verify(refundHash);
      expect(status).toBe('passed');
      expect(check).toMatchObject({
        source: 'payments-cache',
        observed: { reply: { status: 'succeeded', amount: '1250' } },
        evidence: { command: 'HGETALL', args: ['refund:re_1'] },
      });
    });
  });

  describe('when it does not', () => {
    it('fails on a pending refund and on a missing key', async () => {
      expect((await verify(refundHash, 're_2')).check.status).toBe('fail');
      // A missing hash is {}: result.status is a missing key, so the condition cannot be evaluated.
      expect((await verify(refundHash, 're_404')).check).toMatchObject({
        status: 'inconclusive',
        reason: 'CONDITION_ERROR',
      });
      expect(
        (
          await verify(
            {
              command: 'EXISTS',
              key: 'refund:{arguments.refund_id}',
              successCondition: 'result == 1',
            },
            're_404',
          )
        ).check.status,
      ).toBe('fail');
    });
  });

  describe('when the value is a JSON document', () => {
    it('parses it and asserts by JSON Pointer', async () => {
      const { check } = await verify({
        command: 'GET',
        key: 'doc:{arguments.refund_id}',
        json: true,
        assertions: [{ op: 'equals', pointer: '/lines/0/sku', value: 'a' }],
      });
      expect(check.status).toBe('pass');
    });
  });

  describe("when the key reads the tool's result", () => {
    const bound = {
      command: 'HGETALL',
      key: 'paid:{observation.result.refund_id}',
      bind: [{ pointer: '/payment_id', from: 'target.id' }],
      evidenceRef: 'refund:{result.id}',
      successCondition: "result.status == 'succeeded'",
    };

    it("passes on the proposal's own refund, naming it", async () => {
      const { check } = await verify(bound, 're_own');
      expect(check).toMatchObject({ status: 'pass', evidence_ref: 'refund:re_own' });
    });

    it("fails on another payment's refund", async () => {
      expect((await verify(bound, 're_other')).check.status).toBe('fail');
    });

    it('is refused at registration without bind', () => {
      const { bind: _bind, ...unbound } = bound;
      expect(() =>
        createVerifierRegistry([{ verifier: redisVerifier, options: unbound, grants: { redis: cache } }]),
      ).toThrow(expect.objectContaining({ code: 'OPTIONS_INVALID', field: '/options/key' }));
    });
  });

  describe('when a key from the proposal tries to leave the prefix', () => {
    it('still reads under the prefix', async () => {
      const { check } = await verify(
        { command: 'GET', key: '{arguments.refund_id}', successCondition: 'result == null' },
        'outside-the-prefix',
      );
      expect(check).toMatchObject({ status: 'pass', observed: { reply: null } });
    });
  });

  describe('when the grant is asked to write', () => {
    it('refuses before sending anything', async () => {
      const error = await cache
        .command('SET' as RedisReadCommand, ['refund:re_1', 'x'], {
          signal: new AbortController().signal,
          timeoutMs: 1_000,
        })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'SOURCE_FORBIDDEN' });
      expect(await owner.hget(`${prefix}refund:re_1`, 'status')).toBe('succeeded');
    });
  });

  describe('when the server is down', () => {
    it('is inconclusive, never failed', async () => {
      const { status, check } = await verify(refundHash, 're_1', down);
      expect(status).toBe('inconclusive');
      expect(check).toMatchObject({ status: 'error', reason: 'SOURCE_UNAVAILABLE' });
    });
  });
});

new VerifierTester({
  describe,
  it,
  proposal: { arguments: { amount: 1250, refund_id: 're_1' } },
  get grants() {
    return { redis: cache };
  },
}).run('redis under the VerifierTester', redisVerifier, {
  pass: [{ options: refundHash }],
  fail: [{ options: refundHash, proposal: { arguments: { amount: 1250, refund_id: 're_2' } } }],
  inconclusive: [
    {
      name: 'source down',
      reason: 'SOURCE_UNAVAILABLE',
      options: refundHash,
      get grants() {
        return { redis: down };
      },
    },
    {
      name: 'a key placeholder missing from the proposal',
      reason: 'TEMPLATE_VALUE_MISSING',
      options: { ...refundHash, key: 'refund:{params.refund_id}' },
    },
  ],
  invalidOptions: [
    { name: 'a write command', options: { ...refundHash, command: 'SET' }, field: '/options/command' },
    {
      name: 'no assertion or condition',
      options: { command: 'GET', key: 'k' },
      field: '/options/assertions',
    },
    {
      name: 'a condition that does not compile',
      options: { ...refundHash, successCondition: 'result.status ==' },
      field: '/options/successCondition',
    },
  ],
});
