import { parseArgs } from 'node:util';
import { type DatabaseTarget, databaseTarget } from '../config';
import { explainFailure } from './errors';
import { type CliIo, EXIT } from './io';

// Every `vouch` command is declared once (its options, positionals and help) and run through
// here: parsing, `--help`, usage errors (exit 2 with the usage) and the one-sentence report of
// a failure (exit 2) happen in this file only, so a command file is its declaration and action.

/** One option: what `node:util` `parseArgs` needs, plus what the usage says about it. */
export interface OptionSpec {
  type: 'string' | 'boolean';
  multiple?: boolean;
  short?: string;
  /** The value's name in the usage, e.g. `N` for `--port N` (string options). */
  value?: string;
  /** Shown without brackets in the generated synopsis; the action still checks it. */
  required?: boolean;
  /** The option's line(s) in the usage; later lines are indented under the first. */
  help: string;
}

export type OptionSpecs = Record<string, OptionSpec>;

/** The values `parseArgs` returns for `O`. */
export type OptionValues<O extends OptionSpecs> = {
  [K in keyof O]?: O[K]['type'] extends 'boolean'
    ? boolean
    : O[K]['multiple'] extends true
      ? string[]
      : string;
};

/** A positional argument, e.g. `KEY_ID`. */
export interface PositionalSpec {
  name: string;
  optional?: boolean;
}

/** The declaration of one command. */
export interface CommandSpec<O extends OptionSpecs> {
  /** How it is called, e.g. `vouch keys revoke`: every message it prints starts with it. */
  name: string;
  /** One line for the list of its group (a group that loads it lazily says the line itself). */
  summary?: string;
  /** The first line of the usage, when the generated one cannot say how options go together. */
  synopsis?: string;
  /** What it does, between the synopsis and the options. */
  description?: string;
  options: O;
  positionals?: readonly PositionalSpec[];
  /** After the options: exit codes, environment, related commands. */
  footer?: string;
  /**
   * The action, once the arguments parsed. What it throws is reported as one sentence
   * (`explainFailure`) with exit 2; verdicts (exit 0 and 1) are returned.
   */
  action(input: { values: OptionValues<O>; positionals: string[] }, io: CliIo): Promise<number>;
}

/** A command ready to run: `run` never throws, it returns the exit code. */
export interface Command {
  name: string;
  summary: string;
  /** The full usage text (`--help`). */
  usage: string;
  run(args: string[], io: CliIo): Promise<number>;
}

const HELP_OPTION = { help: { type: 'boolean', short: 'h' } } as const;

/** Declare a command: parsing, `--help`, usage errors and failures are handled here. */
export function defineCommand<O extends OptionSpecs>(spec: CommandSpec<O>): Command {
  const usage = usageOf(spec);
  const positionals = spec.positionals ?? [];
  const parseOptions = Object.fromEntries(
    Object.entries(spec.options).map(([name, option]) => [
      name,
      {
        type: option.type,
        ...(option.multiple ? { multiple: true } : {}),
        ...(option.short ? { short: option.short } : {}),
      },
    ]),
  );
  return {
    name: spec.name,
    summary: spec.summary ?? '',
    usage,
    async run(args, io) {
      let parsed: { values: Record<string, unknown>; positionals: string[] };
      try {
        parsed = parseArgs({
          args,
          options: { ...parseOptions, ...HELP_OPTION },
          strict: true,
          allowPositionals: positionals.length > 0,
        });
        if (parsed.values.help !== true) checkPositionals(positionals, parsed.positionals);
      } catch (error) {
        io.err(`${spec.name}: ${(error as Error).message}\n\n${usage}\n`);
        return EXIT.USAGE;
      }
      if (parsed.values.help === true) {
        io.out(`${usage}\n`);
        return EXIT.OK;
      }
      try {
        return await spec.action(
          { values: parsed.values as OptionValues<O>, positionals: parsed.positionals },
          io,
        );
      } catch (error) {
        io.err(`${spec.name}: ${explainFailure(error, targetOf(io))}\n`);
        return EXIT.USAGE;
      }
    },
  };
}

