import { canonicalJson } from '@vouch/audit';
import { toolDefinitionApprovalInputSchema, toolInputSchema } from './inputs';
import type { ToolRecord } from './types';

// What a tool registration's signature must say (docs/chain.md, "Records signed by their
// authors"): browser-safe, for the signature rules the console runs too.

/** The fields of a registration, without what the ledger adds. */
export type RegistrationFields = Omit<ToolRecord, 'id' | 'version' | 'registered_by' | 'registered_at'>;

/** What a registrar signs a registration (or a gateway its discovery) as: its body, as sent. */
export const TOOL_REGISTER_ACTION = 'tool.register';
/** What an admin signs an approval of a tool's definition as: its body, as sent. */
export const APPROVE_DEFINITION_ACTION = 'tool.approve_definition';

/**
 * Whether a registration body (`tool.register` claims) is what `record` registered. A
 * gateway's report of a definition writes the version before it with that definition: the
 * report binds the tool and the definition, the rest is the earlier version's (the writer
 * check holds a gateway's version to a definition report).
 */
export function registrationClaimsMatch(claims: unknown, record: ToolRecord): boolean {
  const parsed = toolInputSchema.safeParse(claims);
  if (!parsed.success) return false;
  const { replaces_version: _replaces, postconditions, definition_sha256, ...rest } = parsed.data;
  if (rest.server_id !== record.server_id || rest.tool_name !== record.tool_name) return false;
  if (rest.source === 'discovery' && definition_sha256 !== undefined && record.source !== 'discovery') {
    return (
      definition_sha256 === record.definition_sha256 || definition_sha256 === record.changed_definition_sha256
    );
  }
  const sent = postconditions?.length ? { ...rest, postconditions } : rest;
  if (definition_sha256 !== undefined && definition_sha256 !== record.definition_sha256) return false;
  return sameRegistration(record, { ...sent, ...definitionsOf(record) });
}

/** Whether an approval body (`tool.approve_definition` claims) is what `record` pinned. */
export function definitionApprovalClaimsMatch(claims: unknown, record: ToolRecord): boolean {
  const parsed = toolDefinitionApprovalInputSchema.safeParse(claims);
  if (!parsed.success) return false;
  const approved = parsed.data;
  return (
    approved.server_id === record.server_id &&
    approved.tool_name === record.tool_name &&
    approved.definition_sha256 === record.definition_sha256 &&
    approved.replaces_version + 1 === record.version
  );
}

/** The definition fields of a registration, to carry into its next version. */
export function definitionsOf(
  tool: ToolRecord | null | undefined,
): Pick<ToolRecord, 'definition_sha256' | 'changed_definition_sha256'> {
  return {
    ...(tool?.definition_sha256 === undefined ? {} : { definition_sha256: tool.definition_sha256 }),
    ...(tool?.changed_definition_sha256 === undefined
      ? {}
      : { changed_definition_sha256: tool.changed_definition_sha256 }),
  };
}

export function sameRegistration(current: ToolRecord, next: RegistrationFields): boolean {
  return (
    current.side_effect === next.side_effect &&
    current.dry_run_tool === next.dry_run_tool &&
    current.compensation_tool === next.compensation_tool &&
    current.approval_required === next.approval_required &&
    current.requires_target_id === next.requires_target_id &&
    current.max_approval_window_seconds === next.max_approval_window_seconds &&
    current.source === next.source &&
    JSON.stringify(current.required_scopes) === JSON.stringify(next.required_scopes) &&
    JSON.stringify(current.allowed_environments) === JSON.stringify(next.allowed_environments) &&
    JSON.stringify(current.writes ?? null) === JSON.stringify(next.writes ?? null) &&
    canonicalJson(current.postconditions ?? []) === canonicalJson(next.postconditions ?? []) &&
    (current.unproven_preconditions ?? 'block') === (next.unproven_preconditions ?? 'block') &&
    current.definition_sha256 === next.definition_sha256 &&
    current.changed_definition_sha256 === next.changed_definition_sha256
  );
}
