import { execFile } from 'node:child_process';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';

const repo = path.resolve(import.meta.dirname, '../../../..');
const sdk = path.join(repo, 'packages/verifier-sdk');

/**
 * `@vouch/verifier-sdk` built into `dir/verifier-sdk` as an installed package would be
 * (package.json and dist/, without the source condition), for tests that load a plugin the
 * way plain Node does. Its own build, never the workspace's dist/: test/pack-and-run.test.ts
 * rebuilds that one (tsup empties it first) while other test files run beside it.
 *
 * @example
 * const sdkDir = await buildVerifierSdk(work);
 * await symlink(sdkDir, path.join(plugin, 'node_modules/@vouch/verifier-sdk'), 'dir');
 */
export async function buildVerifierSdk(dir: string): Promise<string> {
  const out = path.join(dir, 'verifier-sdk');
  const manifest = JSON.parse(await readFile(path.join(sdk, 'package.json'), 'utf8')) as {
    exports: Record<string, Record<string, string>>;
  };
  for (const entry of Object.values(manifest.exports)) delete entry['@vouch/source'];
  await mkdir(path.join(out, 'node_modules/@marcbachmann'), { recursive: true });
  await writeFile(path.join(out, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  // Its dependencies as an install would resolve them: zod (tests), cel-js (celCondition).
  for (const dep of ['zod', '@marcbachmann/cel-js'])
    await symlink(path.join(repo, 'node_modules', dep), path.join(out, 'node_modules', dep), 'dir');
  await promisify(execFile)(
    process.execPath,
    [path.join(repo, 'node_modules/tsup/dist/cli-default.js'), '--out-dir', path.join(out, 'dist')],
    { cwd: sdk },
  );
  return out;
}
