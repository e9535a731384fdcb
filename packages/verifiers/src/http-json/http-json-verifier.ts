import { type CheckResult, defineVerifier, type JsonObject, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';
import { checkResultOf, type ResultOf, unfilledTemplate } from '../shared/check-result';
import { type ConditionOutcome, combineVerdicts, evaluateConditions } from '../shared/conditions';
import { withEvidenceRef } from '../shared/evidence-binding';
import { type AssertionOutcome, evaluateJsonAssertion, verdictOf } from '../shared/json-assertions';
import { readCapped } from '../shared/read-capped';
import { fillTemplate, templateScope } from '../shared/template';
import { type HttpJsonOptions, httpJsonOptionsSchema } from './http-json-options';

/**
 * `http-json`: GET (or HEAD) a URL built from the proposal and assert on the JSON body by JSON
 * Pointer. Network access comes only from the host's `fetch` grant, which should be the SSRF
 * guard (`createGuardedFetch`); redirects are followed here hop by hop with `redirect: 'manual'`
 * so each hop goes through that guard again and is recorded in the evidence.
 *
 * @example
 * { url: 'https://ledger.internal/refunds/{observation.result.refund_id}', source: 'ledger-api',
 *   bind: [{ pointer: '/payment_id', from: 'target.id' }], evidenceRef: 'refund:{result.id}',
 *   assertions: [{ op: 'equals', pointer: '/status', value: 'succeeded' }, { op: 'equals', pointer: '/amount', from: 'arguments.amount' }] }
 */
export const httpJsonVerifier = defineVerifier({
  id: 'http-json',
  version: '0.1.0',
  apiVersion: VERIFIER_API_VERSION,
  description: 'Reads a JSON document over HTTP and asserts on it by JSON Pointer.',
  handles: ['http-json', 'http-json.*'],
  phase: ['post', 'pre'],
  options: httpJsonOptionsSchema,
  timeoutMs: 10_000,
  requires: ['fetch'],
  async check(ctx): Promise<CheckResult> {
    const { options, postcondition, signal } = ctx;
    const fetch = ctx.fetch!;
    const scope = templateScope(ctx);
    const filled = fillTemplate(options.url, scope, encodeURIComponent);
    const configuredOrigin = new URL(options.url.replaceAll(/\{[^{}]*\}/g, 'x')).origin;
    const source = options.source ?? configuredOrigin;
    const result = checkResultOf(postcondition.name, source);
    if (!filled.ok) {
      return unfilledTemplate(result, filled.problem, 'the URL');
    }

    const hops: string[] = [];
    let url = new URL(filled.value);
    let response: Response;
    for (;;) {
      hops.push(url.href);
      response = await fetch(url, {
        method: options.method,
        headers: { accept: 'application/json', ...options.headers },
        redirect: 'manual',
        signal,
      });
      const location = response.headers.get('location');
      if (response.status < 300 || response.status > 399 || location === null) break;
      await response.body?.cancel();
      if (hops.length > options.maxRedirects) {
        return result('inconclusive', {
          reason: 'TOO_MANY_REDIRECTS',
          evidence: { hops },
          message: `more than ${options.maxRedirects} redirects`,
        });
      }
      url = new URL(location, url);
    }

    const evidence: Record<string, JsonObject[string]> = { url: hops.at(-1)!, status: response.status };
    if (hops.length > 1) evidence.hops = hops;
    if (options.absentStatus.includes(response.status)) {
      await response.body?.cancel();
      return result('fail', {
        observed: { status: response.status },
        expected: { status: options.expectStatus },
        evidence,
        message: `the source answered ${response.status}: the resource does not exist`,
      });
    }
    if (!options.expectStatus.includes(response.status)) {
      await response.body?.cancel();
      return result('inconclusive', {
        reason: 'UNEXPECTED_STATUS',
        observed: { status: response.status },
        evidence,
        message: `the source answered ${response.status}`,
      });
    }
    if (options.method === 'HEAD') {
      const conditions = evaluateConditions(options, {
        result: null,
        scope,
        extras: { status: response.status },
      });
      const checked =
        conditions.verdict !== null
          ? result(conditions.verdict, {
              observed: { status: response.status },
              evidence: { ...evidence, conditions: conditions.evidence },
              message: conditions.message,
              ...(conditions.reason ? { reason: conditions.reason } : {}),
            })
          : result('pass', {
              observed: { status: response.status },
              evidence,
              message: 'the resource exists',
            });
      return withEvidenceRef(checked, options.evidenceRef, { scope, result: null });
    }

    const contentType = response.headers.get('content-type') ?? '';
    if (!acceptsContentType(contentType, options.contentTypes)) {
      await response.body?.cancel();
      return result('inconclusive', {
        reason: 'UNEXPECTED_CONTENT_TYPE',
        evidence: { ...evidence, contentType },
        message: `the source sent ${contentType || 'no content type'}, not JSON`,
      });
    }
    const body = await readCapped(response, options.maxBytes);
    if (body === null) {
      return result('inconclusive', {
        reason: 'RESPONSE_TOO_LARGE',
        evidence: { ...evidence, maxBytes: options.maxBytes },
        message: `the body is larger than ${options.maxBytes} bytes`,
      });
    }
    let document: unknown;
    try {
      document = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
    } catch {
      return result('inconclusive', {
        reason: 'INVALID_JSON',
        evidence,
        message: 'the body is not valid JSON',
      });
    }
    // A binding is an equals assertion the configuration cannot leave out: the document the
    // tool's result named must belong to this proposal.
    const bindings = (options.bind ?? []).map((b) => ({ op: 'equals' as const, ...b }));
    const outcomes = [...bindings, ...options.assertions].map((assertion) =>
      evaluateJsonAssertion(document, assertion, scope),
    );
    const conditions = evaluateConditions(options, {
      result: document,
      scope,
      extras: { status: response.status },
    });
    return withEvidenceRef(assertionResult(result, outcomes, evidence, conditions), options.evidenceRef, {
      scope,
      result: document,
    });
  },
});

function assertionResult(
  result: ResultOf,
  outcomes: AssertionOutcome[],
  evidence: Record<string, JsonObject[string]>,
  conditions: ConditionOutcome,
): CheckResult {
  const asserted = verdictOf(outcomes);
  const verdict = combineVerdicts(asserted, conditions.verdict);
  const failed = outcomes.filter((o) => o.ok !== true);
  const messages = failed.map((o) => o.message);
  if (conditions.verdict !== null && conditions.verdict !== 'pass') messages.push(conditions.message);
  const reason =
    verdict !== 'inconclusive'
      ? undefined
      : asserted === 'inconclusive'
        ? 'TEMPLATE_VALUE_MISSING'
        : conditions.reason;
  return result(verdict, {
    observed: Object.fromEntries(outcomes.map((o) => [o.pointer, o.observed])),
    expected: outcomes.map((o) => ({ op: o.op, pointer: o.pointer, value: o.expected })),
    evidence: {
      ...evidence,
      assertions: outcomes.map((o) => ({ ...o })),
      ...(conditions.verdict !== null ? { conditions: conditions.evidence } : {}),
    },
    message:
      messages.length > 0
        ? messages.join('; ')
        : conditions.verdict === null
          ? 'every assertion holds'
          : 'every assertion and condition holds',
    ...(reason !== undefined ? { reason } : {}),
  });
}

function acceptsContentType(header: string, accepted: readonly string[]): boolean {
  const mediaType = header.split(';')[0]!.trim().toLowerCase();
  if (mediaType === '') return false;
  return accepted.some((entry) => {
    const want = entry.toLowerCase();
    return want.startsWith('+') ? mediaType.endsWith(want) : mediaType === want;
  });
}

export type { HttpJsonOptions };
