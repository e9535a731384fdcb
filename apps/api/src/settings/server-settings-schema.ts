import { identityInput } from '@vouch/records';
import { z } from 'zod';

const seconds = (max: number) => z.int().min(1).max(max);

const name = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[^\s]+$/, 'no spaces');

/**
 * The policy engine: the built-in one, or an external one. With `decisionUrl` the server asks
 * the engine about each proposal; without it the engine posts its decisions itself.
 */
const policySchema = z.discriminatedUnion('engine', [
  z.strictObject({ engine: z.literal('built_in') }),
  z.strictObject({
    engine: z.literal('external'),
    /**
     * The engine's decision route, which it is sent proposals on. Checked against the SSRF
     * guard: an internal address is refused unless `allowHosts` names it.
     */
    decisionUrl: z.url({ protocol: /^https?$/ }).optional(),
    allowHosts: z.array(z.string().min(1)).optional(),
    /** Who the decisions the server records from the engine are by (`decided_by`, the event's actor). */
    identity: identityInput.optional(),
    /** The engine's name in each decision it answers (`source`); never `built_in`. */
    source: name.refine((s) => s !== 'built_in', 'built_in is the ledger policy').optional(),
    /** How long one question to the engine may take. */
    timeoutMs: z.int().min(100).max(60_000).optional(),
    /** How often undecided proposals (the engine was down, or answered nonsense) are asked again. */
    retrySeconds: seconds(3_600).optional(),
    /** The variable holding the engine's token (a secret; default `VOUCH_POLICY_TOKEN`). */
    tokenEnv: z
      .string()
      .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name')
      .optional(),
    /** The header the token is sent in: `authorization` (default) as `Bearer <token>`, any other as is. */
    tokenHeader: z
      .string()
      .regex(/^[A-Za-z0-9-]+$/, 'a header name')
      .optional(),
  }),
]);

/**
 * The `server` section of `vouch.config.json` (the file that also holds the verifiers). Every
 * member is optional; what is missing comes from the environment, then the defaults.
 */
export const serverSettingsSchema = z.strictObject({
  policy: policySchema.optional(),
  approvals: z
    .strictObject({
      /** How long an approval request may wait for an answer. */
      requestTtlSeconds: seconds(30 * 86_400).optional(),
      /** The longest approval window any rule may grant. */
      maxWindowSeconds: seconds(30 * 86_400).optional(),
    })
    .optional(),
  limits: z
    .strictObject({
      bodyBytes: z
        .int()
        .min(1024)
        .max(64 * 1024 * 1024)
        .optional(),
      jsonDepth: z.int().min(2).max(256).optional(),
      pageSize: z.int().min(1).max(10_000).optional(),
    })
    .optional(),
  rateLimit: z
    .strictObject({
      /** Requests per second each key may make on average; 0 turns limiting off. */
      requestsPerSecond: z.number().min(0).max(100_000).optional(),
      /** Requests a key may make at once after being idle. */
      burst: z.int().min(1).max(1_000_000).optional(),
    })
    .optional(),
  keys: z
    .strictObject({
      /** Keys older than this are refused (`KEY_EXPIRED`); 0: keys do not expire. */
      maxAgeDays: z.int().min(0).max(3650).optional(),
      /** Issue keys that hold roles which must stay apart (gateway + approver, admin + approver). */
      allowRoleCombinations: z.boolean().optional(),
    })
    .optional(),
  checkpoints: z
    .strictObject({
      /**
       * Where the last checkpoint signed per log is kept outside the database, to notice a
       * restored older backup (docs/operations.md#restoring-a-backup). Relative paths are
       * resolved against the working directory. Default: `<data dir>.checkpoints` beside a
       * PGlite data directory; none on Postgres. Keep it out of database backups.
       */
      stateDir: z
        .string()
        .min(1)
        .max(4096)
        .refine((dir) => !dir.includes('\0'), 'no NUL character')
        .optional(),
    })
    .optional(),
});

/** The `server` section as written. */
export type ServerSettingsInput = z.input<typeof serverSettingsSchema>;
