import { describe, expect, it } from 'vitest';
import * as gateway from './index';
import * as testing from './testing';

// Pins the public surface: an export added or removed by accident shows up in review here.
describe('@vouch/mcp-gateway', () => {
  describe('when imported', () => {
    it('exports exactly these values', () => {
      expect(Object.keys(gateway).sort()).toEqual([
        'GATEWAY_ERROR_CODES',
        'GOVERNABLE_METHODS',
        'GatewayError',
        'IDEMPOTENCY_KEY_META',
        'META_KEY',
        'NAMESPACE_SEPARATOR',
        'actionOfCall',
        'agentCapabilitiesOf',
        'connectUpstream',
        'createGateway',
        'gatewayConfigSchema',
        'isGatewayError',
        'jsonLineLogger',
        'loadConfig',
        'observedOf',
        'openCallJournal',
        'openGateway',
        'serveAgentsOverHttp',
        'silentLogger',
        'startGateway',
        'startHttpGateway',
        'upstreamCapabilitiesOf',
      ]);
    });
  });
  describe('when @vouch/mcp-gateway/testing is imported', () => {
    it('exports the example upstream only', () => {
      expect(Object.keys(testing).sort()).toEqual(['EXAMPLE_TOOLS', 'createExampleUpstream']);
    });
  });
});
