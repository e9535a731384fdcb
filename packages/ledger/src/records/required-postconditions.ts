import { Environment } from '@marcbachmann/cel-js';
import { canonicalJson } from '@vouch/audit';
import type { ParamBinding, RequiredPostcondition } from '@vouch/records';
import { LedgerError } from '../errors';
import type { Condition, JsonObject, JsonValue, ProposalPayload, ToolRecord } from './types';

/**
 * What must be proven belongs to the operator: a tool's registration lists the postconditions
 * every call must prove, and `propose` adds them to the proposal's payload (hashed, shown to the
 * approver) whatever the gateway declared. The gateway may add its own; it cannot drop or
 * rename a required one, because it never gets to send them.
 */

/** The fields of a proposal's payload a param may be bound to. */
export const BINDING_FIELDS = [
  'action',
  'server_id',
  'tool_name',
  'target',
  'arguments',
  'side_effect',
  'impact',
] as const;

/** Why a param could not be bound: the pointer names nothing, CEL failed, or its value is not JSON. */
export type BindingFailure = 'POINTER_MISSING' | 'CEL_ERROR' | 'NOT_JSON';

// The conditions themselves are left out: they are what is being computed, and leaving them out
// lets `verifyChain` rebind from the stored payload alone.
function bindingContext(payload: ProposalPayload): JsonObject {
  return Object.fromEntries(BINDING_FIELDS.map((field) => [field, payload[field] as JsonValue]));
}

const celEnvironment = BINDING_FIELDS.reduce(
  (env, field) => env.registerVariable(field, 'dyn'),
  new Environment({
    // A param is JSON, where a map's values and a list's items may be of different types.
    homogeneousAggregateLiterals: false,
    limits: {
      maxAstNodes: 2000,
      maxDepth: 50,
      maxListElements: 200,
      maxMapEntries: 200,
      maxCallArguments: 16,
    },
  }),
);

/** Why a CEL binding cannot be used at all (it does not parse); null when it parses. */
export function celBindingProblem(source: string): string | null {
  try {
    celEnvironment.parse(source);
    return null;
  } catch (error) {
    return firstLine((error as Error).message);
  }
}

