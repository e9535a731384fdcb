import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateNoteKeys } from '@vouch/audit';
import { createVouchClient, type VouchClient } from '@vouch/client';
import { type Database, migrate } from '@vouch/ledger';
import { tamper } from '@vouch/ledger/testing';
import { sql } from 'drizzle-orm';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type ServerBackend, serverBackends } from './helpers/backends';
import { buildConsole, launchChromium } from './helpers/console-browser';
import { startVouchServer, type VouchServer } from './helpers/server';

// The console through a real browser (Debian's Chromium, driven by playwright-core) against a
// real `vouch serve` on each backend. VOUCH_CONSOLE_SCREENSHOTS=<dir> also saves the
// screenshots docs/console.md shows (scripts/console-screenshots.sh).
const backends = serverBackends();
const screenshots = process.env.VOUCH_CONSOLE_SCREENSHOTS;
const PREFIX = 'console.example/vouch';
const logKeys = generateNoteKeys(PREFIX);
/** How long to wait for the page to show what the server answered (a loaded CI machine is slow). */
const POLL = { timeout: 30_000, interval: 100 };
/** A browser test signs in, clicks and waits on a real server: far longer than a unit test. */
const BROWSER_TEST = 180_000;

const refund = {
  action: 'refund.issue',
  server_id: 'billing',
  tool_name: 'refund.issue',
  target: { kind: 'order', id: 'A-119', env: 'production' },
  arguments: { order_id: 'A-119', amount: 4200, currency: 'EUR', reason: 'damaged in transit' },
  side_effect: 'compensatable' as const,
  impact: { amount: 4200, currency: 'EUR' },
  postconditions: [{ name: 'customer.notified' }],
};

