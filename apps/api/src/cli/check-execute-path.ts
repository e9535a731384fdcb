import { statSync } from 'node:fs';
import { resolve } from 'node:path';
import type ts from 'typescript';
import { defineCommand } from './command';
import { checkExecutePath, type ExecutePathViolation } from './execute-path-check';
import { DEFAULT_EXCLUDE, EXECUTE_PATH_CONFIG_FILE, executePathOptions } from './execute-path-config';
import { CliError, EXIT } from './io';

/** `vouch check-execute-path [DIR]`: fail CI when code can call an MCP tool outside `vouch.execute`. */
export const checkExecutePathCommand = defineCommand({
  name: 'vouch check-execute-path',
  summary: 'fail when code can call an MCP tool outside vouch.execute() (for CI)',
  description: `Scan the .ts, .tsx, .mts, .cts, .js, .jsx, .mjs and .cjs files under DIR (default: the
current directory) and report every place that can reach an upstream MCP tool call other
than inside the invoke of vouch.execute(action, (context) => …). The rule: every member,
method and module the code reaches has a name the file fixes, and only the Vouch client
has an execute().

  UPSTREAM_CALL_OUTSIDE_EXECUTE  callTool, callToolStream, CallToolResultSchema or the
                                 'tools/call' method, also when built from parts
                                 ('call' + 'Tool'), outside execute's invoke
  COMPUTED_MEMBER_CALL           something reached without a fixed name: client[name](),
                                 reflection (Reflect.get/apply, getOwnPropertyNames,
                                 getOwnPropertyDescriptor(s)), a module namespace or a
                                 prototype used whole (Object.values(ns), {...ns}), a
                                 JSON-RPC message whose method is chosen at run time,
                                 transport.send(message), import(spec), eval, Proxy
  UNTRUSTED_EXECUTE              anything that could stand in for the Vouch client: an
                                 execute defined in the code, a receiver bound to other than
                                 createVouchClient(…), @vouch/client/testing
  UNSCANNED_IMPORT               a relative import of a source file the scan does not read
                                 (excluded, a test, or outside DIR)

Configuration: --config FILE, else DIR/${EXECUTE_PATH_CONFIG_FILE} when it exists:
include/exclude globs, receivers (the Vouch client's names, default ["vouch"]), factories
(what makes it, default ["createVouchClient"]), more names and methods to guard,
computedMembers ("calls" or "all"), and allow: [{ file, function?, rule?, reason }].
Skipped by default: ${DEFAULT_EXCLUDE.join(' ')}.
Needs the \`typescript\` package (its parser) installed in the project.`,
  options: {
    config: {
      type: 'string',
      value: 'FILE',
      help: `the configuration (default DIR/${EXECUTE_PATH_CONFIG_FILE})`,
    },
    include: {
      type: 'string',
      multiple: true,
      value: 'GLOB',
      help: 'scan only files matching GLOB (repeatable)',
    },
    exclude: {
      type: 'string',
      multiple: true,
      value: 'GLOB',
      help: 'also skip files matching GLOB (repeatable)',
    },
    json: { type: 'boolean', help: 'print the report as JSON' },
  },
  positionals: [{ name: 'DIR', optional: true }],
  footer:
    'Exit: 0 no violation, 1 violations (each as FILE:LINE:COLUMN: RULE: message), 2 usage or configuration error.',
  async action({ values, positionals }, io) {
    const dir = resolve(io.cwd, positionals[0] ?? '.');
    if (!isDirectory(dir)) throw new CliError(`${dir} is not a directory`);
    const { options, configFile } = executePathOptions({
      dir,
      configFile: values.config,
      cwd: io.cwd,
      include: values.include ?? [],
      exclude: values.exclude ?? [],
    });
    const report = checkExecutePath(await loadTypescript(), dir, options);
    const { violations } = report;
    if (values.json) {
      io.out(
        `${JSON.stringify({ ok: violations.length === 0, dir, configFile, files: report.files.length, violations }, null, 2)}\n`,
      );
    } else if (violations.length > 0) {
      io.out(`${violations.map(formatViolation).join('\n')}\n`);
      io.err(
        `vouch check-execute-path: ${violations.length} violation(s) in ${report.files.length} file(s); call upstream tools inside vouch.execute(), or allow-list the line with a reason in ${configFile ?? EXECUTE_PATH_CONFIG_FILE}\n`,
      );
    } else {
      io.err(
        `vouch check-execute-path: ${report.files.length} file(s), every upstream tool call goes through execute()\n`,
      );
    }
    return violations.length === 0 ? EXIT.OK : EXIT.BROKEN;
  },
});

/** `file:line:column: RULE: message`, the shape editors and CI annotations link from. */
export function formatViolation(v: ExecutePathViolation): string {
  return `${v.file}:${v.line}:${v.column}: ${v.rule}: ${v.message}`;
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

// TypeScript's parser reads every flavour (TS, TSX, JS, JSX, ESM, CJS), but it is large: it is
// an optional peer of @vouch/api, loaded only here, from the project being checked.
async function loadTypescript(): Promise<typeof ts> {
  try {
    const loaded = (await import('typescript')) as { default?: typeof ts } & typeof ts;
    return loaded.default ?? loaded;
  } catch {
    throw new CliError(
      'this command needs the typescript package for its parser: npm install --save-dev typescript',
    );
  }
}
