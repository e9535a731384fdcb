import type ts from 'typescript';
import {
  builtinCall,
  type Constants,
  foldString,
  isCalled,
  isFixedKey,
  isModuleLoad,
  nameOf,
  outermost,
  skipWrappers,
} from './execute-path-syntax';

// The guard knows an upstream tool call by its names (`callTool`, `tools/call`, an allowed
// wrapper). This module finds the places where code reaches a member, a method or a module
// without a name the file fixes, since any of those could be one of the guarded names:
// computed members, reflection, module namespaces and prototypes used whole, code built at run
// time, and JSON-RPC messages whose method is not a fixed string.

/** What one file's rules need to know beyond the node. */
export interface ReachContext {
  constants: Constants;
  /** Every `NAME = <initializer>` of a variable in the file, to follow a name one step. */
  initializers: ReadonlyMap<string, readonly ts.Expression[]>;
  /** Names bound to a module namespace: `import * as ns`, `await import(…)`, `require(…)`. */
  namespaces: ReadonlySet<string>;
  mode: 'calls' | 'all';
}

const REMEDY = 'name it, or allow-list the line with a reason';

/** Reflection that lists an object's members, whatever their names. */
const LISTS_MEMBERS = new Set([
  'Object.getOwnPropertyNames',
  'Object.getOwnPropertyDescriptors',
  'Object.getOwnPropertySymbols',
  'Reflect.ownKeys',
]);
/** Reflection that reaches (or defines) the member its second argument names. */
const REACHES_KEY = new Set([
  'Object.getOwnPropertyDescriptor',
  'Reflect.getOwnPropertyDescriptor',
  'Reflect.get',
  'Object.defineProperty',
  'Reflect.defineProperty',
]);

/** Why `node` reaches something the guard cannot name, or undefined. */
export function runTimeReach(t: typeof ts, node: ts.Node, context: ReachContext): string | undefined {
  return (
    computedMember(t, node, context) ??
    reflection(t, node, context.constants) ??
    legacyReflection(t, node, context.constants) ??
    codeAtRunTime(t, node, context.constants) ??
    codeObjectUsedWhole(t, node, context) ??
    unfixedMessage(t, node, context.constants) ??
    rawTransportSend(t, node, context)
  );
}

/** `client[name]()` (or any read of it with `all`), and `request({ method: m })`, `request(m, Schema)`. */
function computedMember(t: typeof ts, node: ts.Node, context: ReachContext): string | undefined {
  const fold = (key: ts.Node) => foldString(t, key, context.constants);
  if (t.isElementAccessExpression(node)) {
    const key = node.argumentExpression;
    if (isFixedKey(t, key, context.constants) || looksNumeric(t, key)) return undefined;
    if (context.mode === 'all' || isCalled(t, node)) {
      return `${node.getText()}: a member chosen at run time could be an upstream tool call; ${REMEDY}`;
    }
    return undefined;
  }
  if (!t.isCallExpression(node)) return undefined;
  const callee = node.expression;
  if (t.isPropertyAccessExpression(callee) && callee.name.text === 'request') {
    const [message, schema] = node.arguments;
    if (message && t.isObjectLiteralExpression(message)) {
      const method = message.properties.find(
        (p) => p.name !== undefined && t.isIdentifier(p.name) && p.name.text === 'method',
      );
      if (method && !(t.isPropertyAssignment(method) && fold(method.initializer) !== undefined)) {
        return `request() with a method chosen at run time could be tools/call; ${REMEDY}`;
      }
    } else if (message && schema && /Schema$/.test(nameOf(t, schema) ?? '')) {
      return `request(${message.getText()}, ${schema.getText()}) forwards a request whose method the guard cannot see; ${REMEDY}`;
    }
  }
  return undefined;
}

/** `Object.getOwnPropertyNames(x)`, `Object.getOwnPropertyDescriptor(x, key)`, `Reflect.apply(f, …)`, … */
function reflection(t: typeof ts, node: ts.Node, constants: Constants): string | undefined {
  const call = builtinCall(t, node);
  if (call === undefined) return undefined;
  const qualified = `${call.object}.${call.method}`;
  if (LISTS_MEMBERS.has(qualified)) {
    return `${qualified}(…) lists members whatever their names, and could find an upstream tool call; ${REMEDY}`;
  }
  const key = REACHES_KEY.has(qualified) ? call.call.arguments[1] : undefined;
  if (REACHES_KEY.has(qualified) && (key === undefined || foldString(t, key, constants) === undefined)) {
    return `${qualified}(…) reaches a member the guard cannot name; ${REMEDY}`;
  }
  if (qualified === 'Reflect.apply' || qualified === 'Reflect.construct') {
    return `${qualified}(…) calls a function the guard cannot name; ${REMEDY}`;
  }
  return undefined;
}

