import type { StoredEvent } from '@vouch/audit';
import { verifyEvents } from '@vouch/audit';
import { tamper } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHarness, type Harness } from '../testing/app-harness';

let h: Harness;
let auditor: string;
let limited: string;

beforeAll(async () => {
  h = await createHarness({ limits: { pageSize: 4 } });
  auditor = await h.keyFor('user:audrey', ['auditor']);
  limited = await h.keyFor('user:lim', ['auditor'], { logs: ['other'] });
  for (let i = 1; i <= 10; i++) {
    await h.ledger.append({ log: 'orders', kind: 'note', entity: `n${i}`, actor: 'agent:a', payload: { i } });
  }
});
afterAll(async () => {
  await h.close();
});

describe('audit routes', () => {
  describe('GET /v1/logs/{log}/events', () => {
    it('pages with after and limit, capped at the page size', async () => {
      const first = (await (
        await h.call('GET', '/v1/logs/orders/events?limit=50', { key: auditor })
      ).json()) as {
        events: StoredEvent[];
        next_after: number | null;
      };
      expect(first.events.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      expect(first.next_after).toBe(4);
      const last = (await (
        await h.call('GET', '/v1/logs/orders/events?after=8&limit=4', { key: auditor })
      ).json()) as {
        events: StoredEvent[];
        next_after: number | null;
      };
      expect(last.events.map((e) => e.seq)).toEqual([9, 10]);
      expect(last.next_after).toBeNull();
    });

    it('refuses a key limited to other logs with 403 LOG_FORBIDDEN', async () => {
      const response = await h.call('GET', '/v1/logs/orders/events', { key: limited });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('LOG_FORBIDDEN');
    });

    it('refuses an unknown query parameter with 400 INVALID_REQUEST', async () => {
      const response = await h.call('GET', '/v1/logs/orders/events?afterr=3', { key: auditor });
      expect(((await response.json()) as { error: { code: string } }).error.code).toBe('INVALID_REQUEST');
    });
  });

  describe('GET /v1/logs/{log}/export', () => {
    it('streams every event as JSON Lines that verify offline', async () => {
      const response = await h.call('GET', '/v1/logs/orders/export', { key: auditor });
      expect(response.headers.get('content-type')).toMatch(/^application\/jsonl/);
      const lines = (await response.text()).trimEnd().split('\n');
      expect(lines).toHaveLength(10);
      const report = await verifyEvents(
        lines.map((line) => JSON.parse(line) as StoredEvent),
        { log: 'orders' },
      );
      expect(report).toMatchObject({ ok: true, checked: 10 });
    });
  });

  describe('GET /v1/logs/{log}/verify', () => {
    it('reports an intact chain', async () => {
      const response = await h.call('GET', '/v1/logs/orders/verify', { key: auditor });
      expect(await response.json()).toMatchObject({
        ok: true,
        log: 'orders',
        checked: 10,
        head: { seq: 10 },
      });
    });

    it('streams progress and then the report as NDJSON when asked', async () => {
      const response = await h.call('GET', '/v1/logs/orders/verify', {
        key: auditor,
        headers: { accept: 'application/x-ndjson' },
      });
      expect(response.headers.get('content-type')).toMatch(/^application\/x-ndjson/);
      const lines = (await response.text())
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { type: string; checked?: number; report?: { ok: boolean } });
      expect(lines.at(-1)).toMatchObject({ type: 'report', report: { ok: true, checked: 10 } });
      expect(lines.filter((l) => l.type === 'progress').at(-1)).toEqual({ type: 'progress', checked: 10 });
    });

    it('reports an edited event with its seq', async () => {
      await h.ledger.append({
        log: 'tampered',
        kind: 'note',
        entity: 'a',
        actor: 'agent:a',
        payload: { amount: 1 },
      });
      await h.ledger.append({
        log: 'tampered',
        kind: 'note',
        entity: 'b',
        actor: 'agent:a',
        payload: { amount: 2 },
      });
      await tamper(
        h.database,
        sql`update audit_events set payload = '{"amount":2000}' where log_id = 'tampered' and seq = 2`,
      );
      const report = (await (await h.call('GET', '/v1/logs/tampered/verify', { key: auditor })).json()) as {
        ok: boolean;
        failures: Array<{ seq: number; code: string }>;
      };
      expect(report.ok).toBe(false);
      expect(report.failures.map((f) => [f.seq, f.code])).toEqual([[2, 'PAYLOAD_HASH_MISMATCH']]);
    });

    it('reports TRUNCATED against an expected head the log no longer reaches', async () => {
      const response = await h.call('GET', `/v1/logs/orders/verify?expect_head=12:${'b'.repeat(64)}`, {
        key: auditor,
      });
      const report = (await response.json()) as { ok: boolean; failures: Array<{ code: string }> };
      expect(report.ok).toBe(false);
      expect(report.failures.map((f) => f.code)).toContain('TRUNCATED');
    });
  });
});
