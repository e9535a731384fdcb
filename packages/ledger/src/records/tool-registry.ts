import { canonicalJson, type DsseEnvelope } from '@vouch/audit';
import type { RequiredPostcondition } from '@vouch/records';
import { LedgerError } from '../errors';
import { parseInput, toolDefinitionApprovalInputSchema, toolInputSchema } from './inputs';
import type { RecordContext } from './record-context';
import { recordKeys } from './record-keys';
import { newId } from './record-transaction';
import type { RecordsRuntime } from './records-runtime';
import { celBindingProblem } from './required-postconditions';
import {
  APPROVE_DEFINITION_ACTION,
  definitionsOf,
  type RegistrationFields,
  sameRegistration,
  TOOL_REGISTER_ACTION,
} from './tool-registration-claims';
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
