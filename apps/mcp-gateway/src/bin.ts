#!/usr/bin/env node
// `vouch-mcp-gateway`: an MCP server on stdio that proxies one upstream MCP server through Vouch.
// stdout carries the MCP protocol; everything for people goes to stderr as JSON lines.
import { readFile } from 'node:fs/promises';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { loadConfig } from './config';
import { isGatewayError } from './errors';
import { jsonLineLogger } from './logger';
import { startGateway } from './start-gateway';

const logger = jsonLineLogger((line) => process.stderr.write(line));

try {
  const { config, apiKey } = await loadConfig({
    argv: process.argv.slice(2),
    env: process.env,
    readFile: (path) => readFile(path, 'utf8'),
  });
  const gateway = await startGateway({ config, apiKey, agentTransport: new StdioServerTransport(), logger });
  const stop = async (signal: string) => {
    logger.info('stopping', { signal });
    await gateway.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
  // The agent closing stdin ends the session.
  process.stdin.once('end', () => void stop('stdin closed'));
} catch (error) {
  logger.error('gateway failed to start', {
    code: isGatewayError(error) ? error.code : 'UNEXPECTED',
    error: error instanceof Error ? error.message : String(error),
  });
  process.exit(2);
}
