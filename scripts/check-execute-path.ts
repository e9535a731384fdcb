/**
 * The execute-path guard. The MCP gateway is only as strong as the path that cannot bypass
 * Vouch, so this check fails the build when any gateway source can reach an upstream tool
 * call other than through `execute`:
 *
 * - `UPSTREAM_CALL_OUTSIDE_MODULE`: `callTool`, `callToolStream`, the `tools/call` method name
 *   or `CallToolResultSchema` anywhere but the one call module (`upstream-call.ts`), or in it
 *   outside the function that performs the call.
 * - `CALL_FUNCTION_ESCAPES`: a value import, re-export or dynamic import of the call module
 *   anywhere but the execute-path module (`call-tool.ts`). Type-only imports are fine: a type
 *   cannot call anything.
 * - `CALL_OUTSIDE_EXECUTE`: in the execute-path module, the call function used anywhere but
 *   inside the `invoke` argument (the second) of an `.execute(...)` call.
 *
 * It reads syntax trees (TypeScript's own parser), not text, so comments and docs that
 * mention `tools/call` do not trip it. Tests (`*.test.ts`) are not scanned: they drive the
 * gateway as an agent would, and calling the *gateway's* tools is their job.
 *
 * Run: `npx tsx scripts/check-execute-path.ts` (exit 1 on a violation). `npm test` runs it
 * through `test/execute-path-guard.test.ts`, which also proves it flags a planted violation.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/** One reason the guard refuses the code. */
export type ExecutePathRule =
  | 'UPSTREAM_CALL_OUTSIDE_MODULE'
  | 'CALL_FUNCTION_ESCAPES'
  | 'CALL_OUTSIDE_EXECUTE';

/** One place that can reach an upstream tool call outside the execute path. */
export interface ExecutePathViolation {
  /** Path relative to the scanned directory, with `/` separators. */
  file: string;
  line: number;
  rule: ExecutePathRule;
  message: string;
}

/** Which directory to scan and which two modules make up the execute path. */
export interface ExecutePathOptions {
  /** The gateway's source directory. */
  sourceDir: string;
  /** The one module allowed to call upstream tools (default `upstream-call.ts`). */
  callModule?: string;
  /** The function in it that makes the call (default `callUpstreamTool`). */
  callFunction?: string;
  /** The one module allowed to use that function, inside `execute` (default `call-tool.ts`). */
  executeModule?: string;
  /** The name the Vouch client has where `execute` is called on it (default `vouch`). */
  executeReceiver?: string;
}

const CALL_NAMES = new Set(['callTool', 'callToolStream']);
const CALL_SCHEMA = 'CallToolResultSchema';
const METHOD = 'tools/call';

