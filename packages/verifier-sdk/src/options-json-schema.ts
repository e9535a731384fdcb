import type { AnyVerifier } from './define-verifier';
import { VerifierError } from './errors';

/**
 * The verifier's options as JSON Schema (draft 2020-12), for editors, docs and config
 * validation outside TypeScript. Uses the schema's Standard JSON Schema support (zod 4 has it);
 * throws `VERIFIER_INVALID` when the schema library cannot produce one.
 *
 * @example
 * optionsJsonSchema(httpJsonVerifier); // { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', ... }
 */
export function optionsJsonSchema(verifier: AnyVerifier): Record<string, unknown> {
  if (verifier.options === undefined) {
    return {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: {},
      additionalProperties: false,
    };
  }
  const converter = verifier.options['~standard'].jsonSchema;
  if (converter === undefined) {
    throw new VerifierError(
      'VERIFIER_INVALID',
      `verifier "${verifier.id}": its options schema (${verifier.options['~standard'].vendor}) cannot be published as JSON Schema`,
      { verifier: verifier.id, field: '/verifier/options' },
    );
  }
  // Options are what a user writes in configuration, so publish the input side (before defaults).
  return converter.input({ target: 'draft-2020-12' });
}
