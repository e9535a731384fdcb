import { canonicalJson, type DsseEnvelope } from '@vouch/audit';
import type { RequiredPostcondition } from '@vouch/records';
import { LedgerError } from '../errors';
import { parseInput, toolDefinitionApprovalInputSchema, toolInputSchema } from './inputs';
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
  const { replaces_version, postconditions, definition_sha256, ...rest } = input;
  requireCelBindings(postconditions ?? []);
  // None required is the field left out, so a registration without it rebuilds as before.
  const declared = postconditions?.length ? { ...rest, postconditions } : rest;
  const signature = await runtime.authorSignature(ctx, TOOL_REGISTER_ACTION, body);
  return runtime.run(ctx, recordKeys.registerTool(), async (tx) => {
    const current = await tx.reads.latestTool(declared.server_id, declared.tool_name);
    // A registration keeps the definitions already recorded unless it names one.
    const fields: RegistrationFields = { ...declared, ...definitionsOf(current) };
    if (current && fields.source === 'discovery' && definition_sha256 !== undefined) {
      const reported = definitionReported(current, definition_sha256);
      if (reported === null) return { tool: current, replayed: true };
      return {
        tool: writeVersion(tx, ctx, { ...withoutRecordFields(current), ...reported }, current, signature),
        replayed: false,
      };
    }
    if (definition_sha256 !== undefined) {
      // A new tool's first definition, or an operator's: pinned, settling a change to it.
      fields.definition_sha256 = definition_sha256;
      if (fields.changed_definition_sha256 === definition_sha256) delete fields.changed_definition_sha256;
    }
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
    return { tool: writeVersion(tx, ctx, fields, current, signature), replayed: false };
  });
}

type RegistrationFields = Omit<ToolRecord, 'id' | 'version' | 'registered_by' | 'registered_at'>;
type RecordTx = Parameters<Parameters<RecordsRuntime['run']>[2]>[0];

function writeVersion(
  tx: RecordTx,
  ctx: RecordContext,
  fields: RegistrationFields,
  current: ToolRecord | null | undefined,
  signature: DsseEnvelope | undefined,
): ToolRecord {
  return tx.write('tool', ctx.caller.identity, {
    id: newId('tool'),
    ...fields,
    version: (current?.version ?? 0) + 1,
    registered_by: ctx.caller.identity,
    registered_at: tx.time(),
    ...(signature ? { signature } : {}),
  });
}

function withoutRecordFields(tool: ToolRecord): RegistrationFields {
  const {
    id: _id,
    version: _version,
    registered_by: _by,
    registered_at: _at,
    signature: _signature,
    ...fields
  } = tool;
  return fields;
}

/** The definition fields of a registration, to carry into its next version. */
function definitionsOf(
  tool: ToolRecord | null | undefined,
): Pick<ToolRecord, 'definition_sha256' | 'changed_definition_sha256'> {
  return {
    ...(tool?.definition_sha256 === undefined ? {} : { definition_sha256: tool.definition_sha256 }),
    ...(tool?.changed_definition_sha256 === undefined
      ? {}
      : { changed_definition_sha256: tool.changed_definition_sha256 }),
  };
}

/**
 * What a gateway's report of a definition changes: the first one is pinned; one that differs
 * from the pin is recorded as changed (the pin stays until an operator approves the new one);
 * null when the report is already recorded. Nothing else of the registration changes.
 */
function definitionReported(
  current: ToolRecord,
  sha256: string,
): Pick<ToolRecord, 'definition_sha256' | 'changed_definition_sha256'> | null {
  if (current.definition_sha256 === undefined) return { definition_sha256: sha256 };
  if (current.definition_sha256 === sha256 || current.changed_definition_sha256 === sha256) return null;
  return { definition_sha256: current.definition_sha256, changed_definition_sha256: sha256 };
}

/**
 * An operator approves a tool's definition: it becomes the pinned one, and a pending change to
 * it is settled. `replaces_version` must be the version the operator looked at.
 */
export async function approveToolDefinition(
  runtime: RecordsRuntime,
  ctx: RecordContext,
  body: unknown,
): Promise<{ tool: ToolRecord; replayed: boolean }> {
  const input = parseInput(toolDefinitionApprovalInputSchema, body, {
    what: 'tool definition approval',
    maxBytes: runtime.settings.maxInputBytes,
  });
  const signature = await runtime.authorSignature(ctx, APPROVE_DEFINITION_ACTION, body);
  return runtime.run(ctx, recordKeys.registerTool(), async (tx) => {
    const current = await tx.reads.latestTool(input.server_id, input.tool_name);
    if (!current) {
      throw new LedgerError('TOOL_NOT_REGISTERED', `${input.server_id}/${input.tool_name} is not registered`);
    }
    if (
      current.definition_sha256 === input.definition_sha256 &&
      current.changed_definition_sha256 === undefined
    ) {
      return { tool: current, replayed: true };
    }
    if (current.version !== input.replaces_version) {
      throw new LedgerError(
        'TOOL_EXISTS',
        `${input.server_id}/${input.tool_name} is at version ${current.version}, not ${input.replaces_version}: look again before approving`,
        { details: { tool_id: current.id, version: current.version } },
      );
    }
    const { changed_definition_sha256, ...rest } = withoutRecordFields(current);
    const fields: RegistrationFields = {
      ...rest,
      definition_sha256: input.definition_sha256,
      // A different change than the one approved stays pending.
      ...(changed_definition_sha256 !== undefined && changed_definition_sha256 !== input.definition_sha256
        ? { changed_definition_sha256 }
        : {}),
    };
    return { tool: writeVersion(tx, ctx, fields, current, signature), replayed: false };
  });
}

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

function sameRegistration(current: ToolRecord, next: RegistrationFields): boolean {
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
