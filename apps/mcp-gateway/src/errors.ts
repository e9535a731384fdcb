/** Every code `@vouch/mcp-gateway` raises itself (Vouch's own refusals come as `VouchClientError`). */
export const GATEWAY_ERROR_CODES = [
  /** The configuration file does not exist or cannot be read. */
  'CONFIG_NOT_FOUND',
  /** The configuration (file or environment) is malformed or incomplete. */
  'CONFIG_INVALID',
  /** The upstream MCP server could not be started or connected. */
  'UPSTREAM_UNAVAILABLE',
  /** An upstream's token endpoint refused the gateway's client credentials, or could not be reached. */
  'UPSTREAM_AUTH_FAILED',
  /** The agent went away before the MCP handshake finished. */
  'AGENT_DISCONNECTED',
] as const;

/** A stable, machine-readable reason the gateway could not start or run. */
export type GatewayErrorCode = (typeof GATEWAY_ERROR_CODES)[number];

/** The one error class of `@vouch/mcp-gateway`; identify it with {@link isGatewayError}, not `instanceof`. */
export class GatewayError extends Error {
  override readonly name = 'GatewayError';
  readonly code: GatewayErrorCode;
  readonly details: unknown;

  constructor(code: GatewayErrorCode, message: string, options?: { details?: unknown; cause?: unknown }) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options?.details;
  }
}

/** True for a `GatewayError` from any copy of this package. */
export function isGatewayError(error: unknown): error is GatewayError {
  return (
    error instanceof Error &&
    error.name === 'GatewayError' &&
    (GATEWAY_ERROR_CODES as readonly string[]).includes((error as GatewayError).code)
  );
}
