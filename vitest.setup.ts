import { afterEach, beforeEach, vi } from 'vitest';

// Loggers are injected everywhere; a stray console call is a bug, so it fails the test.
const methods = ['log', 'info', 'warn', 'error', 'debug'] as const;
beforeEach(() => {
  for (const method of methods) {
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      throw new Error(`unexpected console.${method}: ${args.map(String).join(' ')}`);
    });
  }
});
afterEach(() => {
  vi.restoreAllMocks();
});
