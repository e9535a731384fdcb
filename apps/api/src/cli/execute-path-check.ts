import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import type ts from 'typescript';
import { globMatcher } from './execute-path-glob';
import { unscannedImport } from './execute-path-imports';
import { namespaceNames, runTimeReach } from './execute-path-reach';
import { untrustedExecute } from './execute-path-receiver';
import {
  constantStrings,
  foldString,
  isComposedString,
  isModuleSpecifier,
  nameOf,
  variableInitializers,
} from './execute-path-syntax';

// The execute-path guard: code may reach an upstream MCP tool call only inside the `invoke`
// (second argument) of `<receiver>.execute(…)`, so Vouch authorizes it first and records its
// outcome after. It reads syntax trees, not text: comments never trip it. Its rule is that
// every member, method and module the code reaches has a name the file fixes, and that the
// receiver is the Vouch client: whatever it cannot name (`client[name]()`, reflection, a
// namespace used whole, a message with a method chosen at run time) is flagged rather than
// missed, and so is anything that could stand in for the client's execute().

/** One reason the guard refuses the code. */
export type ExecutePathRule =
  | 'UPSTREAM_CALL_OUTSIDE_EXECUTE'
  | 'COMPUTED_MEMBER_CALL'
  | 'UNTRUSTED_EXECUTE'
  | 'UNSCANNED_IMPORT';

export const EXECUTE_PATH_RULES: readonly ExecutePathRule[] = [
  'UPSTREAM_CALL_OUTSIDE_EXECUTE',
  'COMPUTED_MEMBER_CALL',
  'UNTRUSTED_EXECUTE',
  'UNSCANNED_IMPORT',
];

/** One place that can reach an upstream tool call outside the execute path. */
export interface ExecutePathViolation {
  /** Path relative to the scanned directory, with `/` separators. */
  file: string;
  line: number;
  column: number;
  rule: ExecutePathRule;
  message: string;
}

/** An exception to the rules, with the reason a reviewer reads. */
export interface AllowEntry {
  /** A glob relative to the scanned directory, e.g. `src/upstream-call.ts`. */
  file: string;
  /**
   * Only inside this function (declaration, `const f = () => …`, or method). Allowing an
   * upstream call inside a function makes the function itself guarded: it may then be used
   * only inside `execute`'s invoke, like `callTool`.
   */
  function?: string;
  /** Only this rule (default: both). */
  rule?: ExecutePathRule;
  reason: string;
}

/** What to scan and what counts as an upstream call. */
export interface ExecutePathOptions {
  /** Globs of files to scan, relative to the directory (default: every source file). */
  include: readonly string[];
  exclude: readonly string[];
  /** Names the Vouch client has where `execute` is called on it (`vouch.execute`, `this.vouch.execute`). */
  receivers: readonly string[];
  /** Functions that return the Vouch client; a receiver may be bound only to their result (`createVouchClient`). */
  factories: readonly string[];
  /** Member and binding names that call an upstream tool (`callTool`, …). */
  names: readonly string[];
  /** JSON-RPC method names that call an upstream tool, matched in any string (`tools/call`). */
  methods: readonly string[];
  /** `calls` flags computed members that are called; `all` flags every computed member read. */
  computedMembers: 'calls' | 'all';
  allow: readonly AllowEntry[];
}

/** The result of one scan. */
export interface ExecutePathReport {
  /** Files read, relative to the directory. */
  files: string[];
  violations: ExecutePathViolation[];
}

/** The extensions the guard reads, and how TypeScript's parser reads each. */
const SOURCE_EXTENSIONS = /\.(ts|tsx|mts|cts|js|jsx|mjs|cjs)$/;

