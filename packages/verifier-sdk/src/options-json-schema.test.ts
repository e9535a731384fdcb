import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineVerifier, VERIFIER_API_VERSION } from './define-verifier';
import { optionsJsonSchema } from './options-json-schema';
import type { StandardSchemaV1 } from './standard-schema';

const base = { version: '1.0.0', apiVersion: VERIFIER_API_VERSION, handles: ['x'], check: () => [] };

describe('optionsJsonSchema', () => {
  describe('when the options are a zod schema', () => {
    it('publishes the input side as JSON Schema draft 2020-12', () => {
      const verifier = defineVerifier({
        ...base,
        id: 'z',
        options: z.object({ url: z.string(), n: z.number().default(3) }),
      });
      expect(optionsJsonSchema(verifier)).toMatchObject({
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        properties: { url: { type: 'string' }, n: { type: 'number', default: 3 } },
        required: ['url'],
      });
    });
  });

  describe('when the verifier takes no options', () => {
    it('publishes an empty closed object', () => {
      expect(optionsJsonSchema(defineVerifier({ ...base, id: 'none' }))).toMatchObject({
        type: 'object',
        additionalProperties: false,
      });
    });
  });

  describe('when the schema library cannot produce JSON Schema', () => {
    it('throws VERIFIER_INVALID', () => {
      const opaque: StandardSchemaV1<unknown, { a: string }> = {
        '~standard': { version: 1, vendor: 'opaque', validate: () => ({ value: { a: '' } }) },
      };
      expect(() => optionsJsonSchema(defineVerifier({ ...base, id: 'opaque', options: opaque }))).toThrow(
        expect.objectContaining({ code: 'VERIFIER_INVALID', field: '/verifier/options' }),
      );
    });
  });
});
