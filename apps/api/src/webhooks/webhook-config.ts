import { readFileSync } from 'node:fs';
import { isAllowListEntry } from '@vouch/verifiers';
import { z } from 'zod';
import { ConfigError } from '../config-error';
import { WEBHOOK_EVENTS, WEBHOOK_FORMATS, type WebhookEvent, type WebhookFormat } from './webhook-events';

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name');

const targetSchema = z
  .object({
    name: z.string().regex(/^[a-z][a-z0-9-]{0,62}$/, 'must be kebab-case'),
    /** The URL, when it holds no secret. A Slack incoming-webhook URL is a secret: use `urlEnv`. */
    url: z.url({ protocol: /^https?$/ }).optional(),
    /** The environment variable that holds the URL. */
    urlEnv: envName.optional(),
    /** The environment variable that holds the HMAC secret (required for the `vouch` format). */
    secretEnv: envName.optional(),
    format: z.enum(WEBHOOK_FORMATS).default('vouch'),
    events: z.array(z.enum(WEBHOOK_EVENTS)).min(1),
    /** Hostnames, addresses or CIDR ranges this target may reach although private (default none). */
    allowHosts: z
      .array(z.string().refine(isAllowListEntry, 'must be a hostname, an IP address or a CIDR range'))
      .default([]),
  })
  .strict()
  .refine((t) => (t.url === undefined) !== (t.urlEnv === undefined), {
    message: 'give exactly one of url and urlEnv',
    path: ['url'],
  })
  .refine((t) => t.format !== 'vouch' || t.secretEnv !== undefined, {
    message: 'a vouch-format target needs secretEnv: receivers must be able to check the signature',
    path: ['secretEnv'],
  });

/** The `webhooks` section of `vouch.config.json`. */
export const webhookSectionSchema = z
  .object({
    targets: z
      .array(targetSchema)
      .min(1)
      .refine(
        (targets) => new Set(targets.map((t) => t.name)).size === targets.length,
        'target names must differ',
      ),
    /** The base of the links in notifications (default: the address the server listens on). */
    publicUrl: z.url({ protocol: /^https?$/ }).optional(),
    /** How long before an approval request expires `approval.expiring` is sent. */
    expiringLeadSeconds: z
      .number()
      .int()
      .min(1)
      .max(30 * 86_400)
      .default(900),
    /** Attempts per delivery, the first included, before it is marked failed. */
    maxAttempts: z.number().int().min(1).max(30).default(8),
    /** The first retry's delay; each later one doubles, up to `retryMaxMs`, with jitter. */
    retryBaseMs: z.number().int().min(1).max(3_600_000).default(5_000),
    retryMaxMs: z.number().int().min(1).max(86_400_000).default(3_600_000),
    /** How long one attempt may take. */
    timeoutMs: z.number().int().min(100).max(120_000).default(10_000),
    /** How often the dispatcher looks for new ledger events and due deliveries. */
    pollIntervalMs: z.number().int().min(10).max(60_000).default(1_000),
  })
  .strict();

/** One configured target, its URL and secret read from the environment. */
export interface WebhookTarget {
  name: string;
  url: URL;
  /** The HMAC secret; never logged, stored or shown. */
  secret: string | undefined;
  format: WebhookFormat;
  events: ReadonlySet<WebhookEvent>;
  allowHosts: readonly string[];
}

/** The `webhooks` section of the configuration, resolved. */
export interface WebhookConfig {
  targets: readonly WebhookTarget[];
  publicUrl: string | undefined;
  expiringLeadSeconds: number;
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  timeoutMs: number;
  pollIntervalMs: number;
}

/**
 * Read the `webhooks` section of the JSON configuration file (`vouch.config.json` or
 * `VOUCH_CONFIG`), with each target's URL (`urlEnv`) and secret (`secretEnv`) from `env`.
 * Undefined when there is no file or no section. A mistake is a `ConfigError` naming the
 * field or the variable, never a secret's value.
 */
export function webhookConfig(env: NodeJS.ProcessEnv, file: string | undefined): WebhookConfig | undefined {
  if (file === undefined || !file.endsWith('.json')) return undefined;
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError(`${file}: not readable JSON (${(error as Error).message})`);
  }
  const section = (raw as { webhooks?: unknown } | null)?.webhooks;
  if (section === undefined) return undefined;
  const parsed = webhookSectionSchema.safeParse(section);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`${file}: webhooks.${issue.path.join('.')}: ${issue.message}`);
  }
  const config = parsed.data;
  return {
    ...config,
    publicUrl: config.publicUrl?.replace(/\/+$/, ''),
    targets: config.targets.map((target) => {
      const fromEnv = (name: string, what: string) => {
        const value = env[name]?.trim();
        if (!value)
          throw new ConfigError(`${file}: webhook target ${target.name}: ${what} ${name} is not set`);
        return value;
      };
      const url = target.url ?? fromEnv(target.urlEnv!, 'urlEnv');
      let parsedUrl: URL;
      try {
        parsedUrl = new URL(url);
      } catch {
        // The URL may be a secret (Slack's are): say which variable, not what it holds.
        throw new ConfigError(
          `${file}: webhook target ${target.name}: the URL in ${target.urlEnv ?? 'url'} is not a URL`,
        );
      }
      if (parsedUrl.protocol !== 'https:' && parsedUrl.protocol !== 'http:') {
        throw new ConfigError(`${file}: webhook target ${target.name}: the URL must be http or https`);
      }
      return {
        name: target.name,
        url: parsedUrl,
        secret: target.secretEnv === undefined ? undefined : fromEnv(target.secretEnv, 'secretEnv'),
        format: target.format,
        events: new Set(target.events),
        allowHosts: target.allowHosts,
      };
    }),
  };
}
