import { type CliIo, EXIT } from './io';

export const USAGE = `vouch — verification and audit ledger for the actions AI agents take through tools

Commands:
  vouch serve     run the HTTP API (docs at /docs, OpenAPI at /openapi.json)
  vouch migrate   apply database migrations
  vouch verify    verify the hash chain in the database
  vouch keys      issue, list and revoke API keys
  vouch export    write a self-contained, signed audit bundle of a log

Storage: DATABASE_URL (Postgres), else PGlite in VOUCH_DATA_DIR (default ./.vouch/data).
Run \`vouch <command> --help\` for details.`;

// Each command is loaded only when it runs: `vouch verify` never loads the HTTP stack.
const COMMANDS: Record<string, (args: string[], io: CliIo) => Promise<number>> = {
  serve: async (args, io) => (await import('./serve')).runServe(args, io),
  migrate: async (args, io) => (await import('./migrate')).runMigrate(args, io),
  verify: async (args, io) => (await import('./verify')).runVerify(args, io),
  keys: async (args, io) => (await import('./keys')).runKeys(args, io),
  export: async (args, io) => (await import('./export')).runExport(args, io),
};

/** Run `vouch <argv>` and return its exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.err : io.out)(`${USAGE}\n`);
    return command === undefined ? EXIT.USAGE : EXIT.OK;
  }
  const run = COMMANDS[command];
  if (!run) {
    io.err(`vouch: unknown command ${command}\n\n${USAGE}\n`);
    return EXIT.USAGE;
  }
  return run(args, io);
}
