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
        'Verification and audit ledger for the actions AI agents take through tools. A proposal is not a decision; a tool output is not verified truth; a successful execution is not a verification of its result. Every failure answers with `{ "error": { "code", "message", "details"?, "request_id" } }`.\n\n**Numbers** are stored and shown exactly as sent, or refused: a JSON number that a double cannot carry exactly (a magnitude past 2^53 − 1 such as `9007199254740993`, more digits than a double holds such as `1.0000000000000001`, or a value that underflows to 0 or overflows) is refused with 400 `NUMBER_NOT_EXACT` and its JSON Pointer in `details.path`, and nothing is written. `1.50` or `1e2` are fine (they are stored as `1.5` and `100`). Send amounts that need more, money above all, as decimal strings (`"amount": "9007199254740993.25"`).',
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