/** A command of a group, loaded only when it runs (so `vouch verify` never loads the HTTP stack). */
export interface LazyCommand {
  name: string;
  summary: string;
  load(): Promise<Command>;
}

/** The declaration of a group of commands, e.g. `vouch` or `vouch keys`. */
export interface GroupSpec {
  name: string;
  /** The first line of the usage (default: `<name> <command>`). */
  title?: string;
  description?: string;
  commands: readonly (Command | LazyCommand)[];
  footer?: string;
}

/**
 * Declare a group: `<name> <command> …` runs the command, `<name> help` and `--help` print
 * the usage (exit 0), no command or an unknown one prints it on stderr (exit 2).
 */
export function defineGroup(spec: GroupSpec): Command {
  const rows = spec.commands.map((command) => [command.name, command.summary] as const);
  const usage = [
    spec.title ?? `${spec.name} <command>`,
    ...(spec.description ? [spec.description] : []),
    `Commands:\n${table(rows)}`,
    spec.footer ?? `Run \`${spec.name} <command> --help\` for details.`,
  ].join('\n\n');
  const byWord = new Map(spec.commands.map((command) => [lastWord(command.name), command]));
  return {
    name: spec.name,
    summary: spec.title ?? spec.name,
    usage,
    async run(args, io) {
      const [word, ...rest] = args;
      if (word === undefined) {
        io.err(`${usage}\n`);
        return EXIT.USAGE;
      }
      if (word === 'help' || word === '--help' || word === '-h') {
        io.out(`${usage}\n`);
        return EXIT.OK;
      }
      const command = byWord.get(word);
      if (command === undefined) {
        io.err(`${spec.name}: unknown command ${word}\n\n${usage}\n`);
        return EXIT.USAGE;
      }
      const loaded = 'load' in command ? await command.load() : command;
      return loaded.run(rest, io);
    },
  };
}

function checkPositionals(specs: readonly PositionalSpec[], given: readonly string[]): void {
  const required = specs.filter((p) => !p.optional).length;
  if (given.length < required) throw new Error(`missing ${specs[given.length]!.name}`);
  if (given.length > specs.length) throw new Error(`unexpected argument ${given[specs.length]}`);
}

function usageOf(spec: CommandSpec<OptionSpecs>): string {
  const options = Object.entries(spec.options);
  const synopsis =
    spec.synopsis ??
    [
      spec.name,
      ...(spec.positionals ?? []).map((p) => (p.optional ? `[${p.name}]` : p.name)),
      ...options.map(([name, option]) => {
        const flag = option.value ? `--${name} ${option.value}` : `--${name}`;
        const text = option.multiple ? `${flag}…` : flag;
        return option.required ? text : `[${text}]`;
      }),
    ].join(' ');
  const rows = options.map(
    ([name, option]) => [option.value ? `--${name} ${option.value}` : `--${name}`, option.help] as const,
  );
  return [synopsis, spec.description, rows.length > 0 ? table(rows) : undefined, spec.footer]
    .filter((part) => part !== undefined)
    .join('\n\n');
}

/** Two aligned columns, indented by two; a second column of several lines stays aligned. */
function table(rows: readonly (readonly [string, string])[]): string {
  const width = Math.max(...rows.map(([left]) => left.length)) + 3;
  return rows
    .map(([left, right]) => `  ${left.padEnd(width)}${right.split('\n').join(`\n  ${' '.repeat(width)}`)}`)
    .join('\n');
}

function lastWord(name: string): string {
  return name.slice(name.lastIndexOf(' ') + 1);
}

/** The database a failure may concern, for its hint; none when the settings themselves are wrong. */
function targetOf(io: CliIo): DatabaseTarget | undefined {
  try {
    return databaseTarget(io.env, io.cwd);
  } catch {
    return undefined;
  }
}
