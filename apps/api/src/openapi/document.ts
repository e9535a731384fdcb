import type { VouchApp } from '../app';

/** The OpenAPI 3.1 document of an app, generated from the zod schemas its routes validate with. */
export function openApiDocument(app: VouchApp, version: string) {
  app.openAPIRegistry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'An API key (`vch_…`) issued by `vouch keys create` or `POST /v1/keys`.',
  });
  return app.getOpenAPI31Document({
    openapi: '3.1.0',
    info: {
      title: 'Vouch API',
      version,
      description:
        'Verification and audit ledger for the actions AI agents take through tools. A proposal is not a decision; a tool output is not verified truth; a successful execution is not a verification of its result. Every failure answers with `{ "error": { "code", "message", "details"?, "request_id" } }`.',
      license: { name: 'Apache-2.0', url: 'https://www.apache.org/licenses/LICENSE-2.0' },
    },
    tags: [
      { name: 'health', description: 'Liveness and readiness; no key needed.' },
      { name: 'tools', description: 'The tools an agent may call; unregistered tools are never allowed.' },
      { name: 'proposals', description: 'What an agent proposed, and the decision on it.' },
      { name: 'approvals', description: 'Human approval of the exact payload that will run.' },
      { name: 'observations', description: 'What the tool really returned, and its verification.' },
      { name: 'audit', description: 'The hash-chained log: pages, head, verification, export.' },
      { name: 'keys', description: 'API keys: shown once, stored as SHA-256.' },
    ],
  });
}
