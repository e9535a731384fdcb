import { createHash } from 'node:crypto';
import { constants, type FileHandle, open, readlink } from 'node:fs/promises';
import path from 'node:path';
import {
  type CheckResult,
  defineVerifier,
  type JsonValue,
  sourceForbidden,
  sourceUnavailable,
  VERIFIER_API_VERSION,
} from '@vouch/verifier-sdk';
import { checkResultOf, unfilledTemplate } from '../shared/check-result';
import { evaluateJsonAssertion } from '../shared/json-assertions';
import { fillTemplate, readScope, type TemplateScope, templateScope } from '../shared/template';
import { type FileAssertion, fileOptionsSchema } from './file-options';
import { resolveUnderRoots } from './resolve-under-roots';

interface Outcome {
  op: FileAssertion['op'];
  ok: boolean | null;
  observed: JsonValue;
  expected: JsonValue;
  message: string;
  reason?: string;
}

/**
 * `file`: check what a coding agent wrote: a file under configured roots exists (or not), has
 * a SHA-256, contains a text, matches a pattern, or holds a JSON value at a pointer. The path
 * comes from the proposal and is resolved with every symlink followed; anything outside the
 * roots is refused with `SOURCE_FORBIDDEN` (see the package README for why).
 *
 * @example
 * { roots: ['/srv/checkout'], path: '{arguments.path}', assertions: [{ op: 'sha256', from: 'arguments.sha256' }] }
 */
export const fileVerifier = defineVerifier({
  id: 'file',
  version: '0.1.0',
  apiVersion: VERIFIER_API_VERSION,
  description: 'Checks a file under configured roots: existence, SHA-256, contents, a JSON value.',
  handles: ['file', 'file.*'],
  phase: ['post', 'pre'],
  options: fileOptionsSchema,
  timeoutMs: 5_000,
  async check(ctx): Promise<CheckResult> {
    const { options, postcondition, signal } = ctx;
    const scope = templateScope(ctx);
    const result = checkResultOf(postcondition.name, options.source);
    // No encoding: this is a file path, not a URL. Containment is enforced after resolution.
    const filled = fillTemplate(options.path, scope, (value) => value);
    if (!filled.ok) {
      return unfilledTemplate(result, filled.problem, 'the path');
    }
    const resolved = await resolveUnderRoots(filled.value, options.roots);
    signal.throwIfAborted();
    const relative = path.relative(resolved.root, resolved.real) || '.';
    const evidence: Record<string, JsonValue> = { root: resolved.root, path: relative };

    const file = resolved.exists ? await openUnderRoot(resolved.real, resolved.root, filled.value) : null;
    try {
      const stat = file ? await file.stat() : null;
      const isFile = stat?.isFile() ?? false;
      evidence.type = stat === null ? 'none' : isFile ? 'file' : stat.isDirectory() ? 'directory' : 'other';
      if (isFile) evidence.size = stat!.size;
      const reader = new ContentReader(file, options.maxBytes, signal);
      const outcomes: Outcome[] = [];
      for (const assertion of options.assertions) {
        outcomes.push(await evaluate(assertion, { isFile, reader, scope }));
      }
      const verdict = outcomes.some((o) => o.ok === false)
        ? 'fail'
        : outcomes.some((o) => o.ok === null)
          ? 'inconclusive'
          : 'pass';
      const undecided = outcomes.find((o) => o.ok === null);
      if (reader.sha256) evidence.sha256 = reader.sha256;
      const failed = outcomes.filter((o) => o.ok !== true);
      return result(verdict, {
        observed: outcomes.map((o) => o.observed),
        expected: outcomes.map((o) => o.expected),
        evidence: {
          ...evidence,
          assertions: outcomes.map((o) => ({ op: o.op, ok: o.ok, message: o.message })),
        },
        message: failed.length === 0 ? 'every assertion holds' : failed.map((o) => o.message).join('; '),
        ...(verdict === 'inconclusive' && undecided?.reason ? { reason: undecided.reason } : {}),
      });
    } finally {
      await file?.close();
    }
  },
});

/**
 * Open without following a final symlink and without blocking (an agent could plant a FIFO to
 * hang the verifier), then (on Linux) ask the kernel which file the
 * descriptor really is and check that again: a directory swapped for a symlink between the
 * realpath check and the open cannot redirect the read outside the root.
 */
