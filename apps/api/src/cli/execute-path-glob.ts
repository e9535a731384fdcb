/**
 * A test for paths relative to a directory (`/` separators) against globs: `**` spans any
 * number of directories, `*` and `?` stay within one. A glob without a `/` matches the file's
 * name at any depth (`*.test.ts`), as in a `.gitignore`.
 */
export function globMatcher(globs: readonly string[]): (path: string) => boolean {
  const patterns = globs.map(globToRegExp);
  return (path) => patterns.some((pattern) => pattern.test(path));
}

function globToRegExp(glob: string): RegExp {
  const anchored = glob.replace(/\/$/, '').includes('/') ? glob.replace(/^\.?\//, '') : `**/${glob}`;
  let source = '';
  for (let i = 0; i < anchored.length; i++) {
    const char = anchored[i]!;
    if (char === '*' && anchored[i + 1] === '*') {
      const slash = anchored[i + 2] === '/';
      source += slash ? '(?:.*/)?' : '.*';
      i += slash ? 2 : 1;
    } else if (char === '*') source += '[^/]*';
    else if (char === '?') source += '[^/]';
    else source += char.replace(/[.+^${}()|[\]\\]/g, '\\$&');
  }
  // A directory glob (`dist`, `dist/`) covers everything under it.
  return new RegExp(`^${source.replace(/\/$/, '')}(?:/.*)?$`);
}