/** `x.__lookupGetter__(k)` and its kin: the legacy reflection every object has. */
function legacyReflection(t: typeof ts, node: ts.Node, constants: Constants): string | undefined {
  if (!t.isCallExpression(node) || !t.isPropertyAccessExpression(node.expression)) return undefined;
  const method = node.expression.name.text;
  if (!/^__(lookup|define)[GS]etter__$/.test(method)) return undefined;
  const key = node.arguments[0];
  if (key !== undefined && foldString(t, key, constants) !== undefined) return undefined;
  return `${method}(…) reaches a member the guard cannot name; ${REMEDY}`;
}

/** `eval(…)`, `Function(…)`, `new Proxy(…)`, `import(spec)` and `require(spec)` with a spec chosen at run time. */
function codeAtRunTime(t: typeof ts, node: ts.Node, constants: Constants): string | undefined {
  if (!t.isCallExpression(node) && !t.isNewExpression(node)) return undefined;
  const callee = node.expression;
  if (t.isIdentifier(callee) && ['eval', 'Function'].includes(callee.text)) {
    return `${callee.text}(…) runs code the guard cannot read; ${REMEDY}`;
  }
  if (t.isNewExpression(node) && t.isIdentifier(callee) && callee.text === 'Proxy') {
    return `a Proxy makes members at run time, an execute() or a tool call among them; ${REMEDY}`;
  }
  if (t.isCallExpression(node) && isModuleLoad(t, node)) {
    const spec = node.arguments[0];
    if (spec === undefined || foldString(t, spec, constants) === undefined) {
      return `a module chosen at run time (${node.getText()}) could be any code; ${REMEDY}`;
    }
  }
  return undefined;
}

/**
 * A module namespace or a prototype holds code under every name it has. The guard follows it
 * only through a fixed member name (`ns.name`, `const { a, b } = ns`); anything else (listing it,
 * spreading it, looping over it, handing it on) reaches members the guard cannot name.
 */
function codeObjectUsedWhole(t: typeof ts, node: ts.Node, context: ReachContext): string | undefined {
  const what = codeObject(t, node, context.namespaces);
  if (what === undefined || usedThroughAName(t, outermost(t, node), context.constants)) return undefined;
  return `${what} used other than through a fixed member name reaches members the guard cannot name; ${REMEDY}`;
}

function codeObject(t: typeof ts, node: ts.Node, namespaces: ReadonlySet<string>): string | undefined {
  if (t.isIdentifier(node) && namespaces.has(node.text) && !isDeclarationName(t, node)) {
    // `x.ns` is another object's member, and `{ ns: … }` a property name.
    const parent = node.parent;
    if (t.isPropertyAccessExpression(parent) && parent.name === node) return undefined;
    if (t.isPropertyAssignment(parent) && parent.name === node) return undefined;
    if (t.isImportSpecifier(parent) || t.isBindingElement(parent)) return undefined;
    return `the module namespace ${node.text}`;
  }
  if (t.isPropertyAccessExpression(node) && ['prototype', '__proto__'].includes(node.name.text)) {
    return `the prototype ${node.getText()}`;
  }
  const call = builtinCall(t, node);
  if (call && call.method === 'getPrototypeOf' && ['Object', 'Reflect'].includes(call.object)) {
    return `the prototype ${node.getText()}`;
  }
  if (t.isCallExpression(node) && isModuleLoad(t, node) && !boundToAName(t, outermost(t, node))) {
    return `the module ${node.getText()}`;
  }
  return undefined;
}

/** `const ns = await import(…)`: the name is followed as a namespace instead. */
function boundToAName(t: typeof ts, at: ts.Node): boolean {
  const parent = at.parent;
  return t.isVariableDeclaration(parent) && parent.initializer === at && t.isIdentifier(parent.name);
}

/** `ns.name`, `ns['name']`, `ns(…)`, `new ns()`, `typeof ns`, `ns === x`, `const { a } = ns`. */
function usedThroughAName(t: typeof ts, at: ts.Node, constants: Constants): boolean {
  const parent = at.parent;
  if (t.isPropertyAccessExpression(parent) && parent.expression === at) return true;
  if (t.isElementAccessExpression(parent) && parent.expression === at) {
    return isFixedKey(t, parent.argumentExpression, constants);
  }
  if ((t.isCallExpression(parent) || t.isNewExpression(parent)) && parent.expression === at) return true;
  if (t.isTypeOfExpression(parent)) return true;
  if (t.isBinaryExpression(parent)) {
    return [
      t.SyntaxKind.EqualsEqualsEqualsToken,
      t.SyntaxKind.ExclamationEqualsEqualsToken,
      t.SyntaxKind.EqualsEqualsToken,
      t.SyntaxKind.ExclamationEqualsToken,
      t.SyntaxKind.InstanceOfKeyword,
    ].includes(parent.operatorToken.kind);
  }
  if (t.isVariableDeclaration(parent) && parent.initializer === at && t.isObjectBindingPattern(parent.name)) {
    return parent.name.elements.every(
      (element) =>
        element.dotDotDotToken === undefined &&
        (element.propertyName === undefined || !t.isComputedPropertyName(element.propertyName)),
    );
  }
  return false;
}

