import { canonicalJson } from '@vouch/audit';
import type { RequiredPostcondition } from '@vouch/records';
import { LedgerError } from '../errors';
import { parseInput, toolInputSchema } from './inputs';
import type { RecordContext } from './record-context';
import { recordKeys } from './record-keys';
import { newId } from './record-transaction';
import type { RecordsRuntime } from './records-runtime';
import { celBindingProblem } from './required-postconditions';
import type { ToolRecord } from './types';

/** Register a tool, or a new version of it; identical re-registration and discovery of a known tool replay. */
export async function registerTool(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<{ tool: ToolRecord; replayed: boolean }> {
  const input = parseInput(toolInputSchema, body, {
    what: 'tool registration',
    maxBytes: runtime.settings.maxInputBytes,
  });
  const { replaces_version, postconditions, ...rest } = input;
  requireCelBindings(postconditions ?? []);
  // None required is the field left out, so a registration without it rebuilds as before.
  const fields = postconditions?.length ? { ...rest, postconditions } : rest;
  const signature = await runtime.authorSignature(ctx, TOOL_REGISTER_ACTION, body);
  return runtime.run(ctx, recordKeys.registerTool(), async (tx) => {
    const current = await tx.reads.latestTool(fields.server_id, fields.tool_name);
    if (current) {
      if (sameRegistration(current, fields)) return { tool: current, replayed: true };
      // Discovery is not authorization: it never overrides what an operator registered.
      if (fields.source === 'discovery') return { tool: current, replayed: true };
      // A discovered entry is a placeholder an operator may declare over; a manual
      // registration is only changed by someone who says which version they replace.
      if (current.source === 'manual' && replaces_version !== current.version) {
        throw new LedgerError(
          'TOOL_EXISTS',
          `${fields.server_id}/${fields.tool_name} is registered (version ${current.version}); pass replaces_version to change it`,
          { details: { tool_id: current.id, version: current.version } },
        );
      }
    }
    const tool = tx.write('tool', ctx.caller.identity, {
      id: newId('tool'),
      ...fields,
      version: (current?.version ?? 0) + 1,
      registered_by: ctx.caller.identity,
      registered_at: tx.time(),
      ...(signature ? { signature } : {}),
    });
    return { tool, replayed: false };
  });
}

/** What a registrar signs a registration as: its body, as sent. */
export const TOOL_REGISTER_ACTION = 'tool.register';

/** Whether a registration body (`tool.register` claims) is what `record` registered. */
export function registrationClaimsMatch(claims: unknown, record: ToolRecord): boolean {
  const parsed = toolInputSchema.safeParse(claims);
  if (!parsed.success) return false;
  const { replaces_version: _replaces, postconditions, ...rest } = parsed.data;
  const sent = postconditions?.length ? { ...rest, postconditions } : rest;
  return sameRegistration(record, sent);
}

function sameRegistration(
  current: ToolRecord,
  next: Omit<ToolRecord, 'id' | 'version' | 'registered_by' | 'registered_at'>,
): boolean {
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
    (current.unproven_preconditions ?? 'block') === (next.unproven_preconditions ?? 'block')
  );
}

/** A CEL binding that does not parse is refused at registration, not at every proposal. */
function requireCelBindings(postconditions: readonly RequiredPostcondition[]): void {
  postconditions.forEach((postcondition, i) => {
    for (const [param, binding] of Object.entries(postcondition.params ?? {})) {
      const problem = 'cel' in binding ? celBindingProblem(binding.cel) : null;
      if (problem === null) continue;
      const path = `/postconditions/${i}/params/${param.replaceAll('~', '~0').replaceAll('/', '~1')}/cel`;
      throw new LedgerError('VALIDATION_FAILED', `tool registration is invalid at ${path}: ${problem}`, {
        details: { issues: [{ path, code: 'custom', message: problem }] },
      });
    }
  });
}
