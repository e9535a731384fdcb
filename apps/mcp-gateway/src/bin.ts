#!/usr/bin/env node
// `vouch-mcp-gateway`: an MCP server (stdio, or Streamable HTTP with `agentServer`) that
// proxies one or several upstream MCP servers through Vouch.
// stdout carries the MCP protocol; everything for people goes to stderr as JSON lines.
import { readFile } from 'node:fs/promises';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';
import { drainTimeoutOf, loadConfig } from './config';
import { GatewayError, isGatewayError } from './errors';
import { jsonLineLogger } from './logger';
import { startGateway, startHttpGateway } from './start-gateway';
import { startTracing, type Tracing } from './start-tracing';

const logger = jsonLineLogger((line) => process.stderr.write(line));

let tracing: Tracing | undefined;
try {
  // OTEL_TRACES_EXPORTER=otlp: a span per governed call, continued by the API.
  tracing = startTracing(process.env, { name: 'vouch-mcp-gateway' });
  if (tracing) logger.info('tracing on', { endpoint: tracing.endpoint, protocol: tracing.protocol });
  const { config, apiKey, agentApiKeys, upstreamSecrets, signing } = await loadConfig({
    argv: process.argv.slice(2),
    env: process.env,
    readFile: (path) => readFile(path, 'utf8'),
  });
  let close: (() => Promise<void>) | undefined;
  let stopping = false;
  const stop = async (reason: string, code = 0) => {
    if (stopping) return;
    stopping = true;
    logger.info('stopping', { reason });
    await close?.().catch(() => {});
    // The spans of the last calls are still buffered: export them before exiting.
    await tracing?.shutdown().catch(() => {});
    process.exit(code);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));

  if (config.agentServer) {
    const server = await startHttpGateway({
      config,
      agentApiKeys,
      upstreamSecrets,
      logger,
      ...requestStateKeyOf(process.env),
    });
    close = async () => {
      await Promise.all(server.sessions().map((gateway) => gateway.drain(drainTimeoutOf(config))));
      await server.close();
    };
  } else {
    // The agent closing stdin ends the session.
    process.stdin.once('end', () => void stop('stdin closed'));
    const gateway = await startGateway({
      config,
      apiKey: apiKey!,
      upstreamSecrets,
      ...(signing ? { signing } : {}),
      agentTransport: new StdioServerTransport(),
      logger,
      onUpstreamClose: () => {
        if (stopping) return; // our own close() closes the upstream too
        logger.error('the upstream MCP server closed the connection');
        void stop('upstream closed', 1);
      },
    });
    close = async () => {
      // Running calls finish (within the bound) and their outcomes are recorded before exit.
      await gateway.drain(drainTimeoutOf(config));
      await gateway.close();
    };
  }
} catch (error) {
  logger.error('gateway failed to start', {
    code: isGatewayError(error) ? error.code : 'UNEXPECTED',
    error: error instanceof Error ? error.message : String(error),
  });
  await tracing?.shutdown().catch(() => {});
  process.exit(2);
}

/**
 * `VOUCH_GATEWAY_STATE_KEY`: the HMAC key of `input_required` rounds, the same on every
 * instance behind a load balancer so that any of them can take the retry (at least 32 bytes).
 */
function requestStateKeyOf(env: NodeJS.ProcessEnv): { requestStateKey?: string } {
  const key = env.VOUCH_GATEWAY_STATE_KEY;
  if (key === undefined || key === '') return {};
  if (Buffer.byteLength(key, 'utf8') < 32) {
    throw new GatewayError('CONFIG_INVALID', 'VOUCH_GATEWAY_STATE_KEY must be at least 32 bytes');
  }
  return { requestStateKey: key };
}
