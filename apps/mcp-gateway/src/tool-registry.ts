import type { Tool } from '@modelcontextprotocol/server';
import type { SideEffectClass, VouchClient } from '@vouch/client';
import { isVouchClientError } from '@vouch/client';
import type { Logger } from './logger';

/** What the gateway knows about the upstream's tools in the Vouch registry. */
export interface ToolRegistry {
  /**
   * Learn the registered class of each upstream tool, and register every tool the registry
   * does not know as discovered. Discovery is not authorization: a discovered tool is
   * `irreversible` (every call needs a human) until an operator declares otherwise, and the
   * ledger never lets a discovery overwrite an operator's registration.
   */
  discover(tools: readonly Tool[]): Promise<void>;
  /** The class the registry holds for a tool; `irreversible` when the gateway has not learned it. */
  sideEffectOf(toolName: string): SideEffectClass;
}

/** Build the registry view for one upstream server. */
export function createToolRegistry(options: {
  vouch: VouchClient;
  serverId: string;
  logger: Logger;
}): ToolRegistry {
  const { vouch, serverId, logger } = options;
  const classes = new Map<string, SideEffectClass>();
  const codeOf = (error: unknown) => (isVouchClientError(error) ? error.code : 'UNKNOWN');

  return {
    async discover(tools) {
      try {
        for (const tool of await vouch.tools.list()) {
          if (tool.server_id === serverId) classes.set(tool.tool_name, tool.side_effect);
        }
      } catch (error) {
        logger.warn('could not read the tool registry', { server_id: serverId, code: codeOf(error) });
      }
      const unknown = tools.filter((tool) => !classes.has(tool.name));
      await Promise.all(
        unknown.map(async (tool) => {
          try {
            // The upstream's annotations (readOnlyHint, destructiveHint) are claims by the
            // server being governed; they are not sent as a class. The answer is the
            // registry's record, which is the operator's when there is one.
            const { tool: record } = await vouch.tools.register({
              server_id: serverId,
              tool_name: tool.name,
              side_effect: 'irreversible',
              source: 'discovery',
            });
            classes.set(tool.name, record.side_effect);
          } catch (error) {
            // Fail closed: an unregistered tool is denied by policy, so nothing runs unvetted.
            logger.warn(
              'could not register a discovered tool; calls to it are denied until it is registered',
              {
                server_id: serverId,
                tool_name: tool.name,
                code: codeOf(error),
              },
            );
          }
        }),
      );
    },
    sideEffectOf(toolName) {
      return classes.get(toolName) ?? 'irreversible';
    },
  };
}
