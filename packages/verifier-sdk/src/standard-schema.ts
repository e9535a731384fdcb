/**
 * The Standard Schema v1 interface (https://standardschema.dev), copied as its authors ask so
 * that verifier options can be described with zod, valibot, arktype or any other library that
 * implements it, without the SDK depending on one.
 */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

export declare namespace StandardSchemaV1 {
  interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
    /** Standard JSON Schema (optional): lets the options be published as JSON Schema. */
    readonly jsonSchema?: {
      readonly input: (options: { readonly target: string }) => Record<string, unknown>;
    };
  }
  type Result<Output> = SuccessResult<Output> | FailureResult;
  interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }
  interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }
  interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> | undefined;
  }
  interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }
  type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['input'];
  type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['output'];
}

/** One option that did not validate: a JSON Pointer into the options and what is wrong. */
export interface OptionIssue {
  field: string;
  message: string;
}

/** The outcome of validating options: the value with defaults applied, or the issues. */
export type OptionsValidation<T> = { ok: true; value: T } | { ok: false; issues: OptionIssue[] };

/**
 * Validate `value` synchronously. Registration happens at startup and must fail there, before
 * any proposal arrives, so an asynchronous schema (async refinements) is refused outright.
 */
export function validateWithSchema<T>(
  schema: StandardSchemaV1<unknown, T>,
  value: unknown,
): OptionsValidation<T> {
  const result = schema['~standard'].validate(value);
  if (result instanceof Promise) {
    // Swallow the pending promise's outcome: nothing will read it.
    result.catch(() => undefined);
    return {
      ok: false,
      issues: [{ field: '', message: 'options schema is asynchronous; use a synchronous schema' }],
    };
  }
  if (result.issues !== undefined) {
    return {
      ok: false,
      issues: result.issues.map((issue) => ({ field: pointerOf(issue.path), message: issue.message })),
    };
  }
  return { ok: true, value: result.value };
}

function pointerOf(path: StandardSchemaV1.Issue['path']): string {
  if (!path || path.length === 0) return '';
  return path
    .map((segment) => {
      const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
      return `/${String(key).replaceAll('~', '~0').replaceAll('/', '~1')}`;
    })
    .join('');
}

/** True when `value` implements Standard Schema v1. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  const props = (value as { '~standard'?: { version?: unknown; validate?: unknown } } | null)?.['~standard'];
  return (
    (typeof value === 'object' || typeof value === 'function') &&
    value !== null &&
    typeof props === 'object' &&
    props !== null &&
    props.version === 1 &&
    typeof props.validate === 'function'
  );
}
