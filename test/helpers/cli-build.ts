// One build of the `vouch` CLI for a test run. `npx --no-install vouch` in the repository compiles the
// TypeScript sources with tsx on every start, about two seconds of CPU each time; the suite
// starts hundreds of servers and commands. This bundles apps/api's cli entry once, with the
// workspace packages taken from their sources (the "@vouch/source" condition, as tests read
// them) and npm dependencies left to Node, into a directory named by the bundle's hash.
import { createHash } from 'node:crypto';
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { build, type Plugin } from 'esbuild';

const repo = join(import.meta.dirname, '..', '..');
const entry = join(repo, 'apps', 'api', 'src', 'cli.ts');
/** Inside the repository, so that the bundle's bare imports resolve from its node_modules. */
export const CLI_CACHE = join(repo, 'node_modules', '.cache', 'vouch-test-cli');
const KEEP_OLD_BUILDS_MS = 7 * 24 * 60 * 60 * 1000;

/**
 * Bundle the CLI unless a build of the same bytes is already there; return the path of its
 * `cli.mjs`. Builds are never rewritten in place, so a run in progress keeps its own.
 */
export async function buildTestCli(): Promise<string> {
  const result = await build({
    entryPoints: [entry],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    conditions: ['@vouch/source'],
    outfile: join(CLI_CACHE, 'build', 'cli.mjs'),
    write: false,
    sourcemap: 'linked',
    // Bundled CommonJS dependencies (none today) would need `require`; ESM has none.
    banner: {
      js: "import { createRequire as __vouchRequire } from 'node:module';\nconst require = __vouchRequire(import.meta.url);",
    },
    plugins: [npmDependenciesExternal(), sourceLocations()],
    logLevel: 'silent',
  });
  const files = result.outputFiles;
  const hash = createHash('sha256');
  for (const file of files) hash.update(file.path).update(file.contents);
  const dir = join(CLI_CACHE, hash.digest('hex').slice(0, 16));
  const cli = join(dir, 'cli.mjs');
  if (!exists(cli)) {
    const staging = `${dir}.${process.pid}.tmp`;
    mkdirSync(staging, { recursive: true });
    for (const file of files) writeFileSync(join(staging, file.path.split(sep).pop()!), file.contents);
    try {
      renameSync(staging, dir);
    } catch (error) {
      // Another run wrote the same build first.
      rmSync(staging, { recursive: true, force: true });
      if (!exists(cli)) throw error;
    }
  }
  const now = new Date();
  utimesSync(dir, now, now);
  pruneOldBuilds(dir);
  return cli;
}

/**
 * npm dependencies stay imports, resolved by Node at run time exactly as for the sources.
 * The bundle sits under the repository's node_modules, so a bare import resolves there from
 * the bundle as it does from the source file; a dependency installed nested under a workspace
 * would not, so that stops the build instead of running a different copy.
 */
function npmDependenciesExternal(): Plugin {
  const rootModules = join(repo, 'node_modules') + sep;
  return {
    name: 'npm-dependencies-external',
    setup(b) {
      b.onResolve({ filter: /^[^./#]/ }, async (args) => {
        if (args.path.startsWith('@vouch/') || args.path.startsWith('node:') || args.pluginData?.inner) {
          return undefined;
        }
        const resolved = await b.resolve(args.path, {
          kind: args.kind,
          resolveDir: args.resolveDir,
          importer: args.importer,
          pluginData: { inner: true },
        });
        if (resolved.errors.length > 0) return { errors: resolved.errors };
        if (resolved.path && !resolved.external && !resolved.path.startsWith(rootModules)) {
          return {
            errors: [
              {
                text: `${args.path} resolves to ${relative(repo, resolved.path)} from ${relative(repo, args.importer)}, not under the root node_modules: the test CLI build cannot import it by name`,
              },
            ],
          };
        }
        return { path: args.path, external: true };
      });
    },
  };
}

/**
 * Each workspace source keeps its own `import.meta.url` (the migrations folder, the console's
 * dist/ and worker files are found relative to it), instead of the bundle's.
 */
function sourceLocations(): Plugin {
  return {
    name: 'source-locations',
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (args) => {
        if (args.path.includes(`${sep}node_modules${sep}`)) return undefined;
        const url = JSON.stringify(pathToFileURL(args.path).href);
        const text = readFileSync(args.path, 'utf8').replaceAll('import.meta.url', url);
        if (/import\.meta\.(dirname|filename)/.test(text)) {
          return {
            errors: [
              { text: `${args.path}: import.meta.dirname/filename is not supported by the test CLI build` },
            ],
          };
        }
        return { contents: text, loader: 'ts' };
      });
    },
  };
}

function exists(path: string): boolean {
  try {
    statSync(path);
    return true;
  } catch {
    return false;
  }
}

function pruneOldBuilds(current: string): void {
  const now = Date.now();
  for (const name of readdirSync(CLI_CACHE)) {
    const path = join(CLI_CACHE, name);
    if (path === current) continue;
    try {
      if (now - statSync(path).mtimeMs > KEEP_OLD_BUILDS_MS) rmSync(path, { recursive: true, force: true });
    } catch {
      // Removed by another run meanwhile.
    }
  }
}
