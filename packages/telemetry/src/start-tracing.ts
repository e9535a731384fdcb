import { OTLPTraceExporter as JsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as ProtobufExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { detectResources, envDetector, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';

/** A running tracer provider; `shutdown` exports the spans still buffered. */
export interface Tracing {
  /** Where spans go, for the startup log line (never the headers: they can hold credentials). */
  readonly endpoint: string;
  readonly protocol: 'http/json' | 'http/protobuf';
  shutdown(): Promise<void>;
}

/** The environment asks for tracing that cannot work; `key` names the variable to fix. */
export class TracingConfigError extends Error {
  override readonly name = 'TracingConfigError';
  constructor(
    message: string,
    readonly key: 'OTEL_EXPORTER_OTLP_PROTOCOL' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  ) {
    super(message);
  }
}

/**
 * Register the process's tracer provider when the standard OpenTelemetry environment asks for
 * it, and return undefined (nothing registered, every span a no-op) when it does not.
 *
 * On only with `OTEL_TRACES_EXPORTER=otlp` (unlike the SDK's own default, tracing is off
 * unless asked for) and not `OTEL_SDK_DISABLED=true`. The exporter speaks OTLP over HTTP,
 * `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` / `OTEL_EXPORTER_OTLP_PROTOCOL` `http/protobuf` (the
 * default) or `http/json`, to `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, else
 * `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`, else `http://localhost:4318/v1/traces`.
 * The SDK reads the rest itself (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
 * `OTEL_TRACES_SAMPLER[_ARG]`, `OTEL_BSP_*`, `OTEL_EXPORTER_OTLP_[TRACES_]HEADERS`).
 * Registering also installs the W3C `traceparent` propagator and an AsyncLocalStorage context.
 * A protocol or endpoint that cannot work throws {@link TracingConfigError}.
 *
 * @example
 * const tracing = startTracing(process.env, { name: 'vouch-api', version: '0.1.0' });
 * // ... on shutdown:
 * await tracing?.shutdown();
 */
export function startTracing(
  env: Readonly<Record<string, string | undefined>>,
  service: { name: string; version?: string },
): Tracing | undefined {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return undefined;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '').split(',').map((name) => name.trim().toLowerCase());
  if (!exporters.includes('otlp')) return undefined;
  const protocol = protocolOf(env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || env.OTEL_EXPORTER_OTLP_PROTOCOL);
  const endpoint = endpointOf(env);
  const exporter =
    protocol === 'http/json' ? new JsonExporter({ url: endpoint }) : new ProtobufExporter({ url: endpoint });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: service.name,
      ...(service.version ? { [ATTR_SERVICE_VERSION]: service.version } : {}),
    }).merge(detectResources({ detectors: [envDetector] })),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  provider.register();
  return { endpoint, protocol, shutdown: () => provider.shutdown() };
}

function protocolOf(value: string | undefined): 'http/json' | 'http/protobuf' {
  const protocol = value?.trim() || 'http/protobuf';
  if (protocol === 'http/json' || protocol === 'http/protobuf') return protocol;
  throw new TracingConfigError(
    `OTEL_EXPORTER_OTLP_PROTOCOL ${JSON.stringify(protocol)} is not supported: use http/protobuf or http/json`,
    'OTEL_EXPORTER_OTLP_PROTOCOL',
  );
}

function endpointOf(env: Readonly<Record<string, string | undefined>>): string {
  const traces = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || 'http://localhost:4318';
  const endpoint = traces || `${base.replace(/\/+$/, '')}/v1/traces`;
  try {
    new URL(endpoint);
  } catch {
    throw new TracingConfigError(
      `the OTLP traces endpoint ${JSON.stringify(endpoint)} is not a URL`,
      'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
    );
  }
  return endpoint;
}
