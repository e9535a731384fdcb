import { open, stat } from 'node:fs/promises';
import { type CosignatureVerifier, parseCosignerKey } from '@vouch/audit';
import type { OptionSpec } from './command';
import { CliError } from './io';

/** `--witness KEY`: a witness verifier key (cosignature/v1, type 0x04), repeatable. */
export const WITNESS_OPTION = {
  type: 'string',
  value: 'KEY',
  multiple: true,
  help: 'a witness key <name>+<id>+<base64> whose cosignature counts\ntoward --threshold (repeatable)',
} as const satisfies OptionSpec;

/** `--threshold N`: how many of the `--witness` keys must have cosigned. */
export const THRESHOLD_OPTION = {
  type: 'string',
  value: 'N',
  help: 'refuse a checkpoint without valid cosignatures by N of the\n--witness keys (default: all of them); exit 3',
} as const satisfies OptionSpec;

/**
 * The witness requirement the flags ask for, or undefined when no `--witness` was given.
 * `CliError` for a key that does not parse, or a threshold that no set of the keys can meet.
 */
export function parseWitnessRequirement(
  keys: readonly string[] | undefined,
  threshold: string | undefined,
): { keys: CosignatureVerifier[]; threshold: number } | undefined {
  if (keys === undefined || keys.length === 0) {
    if (threshold !== undefined)
      throw new CliError('--threshold N needs the witness keys: --witness KEY (repeatable)');
    return undefined;
  }
  const parsed = keys.map((key) => {
    try {
      return parseCosignerKey(key.trim());
    } catch (error) {
      throw new CliError(`--witness ${key} is not a witness key: ${(error as Error).message}`);
    }
  });
  const n = threshold === undefined ? parsed.length : Number(threshold);
  if ((threshold !== undefined && !/^[0-9]+$/.test(threshold)) || n < 1 || n > parsed.length) {
    throw new CliError(
      `--threshold ${threshold} is not a number from 1 to the ${parsed.length} --witness keys`,
    );
  }
  return { keys: parsed, threshold: n };
}

/** Most bytes read from a bundle's end to find its checkpoint line (a note of 100 signatures is ~10 KiB). */
const TAIL_BYTES = 256 * 1024;

/**
 * The signed note of a bundle's checkpoint line (its last `{"checkpoint":…}` line), read from
 * the end of the file so a large bundle is not read twice. Undefined when there is none.
 */
export async function bundleCheckpointNote(path: string): Promise<string | undefined> {
  const { size } = await stat(path);
  const length = Math.min(size, TAIL_BYTES);
  const handle = await open(path, 'r');
  try {
    const buffer = Buffer.alloc(length);
    await handle.read(buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').split('\n');
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i]!;
      if (!line.startsWith('{"checkpoint":')) continue;
      try {
        const value = JSON.parse(line) as { checkpoint?: unknown };
        return typeof value.checkpoint === 'string' ? value.checkpoint : undefined;
      } catch {
        return undefined;
      }
    }
    return undefined;
  } finally {
    await handle.close();
  }
}
