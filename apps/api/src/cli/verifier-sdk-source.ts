import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { CliError } from './io';

const TARBALL = /^vouch-verifier-sdk-\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?\.tgz$/;

const HOW_TO_PACK = `@vouch/verifier-sdk is not on the public npm registry: pack it in a Vouch clone with
\`node scripts/pack-workspaces.mjs ../vouch-dist\` (docs/install.md), then give
--sdk ../vouch-dist (or the vouch-verifier-sdk-*.tgz in it)`;

/**
 * Where the scaffold's `@vouch/verifier-sdk` comes from: a tarball (or the SDK's package
 * directory) on this machine, never the public registry, where the name answers 404 (or could
 * one day answer with someone else's package). `given` is `--sdk`; without it, the tarball is
 * looked for in the project this `vouch` was installed into (the DEST of
 * scripts/pack-workspaces.mjs holds the tarballs beside its node_modules), then in `cwd`.
 */
export function findVerifierSdk(options: {
  given?: string | undefined;
  cwd: string;
  installedFrom: string;
}): string {
  if (options.given !== undefined) return fromGiven(path.resolve(options.cwd, options.given), options.given);
  for (const dir of [installRoot(options.installedFrom), options.cwd]) {
    if (dir === null) continue;
    const found = tarballsIn(dir);
    if (found.length === 1) return found[0]!;
  }
  throw new CliError(`no @vouch/verifier-sdk tarball found. ${HOW_TO_PACK}`);
}

function fromGiven(absolute: string, given: string): string {
  if (!existsSync(absolute)) throw new CliError(`--sdk ${given}: no such file or directory`);
  if (statSync(absolute).isFile()) {
    if (!absolute.endsWith('.tgz')) throw new CliError(`--sdk ${given}: not a .tgz tarball`);
    return absolute;
  }
  if (packageName(absolute) === '@vouch/verifier-sdk') return absolute;
  const found = tarballsIn(absolute);
  if (found.length === 1) return found[0]!;
  if (found.length > 1) {
    throw new CliError(`--sdk ${given}: holds ${found.length} SDK tarballs; name one of them`);
  }
  throw new CliError(`--sdk ${given}: holds no vouch-verifier-sdk-*.tgz. ${HOW_TO_PACK}`);
}

function tarballsIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .filter((name) => TARBALL.test(name))
      .map((name) => path.join(dir, name));
  } catch {
    return [];
  }
}

function packageName(dir: string): string | undefined {
  try {
    return (JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: string }).name;
  } catch {
    return undefined;
  }
}

/** The project whose node_modules holds `file` (its first node_modules from the root); null outside one. */
function installRoot(file: string): string | null {
  const at = file.split(path.sep).indexOf('node_modules');
  return at <= 0 ? null : file.split(path.sep).slice(0, at).join(path.sep) || path.sep;
}
