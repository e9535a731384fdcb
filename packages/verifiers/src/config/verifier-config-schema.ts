import { z } from 'zod';
import { isAllowListEntry } from '../net/address-policy';

const connectionName = z.string().regex(/^[a-z][a-z0-9-]*$/, 'must be kebab-case');

/**
 * A connection reached by URL: `url` in the file, or (preferred, so credentials stay out of
 * it) `urlEnv`, the environment variable that holds it; exactly one of the two.
 */
const urlFields = {
  url: z.string().min(1).optional(),
  urlEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]*$/)
    .optional(),
};
const hasOneUrl = (c: { url?: string; urlEnv?: string }) =>
  (c.url === undefined) !== (c.urlEnv === undefined);
const ONE_URL = { message: 'give exactly one of url and urlEnv', path: ['url'] };

/** A postgres:// URL. */
const postgresConnection = z
  .object({
    type: z.literal('postgres'),
    ...urlFields,
    max: z.number().int().min(1).max(20).optional(),
    connectTimeoutSeconds: z.number().int().min(1).max(60).optional(),
  })
  .strict()
  .refine(hasOneUrl, ONE_URL);

/** A mysql:// URL (MySQL or MariaDB). */
const mysqlConnection = z
  .object({
    type: z.literal('mysql'),
    ...urlFields,
    max: z.number().int().min(1).max(20).optional(),
    connectTimeoutSeconds: z.number().int().min(1).max(60).optional(),
  })
  .strict()
  .refine(hasOneUrl, ONE_URL);

/** A redis:// or rediss:// URL. */
const redisConnection = z
  .object({
    type: z.literal('redis'),
    ...urlFields,
    /** Every key a verifier reads is put under this prefix (e.g. `refunds:`). */
    keyPrefix: z.string().min(1).optional(),
    connectTimeoutMs: z.number().int().min(1).max(60_000).optional(),
  })
  .strict()
  .refine(hasOneUrl, ONE_URL);

const httpConnection = z
  .object({
    type: z.literal('http'),
    /** Hostnames, addresses or CIDR ranges that may be reached although private (default: none). */
    allowHosts: z
      .array(z.string().refine(isAllowListEntry, 'must be a hostname, an IP address or a CIDR range'))
      .default([]),
    maxRedirects: z.number().int().min(0).max(10).optional(),
  })
  .strict();

const duration = z.union([z.number(), z.string()]);
/** A measurement policy (`@vouch/verifier-sdk` `MeasurementPolicy`, Argo Rollouts' analysis fields). */
const measurementPolicy = z
  .object({
    initialDelay: duration.optional(),
    interval: duration.optional(),
    count: z.number().int().optional(),
    timeout: duration.optional(),
    failureLimit: z.number().int().optional(),
    inconclusiveLimit: z.number().int().optional(),
    consecutiveSuccessLimit: z.number().int().optional(),
  })
  .strict();

const entry = z
  .object({
    /** A built-in id (`http-json`, `sql`, `file`, `redis`, `prometheus`), a path (`./verifiers/x.ts`, relative to this file) or a package name. */
    use: z.union([
      z.string().min(1),
      z.custom<object>((v) => typeof v === 'object' && v !== null, 'must be a verifier'),
    ]),
    /** The module export that holds the verifier (default `default`). */
    export: z.string().min(1).optional(),
    name: z.string().min(1).optional(),
    handles: z.array(z.string().min(1)).min(1).optional(),
    /** Named connections this verifier may use: at most one database (postgres or mysql), one redis and one http. */
    connection: z.union([connectionName, z.array(connectionName).min(1)]).optional(),
    timeoutMs: z.number().int().optional(),
    /** A plugin named by path or package runs in a process of its own; its resident-memory limit in MB, Buffers included (default 128). */
    memoryMb: z.number().int().min(64).max(4096).optional(),
    /** Run the plugin's process as this user and group (for a server that runs as root). */
    user: z
      .object({ uid: z.number().int().min(0), gid: z.number().int().min(0) })
      .strict()
      .optional(),
    /** Read each postcondition more than once; the verifier SDK checks ranges at registration. */
    measurement: measurementPolicy.optional(),
    /** The named system its checks read (default: its one connection's name); judged for independence. */
    source: z.string().min(1).optional(),
    options: z.unknown().optional(),
  })
  .strict();

/** The shape of `vouch.config.json` (or the default export of `vouch.config.ts`). */
export const verifierConfigSchema = z
  .object({
    $schema: z.string().optional(),
    connections: z
      .record(
        connectionName,
        z.discriminatedUnion('type', [postgresConnection, mysqlConnection, redisConnection, httpConnection]),
      )
      .default({}),
    verifiers: z.array(entry).default([]),
  })
  .passthrough();

/** A verifier configuration as written. */
export type VerifierConfigInput = z.input<typeof verifierConfigSchema>;
/** One entry of `verifiers`. */
export type VerifierConfigEntry = z.infer<typeof entry>;
