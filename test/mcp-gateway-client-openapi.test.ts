// The gateway's client contract: @vouch/client's hand-written API types (one file,
// packages/client/src/api-types.ts) against the server's own OpenAPI document. The client
// cannot import the server (it runs in browsers), so this test is what keeps them together.
import { createApp, STATUS_BY_CODE } from '@vouch/api';
import { API_CONTRACT, PROPOSAL_OUTCOMES, PROPOSAL_STAGES, SERVER_ERROR_CODES } from '@vouch/client';
import { createLedger, type Database, migrate, openDatabase } from '@vouch/ledger';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

interface Schema {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  allOf?: Schema[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  enum?: string[];
}
interface Operation {
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}
interface Document {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
}

let database: Database;
let document: Document;

beforeAll(async () => {
  database = await openDatabase();
  await migrate(database);
  const app = createApp({ ledger: createLedger(database) });
  document = (await (await app.request('/openapi.json')).json()) as Document;
});
afterAll(async () => {
  await database?.close();
});

/** Resolve `$ref`s and merge `allOf` / nullable `anyOf` into one object schema's properties. */
function propertiesOf(schema: Schema | undefined): {
  properties: Record<string, Schema>;
  required: string[];
} {
  if (!schema) return { properties: {}, required: [] };
  if (schema.$ref)
    return propertiesOf(document.components.schemas[schema.$ref.replace('#/components/schemas/', '')]);
  const parts = [...(schema.allOf ?? []), ...(schema.anyOf ?? []), ...(schema.oneOf ?? [])].map(propertiesOf);
  return {
    properties: Object.assign({}, schema.properties ?? {}, ...parts.map((p) => p.properties)),
    required: [...(schema.required ?? []), ...parts.flatMap((p) => p.required)],
  };
}

const routes = Object.entries(API_CONTRACT).map(([name, route]) => ({ name, ...route }));

describe('@vouch/client API types', () => {
  describe.each(routes)('when the client calls $method $path ($name)', (route) => {
    const operation = () => document.paths[route.path]?.[route.method];

    it('finds the route in the OpenAPI document', () => {
      expect(operation(), `${route.method} ${route.path}`).toBeDefined();
    });

    it('answers success with the statuses the client accepts', () => {
      const documented = Object.keys(operation()?.responses ?? {}).filter((status) => status.startsWith('2'));
      expect(documented.sort()).toEqual(route.success.map(String).sort());
    });

    it('accepts every body field the client sends and requires none the client cannot send', () => {
      const body = 'body' in route ? route.body : undefined;
      const schema = operation()?.requestBody?.content['application/json']?.schema;
      if (!body) {
        expect(propertiesOf(schema).required).toEqual([]);
        return;
      }
      const { properties, required } = propertiesOf(schema);
      expect(Object.keys(properties).sort()).toEqual(expect.arrayContaining([...body].sort()));
      expect(body).toEqual(expect.arrayContaining(required));
    });

    it('documents every answer field the client reads', () => {
      const reads = 'reads' in route ? route.reads : undefined;
      if (!reads) return;
      const success = operation()?.responses[String(route.success[0])];
      const { properties } = propertiesOf(success?.content?.['application/json']?.schema);
      expect(Object.keys(properties)).toEqual(expect.arrayContaining([...reads]));
    });
  });

  describe('when the client reads a story', () => {
    it.each([
      ['outcome', PROPOSAL_OUTCOMES],
      ['stage', PROPOSAL_STAGES],
    ] as const)('knows exactly the %s values the server documents', (field, values) => {
      const story = propertiesOf(document.components.schemas.Story).properties[field];
      expect([...values].sort()).toEqual([...(story?.enum ?? [])].sort());
    });
  });

  describe('when the server can answer with an error code', () => {
    it('knows exactly the codes in the server status table', () => {
      expect([...SERVER_ERROR_CODES].sort()).toEqual(Object.keys(STATUS_BY_CODE).sort());
    });
  });
});
