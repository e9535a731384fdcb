import { optionsJsonSchema } from '@vouch/verifier-sdk';
import { BUILTIN_VERIFIERS, verifierConfigSchema } from '@vouch/verifiers';
import { z } from 'zod';
import { webhookSectionSchema } from '../webhooks/webhook-config';
import { serverSettingsSchema } from './server-settings-schema';

/** Where the committed schema lives, relative to the @vouch/api package root. */
export const VOUCH_CONFIG_SCHEMA_FILE = 'vouch.config.schema.json';

/**
 * The JSON Schema (draft 2020-12) of `vouch.config.json`, generated from the same zod schemas
 * the server and the verifier loader validate with, so an editor that follows `$schema` flags
 * what `vouch serve` would refuse. Each built-in verifier's `options` are described by that
 * verifier's own schema (an `if use == id then options: ...` rule per built-in).
 */
export function vouchConfigJsonSchema(): Record<string, unknown> {
  const file = z
    .object({
      $schema: z.string().optional(),
      server: serverSettingsSchema.optional(),
      webhooks: webhookSectionSchema.optional(),
      connections: verifierConfigSchema.shape.connections,
      verifiers: verifierConfigSchema.shape.verifiers,
    })
    .strict()
    .meta({
      title: 'vouch.config.json',
      description: 'Configuration of the Vouch server and its verifiers.',
    });
  const schema = z.toJSONSchema(file, {
    io: 'input',
    unrepresentable: 'any',
    target: 'draft-2020-12',
  }) as unknown as {
    properties: { verifiers: { items: Record<string, unknown> } };
  } & Record<string, unknown>;
  const defs = ((schema.$defs as Record<string, unknown> | undefined) ?? {}) as Record<string, unknown>;
  schema.properties.verifiers.items.allOf = Object.entries(BUILTIN_VERIFIERS).map(([id, verifier]) => {
    const { $schema: _, $defs: own, ...local } = optionsJsonSchema(verifier);
    // The options schema's own definitions move to the root under a prefixed name, and its
    // `#/$defs/x` references follow, since `#` now means this file.
    const rename = (name: string) => `${id}.${name}`;
    const options = JSON.parse(
      JSON.stringify(local).replaceAll(
        /"#\/\$defs\/([^"]+)"/g,
        (_m, name: string) => `"#/$defs/${rename(name)}"`,
      ),
    ) as Record<string, unknown>;
    for (const [name, definition] of Object.entries((own ?? {}) as Record<string, unknown>)) {
      defs[rename(name)] = JSON.parse(
        JSON.stringify(definition).replaceAll(
          /"#\/\$defs\/([^"]+)"/g,
          (_m, ref: string) => `"#/$defs/${rename(ref)}"`,
        ),
      );
    }
    return {
      if: { properties: { use: { const: id } }, required: ['use'] },
      // biome-ignore lint/suspicious/noThenProperty: `then` is the JSON Schema keyword paired with `if`
      then: { properties: { options } },
    };
  });
  if (Object.keys(defs).length > 0) schema.$defs = defs;
  return schema;
}

/** The schema as it is committed: two-space JSON with a final newline. */
export function vouchConfigJsonSchemaText(): string {
  return `${JSON.stringify(vouchConfigJsonSchema(), null, 2)}\n`;
}
