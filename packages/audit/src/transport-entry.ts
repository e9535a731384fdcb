// `@vouch/audit/transport`: the one HTTP transport to a Vouch server (see http-transport.ts),
// for @vouch/client and for auditors who call the server themselves.
export type {
  Deadline,
  ErrorEnvelope,
  HttpFetch,
  HttpRequest,
  HttpResponse,
  HttpTransport,
  HttpTransportOptions,
  RetryOptions,
  RetryPolicy,
  Sent,
} from './http-transport';
export { createHttpTransport, readErrorEnvelope, sleep } from './http-transport';