/** Scan `sourceDir` and return every violation, in file and line order. */
export function checkExecutePath(options: ExecutePathOptions): ExecutePathViolation[] {
  const root = resolve(options.sourceDir);
  const callModule = resolve(root, options.callModule ?? 'upstream-call.ts');
  const executeModule = resolve(root, options.executeModule ?? 'call-tool.ts');
  const callFunction = options.callFunction ?? 'callUpstreamTool';
  const receiver = options.executeReceiver ?? 'vouch';
  const violations: ExecutePathViolation[] = [];

  for (const path of sourceFiles(root)) {
    const text = readFileSync(path, 'utf8');
    const source = ts.createSourceFile(path, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
    const file = relative(root, path).split(sep).join('/');
    const report = (node: ts.Node, rule: ExecutePathRule, message: string) => {
      const { line } = source.getLineAndCharacterOfPosition(node.getStart(source));
      violations.push({ file, line: line + 1, rule, message });
    };
    const isCallModule = path === callModule;
    const isExecuteModule = path === executeModule;
    const importsCallModule = (specifier: string) =>
      specifier.startsWith('.') &&
      stripExtension(resolve(dirname(path), specifier)) === stripExtension(callModule);

    const visit = (node: ts.Node): void => {
      // Rule 1: the raw upstream call.
      const name = mentionedName(node);
      if (name !== undefined && (CALL_NAMES.has(name) || name === CALL_SCHEMA || name.includes(METHOD))) {
        // The call module imports what the call needs; an import binding cannot call anything.
        const inside = isCallModule && (enclosingFunctionName(node) === callFunction || isImportName(node));
        if (!inside) {
          report(
            node,
            'UPSTREAM_CALL_OUTSIDE_MODULE',
            isCallModule
              ? `${name} outside ${callFunction}: the call module may call upstream tools in that function only`
              : `${name}: only ${relative(root, callModule)} may call upstream tools`,
          );
        }
      }

      // Rule 2: the call function leaving its two modules.
      if (!isCallModule && !isExecuteModule) {
        if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
          if (importsCallModule(node.moduleSpecifier.text) && importsValue(node)) {
            report(
              node,
              'CALL_FUNCTION_ESCAPES',
              `value import of the call module; only the execute path may use it`,
            );
          }
        }
        if (
          ts.isExportDeclaration(node) &&
          node.moduleSpecifier &&
          ts.isStringLiteral(node.moduleSpecifier)
        ) {
          if (importsCallModule(node.moduleSpecifier.text) && !node.isTypeOnly && exportsValue(node)) {
            report(node, 'CALL_FUNCTION_ESCAPES', `re-export of the call module exposes the upstream call`);
          }
        }
      }
      if (!isCallModule && isDynamicImport(node) && importsCallModule(dynamicSpecifier(node) ?? '')) {
        report(node, 'CALL_FUNCTION_ESCAPES', `dynamic import of the call module`);
      }

      // Rule 3: in the execute path, the call function only as execute's invoke.
      if (isExecuteModule && ts.isIdentifier(node) && node.text === callFunction && !isImportName(node)) {
        if (!insideExecuteInvoke(node, receiver)) {
          report(
            node,
            'CALL_OUTSIDE_EXECUTE',
            `${callFunction} used outside the invoke argument of ${receiver}.execute()`,
          );
        }
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return violations.sort((a, b) => a.file.localeCompare(b.file) || a.line - b.line);
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (
      /\.(c|m)?tsx?$/.test(entry.name) &&
      !/\.test\.(c|m)?tsx?$/.test(entry.name) &&
      !entry.name.endsWith('.d.ts')
    ) {
      files.push(path);
    }
  }
  return files.sort();
}

/** The name a node mentions: an identifier, a property name, or the text of a string or template. */
function mentionedName(node: ts.Node): string | undefined {
  if (ts.isIdentifier(node) || ts.isPrivateIdentifier(node)) return node.text;
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
    // Module specifiers name files, not calls.
    if (ts.isImportDeclaration(node.parent) || ts.isExportDeclaration(node.parent)) return undefined;
    return node.text;
  }
  if (ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) return node.text;
  return undefined;
}

function enclosingFunctionName(node: ts.Node): string | undefined {
  for (let at: ts.Node | undefined = node.parent; at; at = at.parent) {
    if (ts.isFunctionDeclaration(at) && at.name) return at.name.text;
  }
  return undefined;
}

function importsValue(node: ts.ImportDeclaration): boolean {
  const clause = node.importClause;
  if (!clause) return true; // a side-effect import runs the module
  if (clause.isTypeOnly) return false;
  if (clause.name) return true;
  const bindings = clause.namedBindings;
  if (!bindings) return false;
  if (ts.isNamespaceImport(bindings)) return true;
  return bindings.elements.some((element) => !element.isTypeOnly);
}

function exportsValue(node: ts.ExportDeclaration): boolean {
  if (!node.exportClause) return true; // export * from
  if (ts.isNamespaceExport(node.exportClause)) return true;
  return node.exportClause.elements.some((element) => !element.isTypeOnly);
}

function isDynamicImport(node: ts.Node): node is ts.CallExpression {
  if (!ts.isCallExpression(node)) return false;
  if (node.expression.kind === ts.SyntaxKind.ImportKeyword) return true;
  return ts.isIdentifier(node.expression) && node.expression.text === 'require';
}

function dynamicSpecifier(node: ts.CallExpression): string | undefined {
  const first = node.arguments[0];
  return first && ts.isStringLiteralLike(first) ? first.text : undefined;
}

function isImportName(node: ts.Node): boolean {
  return ts.isImportSpecifier(node.parent) || ts.isImportClause(node.parent);
}

/**
 * True when `node` sits inside a function passed as the second argument of
 * `<...>.<receiver>.execute(...)`: the Vouch client's execute, not any method of that name.
 */
function insideExecuteInvoke(node: ts.Node, receiver: string): boolean {
  for (let at: ts.Node = node; at.parent; at = at.parent) {
    const parent = at.parent;
    if (
      (ts.isArrowFunction(at) || ts.isFunctionExpression(at)) &&
      ts.isCallExpression(parent) &&
      parent.arguments[1] === at &&
      ts.isPropertyAccessExpression(parent.expression) &&
      parent.expression.name.text === 'execute' &&
      nameOf(parent.expression.expression) === receiver
    ) {
      return true;
    }
  }
  return false;
}

function nameOf(expression: ts.Expression): string | undefined {
  if (ts.isIdentifier(expression)) return expression.text;
  if (ts.isPropertyAccessExpression(expression)) return expression.name.text;
  return undefined;
}

function stripExtension(path: string): string {
  return path.replace(/\.(c|m)?(t|j)sx?$/, '');
}

/** Format violations for a terminal. */
export function formatViolations(violations: readonly ExecutePathViolation[]): string {
  return violations.map((v) => `${v.file}:${v.line}  ${v.rule}  ${v.message}`).join('\n');
}

// Run directly: scan the gateway and exit 1 on any violation.
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const sourceDir =
    process.argv[2] ?? join(dirname(fileURLToPath(import.meta.url)), '..', 'apps', 'mcp-gateway', 'src');
  const violations = checkExecutePath({ sourceDir });
  if (violations.length > 0) {
    process.stderr.write(
      `execute-path guard: ${violations.length} violation(s)\n${formatViolations(violations)}\n`,
    );
    process.exitCode = 1;
  } else {
    process.stdout.write('execute-path guard: every upstream tool call goes through execute()\n');
  }
}
