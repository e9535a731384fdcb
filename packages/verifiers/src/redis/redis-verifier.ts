import { type CheckResult, defineVerifier, type JsonValue, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';
import { checkResultOf, unfilledTemplate } from '../shared/check-result';
import { combineVerdicts, evaluateConditions } from '../shared/conditions';
import { withEvidenceRef } from '../shared/evidence-binding';
import { evaluateJsonAssertion, verdictOf } from '../shared/json-assertions';
import { fillTemplate, templateScope } from '../shared/template';
import { redisOptionsSchema } from './redis-options';

/**
 * `redis`: run one read-only command on a named Redis connection (the host's `redis` grant)
 * and assert on the reply by JSON Pointer or with CEL conditions. The key and arguments are
 * templates filled from the proposal; the connection's key prefix confines what they reach.
 *
 * @example
 * { command: 'HGETALL', key: 'refund:{observation.result.refund_id}',
 *   bind: [{ pointer: '/payment_id', from: 'target.id' }], evidenceRef: 'refund:{result.id}',
 *   successCondition: "result.status == 'succeeded' && int(result.amount) == arguments.amount" }
 */
export const redisVerifier = defineVerifier({
  id: 'redis',
  version: '0.1.0',
  apiVersion: VERIFIER_API_VERSION,
  description: 'Runs one read-only Redis command on a named connection and asserts on the reply.',
  handles: ['redis', 'redis.*'],
  phase: ['post', 'pre'],
  options: redisOptionsSchema,
  timeoutMs: 5_000,
  requires: ['redis'],
  async check(ctx): Promise<CheckResult> {
    const { options, postcondition, signal } = ctx;
    const redis = ctx.redis!;
    const source = options.source ?? redis.name;
    const scope = templateScope(ctx);
    const result = checkResultOf(postcondition.name, source);

    const args: string[] = [];
    for (const text of [options.key, ...options.args]) {
      // Redis keys are binary-safe: nothing to escape, only `.`/`..` and non-scalars are refused.
      const filled = fillTemplate(text, scope, (value) => value);
      if (!filled.ok) {
        return unfilledTemplate(result, filled.problem, 'the command');
      }
      args.push(filled.value);
    }
    const reply = await redis.command(options.command, args, {
      signal,
      timeoutMs: Math.floor(ctx.timeoutMs * 0.8),
    });
    const evidence = { connection: redis.name, command: options.command, args };

    let value: unknown = reply;
    if (options.json && typeof reply === 'string') {
      try {
        value = JSON.parse(reply);
      } catch {
        return result('inconclusive', {
          reason: 'INVALID_JSON',
          evidence,
          message: 'the value is not valid JSON',
        });
      }
    }
    // A binding is an equals assertion the configuration cannot leave out (see evidence-binding.ts).
    const bindings = (options.bind ?? []).map((b) => ({ op: 'equals' as const, ...b }));
    const outcomes = [...bindings, ...options.assertions].map((assertion) =>
      evaluateJsonAssertion(value, assertion, scope),
    );
    const conditions = evaluateConditions(options, { result: value, scope });
    const asserted = outcomes.length === 0 ? null : verdictOf(outcomes);
    const verdict = combineVerdicts(asserted, conditions.verdict);
    const messages = outcomes.filter((o) => o.ok !== true).map((o) => o.message);
    if (conditions.verdict !== null && conditions.verdict !== 'pass') messages.push(conditions.message);
    const reason =
      verdict !== 'inconclusive'
        ? undefined
        : asserted === 'inconclusive'
          ? 'TEMPLATE_VALUE_MISSING'
          : conditions.reason;
    const checked = result(verdict, {
      observed: observedReply(value),
      evidence: {
        ...evidence,
        ...(outcomes.length > 0 ? { assertions: outcomes.map((o) => ({ ...o })) } : {}),
        ...(conditions.verdict !== null ? { conditions: conditions.evidence } : {}),
      },
      message: messages.length > 0 ? messages.join('; ') : 'the reply is as expected',
      ...(reason !== undefined ? { reason } : {}),
    });
    return withEvidenceRef(checked, options.evidenceRef, { scope, result: value });
  },
});

const MAX_OBSERVED_CHARS = 2048;

/** The reply for the record, or only its size when it is large (evidence is kept forever). */
function observedReply(value: unknown): Record<string, JsonValue> {
  const text = JSON.stringify(value) ?? 'null';
  return text.length <= MAX_OBSERVED_CHARS ? { reply: value as JsonValue } : { replyChars: text.length };
}