describe.each(backends)('the web console in Chromium on $name', (backend) => {
  let dir: string;
  let env: Awaited<ReturnType<ServerBackend['setup']>>;
  let server: VouchServer | undefined;
  let browser: Browser;
  const key = {} as Record<'gateway' | 'approver' | 'auditor' | 'selfie' | 'selfieApprover', string>;
  const serverEnv = () => ({
    VOUCH_CONSOLE_DIR: join(dir, 'console'),
    VOUCH_LOG_SIGNING_KEY: logKeys.signerKey,
    VOUCH_CHECKPOINT_INTERVAL_MS: '0',
  });
  const client = (secret: string): VouchClient => createVouchClient({ baseUrl: server!.url, apiKey: secret });

  async function createKey(body: Record<string, unknown>): Promise<string> {
    const created = await server!.call('POST', '/v1/keys', { key: server!.adminKey, body });
    expect(created.status).toBe(201);
    return ((await created.json()) as { secret: string }).secret;
  }

  /** A fresh page signed in with `secret`, with any CSP violation collected. */
  async function signedIn(secret: string, hash = ''): Promise<{ page: Page; cspViolations: string[] }> {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    const cspViolations: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy/i.test(message.text())) cspViolations.push(message.text());
    });
    await page.goto(`${server!.url}/ui/${hash}`);
    await page.getByLabel('API key').fill(secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('whoami').waitFor();
    return { page, cspViolations };
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vouch-console-${backend.name}-`));
    env = await backend.setup(dir);
    const database = await env.open();
    await migrate(database);
    await database.close();
    await buildConsole(join(dir, 'console'));
    server = await startVouchServer({ storage: env.storage, cwd: dir, env: serverEnv() });
    browser = await launchChromium();
    key.gateway = await createKey({
      identity: 'agent:billing-bot',
      roles: ['gateway'],
      scopes: ['billing:write'],
    });
    key.approver = await createKey({ identity: 'user:alice', roles: ['approver'] });
    key.auditor = await createKey({ identity: 'user:audrey', roles: ['auditor'] });
    // One person holding a gateway key and an approver key (one key may not hold both roles):
    // the identity is what self-approval is refused on.
    key.selfie = await createKey({ identity: 'user:sam', roles: ['gateway'], scopes: ['billing:write'] });
    key.selfieApprover = await createKey({ identity: 'user:sam', roles: ['approver'] });
    const tool = await server.call('POST', '/v1/tools', {
      key: server.adminKey,
      body: {
        server_id: 'billing',
        tool_name: 'refund.issue',
        side_effect: 'compensatable',
        required_scopes: ['billing:write'],
        allowed_environments: ['staging', 'production'],
        approval_required: true,
        postconditions: [
          { name: 'refund.recorded', params: { order_id: { pointer: '/arguments/order_id' } } },
        ],
      },
    });
    expect(tool.status).toBe(201);
    if (screenshots) mkdirSync(screenshots, { recursive: true });
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await env?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('serves /ui/ with a strict Content-Security-Policy', async () => {
    const response = await fetch(`${server!.url}/ui/`);
    expect(response.status).toBe(200);
    const csp = response.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe');
    expect((await fetch(`${server!.url}/ui/assets/..%2f..%2fpackage.json`)).status).toBe(404);
  });

  it(
    'lets an approver approve a pending refund, after which the gateway’s retry executes',
    async () => {
      const gateway = client(key.gateway);
      let calls = 0;
      const invoke = async () => {
        calls++;
        return { refund_id: 'rf_77', status: 'issued' };
      };
      const first = await gateway.execute(refund, invoke, { wait: { timeoutMs: 0 }, verify: false });
      expect(first.status).toBe('pending');
      expect(calls).toBe(0);

      const { page, cspViolations } = await signedIn(key.approver);
      await expect.poll(() => page.getByTestId('whoami').textContent(), POLL).toContain('user:alice');
      const card = page.getByTestId('approval');
      await card.waitFor();
      expect(await card.count()).toBe(1);
      const text = (await card.textContent()) ?? '';
      expect(text).toContain('billing/refund.issue');
      expect(text).toContain('compensatable');
      expect(text).toContain('agent:billing-bot');
      expect(text).toContain('damaged in transit');
      expect(await card.getByTestId('expiry').textContent()).toMatch(/expires in \d+h/);
      // Which postconditions the operator requires and which the agent added, told apart.
      const required = card.locator('[data-testid="postcondition"][data-origin="registry"]');
      expect(await required.textContent()).toContain('refund.recorded');
      expect(await required.textContent()).toContain('required by the tool registration');
      expect(await required.textContent()).toContain('A-119');
      const added = card.locator('[data-testid="postcondition"][data-origin="agent"]');
      expect(await added.textContent()).toContain('customer.notified');
      expect(await added.textContent()).toContain('added by the agent');
      if (screenshots) await page.screenshot({ path: join(screenshots, 'inbox.png'), fullPage: true });
      await card.getByLabel('Comment').fill('ok to refund: photo of the damage attached to A-119');
      await card.getByRole('button', { name: 'Approve' }).click();
      await expect.poll(() => page.getByTestId('approval').count(), POLL).toBe(0);
      expect(cspViolations).toEqual([]);

      const retry = await gateway.execute(refund, invoke, { wait: { timeoutMs: 0 }, verify: false });
      expect(retry.status).toBe('executed');
      expect(calls).toBe(1);

      // The timeline shows it, from proposal to observation, with the approver's comment.
      const proposalId = retry.proposal.id;
      await page.goto(`${server!.url}/ui/#/proposal/${proposalId}`);
      await page.getByTestId('step-observation').waitFor();
      expect(await page.getByTestId('step-approval').textContent()).toContain('user:alice');
      expect(await page.getByTestId('step-approval').textContent()).toContain('photo of the damage');
      expect(await page.getByTestId('step-observation').textContent()).toContain('succeeded');
      // The execution claim `authorize` recorded: who executes, and by when an observation is due.
      expect(await page.getByTestId('claim').textContent()).toContain('claimed by agent:billing-bot');
      if (screenshots) await page.screenshot({ path: join(screenshots, 'timeline.png'), fullPage: true });

      // The listing API, through the client: the executed refund awaits verification.
      const listed = await client(key.auditor).proposals.list({
        outcome: 'awaiting_verification',
        tool: 'refund.issue',
      });
      expect(listed.proposals.map((p) => ('proposal' in p ? p.proposal.id : p.error.code))).toEqual([
        proposalId,
      ]);
      await page.close();
    },
    BROWSER_TEST,
  );

  it(
    'refuses a self-approval in the UI, and shows the server’s SELF_APPROVAL when forced',
    async () => {
      const own = await client(key.selfie).execute(
        {
          ...refund,
          arguments: { ...refund.arguments, amount: 9900 },
          impact: { amount: 9900, currency: 'EUR' },
        },
        () => ({}),
        { wait: { timeoutMs: 0 }, verify: false },
      );
      expect(own.status).toBe('pending');
      const { page } = await signedIn(key.selfieApprover);
      const card = page.getByTestId('approval');
      await card.waitFor();
      // The diff against the refund approved above: only the amount changed.
      const diff = (await card.getByTestId('diff').textContent()) ?? '';
      expect(diff).toContain('/arguments/amount');
      expect(diff).toContain('4200');
      expect(diff).toContain('9900');
      const approve = card.getByRole('button', { name: 'Approve' });
      expect(await approve.isDisabled()).toBe(true);
      expect(await card.getByTestId('own-request').textContent()).toContain('SELF_APPROVAL');
      // A console that lets the click through (here: the attribute removed) still meets the server's refusal.
      await approve.evaluate((button) => button.removeAttribute('disabled'));
      await approve.click();
      await expect.poll(() => card.getByRole('alert').textContent(), POLL).toContain('SELF_APPROVAL');
      const pending = await client(key.approver).approvals.list({ status: 'pending' });
      expect(pending.approvals.map((a) => a.request.requester)).toEqual(['user:sam']);
      await page.close();
    },
    BROWSER_TEST,
  );

  it(
    "shows an observation's result_source as the gateway's claim on the timeline",
    async () => {
      const admin = { key: server!.adminKey };
      const lookup = { server_id: 'billing', tool_name: 'refund.lookup', side_effect: 'read_only' };
      const registered = await server!.call('POST', '/v1/tools', { ...admin, body: lookup });
      expect(registered.status).toBe(201);
      const proposed = (await (
        await server!.call('POST', '/v1/proposals', {
          key: key.gateway,
          body: {
            idempotency_key: 'console-result-source',
            action: 'refund.lookup',
            ...lookup,
            target: { kind: 'order', id: 'o-77', env: 'staging' },
            arguments: { order_id: 'o-77' },
          },
        })
      ).json()) as { proposal: { id: string }; decision: { verdict: string } };
      expect(proposed.decision.verdict).toBe('allow');
      const id = proposed.proposal.id;
      expect(
        (await server!.call('POST', `/v1/proposals/${id}/authorize`, { key: key.gateway, body: {} })).status,
      ).toBe(200);
      const observed = await server!.call('POST', '/v1/observations', {
        key: key.gateway,
        body: {
          proposal_id: id,
          outcome: 'succeeded',
          result: { found: true },
          result_source: 'gateway-cache',
        },
      });
      expect(observed.status).toBe(201);
      const { page } = await signedIn(key.auditor, `#/proposal/${id}`);
      await page.getByTestId('step-observation').waitFor();
      const shown = await page.getByTestId('result-source').textContent();
      expect(shown).toContain('gateway-cache');
      expect(shown).toContain("the gateway's claim");
    },
    BROWSER_TEST,
  );

  it(
    'lets an auditor verify the log in the browser, and rejects a tampered event',
    async () => {
      const verify = async () => {
        const { page } = await signedIn(key.auditor, '#/logs');
        await page.getByTestId('head').waitFor();
        await page.getByLabel('pinned log public key').fill(logKeys.verifierKey);
        await page.getByRole('button', { name: 'Verify' }).click();
        const result = page.getByTestId('verification');
        await expect.poll(() => result.getAttribute('data-result'), POLL).not.toBe('running');
        return { page, result };
      };
      const intact = await verify();
      expect(await intact.result.getAttribute('data-result')).toBe('proved');
      // Every record's author signature, judged in the browser against the system log's keys.
      const authors = (await intact.page.getByTestId('proof-authors').textContent()) ?? '';
      expect(authors).toMatch(/^proved.*\d+ record\(s\) signed by their author, \d+ unsigned/);
      expect(await intact.page.getByTestId('verdict').textContent()).toContain('Not proved');
      if (screenshots)
        await intact.page.screenshot({ path: join(screenshots, 'verify.png'), fullPage: true });
      await intact.page.close();

      // The operator edits the approver's comment in the stored event, behind the ledger's back.
      await server!.stop();
      const database: Database = await env.open();
      try {
        await tamper(
          database,
          sql`update audit_events set payload = replace(payload, 'ok to refund', 'ok to refund twice')
            where log_id = 'default' and kind = 'approval_resolution'`,
        );
      } finally {
        await database.close();
      }
      server = await startVouchServer({
        storage: env.storage,
        cwd: dir,
        env: serverEnv(),
        adminKey: server!.adminKey,
      });
      const tampered = await verify();
      expect(await tampered.result.getAttribute('data-result')).toBe('failed');
      const failures = (await tampered.page.getByTestId('failures').textContent()) ?? '';
      expect(failures).toMatch(/PAYLOAD_HASH_MISMATCH|HASH_MISMATCH/);
      await tampered.page.close();
    },
    BROWSER_TEST,
  );
});
