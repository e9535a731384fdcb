import { validate } from '@readme/openapi-parser';
import { createApp } from '@vouch/api';
import { createLedger, type Database, openDatabase } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The routes are registered at createApp time; the document does not need migrated tables.
let database: Database;
let app: ReturnType<typeof createApp>;
let document: {
  openapi: string;
  paths: Record<string, Record<string, { security?: unknown[] }>>;
};

beforeAll(async () => {
  database = await openDatabase();
  app = createApp({ ledger: createLedger(database) });
  const response = await app.request('/openapi.json');
  expect(response.status).toBe(200);
  document = (await response.json()) as typeof document;
});
afterAll(async () => {
  await database.close();
});

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
// A tile path has a variable number of segments (c2sp.org/tlog-tiles: `x001/x234/067.p/5`),
// which an OpenAPI path cannot express; docs/transparency.md documents it.
const UNDOCUMENTED = new Set(['GET /openapi.json', 'GET /docs', 'GET /tlog/{log}/tile/*']);

function operations(): Array<{ method: string; path: string; secured: boolean }> {
  return Object.entries(document.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({ method, path, secured: (op.security ?? []).length > 0 })),
  );
}

describe('GET /openapi.json', () => {
  describe('when the document is generated', () => {
    it('is valid OpenAPI 3.1', async () => {
      expect(document.openapi).toBe('3.1.0');
      const result = await validate(structuredClone(document) as never);
      expect(result.valid ? [] : result.errors).toEqual([]);
      expect(result.warnings).toEqual([]);
    });

    it('documents every route the app serves, and nothing else', () => {
      const served = new Set(
        app.routes
          .filter((r) => r.method !== 'ALL')
          .map((r) => `${r.method} ${r.path.replace(/:([A-Za-z_]+)/g, '{$1}')}`)
          .filter((r) => !UNDOCUMENTED.has(r)),
      );
      const documented = new Set(operations().map((o) => `${o.method.toUpperCase()} ${o.path}`));
      expect([...documented].sort()).toEqual([...served].sort());
    });
  });

  describe('when each documented operation is called without a key', () => {
    it('exists, and answers 401 exactly when it says it needs a key', async () => {
      const ops = operations();
      expect(ops.length).toBeGreaterThan(5);
      for (const op of ops) {
        const path = op.path.replace(/\{[^}]+\}/g, 'x1');
        const response = await app.request(path, { method: op.method.toUpperCase() });
        const label = `${op.method.toUpperCase()} ${op.path}`;
        if (op.secured) expect({ label, status: response.status }).toEqual({ label, status: 401 });
        else expect({ label, status: response.status }).not.toEqual({ label, status: 404 });
      }
    });
  });
});

describe('GET /docs', () => {
  describe('when an auditor opens the reference page', () => {
    it('lists every operation as plain HTML with no script and nothing third-party', async () => {
      const response = await app.request('/docs');
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('content-security-policy')).toContain("default-src 'none'");
      const html = await response.text();
      expect(html).not.toMatch(/<script/i);
      expect(html).not.toMatch(/(src|href)="(https?:)?\/\//i);
      for (const op of operations()) expect(html).toContain(op.path.replaceAll('&', '&amp;'));
    });

    it('shows the life of a proposal as a diagram, and every outcome value', async () => {
      const html = await (await app.request('/docs')).text();
      expect(html).toMatch(/<pre>stateDiagram-v2\n/);
      for (const value of ['not_executed', 'awaiting_resolution', 'verification_failed', 'unverified']) {
        expect(html).toContain(`<code>${value}</code>`);
      }
    });
  });
});
