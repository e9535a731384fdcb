#!/usr/bin/env node
// The `vouch` command: a thin shell around runCli, which tests drive in-process.
import { runCli } from './cli/main';

let stop: Promise<string> | undefined;

const code = await runCli(process.argv.slice(2), {
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  interactive: Boolean(process.stderr.isTTY),
  // Only `serve` listens for signals; other commands keep Ctrl-C's default (exit at once).
  stopRequested: () => {
    stop ??= new Promise<string>((resolve) => {
      for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => resolve(signal));
    });
    return stop;
  },
});
// Nothing should be left running after a command; exit so a stray handle cannot hang a script.
process.exit(code);
