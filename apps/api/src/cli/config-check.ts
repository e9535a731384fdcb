import { redactUrl } from '@vouch/ledger';
import { type ServeConfig, serveConfig } from '../config';
import { loadServerSettings } from '../settings/server-settings';
import { vouchConfigJsonSchemaText } from '../settings/vouch-config-json-schema';
import { checkpointStatePath } from '../transparency/checkpoint-state-dir';
import { defineCommand, defineGroup } from './command';
import { EXIT } from './io';

const MASK = '[set, not shown]';

/** The effective configuration with every secret replaced by {@link MASK}. */
export function maskedConfig(config: ServeConfig): Record<string, unknown> {
  const { database, adminKey, transparency, allowOwnerRoleBy: _, settings, ...rest } = config;
  const policy = settings?.policy;
  return {
    ...rest,
    ...(settings
      ? {
          settings: {
            ...settings,
            policy:
              policy && 'decisionUrl' in policy
                ? {
                    ...policy,
                    decisionUrl: redactUrl(policy.decisionUrl),
                    token: policy.token ? { header: policy.token.header, value: MASK } : null,
                  }
                : policy,
          },
        }
      : {}),
    database: database.kind === 'postgres' ? { ...database, url: redactUrl(database.url) } : database,
    // null: a restored older backup goes unnoticed (docs/operations.md#restoring-a-backup).
    checkpointStateDir: config.checkpointStateDir ?? null,
    adminKey: adminKey === undefined ? null : MASK,
    ...(transparency
      ? { transparency: { ...transparency, signingKey: transparency.signingKey === undefined ? null : MASK } }
      : {}),
  };
}

/** `vouch config check [--file F]`: validate the configuration and print it, secrets masked. */
export const configCheckCommand = defineCommand({
  name: 'vouch config check',
  summary: 'validate the configuration and print it (secrets masked)',
  description: `Read the configuration \`vouch serve\` would run with: the environment, and the file
(--file, else VOUCH_CONFIG, else ./vouch.config.json when it exists) whose \`server\`
section sets the policy engine, approvals, limits, rate limits, keys and where the last
signed checkpoints are kept (checkpointStateDir). Print it as JSON
with every secret masked, or name the setting at fault and why (exit 2).`,
  options: {
    file: {
      type: 'string',
      value: 'F',
      help: 'the configuration file (default VOUCH_CONFIG, else ./vouch.config.json)',
    },
  },
  async action({ values }, io) {
    const env = { ...io.env, ...(values.file === undefined ? {} : { VOUCH_CONFIG: values.file }) };
    // A bad setting throws a ConfigError naming it and why; the CLI prints that and exits 2.
    const config = serveConfig(env, io.cwd);
    const settings = await loadServerSettings({ file: config.verifierConfig, env });
    const stateDir = checkpointStatePath(settings.checkpoints.stateDir, config.database, io.cwd);
    const effective = {
      ...config,
      settings,
      ...(stateDir === undefined ? {} : { checkpointStateDir: stateDir }),
    };
    io.out(`${JSON.stringify(maskedConfig(effective), null, 2)}\n`);
    return EXIT.OK;
  },
});

/** `vouch config schema`: print the JSON Schema of vouch.config.json. */
export const configSchemaCommand = defineCommand({
  name: 'vouch config schema',
  summary: 'print the JSON Schema of vouch.config.json',
  description: `Print the JSON Schema (draft 2020-12) of vouch.config.json, generated from the
schemas the server validates with. Reference it from the file's "$schema" so an editor checks
it as you type; @vouch/api ships it as vouch.config.schema.json.`,
  options: {},
  async action(_args, io) {
    io.out(vouchConfigJsonSchemaText());
    return EXIT.OK;
  },
});

/** `vouch config …`. */
export const configCommand = defineGroup({
  name: 'vouch config',
  description: 'Check the configuration of `vouch serve`, or print its JSON Schema.',
  commands: [configCheckCommand, configSchemaCommand],
});
