import { type ChildProcess, spawn } from 'node:child_process';
import { type Dirent, existsSync, lstatSync, readdirSync, readFileSync, realpathSync } from 'node:fs';
import type { Socket } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { FrameReader, frame } from './plugin-channel';
import { PLUGIN_HOST_SCRIPT } from './plugin-host-script';

/** How often a plugin process's resident memory is read. */
export const PLUGIN_MEMORY_SAMPLE_MS = 50;

/**
 * Address space a plugin process may map beyond its `memoryMb` (RLIMIT_DATA): room for Node's
 * own threads and V8's reservations, so that a normal plugin never meets it, while one huge
 * allocation (a 2 GB Buffer) fails at once instead of growing the resident set.
 */
export const PLUGIN_DATA_HEADROOM_MB = 384;

/** Who a plugin process runs as (set when the server runs as root; see docs/verification.md). */
export interface PluginUser {
  uid: number;
  gid: number;
}

/** What {@link spawnPluginProcess} starts. */
export interface PluginProcessSpec {
  /** The plugin module, as a `file:` URL. */
  url: string;
  /** Resident-memory limit of the process in MB (heap, Buffers and native memory together). */
  memoryMb: number;
  /** Run as this user instead of the server's. */
  user?: PluginUser;
}

/** Why the server killed a plugin's process. */
export type KilledFor =
  | { cause: 'memory'; rssMb: number }
  | { cause: 'stuck' }
  | { cause: 'protocol'; message: string };

/** A started plugin process and what watches it. */
export interface PluginProcess {
  child: ChildProcess;
  /** Send a message on the channel (dropped once the process is gone). */
  send(message: Record<string, unknown>): void;
  /** Each message the process sends; bytes that are not one get the process killed instead. */
  onMessage(handler: (message: unknown) => void): void;
  /** Keep the server's event loop waiting on the process (while a check runs), or not. */
  hold(open: boolean): void;
  /** Why the server killed it, once it did. */
  killedFor(): KilledFor | undefined;
  /** Kill it because it did not answer after a deadline. */
  killStuck(): void;
  /** The last bytes it wrote to stderr (a fatal V8 error says there why it died). */
  stderrTail(): string;
}

/**
 * Start a plugin's process: an empty environment, Node's permission model with read access to
 * the plugin's own folder (and the `node_modules` its imports resolve through) only, no child
 * processes, workers, addons or writes; its own session and process group; a heap limit and an
 * RLIMIT_DATA; a watcher that kills it when its resident memory passes `memoryMb`; and a
 * framed channel on descriptor 3 that kills it when it sends bytes that are not a message. The host
 * shim ({@link PLUGIN_HOST_SCRIPT}) runs before any plugin code and waits for the `load` message.
 */
export function spawnPluginProcess(spec: PluginProcessSpec): PluginProcess {
  const file = fileURLToPath(spec.url);
  const node = [
    permissionFlag(),
    ...readablePaths(file).map((p) => `--allow-fs-read=${p}`),
    `--max-old-space-size=${spec.memoryMb}`,
    '--disable-warning=ExperimentalWarning',
    '--eval',
    PLUGIN_HOST_SCRIPT,
  ];
  const dataKb = (spec.memoryMb + PLUGIN_DATA_HEADROOM_MB) * 1024;
  const shell = existsSync('/bin/sh');
  // The data limit needs setrlimit in the child before exec; Node has no API for it, sh has.
  // (sh exports PWD of its own: unset, so that the plugin's environment stays empty.)
  const [command, args] = shell
    ? [
        '/bin/sh',
        [
          '-c',
          'ulimit -d "$1" || exit 97; shift; unset PWD OLDPWD; exec "$@"',
          'sh',
          String(dataKb),
          process.execPath,
          ...node,
        ],
      ]
    : [process.execPath, node];
  const child = spawn(command, args, {
    env: {},
    cwd: path.dirname(file),
    // Its own session and process group: a signal to the server's group is not the plugin's,
    // and the plugin's is not the server's.
    detached: true,
    // Descriptor 3 is the channel, framed by plugin-channel.ts. Not Node's IPC: the plugin can
    // write to that descriptor too, and Node's IPC throws on bytes it cannot parse in the
    // server's event loop, which takes the server down.
    stdio: ['ignore', 'ignore', 'pipe', 'pipe'],
    ...(spec.user ? { uid: spec.user.uid, gid: spec.user.gid } : {}),
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    stderr = (stderr + chunk).slice(-4096);
  });
  let killed: KilledFor | undefined;
  const kill = (why: KilledFor) => {
    killed ??= why;
    child.kill('SIGKILL');
  };
  const watch = setInterval(() => {
    const rssMb = residentMb(child.pid);
    if (rssMb === undefined) clearInterval(watch);
    else if (rssMb > spec.memoryMb) kill({ cause: 'memory', rssMb: Math.round(rssMb) });
  }, PLUGIN_MEMORY_SAMPLE_MS);
  watch.unref();
  child.once('exit', () => clearInterval(watch));
  const channel = child.stdio[3] as Socket;
  // The process may be gone as the server writes: that is reported by its exit.
  channel.on('error', () => undefined);
  const reader = new FrameReader();
  return {
    child,
    send(message) {
      if (channel.writable) channel.write(frame(message));
    },
    onMessage(handler) {
      channel.on('data', (chunk: Buffer) => {
        if (killed) return;
        try {
          for (const message of reader.push(chunk)) handler(message);
        } catch (error) {
          // A message the server cannot handle is the plugin's doing, whatever threw: it must
          // not become an exception in the server's event loop.
          kill({ cause: 'protocol', message: (error as Error).message });
        }
      });
    },
    hold(open) {
      for (const handle of [child, channel, child.stderr as Socket | null]) {
        if (open) handle?.ref();
        else handle?.unref();
      }
    },
    killedFor: () => killed,
    killStuck: () => kill({ cause: 'stuck' }),
    stderrTail: () => stderr,
  };
}

