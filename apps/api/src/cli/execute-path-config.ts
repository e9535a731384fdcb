import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { EXECUTE_PATH_RULES, type ExecutePathOptions, type ExecutePathRule } from './execute-path-check';
import { CliError } from './io';

/** The file `vouch check-execute-path DIR` reads from DIR when `--config` is not given. */
export const EXECUTE_PATH_CONFIG_FILE = '.vouch-execute-path.json';

/** What is skipped unless the configuration's `exclude` says otherwise. */
export const DEFAULT_EXCLUDE: readonly string[] = [
  'node_modules',
  'dist',
  'build',
  'coverage',
  '.*/',
  '*.d.ts',
  '*.test.*',
  '*.spec.*',
  '__tests__/',
  '__mocks__/',
];

const glob = z.string().min(1);

const configSchema = z.strictObject({
  $schema: z.string().optional(),
  include: z.array(glob).optional(),
  exclude: z.array(glob).optional(),
  receivers: z.array(z.string().min(1)).min(1).optional(),
  factories: z.array(z.string().min(1)).min(1).optional(),
  names: z.array(z.string().min(1)).optional(),
  methods: z.array(z.string().min(1)).optional(),
  computedMembers: z.enum(['calls', 'all']).optional(),
  allow: z
    .array(
      z.strictObject({
        file: glob,
        function: z.string().min(1).optional(),
        rule: z.enum(EXECUTE_PATH_RULES as [ExecutePathRule, ...ExecutePathRule[]]).optional(),
        reason: z.string().trim().min(1, 'say why this exception is safe'),
      }),
    )
    .default([]),
});

/**
 * The options of one scan: the configuration file (`--config`, else `.vouch-execute-path.json`
 * in the directory when it exists), with `--include` and `--exclude` added to its globs.
 * A file that cannot be read or does not fit the schema is a CliError naming the field.
 */
export function executePathOptions(input: {
  dir: string;
  configFile: string | undefined;
  cwd: string;
  include: readonly string[];
  exclude: readonly string[];
}): { options: ExecutePathOptions; configFile: string | null } {
  const path =
    input.configFile !== undefined
      ? resolve(input.cwd, input.configFile)
      : existsSync(join(input.dir, EXECUTE_PATH_CONFIG_FILE))
        ? join(input.dir, EXECUTE_PATH_CONFIG_FILE)
        : null;
  let raw: unknown = {};
  if (path !== null) {
    let text: string;
    try {
      text = readFileSync(path, 'utf8');
    } catch {
      throw new CliError(`cannot read the configuration file ${path}`);
    }
    try {
      raw = JSON.parse(text);
    } catch (error) {
      throw new CliError(`${path} is not JSON: ${(error as Error).message}`);
    }
  }
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new CliError(`${path}: invalid configuration at /${issue.path.join('/')}: ${issue.message}`);
  }
  const config = parsed.data;
  return {
    configFile: path,
    options: {
      include: [...(config.include ?? (input.include.length > 0 ? [] : ['**'])), ...input.include],
      exclude: [...(config.exclude ?? DEFAULT_EXCLUDE), ...input.exclude],
      receivers: config.receivers ?? ['vouch'],
      factories: config.factories ?? ['createVouchClient'],
      names: ['callTool', 'callToolStream', 'CallToolResultSchema', ...(config.names ?? [])],
      methods: ['tools/call', ...(config.methods ?? [])],
      computedMembers: config.computedMembers ?? 'calls',
      allow: config.allow,
    },
  };
}
