import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createVouchClient, type VouchClient } from '@vouch/client';
import { migrate } from '@vouch/ledger';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerBackend, serverBackends } from './helpers/backends';
import { buildConsole, launchChromium } from './helpers/console-browser';
import { startVouchServer, type VouchServer } from './helpers/server';

// Author signatures from the console: an approver enrols a key the browser generates
// (WebCrypto, non-extractable, kept in IndexedDB) with a one-time code an admin issued, and
// the console signs each answer with it. Without the key, the server's refusal is shown.
const backends = serverBackends();
const POLL = { timeout: 30_000, interval: 100 };
const BROWSER_TEST = 180_000;

const refund = (amount: number) => ({
  action: 'refund.issue',
  server_id: 'billing',
  tool_name: 'refund.issue',
  target: { kind: 'order', id: `A-${amount}`, env: 'production' },
  arguments: { order_id: `A-${amount}`, amount, currency: 'EUR' },
  side_effect: 'compensatable' as const,
});

describe.each(backends)('signing answers in the console (Chromium) on $name', (backend) => {
  let dir: string;
  let env: Awaited<ReturnType<ServerBackend['setup']>>;
  let server: VouchServer;
  let browser: Browser;
  const key = {} as Record<'gateway' | 'approver' | 'auditor', string>;
  const client = (secret: string): VouchClient => createVouchClient({ baseUrl: server.url, apiKey: secret });

  async function createKey(body: Record<string, unknown>): Promise<string> {
    const created = await server.call('POST', '/v1/keys', { key: server.adminKey, body });
    expect(created.status).toBe(201);
    return ((await created.json()) as { secret: string }).secret;
  }

  /** A fresh page (its own browser context: no IndexedDB yet) signed in with `secret`. */
  async function signedIn(secret: string, hash = ''): Promise<{ page: Page; cspViolations: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    const cspViolations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    await page.goto(`${server.url}/ui/${hash}`);
    await page.getByLabel('API key').fill(secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('whoami').waitFor();
    return { page, cspViolations };
  }

  /** A refund that waits for an approval: its request id. */
  async function pendingRefund(amount: number): Promise<string> {
    const answer = await client(key.gateway).execute(refund(amount), () => ({}), {
      wait: { timeoutMs: 0 },
      verify: false,
    });
    expect(answer.status).toBe('pending');
    const { approvals } = await client(key.auditor).approvals.list({ status: 'pending' });
    return approvals.find((a) => a.request.proposal_id === answer.proposal.id)!.request.id;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vouch-console-signing-${backend.name}-`));
    env = await backend.setup(dir);
    const database = await env.open();
    await migrate(database);
    await database.close();
    await buildConsole(join(dir, 'console'));
    server = await startVouchServer({
      storage: env.storage,
      cwd: dir,
      env: { VOUCH_CONSOLE_DIR: join(dir, 'console') },
    });
    browser = await launchChromium();
    key.gateway = await createKey({
      identity: 'agent:billing-bot',
      roles: ['gateway'],
      scopes: ['billing:write'],
    });
    key.approver = await createKey({ identity: 'user:alice', roles: ['approver'] });
    key.auditor = await createKey({ identity: 'user:audrey', roles: ['auditor'] });
    const tool = await server.call('POST', '/v1/tools', {
      key: server.adminKey,
      body: {
        server_id: 'billing',
        tool_name: 'refund.issue',
        side_effect: 'compensatable',
        required_scopes: ['billing:write'],
        approval_required: true,
      },
    });
    expect(tool.status).toBe(201);
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await env?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'enrols a browser key with a one-time code and signs the approval with it',
    async () => {
      const issued = await server.call('POST', '/v1/signing-keys/enrolment-codes', {
        key: server.adminKey,
        body: { identity: 'user:alice' },
      });
      expect(issued.status).toBe(201);
      const { code } = (await issued.json()) as { code: string };
      const requestId = await pendingRefund(4200);

      const { page, cspViolations } = await signedIn(key.approver, '#/signing-key');
      await page.getByLabel('One-time enrolment code').fill(code);
      await page.getByRole('button', { name: 'Enrol a key in this browser' }).click();
      const local = page.getByTestId('browser-key');
      await expect.poll(() => local.textContent(), POLL).toContain('enrolled');
      const keyId = (await local.getAttribute('data-key-id')) ?? '';
      expect(keyId).toMatch(/^[0-9a-f]{64}$/);
      const listed = (await (await server.call('GET', '/v1/signing-keys', { key: key.auditor })).json()) as {
        keys: { key_id: string; identity: string }[];
      };
      // Beside the server's own key, enrolled at its first start: alice's, and only that one.
      expect(listed.keys.filter((k) => k.identity !== 'vouch:server')).toEqual([
        expect.objectContaining({ key_id: keyId, identity: 'user:alice' }),
      ]);
      // The private key is a CryptoKey in IndexedDB that no script can export.
      // (A string: this test's TypeScript knows no DOM.)
      const stored = await page.evaluate(`new Promise((resolve, reject) => {
        const opened = indexedDB.open('vouch-console');
        opened.onerror = () => reject(opened.error);
        opened.onsuccess = () => {
          const get = opened.result.transaction('signing-keys').objectStore('signing-keys').get('user:alice');
          get.onsuccess = () => resolve({ extractable: get.result.privateKey.extractable, type: get.result.privateKey.type });
        };
      })`);
      expect(stored).toEqual({ extractable: false, type: 'private' });

      await page.goto(`${server.url}/ui/#/inbox`);
      const card = page.locator(`[data-testid="approval"][data-request="${requestId}"]`);
      await card.waitFor();
      await card.getByRole('button', { name: 'Approve' }).click();
      await expect.poll(() => card.count(), POLL).toBe(0);

      const detail = await client(key.auditor).approvals.get(requestId);
      expect(detail.status).toBe('approved');
      expect(detail.resolution?.signature?.signatures[0]?.keyid).toBe(keyId);
      await page.goto(`${server.url}/ui/#/proposal/${detail.request.proposal_id}`);
      const shown = page.getByTestId('answer-signature');
      await shown.waitFor();
      expect(await shown.textContent()).toContain('signed');
      expect(await shown.textContent()).toContain(keyId);
      for (const log of ['default', 'system']) {
        const report = (await (
          await server.call('GET', `/v1/logs/${log}/verify`, { key: key.auditor })
        ).json()) as {
          failures: unknown[];
        };
        expect(report.failures).toEqual([]);
      }
      expect(cspViolations).toEqual([]);
      await page.close();
    },
    BROWSER_TEST,
  );

  it(
    "refuses the enrolled approver's unsigned approval in the UI when the browser holds no key",
    async () => {
      const requestId = await pendingRefund(9900);
      const { page } = await signedIn(key.approver, '#/signing-key');
      await expect
        .poll(() => page.getByTestId('browser-key').textContent(), POLL)
        .toContain('holds no signing key');
      await page.goto(`${server.url}/ui/#/inbox`);
      const card = page.locator(`[data-testid="approval"][data-request="${requestId}"]`);
      await card.waitFor();
      await card.getByRole('button', { name: 'Approve' }).click();
      await expect.poll(() => card.getByRole('alert').textContent(), POLL).toContain('SIGNATURE_REQUIRED');
      expect(await card.getByTestId('signature-hint').textContent()).toContain(
        'enrol one on the Signing key page',
      );
      expect((await client(key.auditor).approvals.get(requestId)).status).toBe('pending');
      await page.close();
    },
    BROWSER_TEST,
  );
});