/** Scan `root` and return every violation not covered by the allow-list, in file and line order. */
export function checkExecutePath(
  typescript: typeof ts,
  root: string,
  options: ExecutePathOptions,
): ExecutePathReport {
  const included = globMatcher(options.include);
  const excluded = globMatcher(options.exclude);
  const files = listFiles(root, '').filter(
    (file) => SOURCE_EXTENSIONS.test(file) && included(file) && !excluded(file),
  );
  const scanned = new Set(files);
  const allow = options.allow.map((entry) => ({ ...entry, matches: globMatcher([entry.file]) }));
  // An allowed upstream call inside a function makes that function an upstream call itself.
  const wrappers = allow
    .filter((entry) => entry.function !== undefined && entry.rule !== 'COMPUTED_MEMBER_CALL')
    .map((entry) => ({ name: entry.function!, matches: entry.matches }));
  const guarded = new Set([...options.names, ...wrappers.map((w) => w.name)]);

  const violations: ExecutePathViolation[] = [];
  for (const file of files) {
    const text = readFileSync(join(root, file), 'utf8');
    const found = scanSource(typescript, file, text, {
      guarded,
      methods: options.methods,
      receivers: new Set(options.receivers),
      factories: new Set(options.factories),
      computedMembers: options.computedMembers,
      ownWrappers: new Set(wrappers.filter((w) => w.matches(file)).map((w) => w.name)),
      root,
      scanned,
    });
    for (const violation of found) {
      const allowed = allow.some(
        (entry) =>
          entry.matches(file) &&
          (entry.rule === undefined || entry.rule === violation.rule) &&
          (entry.function === undefined || violation.functions.includes(entry.function)),
      );
      if (!allowed) {
        const { functions: _, ...rest } = violation;
        violations.push(rest);
      }
    }
  }
  violations.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line || a.column - b.column);
  return { files, violations: onePerLineAndRule(violations) };
}

interface ScanOptions {
  guarded: ReadonlySet<string>;
  methods: readonly string[];
  receivers: ReadonlySet<string>;
  factories: ReadonlySet<string>;
  computedMembers: 'calls' | 'all';
  /** Wrapper functions declared in this file: their own declaration name is not a use. */
  ownWrappers: ReadonlySet<string>;
  root: string;
  /** Every file the scan reads, relative to the root. */
  scanned: ReadonlySet<string>;
}

type Found = ExecutePathViolation & { functions: string[] };

function scanSource(typescript: typeof ts, file: string, text: string, options: ScanOptions): Found[] {
  const t = typescript;
  const source = t.createSourceFile(file, text, t.ScriptTarget.Latest, true, scriptKind(t, file));
  const constants = constantStrings(t, source);
  const fold = (node: ts.Node) => foldString(t, node, constants);
  const initializers = variableInitializers(t, source);
  const reach = {
    constants,
    initializers,
    namespaces: namespaceNames(t, source),
    mode: options.computedMembers,
  };
  const receiver = { constants, initializers, receivers: options.receivers, factories: options.factories };
  const imports = { constants, root: options.root, file, scanned: options.scanned };
  const found: Found[] = [];
  const report = (node: ts.Node, rule: ExecutePathRule, message: string) => {
    const at = source.getLineAndCharacterOfPosition(node.getStart(source));
    found.push({
      file,
      line: at.line + 1,
      column: at.character + 1,
      rule,
      message,
      functions: enclosingFunctionNames(t, node),
    });
  };
  const guardedIn = (value: string): string | undefined => {
    if (options.guarded.has(value)) return value;
    return options.methods.find((method) => value.includes(method));
  };

  const visit = (node: ts.Node): void => {
    // A type cannot call anything; neither can an import of a name under that name.
    if (isTypeOnly(t, node)) return;
    if (insideExecuteInvoke(t, node, options.receivers)) return;

    const mentioned = mentionedName(t, node);
    if (mentioned !== undefined && !isPlainImportName(t, node) && !isOwnDeclaration(t, node, options)) {
      const name = guardedIn(mentioned);
      if (name !== undefined) {
        report(
          node,
          'UPSTREAM_CALL_OUTSIDE_EXECUTE',
          `${name} outside the invoke of ${receiverText(options)}.execute(): an upstream tool call must go through Vouch`,
        );
      }
    } else if (mentioned === undefined && isComposedString(t, node)) {
      const folded = fold(node);
      const name = folded === undefined ? undefined : guardedIn(folded);
      if (name !== undefined) {
        report(
          node,
          'UPSTREAM_CALL_OUTSIDE_EXECUTE',
          `a string computed to ${name} outside the invoke of ${receiverText(options)}.execute()`,
        );
        return;
      }
    }

    const unscanned = unscannedImport(t, node, imports);
    if (unscanned) report(node, 'UNSCANNED_IMPORT', unscanned);
    const untrusted = untrustedExecute(t, node, receiver);
    if (untrusted) report(node, 'UNTRUSTED_EXECUTE', untrusted);
    const computed = runTimeReach(t, node, reach);
    if (computed) report(node, 'COMPUTED_MEMBER_CALL', computed);
    t.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

function scriptKind(t: typeof ts, file: string): ts.ScriptKind {
  if (file.endsWith('.tsx')) return t.ScriptKind.TSX;
  if (/\.(c|m)?ts$/.test(file)) return t.ScriptKind.TS;
  if (file.endsWith('.jsx')) return t.ScriptKind.JSX;
  return t.ScriptKind.JS;
}

function listFiles(root: string, dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
    const path = dir === '' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) {
      // Never worth descending into, whatever the globs say.
      if (entry.name === 'node_modules' || entry.name === '.git') continue;
      files.push(...listFiles(root, path));
    } else if (entry.isFile()) {
      files.push(relative(root, join(root, path)).split(sep).join('/'));
    }
  }
  return files.sort();
}

