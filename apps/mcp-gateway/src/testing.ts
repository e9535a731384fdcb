/** An example upstream MCP server with one tool per outcome layer, for gateway tests. */
export type { ExampleUpstream, UpstreamCall } from './testing/example-upstream';
export { createExampleUpstream, EXAMPLE_TOOLS } from './testing/example-upstream';
