import type { CallToolResult } from '@modelcontextprotocol/server';

/** A named set of patterns the gateway knows, or an operator's own regular expression. */
export type MaskPattern = 'secrets' | 'personal-data' | { regex: string; flags?: string };

/**
 * What a tool's result must satisfy before the agent sees it. The ledger keeps the full
 * result (the observation's `result`, an erasable member); only the agent's copy is changed.
 */
export interface ResultObligations {
  mask?: {
    /**
     * JSON pointers (RFC 6901) whose values are replaced by `[masked]`, looked up in the
     * result's `structuredContent` and in each text block whose text is JSON.
     */
    pointers?: readonly string[];
    /** Every string in the result is searched for these, and each match replaced. */
    patterns?: readonly MaskPattern[];
  };
  /** Largest result the agent gets, in bytes of its JSON (content and structured content). */
  maxBytes?: number;
}

/** What applying the obligations changed, for the agent's `_meta`. */
export interface ObligationsApplied {
  masked: number;
  truncated?: { original_bytes: number; shown_bytes: number };
}

const MASKED = '[masked]';

interface CompiledPattern {
  regex: RegExp;
  replacement: string;
  /** A match is masked only when this holds (card numbers: the Luhn check). */
  accept?: (match: string) => boolean;
}

/** Secrets that have a recognisable shape; a secret without one needs a pointer. */
const SECRET_PATTERNS: readonly RegExp[] = [
  /-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g,
  /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/g,
  /\bgh[pousr]_[A-Za-z0-9]{36,}\b/g,
  /\bgithub_pat_[A-Za-z0-9_]{22,}\b/g,
  /\bxox[abprs]-[A-Za-z0-9-]{10,}/g,
  /\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}\b/g,
  /\bsk-[A-Za-z0-9_-]{20,}/g,
  /\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
  /(?<=\bBearer\s+)[A-Za-z0-9._~+/-]{16,}=*/g,
  /(?<=\b(?:password|passwd|secret|api[_-]?key|access[_-]?token)["']?\s*[:=]\s*["']?)[^\s"',;]{6,}/gi,
];

const PERSONAL_DATA_PATTERNS: readonly RegExp[] = [
  /[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}/g,
  /\b\d{3}-\d{2}-\d{4}\b/g,
  /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g,
  /\+\d{1,3}[ -]?(?:\(\d{1,4}\)[ -]?)?\d{2,4}(?:[ -]?\d{2,4}){2,4}\b/g,
];

/** Payment card numbers: 13 to 19 digits (spaces or dashes between) that pass the Luhn check. */
const CARD_NUMBER = /\b\d(?:[ -]?\d){12,18}\b/g;

function passesLuhn(text: string): boolean {
  const digits = text.replace(/\D/g, '');
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let digit = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      digit *= 2;
      if (digit > 9) digit -= 9;
    }
    sum += digit;
  }
  return sum % 10 === 0;
}

function compile(patterns: readonly MaskPattern[]): CompiledPattern[] {
  return patterns.flatMap((pattern): CompiledPattern[] => {
    if (pattern === 'secrets') {
      return SECRET_PATTERNS.map((regex) => ({ regex, replacement: '[masked:secret]' }));
    }
    if (pattern === 'personal-data') {
      return [
        { regex: CARD_NUMBER, replacement: '[masked:personal-data]', accept: passesLuhn },
        ...PERSONAL_DATA_PATTERNS.map((regex) => ({ regex, replacement: '[masked:personal-data]' })),
      ];
    }
    const flags = pattern.flags ?? '';
    return [
      { regex: new RegExp(pattern.regex, flags.includes('g') ? flags : `${flags}g`), replacement: MASKED },
    ];
  });
}

/** Whether `regex` compiles; for the configuration's check. */
export function isValidRegex(source: string, flags = ''): boolean {
  try {
    new RegExp(source, flags);
    return true;
  } catch {
    return false;
  }
}

/** Whether `pointer` is an RFC 6901 JSON pointer. */
export function isJsonPointer(pointer: string): boolean {
  return pointer === '' || (pointer.startsWith('/') && !/~[^01]|~$/.test(pointer));
}

function tokensOf(pointer: string): string[] {
  return pointer
    .split('/')
    .slice(1)
    .map((token) => token.replaceAll('~1', '/').replaceAll('~0', '~'));
}

/** Replace the value at `pointer` in `document` (in place); whether it was there. */
function maskAt(document: unknown, pointer: string): boolean {
  const tokens = tokensOf(pointer);
  const last = tokens.pop();
  if (last === undefined) return false;
  let node: unknown = document;
  for (const token of tokens) {
    if (typeof node !== 'object' || node === null || !Object.hasOwn(node, token)) return false;
    node = (node as Record<string, unknown>)[token];
  }
  if (typeof node !== 'object' || node === null || !Object.hasOwn(node, last)) return false;
  (node as Record<string, unknown>)[last] = MASKED;
  return true;
}

