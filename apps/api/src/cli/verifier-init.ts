import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defineCommand, defineGroup } from './command';
import { CliError, EXIT } from './io';
import { verifierScaffold } from './verifier-scaffold';

// The SDK version this CLI was released with; the scaffold depends on it.
const SDK_VERSION = '0.1.0';

/** `vouch verifier init DIR [--id vendor/name]`: write a verifier plugin package. */
export const verifierInitCommand = defineCommand({
  name: 'vouch verifier init',
  summary: 'create a verifier plugin package',
  description: `Write a verifier plugin package into DIR (which must be empty or absent): an ESM
package with a verifier in src/index.ts, its VerifierTester cases in src/index.test.ts, a
tsconfig, and an example vouch.config.json entry. \`npm install && npm test\` builds and
tests it; \`npm pack\` makes a tarball to install next to vouch.config.json.`,
  options: {
    id: { type: 'string', value: 'VENDOR/NAME', help: 'the verifier id (default acme/<DIR name>)' },
  },
  positionals: [{ name: 'DIR' }],
  async action({ values, positionals }, io) {
    const dir = path.resolve(io.cwd, positionals[0]!);
    const packageName = path.basename(dir).toLowerCase();
    if (!/^[a-z0-9][a-z0-9._-]*$/.test(packageName)) {
      throw new CliError(
        `${packageName}: not a valid npm package name; name the directory like acme-vouch-item-done`,
      );
    }
    const id = values.id ?? `acme/${packageName.replace(/^vouch-|-?vouch-?/g, '') || 'verifier'}`;
    if (!/^[a-z0-9][a-z0-9-]*\/[a-z0-9][a-z0-9-]*$/.test(id)) {
      throw new CliError(`--id ${id}: must be vendor/name in lowercase kebab-case, e.g. acme/item-done`);
    }
    if (existsSync(dir) && readdirSync(dir).length > 0) {
      throw new CliError(`${dir} is not empty; give a new directory`);
    }
    const files = verifierScaffold({ packageName, id, sdkVersion: SDK_VERSION });
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    io.err(`created ${id} in ${dir}\nnext: cd ${positionals[0]} && npm install && npm test\n`);
    io.out(`${JSON.stringify({ dir, package: packageName, id, files: Object.keys(files).sort() })}\n`);
    return EXIT.OK;
  },
});

/** `vouch verifier …`. */
export const verifierCommand = defineGroup({
  name: 'vouch verifier',
  description: 'Write verifier plugins, and try verifiers against live sources.',
  commands: [
    verifierInitCommand,
    {
      name: 'vouch verifier run',
      summary: 'run the configured verifiers for one observation, without a server',
      load: async () => (await import('./verifier-run')).verifierRunCommand,
    },
  ],
});
