import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { sourceForbidden, sourceUnavailable } from '@vouch/verifier-sdk';

/** Where a requested path really is, and under which root. */
export interface ResolvedPath {
  /** The fully resolved path (no symlinks, no `..`). */
  real: string;
  /** The resolved root it lies under. */
  root: string;
  /** False when nothing exists there (the parent directories do, and lie under the root). */
  exists: boolean;
}

/**
 * Resolve `requested` (relative to the first root, or absolute) with every symlink followed,
 * and make sure the result lies under one of the roots, themselves resolved with realpath.
 *
 * The path comes from the proposal, which an agent wrote: `..`, absolute paths and symlinks
 * planted by the agent must not let a verifier read (or even probe for) files elsewhere. So a
 * path that does not exist is judged by its deepest existing ancestor, and a dangling symlink
 * is refused rather than reported absent: its target may lie outside the roots.
 */
export async function resolveUnderRoots(requested: string, roots: readonly string[]): Promise<ResolvedPath> {
  if (requested.includes('\0'))
    throw sourceForbidden('the path holds a NUL byte', { evidence: { path: requested } });
  const realRoots = await Promise.all(
    roots.map(async (root) => {
      try {
        return await realpath(root);
      } catch (error) {
        throw sourceUnavailable(`root ${root} cannot be read`, {
          evidence: { root, code: (error as NodeJS.ErrnoException).code ?? 'ERROR' },
          cause: error,
        });
      }
    }),
  );
  const candidate = path.resolve(roots[0]!, requested);
  let real: string;
  let exists = true;
  try {
    real = await realpath(candidate);
  } catch (error) {
    if (
      (error as NodeJS.ErrnoException).code !== 'ENOENT' &&
      (error as NodeJS.ErrnoException).code !== 'ENOTDIR'
    ) {
      throw sourceUnavailable(`cannot resolve ${requested}`, {
        evidence: { path: requested, code: (error as NodeJS.ErrnoException).code ?? 'ERROR' },
        cause: error,
      });
    }
    exists = false;
    real = await resolveMissing(candidate, requested);
  }
  const root = realRoots.find(
    (r) => real === r || real.startsWith(r.endsWith(path.sep) ? r : `${r}${path.sep}`),
  );
  if (root === undefined) {
    throw sourceForbidden(`${requested} lies outside the allowed roots`, { evidence: { path: requested } });
  }
  return { real, root, exists };
}

async function resolveMissing(candidate: string, requested: string): Promise<string> {
  // Walk up to the deepest entry that exists (lstat: without following it).
  let existing = candidate;
  const rest: string[] = [];
  for (;;) {
    try {
      await lstat(existing);
      break;
    } catch {
      const parent = path.dirname(existing);
      if (parent === existing) break;
      rest.unshift(path.basename(existing));
      existing = parent;
    }
  }
  if (existing === candidate) {
    // lstat sees it but realpath does not: a dangling symlink, pointing who knows where.
    throw sourceForbidden(`${requested} is a dangling symlink`, { evidence: { path: requested } });
  }
  try {
    return path.join(await realpath(existing), ...rest);
  } catch (error) {
    throw sourceForbidden(`${requested} goes through a link that cannot be resolved`, {
      evidence: { path: requested },
      cause: error,
    });
  }
}