/** Keys whose string values are not content: block types, encodings and binary data. */
const NOT_CONTENT = new Set(['type', 'mimeType', 'data', 'blob', '_meta']);

/** Apply the patterns to every string leaf of `value` (in place for objects and arrays). */
function maskStrings(value: unknown, patterns: readonly CompiledPattern[], count: { n: number }): unknown {
  if (typeof value === 'string') {
    let text = value;
    for (const { regex, replacement, accept } of patterns) {
      text = text.replace(regex, (match) => {
        if (accept && !accept(match)) return match;
        count.n++;
        return replacement;
      });
    }
    return text;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = maskStrings(value[i], patterns, count);
    return value;
  }
  if (typeof value === 'object' && value !== null) {
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (!NOT_CONTENT.has(key)) record[key] = maskStrings(record[key], patterns, count);
    }
  }
  return value;
}

/** Mask the pointers in structured content and in each JSON text block. */
function maskPointers(result: CallToolResult, pointers: readonly string[], count: { n: number }): void {
  if (pointers.length === 0) return;
  for (const pointer of pointers) {
    if (result.structuredContent && maskAt(result.structuredContent, pointer)) count.n++;
  }
  for (const block of result.content ?? []) {
    if (block.type !== 'text') continue;
    let parsed: unknown;
    try {
      parsed = JSON.parse(block.text);
    } catch {
      continue;
    }
    if (typeof parsed !== 'object' || parsed === null) continue;
    let changed = false;
    for (const pointer of pointers) {
      if (maskAt(parsed, pointer)) {
        count.n++;
        changed = true;
      }
    }
    if (changed) block.text = JSON.stringify(parsed);
  }
}

const bytesOf = (value: unknown) => Buffer.byteLength(JSON.stringify(value ?? null), 'utf8');

/** Cut text to at most `bytes` bytes of UTF-8 without splitting a character. */
function cutText(text: string, bytes: number): string {
  const buffer = Buffer.from(text, 'utf8');
  if (buffer.length <= bytes) return text;
  return buffer
    .subarray(0, Math.max(0, bytes))
    .toString('utf8')
    .replace(/\uFFFD$/, '');
}

/**
 * Keep the result within `maxBytes`: text blocks are kept (the last one cut) while they fit,
 * other blocks and structured content only when everything fits, and a last text block says
 * that the result was cut and that the full one is in the ledger.
 */
function capped(result: CallToolResult, maxBytes: number): CallToolResult {
  const { _meta, ...body } = result;
  const original = bytesOf(body);
  let budget = maxBytes;
  const content: CallToolResult['content'] = [];
  for (const block of result.content ?? []) {
    if (block.type !== 'text' || budget <= 0) continue;
    const text = cutText(block.text, budget);
    budget -= Buffer.byteLength(text, 'utf8');
    content.push({ ...block, text });
  }
  const shown = maxBytes - budget;
  content.push({
    type: 'text',
    text: `[truncated: ${shown} bytes of text shown of a ${original}-byte result; the full result is recorded in Vouch]`,
  });
  return {
    ...(_meta ? { _meta } : {}),
    ...(result.isError === undefined ? {} : { isError: result.isError }),
    content,
  };
}

/**
 * The result the agent may see: masked, then cut to size. `result` is not changed (the
 * recorded observation and a replay read the same object).
 */
export function applyResultObligations(
  result: CallToolResult,
  obligations: ResultObligations | undefined,
): { result: CallToolResult; applied: ObligationsApplied | null } {
  if (!obligations) return { result, applied: null };
  const copy = structuredClone(result);
  const count = { n: 0 };
  maskPointers(copy, obligations.mask?.pointers ?? [], count);
  const patterns = compile(obligations.mask?.patterns ?? []);
  if (patterns.length > 0) {
    copy.content = maskStrings(copy.content, patterns, count) as CallToolResult['content'];
    if (copy.structuredContent !== undefined) {
      copy.structuredContent = maskStrings(copy.structuredContent, patterns, count) as Record<
        string,
        unknown
      >;
    }
  }
  const { _meta, ...body } = copy;
  if (obligations.maxBytes === undefined || bytesOf(body) <= obligations.maxBytes) {
    return { result: copy, applied: { masked: count.n } };
  }
  const cut = capped(copy, obligations.maxBytes);
  const { _meta: _, ...cutBody } = cut;
  return {
    result: cut,
    applied: {
      masked: count.n,
      truncated: { original_bytes: bytesOf(body), shown_bytes: bytesOf(cutBody) },
    },
  };
}
