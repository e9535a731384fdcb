import type { AgentSettings, GatewayConfig } from './config';

/**
 * Whether an exposed tool name is one of `patterns` (`*` matches any run of characters);
 * undefined when the agent has no list, so it sees every tool.
 */
export function visibleToolsOf(
  patterns: readonly string[] | undefined,
): ((name: string) => boolean) | undefined {
  if (patterns === undefined) return undefined;
  const regexes = patterns.map(
    (pattern) =>
      new RegExp(
        `^${pattern
          .split('*')
          .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
          .join('.*')}$`,
      ),
  );
  return (name) => regexes.some((regex) => regex.test(name));
}

/**
 * The configuration one HTTP agent's session runs with: only the upstreams it may see, so a
 * hidden upstream is never connected and nothing the agent sends can reach it.
 */
export function configForAgent(config: GatewayConfig, agent: AgentSettings | undefined): GatewayConfig {
  if (!agent?.upstreams || !config.upstreams) return config;
  const visible = new Set(agent.upstreams);
  return {
    ...config,
    upstreams: Object.fromEntries(
      Object.entries(config.upstreams).filter(([upstream]) => visible.has(upstream)),
    ),
  };
}
