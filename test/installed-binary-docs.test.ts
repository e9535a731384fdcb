import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runVouch } from '../apps/api/src/testing/cli-io';

// `vouch`, `vouch-mcp-gateway` and `@vouch/*` are not ours on the public npm registry. A bare
// `npx <name>` (or `npm exec`, `pnpm dlx`, `yarn dlx`, `bunx`) run where the package is not
// installed fetches and runs whatever is published under that name, with the user's keys in its
// environment. So every command we show names the installed binary: `npx --no-install vouch …`
// or `node_modules/.bin/vouch …`.

const repo = join(import.meta.dirname, '..');

/** A package runner and the words after it, up to the end of the shell command. */
const RUNNER = /\b(npx|npm\s+(?:exec|x)|pnpm\s+dlx|yarn\s+dlx|bunx|bun\s+x)\b([^\n`;|&)"']*)/g;
/** Our binaries and packages, with an optional version, also as `--package=…`. */
const OURS = /^(?:--package=)?(?:vouch|vouch-mcp-gateway|@vouch\/[\w.-]+)(?:@[\w.^~*-]*)?$/;

/** Each command in `text` that would let a package runner fetch one of our names from a registry. */
function bareRegistryRuns(text: string): string[] {
  const found: string[] = [];
  for (const match of text.matchAll(RUNNER)) {
    const [command, runner, rest] = match as unknown as [string, string, string];
    const words = rest.trim().split(/\s+/);
    const ours = words.findIndex((word) => OURS.test(word));
    if (ours < 0) continue;
    // Only npx and npm exec can be told to run what is installed, and never to fetch.
    const offline =
      /^np[mx]/.test(runner) &&
      words.slice(0, ours).some((word) => word === '--no-install' || word === '--no');
    if (!offline) found.push(command.trim());
  }
  return found;
}

/** Every text file of the repository a reader or a script could take a command from. */
function repositoryTexts(dir = repo): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    if (['node_modules', '.git', 'dist', 'coverage', '.cache', '.vouch', '.turbo'].includes(entry.name))
      continue;
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...repositoryTexts(path));
    else if (entry.isFile() && isText(entry.name) && statSync(path).size < 2_000_000) files.push(path);
  }
  return files;
}

function isText(name: string): boolean {
  return (
    /\.(md|ts|tsx|mts|cts|js|mjs|cjs|jsx|json|sh|ya?ml|toml|example|env|txt|html)$/.test(name) ||
    ['Dockerfile', 'run', 'Makefile'].includes(name)
  );
}

/** Every `vouch …` command and group, from `vouch --help` down. */
async function helpTexts(): Promise<Map<string, string>> {
  const texts = new Map<string, string>();
  const pending = [['vouch']];
  while (pending.length > 0) {
    const words = pending.shift()!;
    const { code, out } = await runVouch([...words.slice(1), '--help'], { cwd: tmpdir() });
    expect(code, words.join(' ')).toBe(0);
    texts.set(words.join(' '), out);
    for (const row of out.matchAll(/^\s+(vouch(?: [a-z][a-z-]*)+)\s{2,}/gm)) {
      const name = row[1]!;
      if (!texts.has(name) && name.split(' ').length > words.length) pending.push(name.split(' '));
    }
  }
  return texts;
}

describe('commands shown to users', () => {
  describe('when a file of the repository shows how to run Vouch', () => {
    it('names the installed binary, never a name a registry could serve', () => {
      const files = repositoryTexts();
      expect(files.length).toBeGreaterThan(100);
      const bare = files.flatMap((file) =>
        bareRegistryRuns(readFileSync(file, 'utf8')).map((command) => `${relative(repo, file)}: ${command}`),
      );
      expect(bare).toEqual([]);
    });
  });

  describe('when the vouch CLI prints the help of each command', () => {
    it('names the installed binary too', async () => {
      const texts = await helpTexts();
      expect(texts.has('vouch check-execute-path')).toBe(true);
      expect(texts.has('vouch keys create')).toBe(true);
      const bare = [...texts].flatMap(([command, text]) =>
        bareRegistryRuns(text).map((run) => `${command} --help: ${run}`),
      );
      expect(bare).toEqual([]);
    });
  });

  describe('the check', () => {
    // Written in parts, so that this file does not show them whole.
    const run = (...words: string[]) => words.join(' ');
    it.each([
      run('npx', 'vouch', 'serve'),
      run('npx', '-y', 'vouch-mcp-gateway'),
      run('npx', '--package=@vouch/api', 'vouch', 'keys', 'create'),
      run('npm', 'exec', '--', 'vouch', 'migrate'),
      run('pnpm', 'dlx', '@vouch/mcp-gateway'),
      run('bunx', 'vouch@latest', 'verify'),
      run('npx', 'vouch', 'check-execute-path', '--no-install'),
    ])('finds %s', (command) => {
      expect(bareRegistryRuns(`run \`${command}\` from a shell`)).toEqual([command]);
    });

    it.each([
      run('npx', '--no-install', 'vouch', 'serve'),
      run('npm', 'exec', '--no', '--', 'vouch-mcp-gateway'),
      'node_modules/.bin/vouch serve',
      run('npx', 'tsx', 'src/cli.ts'),
      'never start it with npx and the bare name',
    ])('accepts %s', (command) => {
      expect(bareRegistryRuns(command)).toEqual([]);
    });
  });
});