/** The name a node mentions: an identifier, a property name, or the text of a string or template part. */
function mentionedName(t: typeof ts, node: ts.Node): string | undefined {
  if (t.isIdentifier(node) || t.isPrivateIdentifier(node)) return node.text;
  if (t.isStringLiteral(node) || t.isNoSubstitutionTemplateLiteral(node)) {
    // Module specifiers name files, not calls.
    return isModuleSpecifier(t, node) ? undefined : node.text;
  }
  if (t.isTemplateHead(node) || t.isTemplateMiddle(node) || t.isTemplateTail(node)) return node.text;
  return undefined;
}

function isTypeOnly(t: typeof ts, node: ts.Node): boolean {
  if (t.isTypeNode(node) && !t.isExpressionWithTypeArguments(node)) return true;
  if (t.isInterfaceDeclaration(node) || t.isTypeAliasDeclaration(node)) return true;
  if (t.isImportDeclaration(node)) return node.importClause?.isTypeOnly === true;
  if (t.isImportSpecifier(node) || t.isExportSpecifier(node)) return node.isTypeOnly;
  if (t.isExportDeclaration(node)) return node.isTypeOnly;
  return false;
}

/**
 * `import { callTool } from …` binds the name under its own name; using it is what the guard
 * checks. An alias (`import { callTool as go }`) would hide the uses, so the alias is flagged.
 */
function isPlainImportName(t: typeof ts, node: ts.Node): boolean {
  const parent = node.parent;
  if (t.isImportSpecifier(parent)) return parent.propertyName === undefined;
  return t.isImportClause(parent) || t.isNamespaceImport(parent);
}

/** The name in the declaration of an allowed wrapper, in its own file. */
function isOwnDeclaration(t: typeof ts, node: ts.Node, options: ScanOptions): boolean {
  if (!t.isIdentifier(node) || !options.ownWrappers.has(node.text)) return false;
  const parent = node.parent;
  return (
    (t.isFunctionDeclaration(parent) || t.isVariableDeclaration(parent) || t.isMethodDeclaration(parent)) &&
    parent.name === node
  );
}

/** Every named function around `node`, innermost first: declarations, `const f = () => …`, methods. */
function enclosingFunctionNames(t: typeof ts, node: ts.Node): string[] {
  const names: string[] = [];
  for (let at: ts.Node = node; at; at = at.parent) {
    if ((t.isFunctionDeclaration(at) || t.isMethodDeclaration(at)) && at.name) {
      names.push(at.name.getText());
    } else if (
      t.isVariableDeclaration(at) &&
      t.isIdentifier(at.name) &&
      at.initializer &&
      (t.isArrowFunction(at.initializer) || t.isFunctionExpression(at.initializer))
    ) {
      names.push(at.name.text);
    }
  }
  return names;
}

/**
 * True when `node` sits inside a function passed as the second argument of
 * `<…>.<receiver>.execute(…)`: the Vouch client's execute, not any method of that name.
 */
function insideExecuteInvoke(t: typeof ts, node: ts.Node, receivers: ReadonlySet<string>): boolean {
  const parent = node.parent;
  return (
    parent !== undefined &&
    (t.isArrowFunction(node) || t.isFunctionExpression(node)) &&
    t.isCallExpression(parent) &&
    parent.arguments[1] === node &&
    t.isPropertyAccessExpression(parent.expression) &&
    parent.expression.name.text === 'execute' &&
    receivers.has(nameOf(t, parent.expression.expression) ?? '')
  );
}

/** One violation per file, line and rule (the first column): one finding is enough to read the line. */
function onePerLineAndRule(violations: ExecutePathViolation[]): ExecutePathViolation[] {
  const seen = new Set<string>();
  return violations.filter((v) => {
    const key = `${v.file}:${v.line}:${v.rule}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

function receiverText(options: ScanOptions): string {
  return [...options.receivers].join('|') || 'vouch';
}
