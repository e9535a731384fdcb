import { z } from 'zod';
import { conditionOptions } from '../shared/conditions';
import { requirePayloadLookups } from '../shared/evidence-binding';
import { placeholdersOf, SCOPE_PATH } from '../shared/template';

/** Options of the `prometheus` verifier. */
export const prometheusOptionsSchema = z
  .object({
    /** The Prometheus base URL (`https://prometheus.internal`); fixed by configuration, no placeholders. */
    url: z.url({ protocol: /^https?$/ }).refine((url) => !url.includes('{'), 'no placeholders in the URL'),
    /**
     * An instant PromQL query. `{path}` placeholders are filled from the proposal and must sit
     * inside a double-quoted label value (`job="{target.id}"`), where they are escaped as PromQL
     * strings, so a value from the agent cannot change the query's shape.
     */
    query: z.string().min(1).max(4096),
    /** Request headers (e.g. a bearer token). Never recorded in evidence. */
    headers: z.record(z.string(), z.string()).default({}),
    /** Name recorded as the check's source; defaults to the URL's origin. */
    source: z.string().min(1).optional(),
    /** Largest answer read, in bytes (default 1 MiB). */
    maxBytes: z
      .number()
      .int()
      .min(1)
      .max(16 * 1024 * 1024)
      .default(1024 * 1024),
    /**
     * CEL over `result` (the samples: `[{metric: {...}, value: 0.42}]`), `value` (the first
     * sample's value, or null when there is none) and the proposal, e.g. `value < 0.01`.
     */
    ...conditionOptions(['value']),
  })
  .strict()
  .superRefine((options, ctx) => {
    if (options.successCondition === undefined && options.failureCondition === undefined) {
      ctx.addIssue({
        code: 'custom',
        message: 'give successCondition or failureCondition',
        path: ['successCondition'],
      });
    }
    for (const path of placeholdersOf(options.query)) {
      if (!SCOPE_PATH.test(path)) {
        ctx.addIssue({
          code: 'custom',
          message: `placeholder {${path}} is not a path like target.id`,
          path: ['query'],
        });
        return;
      }
    }
    requirePayloadLookups([{ path: ['query'], reads: placeholdersOf(options.query) }], ctx);
    if (!placeholdersInsideStrings(options.query)) {
      ctx.addIssue({
        code: 'custom',
        message: 'placeholders must sit inside a double-quoted label value, e.g. job="{target.id}"',
        path: ['query'],
      });
    }
  });

/** Validated `prometheus` options. */
export type PrometheusOptions = z.infer<typeof prometheusOptionsSchema>;

/** True when every `{path}` placeholder is inside a "..." string of the query. */
function placeholdersInsideStrings(query: string): boolean {
  let inString = false;
  for (let i = 0; i < query.length; i += 1) {
    const c = query[i];
    if (inString && c === '\\') {
      i += 1;
      continue;
    }
    if (c === '"') inString = !inString;
    else if (
      c === '{' &&
      /^\{[A-Za-z0-9_.-]+\}/.test(query.slice(i)) &&
      SCOPE_PATH.test(query.slice(i + 1, query.indexOf('}', i)))
    ) {
      if (!inString) return false;
    }
  }
  return true;
}
