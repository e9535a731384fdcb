/**
 * Webhook signatures: `Vouch-Signature: t=<unix seconds>,v1=<hex>`, where
 * `v1 = HMAC-SHA256(secret, "<t>.<raw body>")` (the scheme Stripe uses). The server signs
 * with {@link signWebhook} and receivers check with {@link verifyWebhookSignature}: one
 * implementation, so the two cannot drift apart. Web Crypto only, so it runs in Node 20,
 * Deno, workers and browsers alike.
 */

/** The header the signature travels in. */
export const WEBHOOK_SIGNATURE_HEADER = 'Vouch-Signature';

/** How old (or how far in the future) a signed timestamp may be, by default: five minutes. */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

/** Why a signature was refused. */
export type WebhookSignatureFailure =
  /** No header, or an empty one. */
  | 'SIGNATURE_MISSING'
  /** The header is not `t=<digits>,v1=<64 hex>[,v1=…]`. */
  | 'SIGNATURE_MALFORMED'
  /** The timestamp is outside the replay window: an old delivery replayed, or a wrong clock. */
  | 'SIGNATURE_EXPIRED'
  /** No `v1` matches the body and timestamp under this secret: tampered, or another secret. */
  | 'SIGNATURE_MISMATCH';

/** What {@link verifyWebhookSignature} found. */
export type WebhookSignatureCheck =
  | { valid: true; timestamp: number }
  | { valid: false; code: WebhookSignatureFailure; message: string };

const encoder = new TextEncoder();

function hmacKey(secret: string, usage: 'sign' | 'verify'): ReturnType<typeof crypto.subtle.importKey> {
  return crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, [
    usage,
  ]);
}

function toHex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Number.parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/**
 * The `Vouch-Signature` header value for `body` sent at `timestamp` (unix seconds).
 *
 * @example
 * const header = await signWebhook({ secret, body, timestamp: Math.floor(Date.now() / 1000) });
 */
export async function signWebhook(input: {
  secret: string;
  body: string;
  timestamp: number;
}): Promise<string> {
  const { secret, body, timestamp } = input;
  const mac = await crypto.subtle.sign(
    'HMAC',
    await hmacKey(secret, 'sign'),
    encoder.encode(`${timestamp}.${body}`),
  );
  return `t=${timestamp},v1=${toHex(mac)}`;
}

/**
 * Check a webhook from Vouch before acting on it: the `Vouch-Signature` header must carry a
 * `v1` HMAC of `"<t>.<body>"` under your secret, and `t` must be within `toleranceSeconds`
 * of now (default 300), so a captured delivery cannot be replayed later. Pass the raw body
 * exactly as received (before any JSON parsing). The comparison is constant-time (Web
 * Crypto's `verify`). Several `v1` entries are accepted, so a secret can be rotated.
 *
 * @example
 * const check = await verifyWebhookSignature({
 *   secret: process.env.VOUCH_WEBHOOK_SECRET!,
 *   header: request.headers.get('vouch-signature'),
 *   body: rawBody,
 * });
 * if (!check.valid) return new Response(check.code, { status: 400 });
 */
export async function verifyWebhookSignature(input: {
  secret: string;
  header: string | null | undefined;
  body: string;
  toleranceSeconds?: number;
  /** Unix seconds; defaults to the clock. */
  now?: number;
}): Promise<WebhookSignatureCheck> {
  const { secret, header, body } = input;
  const tolerance = input.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  const now = input.now ?? Math.floor(Date.now() / 1000);
  if (!header?.trim())
    return { valid: false, code: 'SIGNATURE_MISSING', message: 'no Vouch-Signature header' };
  let timestamp: number | undefined;
  const macs: string[] = [];
  for (const part of header.split(',')) {
    const [name, value, ...rest] = part.trim().split('=');
    if (rest.length > 0 || value === undefined) return malformed();
    if (name === 't' && timestamp === undefined && /^\d{1,12}$/.test(value)) timestamp = Number(value);
    else if (name === 'v1' && /^[0-9a-f]{64}$/.test(value)) macs.push(value);
    else if (name === 't' || name === 'v1') return malformed();
    // Other schemes (a future v2) are skipped, so a receiver keeps working while they roll out.
  }
  if (timestamp === undefined || macs.length === 0) return malformed();
  if (Math.abs(now - timestamp) > tolerance) {
    return {
      valid: false,
      code: 'SIGNATURE_EXPIRED',
      message: `signed at ${timestamp}, ${now - timestamp} s from now; the window is ${tolerance} s`,
    };
  }
  const key = await hmacKey(secret, 'verify');
  const signed = encoder.encode(`${timestamp}.${body}`);
  for (const mac of macs) {
    if (await crypto.subtle.verify('HMAC', key, fromHex(mac), signed)) return { valid: true, timestamp };
  }
  return {
    valid: false,
    code: 'SIGNATURE_MISMATCH',
    message: 'no v1 signature matches this body and secret',
  };
}

function malformed(): WebhookSignatureCheck {
  return {
    valid: false,
    code: 'SIGNATURE_MALFORMED',
    message: 'Vouch-Signature must be t=<unix seconds>,v1=<64 hex digits>',
  };
}
