import type ts from 'typescript';

// Small readings of a syntax tree that the execute-path guard's rules share.

/** What the file alone says about its strings: `const NAME = <string expression>`. */
export type Constants = ReadonlyMap<string, ts.Expression | null>;

/** `const NAME = <expression>` at any level of the file, when NAME is bound once (else null). */
export function constantStrings(t: typeof ts, source: ts.SourceFile): Map<string, ts.Expression | null> {
  const constants = new Map<string, ts.Expression | null>();
  const visit = (node: ts.Node): void => {
    if (
      t.isVariableDeclaration(node) &&
      t.isIdentifier(node.name) &&
      node.initializer &&
      t.isVariableDeclarationList(node.parent) &&
      (node.parent.flags & t.NodeFlags.Const) !== 0
    ) {
      const name = node.name.text;
      constants.set(name, constants.has(name) ? null : node.initializer);
    }
    t.forEachChild(node, visit);
  };
  visit(source);
  return constants;
}

/** Every `NAME = <initializer>` of a variable in the file. */
export function variableInitializers(t: typeof ts, source: ts.SourceFile): Map<string, ts.Expression[]> {
  const found = new Map<string, ts.Expression[]>();
  const visit = (node: ts.Node): void => {
    if (t.isVariableDeclaration(node) && t.isIdentifier(node.name) && node.initializer) {
      found.set(node.name.text, [...(found.get(node.name.text) ?? []), node.initializer]);
    }
    t.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** The string an expression always evaluates to, when the file alone says so. */
export function foldString(t: typeof ts, node: ts.Node, constants: Constants, depth = 0): string | undefined {
  if (depth > 20) return undefined;
  const again = (next: ts.Node) => foldString(t, next, constants, depth + 1);
  if (t.isStringLiteral(node) || t.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (t.isParenthesizedExpression(node) || t.isAsExpression(node) || t.isSatisfiesExpression(node)) {
    return again(node.expression);
  }
  if (t.isBinaryExpression(node) && node.operatorToken.kind === t.SyntaxKind.PlusToken) {
    const left = again(node.left);
    const right = left === undefined ? undefined : again(node.right);
    return right === undefined ? undefined : left! + right;
  }
  if (t.isTemplateExpression(node)) {
    let text = node.head.text;
    for (const span of node.templateSpans) {
      const value = again(span.expression);
      if (value === undefined) return undefined;
      text += value + span.literal.text;
    }
    return text;
  }
  if (t.isIdentifier(node)) {
    const initializer = constants.get(node.text);
    return initializer ? again(initializer) : undefined;
  }
  if (t.isCallExpression(node) && t.isPropertyAccessExpression(node.expression)) {
    const method = node.expression.name.text;
    if (method === 'concat') {
      const parts = [node.expression.expression, ...node.arguments].map(again);
      return parts.every((part) => part !== undefined) ? parts.join('') : undefined;
    }
    if (method === 'join' && t.isArrayLiteralExpression(node.expression.expression)) {
      const parts = node.expression.expression.elements.map(again);
      const separator = node.arguments[0] === undefined ? ',' : again(node.arguments[0]);
      return separator !== undefined && parts.every((part) => part !== undefined)
        ? parts.join(separator)
        : undefined;
    }
  }
  return undefined;
}

/** A member key the file fixes: a string it can fold, a number, or a well-known symbol (`Symbol.iterator`). */
export function isFixedKey(t: typeof ts, key: ts.Expression, constants: Constants): boolean {
  if (t.isNumericLiteral(key) || foldString(t, key, constants) !== undefined) return true;
  return (
    t.isPropertyAccessExpression(key) && t.isIdentifier(key.expression) && key.expression.text === 'Symbol'
  );
}

/** A string built from parts: `a + b`, a template with substitutions, `.concat(…)`, `[…].join(…)`. */
export function isComposedString(t: typeof ts, node: ts.Node): boolean {
  if (t.isBinaryExpression(node)) return node.operatorToken.kind === t.SyntaxKind.PlusToken;
  if (t.isTemplateExpression(node)) return true;
  if (t.isCallExpression(node) && t.isPropertyAccessExpression(node.expression)) {
    return ['concat', 'join'].includes(node.expression.name.text);
  }
  return false;
}

/** An import, export or `require`/`import()` argument: names a file, not a call. */
export function isModuleSpecifier(t: typeof ts, node: ts.Node): boolean {
  const parent = node.parent;
  return (
    t.isImportDeclaration(parent) ||
    t.isExportDeclaration(parent) ||
    t.isExternalModuleReference(parent) ||
    (t.isCallExpression(parent) && parent.arguments[0] === node && isModuleLoad(t, parent))
  );
}

/** `import(…)` or `require(…)`. */
export function isModuleLoad(t: typeof ts, call: ts.CallExpression): boolean {
  return (
    call.expression.kind === t.SyntaxKind.ImportKeyword ||
    (t.isIdentifier(call.expression) && call.expression.text === 'require')
  );
}

/** The last name of `a`, `a.b`, `a.b!`, `(a.b)`. */
export function nameOf(t: typeof ts, expression: ts.Expression): string | undefined {
  const inner = skipWrappers(t, expression);
  if (t.isIdentifier(inner)) return inner.text;
  if (t.isPropertyAccessExpression(inner)) return inner.name.text;
  return undefined;
}

/** The expression under parentheses, `!`, `as`, `satisfies` and `await`. */
export function skipWrappers(t: typeof ts, expression: ts.Expression): ts.Expression {
  let at = expression;
  while (
    t.isParenthesizedExpression(at) ||
    t.isNonNullExpression(at) ||
    t.isAsExpression(at) ||
    t.isSatisfiesExpression(at) ||
    t.isAwaitExpression(at)
  ) {
    at = at.expression;
  }
  return at;
}

/** The node whose parent is not a wrapper of it (parentheses, `!`, `as`, `satisfies`, `await`). */
export function outermost(t: typeof ts, node: ts.Node): ts.Node {
  let at = node;
  while (
    t.isParenthesizedExpression(at.parent) ||
    t.isNonNullExpression(at.parent) ||
    t.isAsExpression(at.parent) ||
    t.isSatisfiesExpression(at.parent) ||
    t.isAwaitExpression(at.parent)
  ) {
    at = at.parent;
  }
  return at;
}

/** `Object.name(…)` / `Reflect.name(…)`: the object's and the method's names. */
export function builtinCall(
  t: typeof ts,
  node: ts.Node,
): { object: string; method: string; call: ts.CallExpression } | undefined {
  if (!t.isCallExpression(node)) return undefined;
  const callee = node.expression;
  if (!t.isPropertyAccessExpression(callee) || !t.isIdentifier(callee.expression)) return undefined;
  return { object: callee.expression.text, method: callee.name.text, call: node };
}

/** Called directly, or through `.call`, `.apply` or `.bind`. */
export function isCalled(t: typeof ts, node: ts.Expression): boolean {
  const at = outermost(t, node);
  const parent = at.parent;
  if (t.isCallExpression(parent) && parent.expression === at) return true;
  if (t.isTaggedTemplateExpression(parent) && parent.tag === at) return true;
  return (
    t.isPropertyAccessExpression(parent) &&
    ['call', 'apply', 'bind'].includes(parent.name.text) &&
    t.isCallExpression(parent.parent)
  );
}

/** The name a declaration declares, when the file fixes it (`execute`, `'execute'`, `['exec' + 'ute']`). */
export function declaredName(
  t: typeof ts,
  name: ts.Node | undefined,
  constants: Constants,
): string | undefined {
  if (name === undefined) return undefined;
  if (t.isIdentifier(name) || t.isPrivateIdentifier(name)) return name.text;
  if (t.isStringLiteral(name) || t.isNoSubstitutionTemplateLiteral(name)) return name.text;
  if (t.isComputedPropertyName(name)) return foldString(t, name.expression, constants);
  return undefined;
}
