import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createVerifierRegistry, runVerifiers } from '@vouch/verifier-sdk';
import { exampleObservation, exampleProposal } from '@vouch/verifier-sdk/testing';
import { loadVerifierConfig } from '@vouch/verifiers';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { buildVerifierSdk } from '../../apps/api/src/testing/verifier-sdk-build';
import { fakeCarrier } from './fake-carrier';
import { orderShipped } from './order-shipped';
import { verifyShipment } from './register-and-run';

const docs = path.join(import.meta.dirname, '..');
const markdown = await readFile(path.join(docs, 'write-your-first-verifier.md'), 'utf8');
// ```ts file=tutorial/x.ts  (the block must be the file, byte for byte)
const fileBlocks = [...markdown.matchAll(/^```\w+ file=(\S+)\n([\s\S]*?)^```$/gm)].map((m) => ({
  file: m[1]!,
  body: m[2]!,
}));
// ```json output=tutorial/register-and-run.ts#ord-2  (what verifyShipment('ord-2') returns)
const outputBlocks = [...markdown.matchAll(/^```json output=\S+#(\S+)\n([\s\S]*?)^```$/gm)].map((m) => ({
  orderId: m[1]!,
  body: m[2]!,
}));

describe('the "Write your first verifier" tutorial', () => {
  describe('when its code blocks are compared with docs/tutorial', () => {
    it.each(fileBlocks.map((b) => [b.file, b]))('shows %s exactly as it is', async (_file, block) => {
      expect(block.body).toBe(await readFile(path.join(docs, block.file), 'utf8'));
    });

    it('shows every tutorial file but this test', async () => {
      const files = (await readdir(import.meta.dirname))
        .filter((f) => f !== 'tutorial.test.ts')
        .map((f) => `tutorial/${f}`);
      expect(fileBlocks.map((b) => b.file).sort()).toEqual(files.sort());
    });
  });

  describe('when its output block is compared with a real run', () => {
    it.each(outputBlocks.map((b) => [b.orderId, b]))(
      'matches what verifyShipment(%j) returns',
      async (orderId, block) => {
        expect(await verifyShipment(orderId)).toMatchObject(JSON.parse(block.body));
      },
    );

    it('has at least one output block', () => {
      expect(outputBlocks.length).toBeGreaterThan(0);
    });
  });

  describe('when its verifier runs in the host', () => {
    it('passes a delivered order and fails one the carrier never saw', async () => {
      expect((await verifyShipment('ord-1')).status).toBe('passed');
      expect((await verifyShipment('ord-404')).status).toBe('failed');
    });

    it('counts a check sourced from the shop itself as not independent', async () => {
      const outcome = await runVerifiers({
        registry: createVerifierRegistry([
          {
            verifier: orderShipped,
            options: { carrierUrl: 'https://carrier.example', source: 'shop-mcp' },
            grants: { fetch: fakeCarrier({ pay_123: { state: 'delivered' } }) },
            handles: ['order.shipped'],
          },
        ]),
        proposal: exampleProposal({ postconditions: [{ name: 'order.shipped' }], server_id: 'shop-mcp' }),
        observation: exampleObservation({ server_id: 'shop-mcp' }),
      });
      expect(outcome.status).toBe('inconclusive');
      expect(outcome.checks[0]).toMatchObject({ reason: 'NOT_INDEPENDENT', reported: 'pass' });
    });
  });

  describe('when its configuration is loaded', () => {
    it('registers the built verifier with a guarded fetch and its options', async () => {
      // A plugin runs in a process of its own on plain Node, so the configuration names the built
      // order-shipped.js: build it as tsc would, next to a copy of the configuration, with the
      // dependencies an `npm install` would give it.
      const site = await mkdtemp(path.join(tmpdir(), 'vouch-tutorial-'));
      try {
        const source = await readFile(path.join(import.meta.dirname, 'order-shipped.ts'), 'utf8');
        const built = ts.transpileModule(source, {
          compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022 },
        });
        await writeFile(path.join(site, 'order-shipped.js'), built.outputText);
        await copyFile(
          path.join(import.meta.dirname, 'vouch.config.json'),
          path.join(site, 'vouch.config.json'),
        );
        await linkDependencies(site);
        const loaded = await loadVerifierConfig(path.join(site, 'vouch.config.json'));
        try {
          expect(
            loaded.registry.entries.map((e) => [e.name, e.timeoutMs, e.options, Object.keys(e.grants)]),
          ).toEqual([
            [
              'acme/order-shipped',
              2000,
              { carrierUrl: 'https://tracking.carrier.example', source: 'carrier-api' },
              ['fetch'],
            ],
          ]);
        } finally {
          await loaded.close();
        }
      } finally {
        await rm(site, { recursive: true, force: true });
      }
    });
  });
});

const repo = path.resolve(import.meta.dirname, '../..');

/** `@vouch/verifier-sdk` (a private build of it) and zod, in `dir/node_modules`, as `npm install` would put them. */
async function linkDependencies(dir: string): Promise<void> {
  const sdk = await buildVerifierSdk(dir);
  await mkdir(path.join(dir, 'node_modules/@vouch'), { recursive: true });
  await symlink(sdk, path.join(dir, 'node_modules/@vouch/verifier-sdk'), 'dir');
  await symlink(path.join(repo, 'node_modules/zod'), path.join(dir, 'node_modules/zod'), 'dir');
}
