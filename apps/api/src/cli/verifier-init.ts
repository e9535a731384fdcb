import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { defineCommand, defineGroup } from './command';
import { CliError, EXIT } from './io';
import { verifierScaffold } from './verifier-scaffold';
import { findVerifierSdk } from './verifier-sdk-source';

// The SDK version this CLI was released with; the scaffold depends on it.
const SDK_VERSION = '0.1.0';

/** `vouch verifier init DIR [--id vendor/name]`: write a verifier plugin package. */
export const verifierInitCommand = defineCommand({
  name: 'vouch verifier init',
  summary: 'create a verifier plugin package',
  description: `Write a verifier plugin package into DIR (which must be empty or absent): an ESM
package with a verifier in src/index.ts, its VerifierTester cases in src/index.test.ts, a
tsconfig, and an example vouch.config.json entry. \`npm install && npm test\` builds and
tests it; \`npm pack\` makes a tarball to install next to vouch.config.json.

@vouch/verifier-sdk is not on the public npm registry: the package depends on its tarball by
path (file:). \`node scripts/pack-workspaces.mjs DEST\` in a Vouch clone packs it into DEST
(docs/install.md). Without --sdk, the tarball is looked for where this vouch is installed
from (such a DEST), then in the current directory.`,
  options: {
    id: { type: 'string', value: 'VENDOR/NAME', help: 'the verifier id (default acme/<DIR name>)' },
    sdk: {
      type: 'string',
      value: 'PATH',
      help: 'the SDK to depend on: vouch-verifier-sdk-*.tgz, a directory holding it, or the SDK package',
    },
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
    // The script that runs: in an install from tarballs, DEST/node_modules/.bin/vouch or below.
    const running = process.argv[1] ?? '';
    const sdk = findVerifierSdk({ given: values.sdk, cwd: io.cwd, installedFrom: running });
    const sdkSpec = `file:${path.relative(dir, sdk).split(path.sep).join('/')}`;
    const files = verifierScaffold({ packageName, id, sdkVersion: SDK_VERSION, sdkSpec });
    for (const [file, text] of Object.entries(files)) {
      mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
      writeFileSync(path.join(dir, file), text);
    }
    io.err(
      `created ${id} in ${dir}, with @vouch/verifier-sdk from ${sdk}\nnext: cd ${shellWord(positionals[0]!)} && npm install && npm test\n`,
    );
    io.out(
      `${JSON.stringify({ dir, package: packageName, id, sdk: sdkSpec, files: Object.keys(files).sort() })}\n`,
    );
    return EXIT.OK;
  },
});

/** `word` as one shell word: as it is when it is safe, else in single quotes. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replaceAll("'", "'\\''")}'`;
}

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
