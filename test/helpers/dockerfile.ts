// Reads the repository's Dockerfile into stages of instructions, so tests can hold the image
// to what the pack-and-run smoke test installs and runs (there is no docker daemon in CI).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const DOCKERFILE = fileURLToPath(new URL('../../Dockerfile', import.meta.url));

export interface Instruction {
  keyword: string;
  args: string;
}

export interface Stage {
  /** The `AS` name, or `null` for an unnamed (final) stage. */
  name: string | null;
  base: string;
  instructions: Instruction[];
}

/** The Dockerfile's stages, continuation lines joined and comments dropped. */
export function readDockerfile(path: string = DOCKERFILE): Stage[] {
  const lines = readFileSync(path, 'utf8')
    .replace(/\\\r?\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('#'));
  const stages: Stage[] = [];
  for (const line of lines) {
    const [, keyword = '', args = ''] = /^(\S+)\s*(.*)$/.exec(line) ?? [];
    const upper = keyword.toUpperCase();
    if (upper === 'FROM') {
      const [base = '', , name = null] = args.split(/\s+/);
      stages.push({ name, base, instructions: [] });
    } else if (stages.length > 0) {
      stages.at(-1)!.instructions.push({ keyword: upper, args });
    }
  }
  return stages;
}

/** The arguments of the stage's last `keyword` instruction (as Docker applies it), or undefined. */
export function lastOf(stage: Stage, keyword: string): string | undefined {
  return stage.instructions.filter((i) => i.keyword === keyword).at(-1)?.args;
}

/** An exec-form argument list (`["node", "-e", "…"]`), as Docker reads it: JSON. */
export function execForm(args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string'))
    throw new Error(`not an exec-form array: ${args}`);
  return parsed;
}

/** `HEALTHCHECK [--options] CMD [...]`: the command's exec form. */
export function healthcheckCommand(stage: Stage): string[] | undefined {
  const args = lastOf(stage, 'HEALTHCHECK');
  const cmd = args === undefined ? undefined : /\bCMD\s+(\[.*\])\s*$/.exec(args)?.[1];
  return cmd === undefined ? undefined : execForm(cmd);
}
