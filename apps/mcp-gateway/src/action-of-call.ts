import type { Condition, ExecuteAction, JsonObject, SideEffectClass } from '@vouch/client';
import type { ResultObligations } from './result-obligations';

/** How the gateway describes calls to one upstream tool when it proposes them. */
export interface ToolSettings {
  /** The action type recorded on the proposal (default `<serverId>.<toolName>`). */
  action?: string;
  /**
   * What the call touches. `idArgument` names the argument that identifies the target
   * (`path`, `account_id`); without one the target is the upstream server itself.
   */
  target?: { kind?: string; id?: string; idArgument?: string };
  /**
   * The class the gateway claims for the call. The registry's class still applies when it is
   * stricter; leave it out to use the registry's.
   */
  sideEffect?: SideEffectClass;
  preconditions?: Condition[];
  /** What a verifier should read back after the call, e.g. `{ name: 'file.exists', params: { ... } }`. */
  postconditions?: Condition[];
  /** Masks and a size cap applied to the result before the agent sees it (the ledger keeps it whole). */
  result?: ResultObligations;
}

const RANK: Record<SideEffectClass, number> = {
  read_only: 0,
  idempotent: 1,
  compensatable: 2,
  irreversible: 3,
};

/**
 * The proposal for one `tools/call`. The environment comes from the gateway's configuration,
 * never from the agent: a target without an environment is ambiguous and policy denies it.
 */
export function actionOfCall(input: {
  serverId: string;
  environment: string;
  toolName: string;
  args: JsonObject;
  registered: SideEffectClass;
  settings: ToolSettings | undefined;
}): ExecuteAction {
  const { serverId, environment, toolName, args, registered, settings } = input;
  const declared = settings?.sideEffect;
  // Never claim less than the registry holds: the policy would apply the stricter class
  // anyway, and a proposal that understates its class is noted against the gateway.
  const sideEffect = declared && RANK[declared] > RANK[registered] ? declared : registered;
  const idArgument = settings?.target?.idArgument;
  const fromArgument = idArgument === undefined ? undefined : args[idArgument];
  const id =
    idArgument === undefined
      ? (settings?.target?.id ?? serverId)
      : typeof fromArgument === 'string' || typeof fromArgument === 'number'
        ? String(fromArgument)
        : null;
  return {
    action: settings?.action ?? `${serverId}.${toolName}`,
    server_id: serverId,
    tool_name: toolName,
    target: { kind: settings?.target?.kind ?? 'mcp_server', id, env: environment },
    arguments: args,
    side_effect: sideEffect,
    ...(settings?.preconditions ? { preconditions: settings.preconditions } : {}),
    ...(settings?.postconditions ? { postconditions: settings.postconditions } : {}),
  };
}
