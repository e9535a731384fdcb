import { defineGroup } from './command';
import type { CliIo } from './io';

/** `vouch`: each command is loaded only when it runs, so `vouch verify` never loads the HTTP stack. */
export const vouchCommand = defineGroup({
  name: 'vouch',
  title: 'vouch — verification and audit ledger for the actions AI agents take through tools',
  commands: [
    {
      name: 'vouch serve',
      summary: 'run the HTTP API (docs at /docs, OpenAPI at /openapi.json)',
      load: async () => (await import('./serve')).serveCommand,
    },
    {
      name: 'vouch migrate',
      summary: 'apply database migrations',
      load: async () => (await import('./migrate')).migrateCommand,
    },
    {
      name: 'vouch verify',
      summary: 'verify the hash chain in the database, a bundle, or a log since a checkpoint',
      load: async () => (await import('./verify')).verifyCommand,
    },
    {
      name: 'vouch keys',
      summary: 'issue, list and revoke API keys; the log signing key',
      load: async () => (await import('./keys')).keysCommand,
    },
    {
      name: 'vouch restore',
      summary: 'check a restored database against the last checkpoints signed; accept a restore',
      load: async () => (await import('./restore')).restoreCommand,
    },
    {
      name: 'vouch sweep',
      summary: 'record lapsed execution claims as unknown outcomes, once',
      load: async () => (await import('./sweep')).sweepCommand,
    },
    {
      name: 'vouch webhooks',
      summary: 'the webhook delivery log',
      load: async () => (await import('./webhooks')).webhooksCommand,
    },
    {
      name: 'vouch config',
      summary: 'check the configuration (secrets masked)',
      load: async () => (await import('./config-check')).configCommand,
    },
    {
      name: 'vouch witness',
      summary: 'witness a log: check that it only grows, cosign its checkpoints',
      load: async () => (await import('./witness')).witnessCommand,
    },
    {
      name: 'vouch redact',
      summary: 'erase fields of an event, keeping every proof valid',
      load: async () => (await import('./redact')).redactCommand,
    },
    {
      name: 'vouch verifier',
      summary: 'create a verifier plugin package (init), run verifiers once without a server (run)',
      load: async () => (await import('./verifier-init')).verifierCommand,
    },
    {
      name: 'vouch check-execute-path',
      summary: 'fail when code can call an MCP tool outside vouch.execute() (for CI)',
      load: async () => (await import('./check-execute-path')).checkExecutePathCommand,
    },
    {
      name: 'vouch export',
      summary: 'write a self-contained, signed audit bundle of a log',
      load: async () => (await import('./export')).exportCommand,
    },
  ],
  footer: `Storage: DATABASE_URL (Postgres), else PGlite in VOUCH_DATA_DIR (default ./.vouch/data).
Run \`vouch <command> --help\` for details.`,
});

/** Run `vouch <argv>` and return its exit code. */
export function runCli(argv: string[], io: CliIo): Promise<number> {
  return vouchCommand.run(argv, io);
}
