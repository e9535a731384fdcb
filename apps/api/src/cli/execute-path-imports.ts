import { existsSync, statSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import type ts from 'typescript';
import { type Constants, foldString, isModuleLoad } from './execute-path-syntax';

// The guard judges only the files it reads. A scanned file that imports one it does not read
// (a test helper, a mock, a file excluded or outside the directory) could get a tool call or a
// stand-in `execute` from there unseen, so such an import is flagged. Packages are not followed:
// what a dependency does is the reader's to know (packages/client/README.md).

/** What the import rule needs to know about the scan. */
export interface ImportContext {
  constants: Constants;
  root: string;
  /** The file being read, relative to the root. */
  file: string;
  /** Every file the scan reads, relative to the root. */
  scanned: ReadonlySet<string>;
}

/** How TypeScript and Node find a relative specifier's file. */
const CANDIDATE_SUFFIXES = ['', '.ts', '.tsx', '.mts', '.cts', '.js', '.jsx', '.mjs', '.cjs'];
const SOURCE = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

/** Why the import at `node` brings in code the guard does not read, or undefined. */
export function unscannedImport(t: typeof ts, node: ts.Node, context: ImportContext): string | undefined {
  const specifier = importedSpecifier(t, node, context.constants);
  if (specifier === undefined || !/^\.\.?(\/|$)/.test(specifier)) return undefined;
  const found = resolveSource(join(context.root, dirname(context.file), specifier));
  if (found === undefined) return undefined;
  const path = relative(context.root, found).split(sep).join('/');
  if (context.scanned.has(path)) return undefined;
  const where = path.startsWith('../') ? 'outside the scanned directory' : 'not scanned (excluded)';
  return `imports ${specifier}, ${where}: a tool call or an execute() there is not seen; scan it, or allow-list the line with a reason`;
}

/** The specifier of an import, export-from, `import()` or `require()` that loads code at run time. */
function importedSpecifier(t: typeof ts, node: ts.Node, constants: Constants): string | undefined {
  if (t.isImportDeclaration(node) && node.importClause?.isTypeOnly !== true) {
    return foldString(t, node.moduleSpecifier, constants);
  }
  if (t.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier) {
    return foldString(t, node.moduleSpecifier, constants);
  }
  if (t.isCallExpression(node) && isModuleLoad(t, node) && node.arguments[0]) {
    return foldString(t, node.arguments[0], constants);
  }
  return undefined;
}

/** The source file a path names (`./x`, `./x.js` for `./x.ts`, `./dir` for its index), if any. */
function resolveSource(path: string): string | undefined {
  const bases = [path, path.replace(/\.(m|c)?js$/, '')];
  for (const base of bases) {
    for (const suffix of CANDIDATE_SUFFIXES) {
      const candidate = base + suffix;
      if (isSourceFile(candidate)) return candidate;
    }
    for (const suffix of CANDIDATE_SUFFIXES.slice(1)) {
      const index = join(base, `index${suffix}`);
      if (isSourceFile(index)) return index;
    }
  }
  return undefined;
}

function isSourceFile(path: string): boolean {
  if (!SOURCE.test(path) || path.endsWith('.d.ts')) return false;
  return existsSync(path) && statSync(path).isFile();
}
