import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { SideEffectClass, VouchClient } from '@vouch/client';
import { isVouchClientError } from '@vouch/client';
import type { Logger } from './logger';

/** What the gateway knows about the upstream's tools in the Vouch registry. */
export interface ToolRegistry {
  /**
   * Register every tool not seen before as discovered. Discovery is not authorization: a
   * discovered tool is `irreversible` (every call needs a human) until an operator declares
   * otherwise, and the ledger never lets a discovery overwrite an operator's registration.
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
  const attempted = new Set<string>();

  return {
    async discover(tools) {
      const fresh = tools.filter((tool) => !attempted.has(tool.name));
      await Promise.all(
        fresh.map(async (tool) => {
          attempted.add(tool.name);
          try {
            // The upstream's annotations (readOnlyHint, destructiveHint) are claims by the
            // server being governed; they are not sent as a class. The answer is the
            // registry's record, which is the operator's when there is one.
            const record = await vouch.tools.register({
              server_id: serverId,
              tool_name: tool.name,
              side_effect: 'irreversible',
              source: 'discovery',
            });
            classes.set(tool.name, record.side_effect);
          } catch (error) {
            // Fail closed: an unregistered tool is denied by policy, so nothing runs unvetted.
            attempted.delete(tool.name);
            logger.warn('tool discovery registration failed', {
              server_id: serverId,
              tool_name: tool.name,
              code: isVouchClientError(error) ? error.code : 'UNKNOWN',
            });
          }
        }),
      );
    },
    sideEffectOf(toolName) {
      return classes.get(toolName) ?? 'irreversible';
    },
  };
}
