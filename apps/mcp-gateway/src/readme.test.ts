import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { SESSION_METRIC_NAMES } from './agent-sessions';
import { gatewayConfigSchema } from './config';

// Docs that show configuration are tested: the README's gateway.json must be one the bin accepts.
const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
const jsonBlocks = [...readme.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]!) as unknown);

describe('the gateway README', () => {
  describe('when its gateway.json example is parsed', () => {
    it('is a valid configuration, and so are the HTTP, upstream connection and several-upstreams ones', () => {
      const configs = jsonBlocks.filter(
        (block) =>
          (block as { upstream?: unknown }).upstream !== undefined ||
          (block as { upstreams?: unknown }).upstreams !== undefined,
      );
      expect(configs.map((config) => gatewayConfigSchema.safeParse(config).error)).toEqual([
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
      // The per-agent visibility and result obligation examples are among them.
      const parsed = configs.map((config) => gatewayConfigSchema.parse(config));
      expect(parsed.some((config) => config.agentServer?.agents.some((agent) => agent.tools))).toBe(true);
      expect(parsed.some((config) => Object.values(config.tools ?? {}).some((tool) => tool.result))).toBe(
        true,
      );
      expect(configs.some((config) => (config as { agentServer?: unknown }).agentServer)).toBe(true);
      expect(configs.some((config) => (config as { upstreams?: unknown }).upstreams)).toBe(true);
    });
  });

  describe('when its walkthrough writes a configuration file', () => {
    it('writes one the bin accepts', () => {
      const written = [...readme.matchAll(/<<'JSON'\n([\s\S]*?)\nJSON\n/g)].map(
        (m) => JSON.parse(m[1]!) as unknown,
      );
      expect(written.length).toBeGreaterThan(0);
      for (const config of written) expect(gatewayConfigSchema.safeParse(config).error).toBeUndefined();
    });
  });

  describe('when its MCP client example is read', () => {
    it('starts the bin by its absolute path (no name a registry could serve) and passes the key only through the environment', () => {
      const client = jsonBlocks.find(
        (block) => (block as { mcpServers?: unknown }).mcpServers !== undefined,
      ) as {
        mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>;
      };
      const server = Object.values(client.mcpServers)[0]!;
      expect(server.command).toBe('node');
      expect(server.args[0]).toMatch(/^\/.*\/apps\/mcp-gateway\/bin\/vouch-mcp-gateway\.js$/);
      // The host's working directory is not the agent's: the configuration is named absolutely too.
      expect(server.args[1]).toBe('--config');
      expect(server.args[2]).toMatch(/^\/.*\/gateway\.json$/);
      expect(Object.keys(server.env)).toEqual(['VOUCH_API_KEY']);
    });
  });

  describe('when its metrics are read', () => {
    it('names every session metric the HTTP server serves', () => {
      for (const name of SESSION_METRIC_NAMES) expect(readme, name).toContain(`\`${name}\``);
    });
  });
});
