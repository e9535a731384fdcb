import { type CheckResult, defineVerifier, type JsonValue, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';
import { checkResultOf, unfilledTemplate } from '../shared/check-result';
import { evaluateConditions } from '../shared/conditions';
import { readCapped } from '../shared/read-capped';
import { fillTemplate, templateScope } from '../shared/template';
import { prometheusOptionsSchema } from './prometheus-options';

/** One sample of an instant query: its labels and its value as a number (NaN and ±Inf as strings). */
interface Sample {
  metric: Record<string, string>;
  value: number | string;
}

/**
 * `prometheus`: run an instant PromQL query over the Prometheus HTTP API (`/api/v1/query`)
 * through the host's `fetch` grant (the SSRF guard) and judge the samples with CEL conditions,
 * as Argo Rollouts' Prometheus analysis does. No sample is not a verdict: `value` is then null
 * and a condition on it is inconclusive (`CONDITION_ERROR`).
 *
 * @example
 * { url: 'https://prometheus.internal', source: 'prometheus',
 *   query: 'sum(rate(http_requests_total{job="{target.id}",code=~"5.."}[5m])) / sum(rate(http_requests_total{job="{target.id}"}[5m]))',
 *   successCondition: 'value < 0.01' }
 */
export const prometheusVerifier = defineVerifier({
  id: 'prometheus',
  version: '0.1.0',
  apiVersion: VERIFIER_API_VERSION,
  description: 'Runs an instant PromQL query over the Prometheus HTTP API and judges it with CEL conditions.',
  handles: ['prometheus', 'prometheus.*'],
  phase: ['post', 'pre'],
  options: prometheusOptionsSchema,
  timeoutMs: 10_000,
  requires: ['fetch'],
  async check(ctx): Promise<CheckResult> {
    const { options, postcondition, signal } = ctx;
    const fetch = ctx.fetch!;
    const endpoint = new URL('api/v1/query', options.url.endsWith('/') ? options.url : `${options.url}/`);
    const source = options.source ?? endpoint.origin;
    const scope = templateScope(ctx);
    const result = checkResultOf(postcondition.name, source);

    const filled = fillTemplate(options.query, scope, escapePromqlString);
    if (!filled.ok) {
      return unfilledTemplate(result, filled.problem, 'the query');
    }
    endpoint.searchParams.set('query', filled.value);
    const evidence = { url: `${endpoint.origin}${endpoint.pathname}`, query: filled.value };
    const response = await fetch(endpoint, {
      headers: { accept: 'application/json', ...options.headers },
      redirect: 'manual',
      signal,
    });
    const body = await readCapped(response, options.maxBytes);
    if (body === null) {
      return result('inconclusive', {
        reason: 'RESPONSE_TOO_LARGE',
        evidence: { ...evidence, maxBytes: options.maxBytes },
        message: `the answer is larger than ${options.maxBytes} bytes`,
      });
    }
    let answer: { status?: unknown; data?: { resultType?: unknown; result?: unknown }; error?: unknown };
    try {
      answer = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
    } catch {
      return result('inconclusive', {
        reason: 'INVALID_JSON',
        evidence: { ...evidence, status: response.status },
        message: 'the answer is not valid JSON',
      });
    }
    if (response.status !== 200 || answer.status !== 'success') {
      return result('inconclusive', {
        reason: 'PROMETHEUS_ERROR',
        evidence: {
          ...evidence,
          status: response.status,
          error: typeof answer.error === 'string' ? answer.error.slice(0, 500) : null,
        },
        message: `Prometheus did not answer the query (${response.status})`,
      });
    }
    const samples = toSamples(answer.data?.resultType, answer.data?.result);
    if (samples === null) {
      return result('inconclusive', {
        reason: 'PROMETHEUS_ERROR',
        evidence: { ...evidence, resultType: String(answer.data?.resultType) },
        message: 'the answer is not an instant vector or scalar',
      });
    }
    const value = samples[0]?.value ?? null;
    const conditions = evaluateConditions(options, { result: samples, scope, extras: { value } });
    return result(conditions.verdict ?? 'inconclusive', {
      observed: { samples: samples.length, value: value as JsonValue },
      evidence: {
        ...evidence,
        samples: samples.slice(0, 20) as unknown as JsonValue,
        conditions: conditions.evidence,
      },
      message: conditions.message,
      ...(conditions.reason ? { reason: conditions.reason } : {}),
    });
  },
});

/** Escape a value for a PromQL double-quoted string (the Go string-literal escapes it accepts). */
function escapePromqlString(value: string): string {
  return value
    .replaceAll('\\', '\\\\')
    .replaceAll('"', '\\"')
    .replaceAll('\n', '\\n')
    .replaceAll('\r', '\\r');
}

function toNumber(raw: unknown): number | string {
  const n = Number(raw);
  return Number.isFinite(n) ? n : String(raw);
}

function toSamples(resultType: unknown, result: unknown): Sample[] | null {
  if (resultType === 'scalar' && Array.isArray(result)) return [{ metric: {}, value: toNumber(result[1]) }];
  if (resultType !== 'vector' || !Array.isArray(result)) return null;
  return result.map((entry: { metric?: Record<string, string>; value?: unknown[] }) => ({
    metric: { ...(entry.metric ?? {}) },
    value: toNumber(entry.value?.[1]),
  }));
}
