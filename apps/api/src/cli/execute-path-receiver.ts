import type ts from 'typescript';
import {
  type Constants,
  declaredName,
  foldString,
  isComposedString,
  isModuleSpecifier,
  nameOf,
  skipWrappers,
} from './execute-path-syntax';

// The guard trusts the invoke of `<receiver>.execute(…)` because the receiver is the Vouch
// client, whose execute runs the invoke only after the server authorized the call. That trust
// holds only if nothing else in the code can be that receiver: so no code defines an
// `execute`, and a receiver name is bound only to the client a factory made or to a name
// passed along (a parameter, `deps.vouch`).

/** What one file's receiver rule needs. */
export interface ReceiverContext {
  constants: Constants;
  /** The Vouch client's names (`vouch`). */
  receivers: ReadonlySet<string>;
  /** Functions that return the Vouch client (`createVouchClient`). */
  factories: ReadonlySet<string>;
  /** Every `NAME = <initializer>` of a variable in the file, for following a name one step at a time. */
  initializers: ReadonlyMap<string, readonly ts.Expression[]>;
}

/** The in-memory fake: a client whose execute() reaches no server. */
const FAKE_CLIENT_MODULE = /^@vouch\/client\/testing(\/|$)/;

/** Why `node` could stand in for the Vouch client's execute(), or undefined. */
export function untrustedExecute(t: typeof ts, node: ts.Node, context: ReceiverContext): string | undefined {
  return (
    definesExecute(t, node, context.constants) ?? untrustedBinding(t, node, context) ?? fakeClient(t, node)
  );
}

function definesExecute(t: typeof ts, node: ts.Node, constants: Constants): string | undefined {
  const defined =
    'an `execute` defined outside the Vouch client could run the invoke without Vouch; only the client made by createVouchClient() has one';
  if (
    (t.isPropertyAssignment(node) ||
      t.isShorthandPropertyAssignment(node) ||
      t.isMethodDeclaration(node) ||
      t.isPropertyDeclaration(node) ||
      t.isGetAccessorDeclaration(node) ||
      t.isSetAccessorDeclaration(node)) &&
    declaredName(t, node.name, constants) === 'execute'
  ) {
    return defined;
  }
  if (t.isBinaryExpression(node) && isAssignment(t, node.operatorToken.kind)) {
    const target = skipWrappers(t, node.left);
    const assigned = t.isPropertyAccessExpression(target)
      ? target.name.text
      : t.isElementAccessExpression(target)
        ? foldString(t, target.argumentExpression, constants)
        : undefined;
    if (assigned === 'execute') return defined;
  }
  // 'execute' as a string anywhere else: Object.defineProperty(x, 'execute', …), fromEntries, …
  if (
    (t.isStringLiteral(node) || t.isNoSubstitutionTemplateLiteral(node) || isComposedString(t, node)) &&
    !isModuleSpecifier(t, node) &&
    !isDeclarationName(t, node) &&
    foldString(t, node, constants) === 'execute'
  ) {
    return defined;
  }
  return undefined;
}

function untrustedBinding(t: typeof ts, node: ts.Node, context: ReceiverContext): string | undefined {
  const bound = boundValue(t, node, context.receivers);
  if (bound === undefined || isTrusted(t, bound.value, context, 0)) return undefined;
  return `${bound.name} is bound to something other than the Vouch client (${[...context.factories].join(', ')}(…) or a name passed along): its execute() may not be Vouch's`;
}

/**
 * The value a receiver name is bound to at `node`: a declaration, a default, a class field, or
 * an assignment (`vouch = …`, `this.vouch = …`, `globalThis.vouch = …`). A property written in
 * an object literal (`{ vouch: … }`) is not judged here: configuration objects and schemas name
 * their Vouch settings so, and an `execute` put into such an object is caught where it is defined.
 */
function boundValue(
  t: typeof ts,
  node: ts.Node,
  receivers: ReadonlySet<string>,
): { name: string; value: ts.Expression } | undefined {
  if (
    (t.isVariableDeclaration(node) ||
      t.isParameter(node) ||
      t.isBindingElement(node) ||
      t.isPropertyDeclaration(node)) &&
    t.isIdentifier(node.name) &&
    receivers.has(node.name.text) &&
    node.initializer
  ) {
    return { name: node.name.text, value: node.initializer };
  }
  if (t.isBinaryExpression(node) && node.operatorToken.kind === t.SyntaxKind.EqualsToken) {
    const name = nameOf(t, node.left);
    if (name !== undefined && receivers.has(name)) return { name, value: node.right };
  }
  return undefined;
}

/**
 * Whether a value bound to a receiver could carry an `execute` the file does not define: the
 * result of a call other than a factory's, a `new`, a class, an object spreading another one.
 * A literal's own members are judged where they are defined; a name is followed to each of its
 * bindings in the file (a parameter or an import is judged where its value is made).
 */
function isTrusted(
  t: typeof ts,
  expression: ts.Expression,
  context: ReceiverContext,
  depth: number,
): boolean {
  if (depth > 10) return false;
  const value = skipWrappers(t, expression);
  if (t.isCallExpression(value)) return context.factories.has(nameOf(t, value.expression) ?? '');
  if (t.isNewExpression(value) || t.isClassExpression(value)) return false;
  if (t.isObjectLiteralExpression(value)) return !value.properties.some((p) => t.isSpreadAssignment(p));
  if (t.isConditionalExpression(value) || t.isBinaryExpression(value)) {
    const [a, b] = t.isConditionalExpression(value)
      ? [value.whenTrue, value.whenFalse]
      : [value.left, value.right];
    return isTrusted(t, a, context, depth + 1) && isTrusted(t, b, context, depth + 1);
  }
  if (t.isIdentifier(value)) {
    const bindings = context.initializers.get(value.text) ?? [];
    return bindings.every((initializer) => isTrusted(t, initializer, context, depth + 1));
  }
  return true;
}

function fakeClient(t: typeof ts, node: ts.Node): string | undefined {
  if ((t.isStringLiteral(node) || t.isNoSubstitutionTemplateLiteral(node)) && isModuleSpecifier(t, node)) {
    if (FAKE_CLIENT_MODULE.test(node.text)) {
      return `${node.text} is the in-memory fake: its execute() runs the invoke with no Vouch server deciding or recording`;
    }
  }
  return undefined;
}

function isAssignment(t: typeof ts, kind: ts.SyntaxKind): boolean {
  return kind >= t.SyntaxKind.FirstAssignment && kind <= t.SyntaxKind.LastAssignment;
}

/** The string is the name of a property or method, judged where it is declared. */
function isDeclarationName(t: typeof ts, node: ts.Node): boolean {
  const parent = node.parent;
  return (
    (t.isPropertyAssignment(parent) ||
      t.isMethodDeclaration(parent) ||
      t.isPropertyDeclaration(parent) ||
      t.isGetAccessorDeclaration(parent) ||
      t.isSetAccessorDeclaration(parent)) &&
    parent.name === node
  );
}
