/** How calls to one upstream tool are described to Vouch (action, target, class, conditions). */
export type { ToolSettings } from './action-of-call';
export { actionOfCall } from './action-of-call';
/** The Streamable HTTP agent server (per-agent bearer tokens). */
export type { AgentHttpServer, HttpAgent } from './agent-http';
export { serveAgentsOverHttp } from './agent-http';
/** What the gateway claimed and has not seen recorded, kept across a crash. */
export type { CallJournal } from './call-journal';
/** The `_meta` key under which an agent names its call (its idempotency key). */
export { IDEMPOTENCY_KEY_META } from './call-keys';
/** Connect an upstream and start a gateway from a configuration, as the bin does. */
export type { ClientCredentials, TokenSource } from './client-credentials';
/** The configuration of the `vouch-mcp-gateway` bin: JSON file and environment. */
export type { ConfigSources, GatewayConfig, LoadedConfig, UpstreamConnection } from './config';
export { gatewayConfigSchema, loadConfig } from './config';
export type { ConnectOptions } from './connect-upstream';
export { connectUpstream } from './connect-upstream';
/** The one error class of the gateway and its codes. */
export type { GatewayErrorCode } from './errors';
export { GATEWAY_ERROR_CODES, GatewayError, isGatewayError } from './errors';
/** The gateway itself: an MCP server whose every tools/call goes through Vouch's execute. */
export type { Gateway, GatewayOptions, NamedUpstream } from './gateway';
export { createGateway } from './gateway';
/** Requests besides tools/call that Vouch governs (resources/read, resources/subscribe, prompts/get). */
export type { GovernableMethod, GovernedMethod } from './governed-request';
export { GOVERNABLE_METHODS } from './governed-request';
export { openCallJournal } from './in-doubt';
/** Injected logging (the bin writes JSON lines to stderr; stdout is the MCP channel). */
export type { Logger } from './logger';
export { jsonLineLogger, silentLogger } from './logger';
/** Several upstreams: how exposed names carry their upstream's namespace. */
export { NAMESPACE_SEPARATOR } from './namespace';
/** Capabilities offered to each side. */
export { agentCapabilitiesOf, upstreamCapabilitiesOf } from './pass-through';
/** What a tool's result must satisfy before the agent sees it (masks, a size cap). */
export type { MaskPattern, ObligationsApplied, ResultObligations } from './result-obligations';
export { openGateway, startGateway, startHttpGateway } from './start-gateway';
/** The `_meta` key and shape on every tool result the gateway returns. */
export type { ExecutionMeta } from './tool-results';
export { META_KEY } from './tool-results';
/** The connected upstream server. */
export type { Upstream } from './upstream-call';
/** The three outcome layers of an upstream call, and how each is observed. */
export type { UpstreamOutcome, UpstreamTransportKind } from './upstream-outcome';
export { observedOf } from './upstream-outcome';
