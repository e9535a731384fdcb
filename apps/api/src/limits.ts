/** Request limits enforced before any handler runs. */
export interface Limits {
  /** Largest request body in bytes (default 1 MiB); larger bodies get 413 `BODY_TOO_LARGE`. */
  bodyBytes: number;
  /** Deepest nesting of arrays and objects in a JSON body (default 32); deeper gets 400 `NESTING_TOO_DEEP`. */
  jsonDepth: number;
  /** Largest page of audit events one request may ask for (default 1000). */
  pageSize: number;
}

/** The defaults, applied once with `??` by {@link resolveLimits}. */
export const DEFAULT_LIMITS: Limits = { bodyBytes: 1024 * 1024, jsonDepth: 32, pageSize: 1000 };

/** Fill in the defaults for any limit not given. */
export function resolveLimits(limits: Partial<Limits> | undefined): Limits {
  return {
    bodyBytes: limits?.bodyBytes ?? DEFAULT_LIMITS.bodyBytes,
    jsonDepth: limits?.jsonDepth ?? DEFAULT_LIMITS.jsonDepth,
    pageSize: limits?.pageSize ?? DEFAULT_LIMITS.pageSize,
  };
}
