import type { Tool } from '@modelcontextprotocol/server';
import { canonicalJson, sha256Hex } from '@vouch/audit';

/**
 * SHA-256 of what an agent reads about a tool and what shapes its calls: name, description,
 * input schema and annotations, as canonical JSON (RFC 8785). A server that changes any of
 * them after its tool was approved (a "rug pull": a new description that instructs the
 * agent, a wider schema) changes this hash.
 */
export function definitionSha256(
  tool: Pick<Tool, 'name' | 'description' | 'inputSchema' | 'annotations'>,
): string {
  return sha256Hex(
    canonicalJson({
      name: tool.name,
      ...(tool.description === undefined ? {} : { description: tool.description }),
      inputSchema: tool.inputSchema,
      ...(tool.annotations === undefined ? {} : { annotations: tool.annotations }),
    }),
  );
}
