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

// The console's Tools view through a real browser (Debian's Chromium, driven by
// playwright-core) against a real `vouch serve` on each backend: a tool whose upstream changed
// its definition is listed as changed, an auditor cannot approve it, an admin can.
const POLL = { timeout: 30_000, interval: 100 };
const BROWSER_TEST = 180_000;
const PINNED = 'a'.repeat(64);
const SERVED = 'b'.repeat(64);

describe.each(serverBackends())('the console Tools view in Chromium on $name', (backend) => {
  let dir: string;
  let env: Awaited<ReturnType<ServerBackend['setup']>>;
  let server: VouchServer;
  let browser: Browser;
  let admin: VouchClient;
  let auditorKey: string;

  async function signedIn(secret: string): Promise<Page> {
    const page = await browser.newPage({ viewport: { width: 1360, height: 900 } });
    await page.goto(`${server.url}/ui/#/tools`);
    await page.getByLabel('API key').fill(secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByTestId('whoami').waitFor();
    return page;
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), `vouch-console-tools-${backend.name}-`));
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
    admin = createVouchClient({ baseUrl: server.url, apiKey: server.adminKey });
    auditorKey = (await admin.keys.create({ identity: 'user:audrey', roles: ['auditor'] })).secret;
    const gatewayKey = (await admin.keys.create({ identity: 'agent:mail-gateway', roles: ['gateway'] }))
      .secret;
    const gateway = createVouchClient({ baseUrl: server.url, apiKey: gatewayKey });
    // What a gateway reports: the definition it first saw, then the one the upstream serves now.
    for (const definition_sha256 of [PINNED, SERVED]) {
      await gateway.tools.register({
        server_id: 'mail',
        tool_name: 'send_mail',
        source: 'discovery',
        definition_sha256,
      });
    }
  }, 180_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    await env?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('when an auditor opens it', () => {
    it(
      'lists the changed definition, both hashes and who saw it, with no approve button',
      async () => {
        const page = await signedIn(auditorKey);
        const card = page.getByTestId('changed-definition');
        await expect.poll(() => card.count(), POLL).toBe(1);
        const text = await card.textContent();
        expect(text).toContain('mail/send_mail');
        expect(text).toContain(`approved ${PINNED.slice(0, 12)}… → served ${SERVED.slice(0, 12)}…`);
        expect(text).toContain('seen by agent:mail-gateway');
        expect(await page.getByRole('button', { name: 'Approve new definition' }).count()).toBe(0);
        await page.close();
      },
      BROWSER_TEST,
    );
  });

  describe('when an admin approves the new definition', () => {
    it(
      'pins it, and the tool leaves the changed list',
      async () => {
        const page = await signedIn(server.adminKey);
        await page.getByRole('button', { name: 'Approve new definition' }).click();
        await expect.poll(() => page.getByText('No tool definition changed.').count(), POLL).toBe(1);
        expect(await page.getByTestId('tool-row').textContent()).toContain(`pinned ${SERVED.slice(0, 12)}…`);
        const [tool] = await admin.tools.list();
        expect(tool).toMatchObject({ definition_sha256: SERVED, registered_by: expect.any(String) });
        expect(tool).not.toHaveProperty('changed_definition_sha256');
        await page.close();
      },
      BROWSER_TEST,
    );
  });
});
