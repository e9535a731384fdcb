import path from 'node:path';
import { z } from 'zod';
import { requirePayloadLookups } from '../shared/evidence-binding';
import { assertionsWithoutOneExpected, jsonAssertionSchema } from '../shared/json-assertions';
import { placeholdersOf, SCOPE_PATH } from '../shared/template';

const scopePath = z.string().regex(SCOPE_PATH, 'must be a path like arguments.path');
const validPattern = z.string().refine((source) => {
  try {
    new RegExp(source, 'u');
    return true;
  } catch {
    return false;
  }
}, 'must be a valid regular expression');

const fileAssertionSchema = z.discriminatedUnion('op', [
  /** A regular file is there. */
  z.object({ op: z.literal('exists') }).strict(),
  /** Nothing is there. */
  z.object({ op: z.literal('absent') }).strict(),
  /** The file's SHA-256 (lowercase hex) is `value`, or the value at `from`. */
  z
    .object({
      op: z.literal('sha256'),
      value: z
        .string()
        .regex(/^[0-9a-f]{64}$/)
        .optional(),
      from: scopePath.optional(),
    })
    .strict(),
  /** The file's text contains `text`, or the value at `from`. */
  z
    .object({ op: z.literal('contains'), text: z.string().min(1).optional(), from: scopePath.optional() })
    .strict(),
  /** The file's text matches a regular expression (from configuration, never from the proposal). */
  z
    .object({
      op: z.literal('matches'),
      pattern: validPattern,
      flags: z
        .string()
        .regex(/^[ims]*$/)
        .optional(),
    })
    .strict(),
  /** The file is JSON and an assertion by JSON Pointer holds on it. */
  z.object({ op: z.literal('json'), assert: jsonAssertionSchema }).strict(),
]);

/** An assertion on a file. */
export type FileAssertion = z.infer<typeof fileAssertionSchema>;

/** Options of the `file` verifier. */
export const fileOptionsSchema = z
  .object({
    /** Absolute directories the verifier may read under. A path outside all of them is refused. */
    roots: z
      .array(
        z
          .string()
          .min(1)
          .refine((root) => path.isAbsolute(root), 'must be an absolute path'),
      )
      .min(1),
    /** The file, relative to the first root (or absolute), with `{path}` placeholders (default `{target.id}`). */
    path: z.string().min(1).default('{target.id}'),
    assertions: z
      .array(fileAssertionSchema)
      .min(1)
      .default([{ op: 'exists' }]),
    /** Largest file read for contains / matches / json, in bytes (default 10 MiB). sha256 streams any size. */
    maxBytes: z
      .number()
      .int()
      .min(1)
      .max(256 * 1024 * 1024)
      .default(10 * 1024 * 1024),
    /** Name recorded as the check's source (default `filesystem`). */
    source: z.string().min(1).default('filesystem'),
  })
  .strict()
  .superRefine((options, ctx) => {
    for (const placeholder of placeholdersOf(options.path)) {
      if (!SCOPE_PATH.test(placeholder)) {
        ctx.addIssue({
          code: 'custom',
          message: `placeholder {${placeholder}} is not a path like arguments.path`,
          path: ['path'],
        });
      }
    }
    requirePayloadLookups([{ path: ['path'], reads: placeholdersOf(options.path) }], ctx);
    options.assertions.forEach((assertion, index) => {
      const pair =
        assertion.op === 'sha256'
          ? [assertion.value, assertion.from]
          : assertion.op === 'contains'
            ? [assertion.text, assertion.from]
            : null;
      if (pair && pair.filter((v) => v !== undefined).length !== 1) {
        const key = assertion.op === 'sha256' ? 'value' : 'text';
        ctx.addIssue({
          code: 'custom',
          message: `give exactly one of ${key} and from`,
          path: ['assertions', index, key],
        });
      }
    });
    options.assertions.forEach((assertion, index) => {
      if (assertion.op === 'json' && assertionsWithoutOneExpected([assertion.assert]).length > 0) {
        ctx.addIssue({
          code: 'custom',
          message: 'give exactly one of value and from',
          path: ['assertions', index, 'assert', 'value'],
        });
      }
    });
  });

/** Validated `file` options. */
export type FileOptions = z.infer<typeof fileOptionsSchema>;