function isDeclarationName(t: typeof ts, node: ts.Identifier): boolean {
  const parent = node.parent;
  return (
    (t.isNamespaceImport(parent) ||
      t.isVariableDeclaration(parent) ||
      t.isParameter(parent) ||
      t.isImportEqualsDeclaration(parent)) &&
    parent.name === node
  );
}

/**
 * A JSON-RPC message (an object with `jsonrpc`, or a `method` with `params`; a log entry's
 * `{ id, method }` is not one) whose method the file does not fix: sent through a transport, a
 * socket or `fetch`, it could be `tools/call`.
 */
function unfixedMessage(t: typeof ts, node: ts.Node, constants: Constants): string | undefined {
  if (!t.isObjectLiteralExpression(node)) return undefined;
  const named = (name: string) =>
    node.properties.find((p) => p.name !== undefined && t.isIdentifier(p.name) && p.name.text === name);
  const method = named('method');
  const isMessage = named('jsonrpc') !== undefined || (method !== undefined && named('params') !== undefined);
  if (!isMessage) return undefined;
  if (method === undefined) {
    return node.properties.some((p) => t.isSpreadAssignment(p))
      ? `a JSON-RPC message whose method comes from a spread could be tools/call; ${REMEDY}`
      : undefined;
  }
  const fixed = t.isPropertyAssignment(method)
    ? foldString(t, method.initializer, constants)
    : t.isShorthandPropertyAssignment(method)
      ? foldString(t, method.name, constants)
      : undefined;
  return fixed === undefined
    ? `a JSON-RPC message with a method chosen at run time could be tools/call; ${REMEDY}`
    : undefined;
}

/** `transport.send(message)`: a message handed to an MCP transport as it is, below the client. */
function rawTransportSend(t: typeof ts, node: ts.Node, context: ReachContext): string | undefined {
  if (!t.isCallExpression(node) || !t.isPropertyAccessExpression(node.expression)) return undefined;
  if (node.expression.name.text !== 'send' || !isTransport(t, node.expression.expression, context, 0)) {
    return undefined;
  }
  const message = node.arguments[0];
  if (message !== undefined && t.isObjectLiteralExpression(skipWrappers(t, message))) return undefined;
  return `${node.expression.getText()}(…) sends a message the guard cannot read straight to a transport; ${REMEDY}`;
}

/** Named like a transport (`transport`, `_transport`, `['transport']`), or a name bound to one here. */
function isTransport(t: typeof ts, expression: ts.Expression, context: ReachContext, depth: number): boolean {
  const target = skipWrappers(t, expression);
  const name = t.isElementAccessExpression(target)
    ? foldString(t, target.argumentExpression, context.constants)
    : nameOf(t, target);
  if (/transport/i.test(name ?? '')) return true;
  if (!t.isIdentifier(target) || depth > 5) return false;
  return (context.initializers.get(target.text) ?? []).some((value) =>
    isTransport(t, value, context, depth + 1),
  );
}

/** `xs[i]`, `xs[i + 1]`, `xs[xs.length - 1]`: index arithmetic, not a member name. */
function looksNumeric(t: typeof ts, key: ts.Expression): boolean {
  if (t.isPrefixUnaryExpression(key) || t.isPostfixUnaryExpression(key)) return true;
  if (t.isBinaryExpression(key)) {
    return [t.SyntaxKind.MinusToken, t.SyntaxKind.AsteriskToken, t.SyntaxKind.SlashToken].includes(
      key.operatorToken.kind,
    );
  }
  return false;
}

/** Names bound to a module namespace in this file. */
export function namespaceNames(t: typeof ts, source: ts.SourceFile): Set<string> {
  const names = new Set<string>();
  const visit = (node: ts.Node): void => {
    if (t.isNamespaceImport(node) || t.isImportEqualsDeclaration(node)) names.add(node.name.text);
    if (t.isVariableDeclaration(node) && t.isIdentifier(node.name) && node.initializer) {
      const value = skipWrappers(t, node.initializer);
      if (t.isCallExpression(value) && isModuleLoad(t, value)) names.add(node.name.text);
    }
    // import('x').then((ns) => …)
    if (
      t.isCallExpression(node) &&
      t.isPropertyAccessExpression(node.expression) &&
      node.expression.name.text === 'then' &&
      t.isCallExpression(skipWrappers(t, node.expression.expression)) &&
      isModuleLoad(t, skipWrappers(t, node.expression.expression) as ts.CallExpression)
    ) {
      const handler = node.arguments[0];
      const first =
        handler && (t.isArrowFunction(handler) || t.isFunctionExpression(handler))
          ? handler.parameters[0]?.name
          : undefined;
      if (first && t.isIdentifier(first)) names.add(first.text);
    }
    t.forEachChild(node, visit);
  };
  visit(source);
  return names;
}
