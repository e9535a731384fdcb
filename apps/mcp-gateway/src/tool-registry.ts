import type { Tool } from '@modelcontextprotocol/server';
import type { SideEffectClass, VouchClient } from '@vouch/client';
import { isVouchClientError } from '@vouch/client';
import type { Logger } from './logger';
import { definitionSha256 } from './tool-definition';

/**
 * How a tool's definition as the upstream serves it compares with the one pinned in Vouch:
 * `pinned` (the same), `changed` (another one: refused until an operator approves it), or
 * `unpinned` (Vouch holds none, e.g. the tool could not be registered).
 */
export type DefinitionStatus =
  | { status: 'pinned'; sha256: string }
  | { status: 'changed'; sha256: string; pinned: string }
  | { status: 'unpinned' };

/** What the gateway knows about the upstream's tools in the Vouch registry. */
export interface ToolRegistry {
  /**
   * Learn the registered class of each upstream tool, register every tool the registry
   * does not know as discovered, and report each tool's definition (the first report pins
   * it; a different one is recorded as a change awaiting approval). Discovery is not
   * authorization: a discovered tool is `irreversible` (every call needs a human) until an
   * operator declares otherwise, and the ledger never lets a discovery overwrite an
   * operator's registration.
   */
  discover(tools: readonly Tool[]): Promise<void>;
  /** The class the registry holds for a tool; `irreversible` when the gateway has not learned it. */
  sideEffectOf(toolName: string): SideEffectClass;
  /** The served definition of a tool against the pinned one, as of the last discovery. */
  definitionOf(toolName: string): DefinitionStatus;
  /** Read the registry again (an operator may have approved a changed definition since). */
  refresh(): Promise<void>;
}

interface Known {
  side_effect: SideEffectClass;
  definition_sha256?: string | undefined;
  changed_definition_sha256?: string | undefined;
}

/** Build the registry view for one upstream server. */
export function createToolRegistry(options: {
  vouch: VouchClient;
  serverId: string;
  logger: Logger;
}): ToolRegistry {
  const { vouch, serverId, logger } = options;
  const known = new Map<string, Known>();
  const served = new Map<string, string>();
  const codeOf = (error: unknown) => (isVouchClientError(error) ? error.code : 'UNKNOWN');

  const refresh = async () => {
    try {
      for (const tool of await vouch.tools.list()) {
        if (tool.server_id === serverId) known.set(tool.tool_name, tool);
      }
    } catch (error) {
      logger.warn('could not read the tool registry', { server_id: serverId, code: codeOf(error) });
    }
  };

  return {
    refresh,
    async discover(tools) {
      await refresh();
      for (const tool of tools) served.set(tool.name, definitionSha256(tool));
      // Unknown tools are registered; known ones whose served definition Vouch has not
      // recorded (pinned or as a change) are reported, which a registration also does.
      const toReport = tools.filter((tool) => {
        const record = known.get(tool.name);
        const sha256 = served.get(tool.name);
        return (
          !record || (record.definition_sha256 !== sha256 && record.changed_definition_sha256 !== sha256)
        );
      });
      await Promise.all(
        toReport.map(async (tool) => {
          try {
            // The upstream's annotations (readOnlyHint, destructiveHint) are claims by the
            // server being governed; they are not sent as a class. The answer is the
            // registry's record, which is the operator's when there is one.
            const { tool: record } = await vouch.tools.register({
              server_id: serverId,
              tool_name: tool.name,
              side_effect: 'irreversible',
              source: 'discovery',
              definition_sha256: served.get(tool.name)!,
            });
            known.set(tool.name, record);
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
      return known.get(toolName)?.side_effect ?? 'irreversible';
    },
    definitionOf(toolName) {
      const pinned = known.get(toolName)?.definition_sha256;
      const sha256 = served.get(toolName);
      if (pinned === undefined || sha256 === undefined) return { status: 'unpinned' };
      return pinned === sha256 ? { status: 'pinned', sha256 } : { status: 'changed', sha256, pinned };
    },
  };
}