class Unbound extends Error {
  constructor(
    readonly reason: BindingFailure,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Each required postcondition with its params bound to `payload`, marked `origin: 'registry'`
 * and carrying `verifiers` when the operator restricted them.
 *
 * @throws LedgerError `POSTCONDITION_BINDING_FAILED` (details: postcondition, param, reason)
 *   when a binding cannot be evaluated: the proposal does not fit its tool's requirements.
 */
export function bindRequiredPostconditions(
  required: readonly RequiredPostcondition[],
  payload: ProposalPayload,
): Condition[] {
  const context = bindingContext(payload);
  return required.map((postcondition) => {
    const params: Record<string, JsonValue> = {};
    for (const [param, binding] of Object.entries(postcondition.params ?? {})) {
      try {
        Object.defineProperty(params, param, {
          value: bindParam(binding, context),
          enumerable: true,
          writable: true,
          configurable: true,
        });
      } catch (error) {
        if (!(error instanceof Unbound)) throw error;
        throw new LedgerError(
          'POSTCONDITION_BINDING_FAILED',
          `the tool requires postcondition ${postcondition.name}, whose param ${param} cannot be bound to this proposal: ${error.message}`,
          { details: { postcondition: postcondition.name, param, reason: error.reason } },
        );
      }
    }
    return {
      name: postcondition.name,
      ...(postcondition.params === undefined ? {} : { params }),
      origin: 'registry' as const,
      ...(postcondition.verifiers === undefined ? {} : { verifiers: [...postcondition.verifiers] }),
    };
  });
}

/**
 * The proposal's postconditions: the required ones first, then the agent's. An agent's
 * postcondition identical to a required one (same name, same params as canonical JSON) is
 * merged into it, not listed twice; one with other params is another postcondition and kept.
 */
export function mergePostconditions(
  agent: readonly Condition[],
  required: readonly Condition[],
): Condition[] {
  const identity = (c: Condition) => canonicalJson([c.name, c.params ?? {}]);
  const requiredIds = new Set(required.map(identity));
  return [...required, ...agent.filter((c) => !requiredIds.has(identity(c)))];
}

/**
 * The payload `propose` records: the agent's, with the postconditions `tool` requires bound
 * and merged in (unchanged when no tool is registered or it requires none).
 *
 * @throws LedgerError `POSTCONDITION_BINDING_FAILED`.
 */
export function applyRequiredPostconditions(
  payload: ProposalPayload,
  tool: Pick<ToolRecord, 'postconditions'> | null,
): ProposalPayload {
  const required = tool?.postconditions ?? [];
  if (required.length === 0) return payload;
  return {
    ...payload,
    postconditions: mergePostconditions(
      payload.postconditions,
      bindRequiredPostconditions(required, payload),
    ),
  };
}

/**
 * Why a stored proposal's postconditions are not the agent's plus what `tool` (the registration
 * in force when it was proposed) required, bound to its own payload; null when they are. The
 * agent's are those not marked `registry`, so a record that drops, renames, rebinds or invents
 * a required postcondition, or passes one of the agent's off as required, is found.
 */
export function requiredPostconditionsBreak(
  proposal: ProposalPayload,
  tool: Pick<ToolRecord, 'postconditions'> | null,
): string | null {
  const agent = proposal.postconditions.filter((c) => c.origin !== 'registry');
  let expected: Condition[];
  try {
    expected = applyRequiredPostconditions({ ...proposal, postconditions: agent }, tool).postconditions;
  } catch (error) {
    return `the postconditions its tool requires cannot be bound to it (${(error as Error).message})`;
  }
  if (canonicalJson(expected) === canonicalJson(proposal.postconditions)) return null;
  return 'its postconditions are not the agent’s plus those its tool registration required';
}

function bindParam(binding: ParamBinding, context: JsonObject): JsonValue {
  if ('pointer' in binding) return resolvePointer(context, binding.pointer);
  if ('cel' in binding) {
    let result: unknown;
    try {
      result = celEnvironment.evaluate(binding.cel, context);
    } catch (error) {
      throw new Unbound('CEL_ERROR', `CEL ${binding.cel}: ${firstLine((error as Error).message)}`);
    }
    const value = celToJson(result);
    if (value === undefined)
      throw new Unbound('NOT_JSON', `CEL ${binding.cel} gives a value JSON cannot carry`);
    try {
      canonicalJson(value);
    } catch (error) {
      throw new Unbound('NOT_JSON', `CEL ${binding.cel}: ${(error as Error).message}`);
    }
    return value;
  }
  return binding.value;
}

/** RFC 6901: each token names an own member of an object, or an index of an array. */
function resolvePointer(document: JsonValue, pointer: string): JsonValue {
  if (pointer === '') return document;
  let at: JsonValue = document;
  for (const raw of pointer.slice(1).split('/')) {
    const token = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    if (Array.isArray(at)) {
      const list: readonly JsonValue[] = at;
      if (!/^(0|[1-9][0-9]*)$/.test(token) || Number(token) >= list.length) {
        throw new Unbound('POINTER_MISSING', `${pointer} names nothing in the proposal`);
      }
      at = list[Number(token)]!;
    } else if (typeof at === 'object' && at !== null && Object.hasOwn(at, token)) {
      at = (at as JsonObject)[token]!;
    } else {
      throw new Unbound('POINTER_MISSING', `${pointer} names nothing in the proposal`);
    }
  }
  return at;
}

/**
 * A CEL value as JSON, or undefined when it has none: an `int` becomes a number only while it
 * is exact; bytes, timestamps, durations and types have no JSON form and are refused.
 */
function celToJson(value: unknown): JsonValue | undefined {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : undefined;
  if (Array.isArray(value)) return allJson(value.map(celToJson));
  const entries =
    value instanceof Map
      ? [...value.entries()]
      : typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype
        ? Object.entries(value)
        : null;
  if (entries === null) return undefined;
  const object: Record<string, JsonValue> = {};
  for (const [key, item] of entries) {
    const json = celToJson(item);
    if (typeof key !== 'string' || json === undefined) return undefined;
    Object.defineProperty(object, key, { value: json, enumerable: true, writable: true, configurable: true });
  }
  return object;
}

function allJson(values: (JsonValue | undefined)[]): JsonValue[] | undefined {
  return values.every((v) => v !== undefined) ? (values as JsonValue[]) : undefined;
}

function firstLine(text: string | undefined): string {
  return (text ?? 'invalid').split('\n')[0]!;
}
