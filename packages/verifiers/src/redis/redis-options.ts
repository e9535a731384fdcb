import type { RedisReadCommand } from '@vouch/verifier-sdk';
import { z } from 'zod';
import { conditionOptions } from '../shared/conditions';
import { bindingOptions, jsonBindingSchema, requireBoundLookups } from '../shared/evidence-binding';
import { assertionsWithoutOneExpected, jsonAssertionSchema } from '../shared/json-assertions';
import { placeholdersOf, SCOPE_PATH } from '../shared/template';
import { REDIS_READ_COMMANDS } from './redis-grant';

const template = z
  .string()
  .min(1)
  .refine(
    (text) => placeholdersOf(text).every((path) => SCOPE_PATH.test(path)),
    'placeholders must be paths like arguments.refund_id',
  );

/** Options of the `redis` verifier. */
export const redisOptionsSchema = z
  .object({
    /** A read-only command (GET, HGETALL, SISMEMBER, ZSCORE, ...). */
    command: z.enum(REDIS_READ_COMMANDS as [RedisReadCommand, ...RedisReadCommand[]]),
    /** The key, with `{path}` placeholders from the proposal; the connection's `keyPrefix` is put in front. */
    key: template,
    /** Further arguments (a hash field, a set member, a range), templates too. */
    args: z.array(template).max(16).default([]),
    /** Parse a string reply as JSON before asserting (e.g. a cached document). */
    json: z.boolean().default(false),
    /** Assertions on the reply by JSON Pointer ('' is the whole reply). */
    assertions: z.array(jsonAssertionSchema).default([]),
    /** Name recorded as the check's source; defaults to the connection's name. */
    source: z.string().min(1).optional(),
    /** CEL over `result` (the reply) and the proposal. */
    ...conditionOptions(),
    /**
     * `bind`: fields of the reply that must equal values of the approved proposal (required,
     * with `evidenceRef`, when the key or an argument reads `observation`); `evidenceRef`: what
     * the check found, e.g. `refund:{result.id}`.
     */
    ...bindingOptions(jsonBindingSchema),
  })
  .strict()
  .superRefine((options, ctx) => {
    requireBoundLookups(
      options,
      [
        { path: ['key'], reads: placeholdersOf(options.key) },
        ...options.args.map((arg, index) => ({ path: ['args', index], reads: placeholdersOf(arg) })),
      ],
      ctx,
    );
    for (const index of assertionsWithoutOneExpected(options.assertions)) {
      ctx.addIssue({
        code: 'custom',
        message: 'give exactly one of value and from',
        path: ['assertions', index, 'value'],
      });
    }
    if (
      options.assertions.length === 0 &&
      options.successCondition === undefined &&
      options.failureCondition === undefined
    ) {
      ctx.addIssue({
        code: 'custom',
        message: 'give assertions, successCondition or failureCondition',
        path: ['assertions'],
      });
    }
  });

/** Validated `redis` options. */
export type RedisOptions = z.infer<typeof redisOptionsSchema>;
