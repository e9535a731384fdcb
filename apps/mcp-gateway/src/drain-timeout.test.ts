import { describe, expect, it } from 'vitest';
import { drainTimeoutOf, gatewayConfigSchema } from './config';

const base = {
  upstream: { command: 'bank' },
  vouch: { url: 'http://127.0.0.1:8787' },
  serverId: 'bank',
  environment: 'production',
};
const agentServer = {
  port: 0,
  agents: [{ name: 'bot', tokenSha256: 'a'.repeat(64), apiKeyEnv: 'BOT_KEY' }],
};

describe('drainTimeoutOf', () => {
  describe('when drainTimeoutMs is not set', () => {
    it('ends before the SDK’s SIGKILL on stdio (1.5 s) and before docker’s over HTTP (8 s)', () => {
      expect(drainTimeoutOf(gatewayConfigSchema.parse(base))).toBe(1500);
      expect(drainTimeoutOf(gatewayConfigSchema.parse({ ...base, agentServer }))).toBe(8000);
    });
  });

  describe('when drainTimeoutMs is set', () => {
    it('is that, in either mode', () => {
      expect(drainTimeoutOf(gatewayConfigSchema.parse({ ...base, drainTimeoutMs: 0 }))).toBe(0);
      expect(
        drainTimeoutOf(gatewayConfigSchema.parse({ ...base, agentServer, drainTimeoutMs: 30_000 })),
      ).toBe(30_000);
    });
  });
});
