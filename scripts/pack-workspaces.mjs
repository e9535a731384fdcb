#!/usr/bin/env node
// Pack every publishable workspace into DEST and make DEST an installable project:
//
//   node scripts/pack-workspaces.mjs DEST
//
// DEST then holds the tarballs (`npm pack`, whose prepack script builds dist/ with turbo), a
// package.json depending on each of them, and a package-lock.json that pins every runtime
// dependency to the version, URL and integrity of this repository's lockfile. So
// `npm ci --omit=dev` in DEST installs exactly what `npm ci` here tested, and with `--offline`
// it needs nothing but the npm cache that `npm ci` here filled. The pack-and-run smoke test
// (test/pack-and-run.test.ts) and the container image (Dockerfile) both install from it.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const readJson = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The workspaces that publish (not private), by directory relative to the repository. */
export function publishableWorkspaces() {
  return ['packages', 'apps'].flatMap((group) =>
    readdirSync(join(root, group))
      .map((name) => `${group}/${name}`)
      .filter((dir) => !readJson(join(root, dir, 'package.json')).private),
  );
}

/** Pack the workspaces into `dest` and write its package.json and package-lock.json. */
export function packWorkspaces(dest) {
  const out = resolve(dest);
  mkdirSync(out, { recursive: true });
  const dirs = publishableWorkspaces();
  const stdout = execFileSync(
    'npm',
    ['pack', '--json', '--offline', '--pack-destination', out, ...dirs.map((dir) => `--workspace=${dir}`)],
    {
      cwd: root,
      // Nothing leaves the machine: no turbo telemetry, no npm update check.
      env: {
        ...process.env,
        TURBO_TELEMETRY_DISABLED: '1',
        DO_NOT_TRACK: '1',
        npm_config_update_notifier: 'false',
      },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  // The prepack scripts (turbo) print on the same stdout: npm's JSON answer is the last array.
  const packed = JSON.parse(stdout.slice(stdout.lastIndexOf('\n[\n') + 1));
  const tarballs = new Map(packed.map((p) => [p.name, { file: p.filename, integrity: p.integrity }]));
  const lock = installLock(dirs, tarballs);
  writeFileSync(join(out, 'package.json'), `${JSON.stringify(lock.packages[''], null, 2)}\n`);
  writeFileSync(join(out, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
  return { dest: out, tarballs };
}

/**
 * A lockfile for a project that depends on the tarballs: the @vouch packages resolve to the
 * tarballs, everything they need at run time to this repository's locked entries (same
 * versions, URLs and integrity, nested where the repository nests them).
 */
function installLock(dirs, tarballs) {
  const repoLock = readJson(join(root, 'package-lock.json')).packages;
  const workspaceDir = new Map(dirs.map((dir) => [readJson(join(root, dir, 'package.json')).name, dir]));
  const packages = {
    '': {
      name: 'vouch-install',
      private: true,
      dependencies: Object.fromEntries([...tarballs].map(([name, { file }]) => [name, `file:${file}`])),
    },
  };
  // Where a repository path lands in the install: a workspace's own node_modules moves under it.
  const relocate = (repoPath) => {
    for (const [name, dir] of workspaceDir) {
      if (repoPath === dir) return `node_modules/${name}`;
      if (repoPath.startsWith(`${dir}/`)) return `node_modules/${name}/${repoPath.slice(dir.length + 1)}`;
    }
    return repoPath;
  };
  // Node's lookup from `from`: its own node_modules, then each enclosing node_modules up to the root.
  const resolveFrom = (from, name) => {
    let base = from;
    for (;;) {
      const candidate = base === '' ? `node_modules/${name}` : `${base}/node_modules/${name}`;
      const entry = repoLock[candidate];
      if (entry && workspaceDir.has(name) && entry.link) return entry.resolved;
      if (entry) return candidate;
      if (base === '') return null;
      const cut = base.lastIndexOf('/node_modules/');
      base = cut === -1 ? '' : base.slice(0, cut);
    }
  };
  const queue = [...workspaceDir.values()];
  const seen = new Set();
  while (queue.length > 0) {
    const repoPath = queue.shift();
    if (seen.has(repoPath)) continue;
    seen.add(repoPath);
    const entry = repoLock[repoPath];
    const name = [...workspaceDir].find(([, dir]) => dir === repoPath)?.[0];
    const target = relocate(repoPath);
    if (name !== undefined) {
      const {
        version,
        license,
        dependencies,
        optionalDependencies,
        peerDependencies,
        peerDependenciesMeta,
        engines,
        bin,
      } = readJson(join(root, repoPath, 'package.json'));
      const tarball = tarballs.get(name);
      packages[target] = {
        version,
        resolved: `file:${tarball.file}`,
        integrity: tarball.integrity,
        license,
        ...(dependencies && { dependencies }),
        ...(optionalDependencies && { optionalDependencies }),
        // As npm records them: @vouch/api's optional peer (typescript) is not installed.
        ...(peerDependencies && { peerDependencies }),
        ...(peerDependenciesMeta && { peerDependenciesMeta }),
        ...(bin && { bin }),
        ...(engines && { engines }),
      };
    } else {
      const { dev: _dev, devOptional: _devOptional, peer: _peer, ...kept } = entry;
      packages[target] = kept;
    }
    const needs = {
      ...entry.dependencies,
      ...entry.optionalDependencies,
      ...Object.fromEntries(
        Object.entries(entry.peerDependencies ?? {}).filter(
          ([peer]) => !entry.peerDependenciesMeta?.[peer]?.optional,
        ),
      ),
    };
    for (const dep of Object.keys(needs)) {
      const found = resolveFrom(repoPath, dep);
      if (found !== null) queue.push(found);
      else if (!(dep in (entry.optionalDependencies ?? {})))
        throw new Error(`${repoPath} needs ${dep}, which package-lock.json does not hold: run npm install`);
    }
  }
  return { name: 'vouch-install', lockfileVersion: 3, requires: true, packages };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const dest = process.argv[2];
  if (!dest) {
    process.stderr.write('usage: node scripts/pack-workspaces.mjs DEST\n');
    process.exit(2);
  }
  const { tarballs, dest: out } = packWorkspaces(dest);
  for (const [name, { file }] of tarballs)
    process.stdout.write(`${name}\t${relative(process.cwd(), join(out, file))}\n`);
}
