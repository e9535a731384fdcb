import type { CliIo } from '../cli/io';
import { runCli } from '../cli/main';

/** What a recording console was given, and a way to wait for a line. */
export interface RecordingIo {
  io: CliIo;
  out(): string;
  err(): string;
  /** Resolves when stdout matches `pattern` (checked on every write, no polling). */
  waitForOut(pattern: RegExp): Promise<RegExpExecArray>;
}

/**
 * A `CliIo` that records what a command prints, for running `vouch` commands in process.
 * `stop` resolves the command's stop request (default: never asked to stop).
 */
export function recordingIo(options: {
  env?: NodeJS.ProcessEnv;
  cwd: string;
  stop?: Promise<string>;
  fetch?: CliIo['fetch'];
}): RecordingIo {
  const out: string[] = [];
  const err: string[] = [];
  const waiters: Array<{ pattern: RegExp; resolve: (match: RegExpExecArray) => void }> = [];
  const io: CliIo = {
    out: (text) => {
      out.push(text);
      for (const waiter of [...waiters]) {
        const match = waiter.pattern.exec(out.join(''));
        if (match) {
          waiters.splice(waiters.indexOf(waiter), 1);
          waiter.resolve(match);
        }
      }
    },
    err: (text) => err.push(text),
    env: options.env ?? {},
    cwd: options.cwd,
    interactive: false,
    stopRequested: () => options.stop ?? new Promise(() => {}),
    ...(options.fetch ? { fetch: options.fetch } : {}),
  };
  return {
    io,
    out: () => out.join(''),
    err: () => err.join(''),
    waitForOut: (pattern) =>
      new Promise((resolve) => {
        const match = pattern.exec(out.join(''));
        if (match) resolve(match);
        else waiters.push({ pattern, resolve });
      }),
  };
}

/** Run `vouch <argv>` in process to its exit code. */
export async function runVouch(
  argv: string[],
  options: Parameters<typeof recordingIo>[0],
): Promise<{ code: number; out: string; err: string }> {
  const recording = recordingIo(options);
  const code = await runCli(argv, recording.io);
  return { code, out: recording.out(), err: recording.err() };
}