async function openUnderRoot(real: string, root: string, requested: string): Promise<FileHandle> {
  let file: FileHandle;
  try {
    file = await open(real, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'ERROR';
    if (code === 'ELOOP')
      throw sourceForbidden(`${requested} changed into a symlink while being checked`, { cause: error });
    throw sourceUnavailable(`cannot open ${requested} (${code})`, { evidence: { code }, cause: error });
  }
  if (process.platform === 'linux') {
    const actual = await readlink(`/proc/self/fd/${file.fd}`).catch(() => null);
    if (actual !== null && actual !== root && !actual.startsWith(`${root}${path.sep}`)) {
      await file.close();
      throw sourceForbidden(`${requested} moved outside the allowed roots while being checked`);
    }
  }
  return file;
}

/** Reads the file once, lazily: a streamed SHA-256 for any size, the bytes only up to `maxBytes`. */
class ContentReader {
  sha256: string | undefined;
  #bytes: Buffer | null | undefined;

  constructor(
    private readonly file: FileHandle | null,
    private readonly maxBytes: number,
    private readonly signal: AbortSignal,
  ) {}

  async hash(): Promise<string> {
    if (this.sha256 !== undefined) return this.sha256;
    const hash = createHash('sha256');
    const chunk = Buffer.alloc(64 * 1024);
    for (let position = 0; ; ) {
      this.signal.throwIfAborted();
      const { bytesRead } = await this.file!.read(chunk, 0, chunk.length, position);
      if (bytesRead === 0) break;
      hash.update(chunk.subarray(0, bytesRead));
      position += bytesRead;
    }
    this.sha256 = hash.digest('hex');
    return this.sha256;
  }

  /** The contents, or null when the file is larger than `maxBytes`. */
  async bytes(): Promise<Buffer | null> {
    if (this.#bytes !== undefined) return this.#bytes;
    const buffer = Buffer.alloc(this.maxBytes + 1);
    let total = 0;
    while (total < buffer.length) {
      this.signal.throwIfAborted();
      const { bytesRead } = await this.file!.read(buffer, total, buffer.length - total, total);
      if (bytesRead === 0) break;
      total += bytesRead;
    }
    this.#bytes = total > this.maxBytes ? null : buffer.subarray(0, total);
    if (this.#bytes !== null) this.sha256 ??= createHash('sha256').update(this.#bytes).digest('hex');
    return this.#bytes;
  }
}

async function evaluate(
  assertion: FileAssertion,
  input: { isFile: boolean; reader: ContentReader; scope: TemplateScope },
): Promise<Outcome> {
  const { isFile, reader, scope } = input;
  if (assertion.op === 'exists') {
    return {
      op: 'exists',
      ok: isFile,
      observed: isFile,
      expected: true,
      message: isFile ? 'the file exists' : 'no such file',
    };
  }
  if (assertion.op === 'absent') {
    return {
      op: 'absent',
      ok: !isFile,
      observed: isFile,
      expected: false,
      message: isFile ? 'the file exists' : 'no such file',
    };
  }
  if (!isFile)
    return { op: assertion.op, ok: false, observed: null, expected: null, message: 'no such file' };

  if (assertion.op === 'sha256') {
    const wanted = expected(assertion.value, assertion.from, scope);
    if (wanted === undefined)
      return undecided('sha256', `${assertion.from} is missing`, 'TEMPLATE_VALUE_MISSING');
    const actual = await reader.hash();
    const ok = typeof wanted === 'string' && actual === wanted.toLowerCase();
    return {
      op: 'sha256',
      ok,
      observed: actual,
      expected: wanted,
      message: ok ? 'the hash matches' : 'the hash differs',
    };
  }

  const bytes = await reader.bytes();
  if (bytes === null) return undecided(assertion.op, 'the file is larger than maxBytes', 'FILE_TOO_LARGE');
  const text = bytes.toString('utf8');
  if (assertion.op === 'contains') {
    const wanted = expected(assertion.text, assertion.from, scope);
    if (typeof wanted !== 'string')
      return undecided('contains', `${assertion.from} is missing`, 'TEMPLATE_VALUE_MISSING');
    const ok = text.includes(wanted);
    return {
      op: 'contains',
      ok,
      observed: ok,
      expected: wanted,
      message: ok ? 'the text is there' : 'the text is not there',
    };
  }
  if (assertion.op === 'matches') {
    const ok = new RegExp(assertion.pattern, `u${assertion.flags ?? ''}`).test(text);
    return {
      op: 'matches',
      ok,
      observed: ok,
      expected: assertion.pattern,
      message: ok ? 'the pattern matches' : 'no match',
    };
  }
  let document: unknown;
  try {
    document = JSON.parse(text);
  } catch {
    // The agent wrote something that is not JSON: the postcondition "holds this JSON value" is false.
    return { op: 'json', ok: false, observed: null, expected: null, message: 'the file is not valid JSON' };
  }
  const outcome = evaluateJsonAssertion(document, assertion.assert, scope);
  return {
    op: 'json',
    ok: outcome.ok,
    observed: outcome.observed,
    expected: outcome.expected,
    message: outcome.message,
    ...(outcome.ok === null ? { reason: 'TEMPLATE_VALUE_MISSING' } : {}),
  };
}

function expected(
  value: string | undefined,
  from: string | undefined,
  scope: TemplateScope,
): JsonValue | undefined {
  if (value !== undefined) return value;
  const found = readScope(scope, from!);
  return found.found ? found.value : undefined;
}

function undecided(op: FileAssertion['op'], message: string, reason: string): Outcome {
  return { op, ok: null, observed: null, expected: null, message, reason };
}
