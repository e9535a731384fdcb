import type { JsonValue, Observation, Postcondition, Proposal } from '@vouch/verifier-sdk';

/**
 * What templates and `from` paths can read: the proposal's `target`, `arguments`, the
 * postcondition's `params`, the whole `proposal`, and the `observation` (the writer's claim,
 * e.g. the refund id it reported, which the verifier then looks for in an independent source).
 */
export interface TemplateScope {
  target: Proposal['target'];
  arguments: Proposal['arguments'];
  params: NonNullable<Postcondition['params']>;
  proposal: Proposal;
  observation: Observation | null;
}

/** Build the scope for a run. */
export function templateScope(input: {
  proposal: Proposal;
  postcondition: Postcondition;
  observation: Observation | null;
}): TemplateScope {
  return {
    target: input.proposal.target,
    arguments: input.proposal.arguments,
    params: input.postcondition.params ?? {},
    proposal: input.proposal,
    observation: input.observation,
  };
}

/** The roots a path may start with. */
export const SCOPE_ROOTS: readonly string[] = ['target', 'arguments', 'params', 'proposal', 'observation'];

/** A dotted path into the scope: `arguments.refund_id`, `params.items.0.id`, `observation.result.refund_id`. */
export const SCOPE_PATH = /^(target|arguments|params|proposal|observation)(\.[A-Za-z0-9_-]+)*$/;

/**
 * A dotted path into the approved proposal only: what the approver saw and the payload hash
 * binds. Expected values, conditions and (unless bound, see `evidence-binding.ts`) lookups
 * read these, never `observation`, which is the gateway's account of the tool's result.
 */
export const PAYLOAD_PATH = /^(target|arguments|params|proposal)(\.[A-Za-z0-9_-]+)*$/;

/** Whether a scope path reads the observation (the tool's result, as the gateway posted it). */
export function readsObservation(path: string): boolean {
  return path === 'observation' || path.startsWith('observation.');
}

/** `{ found, value }` for a dotted scope path; only own properties, so `__proto__` reads nothing. */
export function readScope(
  scope: TemplateScope,
  path: string,
): { found: true; value: JsonValue } | { found: false } {
  let current: unknown = scope;
  for (const key of path.split('.')) {
    if (typeof current !== 'object' || current === null || !Object.hasOwn(current, key))
      return { found: false };
    current = (current as Record<string, unknown>)[key];
  }
  return current === undefined ? { found: false } : { found: true, value: current as JsonValue };
}

/** Why a template could not be filled: a missing value, or one that cannot go into a URL or path. */
export interface TemplateProblem {
  reason: 'TEMPLATE_VALUE_MISSING' | 'TEMPLATE_VALUE_INVALID';
  path: string;
}

const PLACEHOLDER = /\{([^{}]*)\}/g;

/** The placeholders in a template, in order. */
export function placeholdersOf(template: string): string[] {
  return [...template.matchAll(PLACEHOLDER)].map((m) => m[1]!);
}

/**
 * Fill `{path}` placeholders from the scope. Values come from the proposal, which the agent
 * wrote, so they are untrusted: only strings, numbers and booleans are substituted, each passed
 * through `encode` (encodeURIComponent for URLs), and `.`/`..` are refused because URL and path
 * normalization would turn them into a step up the hierarchy even when percent-encoded.
 */
export function fillTemplate(
  template: string,
  scope: TemplateScope,
  encode: (value: string) => string,
): { ok: true; value: string } | { ok: false; problem: TemplateProblem } {
  let problem: TemplateProblem | undefined;
  const value = template.replaceAll(PLACEHOLDER, (_match, path: string) => {
    if (problem) return '';
    const found = readScope(scope, path);
    if (!found.found || found.value === null) {
      problem = { reason: 'TEMPLATE_VALUE_MISSING', path };
      return '';
    }
    const raw = found.value;
    if (typeof raw !== 'string' && typeof raw !== 'number' && typeof raw !== 'boolean') {
      problem = { reason: 'TEMPLATE_VALUE_INVALID', path };
      return '';
    }
    const text = String(raw);
    if (text === '' || text === '.' || text === '..') {
      problem = { reason: 'TEMPLATE_VALUE_INVALID', path };
      return '';
    }
    return encode(text);
  });
  return problem ? { ok: false, problem } : { ok: true, value };
}