/** Node 20 spells the permission model `--experimental-permission`; later releases `--permission`. */
function permissionFlag(): string {
  return process.allowedNodeEnvironmentFlags.has('--permission')
    ? '--permission'
    : '--experimental-permission';
}

/**
 * What the plugin may read: the package it belongs to when it is installed in `node_modules`,
 * else the folder of the plugin file and its package's `package.json` (Node reads its `type`);
 * each `node_modules` folder above that, where Node resolves its dependencies; and, for a
 * dependency linked into one of those (workspaces, `npm link`), where the link leads and the
 * `node_modules` above it, since Node loads a module from its real path. Nothing else: not the
 * configuration, the data directory, `/proc`.
 */
export function readablePaths(file: string): string[] {
  const own = packageRoot(file) ?? path.dirname(file);
  const paths = new Set([own]);
  const manifest = nearestManifest(path.dirname(file));
  if (manifest !== undefined && !manifest.startsWith(`${own}${path.sep}`)) paths.add(manifest);
  const pending = [own];
  const add = (target: string) => {
    if (paths.has(target)) return;
    paths.add(target);
    pending.push(target);
  };
  while (pending.length > 0) {
    const from = pending.pop()!;
    for (const link of linksUnder(from).inModules) add(realpathOr(link));
    for (const modules of modulesAbove(from)) {
      if (paths.has(modules)) continue;
      paths.add(modules);
      for (const target of linkedPackages(modules)) add(target);
    }
  }
  paths.delete('/');
  return [...paths];
}

function modulesAbove(dir: string): string[] {
  const found: string[] = [];
  for (let at = path.dirname(dir); ; at = path.dirname(at)) {
    const modules = path.join(at, 'node_modules');
    if (existsSync(modules)) found.push(modules);
    if (path.dirname(at) === at) return found;
  }
}

function nearestManifest(dir: string): string | undefined {
  for (let at = dir; ; at = path.dirname(at)) {
    const manifest = path.join(at, 'package.json');
    if (existsSync(manifest)) return manifest;
    if (path.dirname(at) === at) return undefined;
  }
}

/** Where the packages linked into a `node_modules` folder (`name` or `@scope/name`) really are. */
function linkedPackages(modules: string): string[] {
  const targets: string[] = [];
  const visit = (dir: string, scoped: boolean) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (!scoped && entry.name.startsWith('@') && entry.isDirectory()) visit(full, true);
      else if (entry.isSymbolicLink() && !entry.name.startsWith('.')) {
        const target = realpathOr(full);
        if (target !== '/') targets.push(target);
      }
    }
  };
  visit(modules, false);
  return targets;
}

/** How many entries of a folder the link scans look at, at most. */
const LINK_SCAN_MAX_ENTRIES = 20_000;

/**
 * A symbolic link in the plugin's own folder (its `node_modules` folders aside) that leads out of what
 * the plugin may read, if there is one. Node's permission model checks the path a plugin asks
 * for, not where a link in it leads, so such a link (shipped in a plugin's git checkout, say, to
 * a conventional config or key path) would read past it. npm does not install links from a
 * package's tarball; `node_modules` links come from workspaces and `npm link`, the operator's.
 */
export function linkOutOfReach(url: string): string | undefined {
  const file = fileURLToPath(url);
  const allowed = readablePaths(file).map((p) => realpathOr(p));
  const inside = (target: string) =>
    allowed.some((root) => target === root || target.startsWith(`${root}${path.sep}`));
  return linksUnder(packageRoot(file) ?? path.dirname(file)).elsewhere.find(
    (link) => !inside(realpathOr(link)),
  );
}

/** The symbolic links under `root` (a bounded scan), by whether a `node_modules` folder holds them. */
function linksUnder(root: string): { inModules: string[]; elsewhere: string[] } {
  const found = { inModules: [] as string[], elsewhere: [] as string[] };
  const pending: [string, boolean][] = [[root, false]];
  let seen = 0;
  while (pending.length > 0 && seen < LINK_SCAN_MAX_ENTRIES) {
    const [dir, inModules] = pending.pop()!;
    let entries: Dirent[];
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const entry of entries) {
      seen++;
      const full = path.join(dir, entry.name);
      if (entry.isSymbolicLink()) (inModules ? found.inModules : found.elsewhere).push(full);
      else if (entry.isDirectory()) pending.push([full, inModules || entry.name === 'node_modules']);
    }
  }
  return found;
}

function realpathOr(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    // A dangling link leads nowhere readable today, but may tomorrow: count it as out of reach.
    return lstatSync(p, { throwIfNoEntry: false })?.isSymbolicLink() ? '/' : p;
  }
}

/** `node_modules/name` or `node_modules/@scope/name` that holds `file`, if it is installed. */
function packageRoot(file: string): string | undefined {
  const parts = file.split(path.sep);
  const at = parts.lastIndexOf('node_modules');
  if (at < 0 || at + 1 >= parts.length - 1) return undefined;
  const scoped = parts[at + 1]!.startsWith('@');
  return parts.slice(0, at + (scoped ? 3 : 2)).join(path.sep);
}

/** Resident memory of `pid` in MB, from /proc (Linux); undefined once it is gone or elsewhere. */
export function residentMb(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const [, resident] = readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ');
    return (Number(resident) * PAGE_BYTES) / (1024 * 1024);
  } catch {
    return undefined;
  }
}

// statm counts pages; 4 KiB on the platforms Vouch supports (x86-64, arm64 Linux).
const PAGE_BYTES = 4096;
