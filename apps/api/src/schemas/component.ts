import { zodToOpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { z } from '@hono/zod-openapi';

/**
 * Name a schema of `@vouch/records` as an OpenAPI component, in place: every route or record
 * that nests this very schema then refers to it (`$ref`) instead of repeating it. In place,
 * because `@vouch/records` is built without @hono/zod-openapi (it is browser-safe and the
 * client takes its types), so its schemas have no `.openapi()`; a copy would leave the nested
 * uses unnamed. The metadata goes where `.openapi(name)` would have put it.
 */
export function component<S extends z.ZodType>(
  schema: S,
  name: string,
  metadata: { description?: string } = {},
): S {
  zodToOpenAPIRegistry.add(schema, { ...metadata, _internal: { refId: name } });
  return schema;
}
