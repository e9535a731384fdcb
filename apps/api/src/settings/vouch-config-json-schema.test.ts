import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { runVouch } from '../testing/cli-io';
import {
  VOUCH_CONFIG_SCHEMA_FILE,
  vouchConfigJsonSchema,
  vouchConfigJsonSchemaText,
} from './vouch-config-json-schema';

const packageRoot = path.resolve(import.meta.dirname, '../..');
const committed = readFileSync(path.join(packageRoot, VOUCH_CONFIG_SCHEMA_FILE), 'utf8');
const repoRoot = path.resolve(packageRoot, '../..');
const validate = new Ajv2020({ strict: false, allErrors: true }).compile(vouchConfigJsonSchema());

describe('vouch.config.schema.json', () => {
  describe('when compared with the zod schemas it is generated from', () => {
    // After changing a config schema: npx --no-install vouch config schema > apps/api/vouch.config.schema.json
    it('is the committed file, byte for byte', () => {
      expect(vouchConfigJsonSchemaText()).toBe(committed);
    });

    it('is what `vouch config schema` prints', async () => {
      const { code, out } = await runVouch(['config', 'schema'], { cwd: packageRoot, env: {} });
      expect(code).toBe(0);
      expect(out).toBe(committed);
    });
  });

  describe('when an editor validates a configuration with it', () => {
    it('accepts the tutorial configuration', () => {
      const config = JSON.parse(readFileSync(path.join(repoRoot, 'docs/tutorial/vouch.config.json'), 'utf8'));
      expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
    });

    it('accepts every built-in with its options', () => {
      const config = {
        connections: {
          'ledger-db': { type: 'postgres', urlEnv: 'LEDGER_DATABASE_URL' },
          cache: { type: 'redis', url: 'redis://cache:6379', keyPrefix: 'refund:' },
        },
        verifiers: [
          {
            use: 'sql',
            connection: 'ledger-db',
            options: { query: 'select 1', successCondition: 'rowCount == 1' },
          },
          {
            use: 'redis',
            connection: 'cache',
            options: { command: 'GET', key: 'k', successCondition: 'result == null' },
          },
          {
            use: 'prometheus',
            options: { url: 'https://prom.internal', query: 'up', successCondition: 'value == 1' },
          },
        ],
      };
      expect(validate(config), JSON.stringify(validate.errors)).toBe(true);
    });

    it.each([
      ['a misspelt top-level key', { verifers: [] }],
      ['an unknown connection type', { connections: { x: { type: 'mongodb', url: 'x' } } }],
      [
        'a built-in option that does not exist',
        { verifiers: [{ use: 'http-json', options: { url: 'https://x', folow: 1 } }] },
      ],
      [
        'a redis write command',
        { verifiers: [{ use: 'redis', options: { command: 'SET', key: 'k', successCondition: 'true' } }] },
      ],
      ['a server setting that does not exist', { server: { rateLimit: { burts: 1 } } }],
    ])('flags %s', (_label, config) => {
      expect(validate(config)).toBe(false);
    });
  });
});
