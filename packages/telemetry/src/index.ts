export { startTracing, type Tracing, TracingConfigError } from './start-tracing';
