import { z } from 'zod';
import { conditionOptions } from '../shared/conditions';
import { bindingOptions, jsonBindingSchema, requireBoundLookups } from '../shared/evidence-binding';
import { assertionsWithoutOneExpected, jsonAssertionSchema } from '../shared/json-assertions';
import { placeholdersOf, SCOPE_PATH } from '../shared/template';

const status = z.number().int().min(100).max(599);

/** Options of the `http-json` verifier. */
export const httpJsonOptionsSchema = z
  .object({
    /**
     * The URL, with `{path}` placeholders filled from the proposal (`{target.id}`,
     * `{arguments.refund_id}`, `{params.x}`), each value URL-encoded. Placeholders are allowed in
     * the path and query only: the agent must not choose which host is asked.
     */
    url: z.string().min(1),
    method: z.enum(['GET', 'HEAD']).default('GET'),
    /** Request headers (e.g. an API key). Never recorded in evidence. */
    headers: z.record(z.string(), z.string()).default({}),
    /** Name recorded as the check's source; defaults to the URL's origin. Name it as the system it is, so independence can be judged. */
    source: z.string().min(1).optional(),
    /** Statuses that mean "the source answered" (default [200]). */
    expectStatus: z.array(status).min(1).default([200]),
    /** Statuses that mean "the source says it does not exist" and make the check fail (default [404, 410]). */
    absentStatus: z.array(status).default([404, 410]),
    /** Assertions on the JSON body by JSON Pointer; a HEAD request takes none. */
    assertions: z.array(jsonAssertionSchema).default([]),
    /** Largest body read, in bytes (default 1 MiB). */
    maxBytes: z
      .number()
      .int()
      .min(1)
      .max(16 * 1024 * 1024)
      .default(1024 * 1024),
    /** Redirects followed, each re-checked by the fetch guard (default 3). */
    maxRedirects: z.number().int().min(0).max(10).default(3),
    /** Media types accepted; `+json` accepts any structured-syntax JSON type (default application/json and +json). */
    contentTypes: z.array(z.string().min(1)).min(1).default(['application/json', '+json']),
    /** CEL over `result` (the JSON body; null for HEAD), `status` and the proposal; see docs/verification.md. */
    ...conditionOptions(['status']),
    /**
     * `bind`: fields of the body that must equal values of the approved proposal (required, with
     * `evidenceRef`, when the URL reads `observation`); `evidenceRef`: what the check found, e.g.
     * `refund:{result.id}`.
     */
    ...bindingOptions(jsonBindingSchema),
  })
  .strict()
  .superRefine((options, ctx) => {
    checkUrlTemplate(options.url, ctx);
    requireBoundLookups(options, [{ path: ['url'], reads: placeholdersOf(options.url) }], ctx);
    if (options.method === 'HEAD' && options.bind !== undefined) {
      ctx.addIssue({ code: 'custom', message: 'a HEAD request has no body to bind', path: ['bind'] });
    }
    if (options.method === 'HEAD' && options.assertions.length > 0) {
      ctx.addIssue({
        code: 'custom',
        message: 'a HEAD request has no body to assert on',
        path: ['assertions'],
      });
    }
    const overlap = options.expectStatus.find((s) => options.absentStatus.includes(s));
    if (overlap !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `status ${overlap} cannot both pass and mean absent`,
        path: ['absentStatus'],
      });
    }
    for (const index of assertionsWithoutOneExpected(options.assertions)) {
      ctx.addIssue({
        code: 'custom',
        message: 'give exactly one of value and from',
        path: ['assertions', index, 'value'],
      });
    }
  });

/** Validated `http-json` options. */
export type HttpJsonOptions = z.infer<typeof httpJsonOptionsSchema>;

function checkUrlTemplate(url: string, ctx: z.RefinementCtx): void {
  for (const path of placeholdersOf(url)) {
    if (!SCOPE_PATH.test(path)) {
      ctx.addIssue({
        code: 'custom',
        message: `placeholder {${path}} is not a path like target.id`,
        path: ['url'],
      });
      return;
    }
  }
  // The scheme and authority must be fixed by configuration. Everything up to the first '/'
  // after '//' is the authority; a placeholder there would let the agent pick the host.
  const authorityEnd = url.indexOf('/', url.indexOf('//') + 2);
  const head = authorityEnd === -1 ? url : url.slice(0, authorityEnd);
  if (head.includes('{')) {
    ctx.addIssue({
      code: 'custom',
      message: 'placeholders are allowed in the path and query only',
      path: ['url'],
    });
    return;
  }
  let parsed: URL;
  try {
    parsed = new URL(url.replaceAll(/\{[^{}]*\}/g, 'x'));
  } catch {
    ctx.addIssue({ code: 'custom', message: 'must be an absolute URL', path: ['url'] });
    return;
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    ctx.addIssue({ code: 'custom', message: 'must be an http or https URL', path: ['url'] });
  }
}
