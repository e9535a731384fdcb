import { type CliIo, EXIT } from './io';
import { KEYS_USAGE, runKeys } from './keys';
import { MIGRATE_USAGE, runMigrate } from './migrate';
import { runServe, SERVE_USAGE } from './serve';
import { runVerify, VERIFY_USAGE } from './verify';

export const USAGE = `vouch — verification and audit ledger for the actions AI agents take through tools

Commands:
  vouch serve     run the HTTP API (docs at /docs, OpenAPI at /openapi.json)
  vouch migrate   apply database migrations
  vouch verify    verify the hash chain in the database
  vouch keys      issue, list and revoke API keys

Storage: DATABASE_URL (Postgres), else PGlite in VOUCH_DATA_DIR (default ./.vouch/data).
Run \`vouch <command> --help\` for details.`;

const COMMANDS: Record<string, { run: (args: string[], io: CliIo) => Promise<number>; usage: string }> = {
  serve: { run: runServe, usage: SERVE_USAGE },
  migrate: { run: runMigrate, usage: MIGRATE_USAGE },
  verify: { run: runVerify, usage: VERIFY_USAGE },
  keys: { run: runKeys, usage: KEYS_USAGE },
};

/** Run `vouch <argv>` and return its exit code. */
export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [command, ...args] = argv;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    (command === undefined ? io.err : io.out)(`${USAGE}\n`);
    return command === undefined ? EXIT.USAGE : EXIT.OK;
  }
  const entry = COMMANDS[command];
  if (!entry) {
    io.err(`vouch: unknown command ${command}\n\n${USAGE}\n`);
    return EXIT.USAGE;
  }
  return entry.run(args, io);
}
