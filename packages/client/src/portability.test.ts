import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

// The client runs in browsers: its shipped sources use fetch, AbortController, timers and
// web streams only. This pins it, so a Node-only API cannot slip in unnoticed.
const NODE_ONLY = [/from ['"]node:/, /\brequire\(/, /\bBuffer\b/, /\bprocess\./, /\b__dirname\b/];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('@vouch/client sources', () => {
  describe('when scanned for Node-only APIs', () => {
    it('use none', () => {
      const offending = sources(import.meta.dirname).flatMap((path) =>
        readFileSync(path, 'utf8')
          .split('\n')
          .map((line, i) => ({ path, line: i + 1, text: line }))
          // Doc comments may show server-side usage (`process.env.VOUCH_API_KEY`); code may not.
          .filter(({ text }) => !/^\s*(\*|\/\/|\/\*)/.test(text))
          .filter(({ text }) => NODE_ONLY.some((pattern) => pattern.test(text))),
      );
      expect(offending).toEqual([]);
    });
  });
  describe('when scanned for runtime imports of @vouch/records', () => {
    it('find none outside the testing entry: the client ships no zod', () => {
      const testing = join(import.meta.dirname, 'testing');
      const runtime = sources(import.meta.dirname)
        .filter((path) => !path.startsWith(testing))
        .flatMap((path) =>
          // A multi-line import ends on its `from` line: look at whole statements.
          (readFileSync(path, 'utf8').match(/^(?:import|export)[^;]*?from '@vouch\/records'/gm) ?? [])
            .filter((statement) => !/^(import|export) type /.test(statement))
            .map((statement) => ({ path, statement })),
        );
      expect(runtime).toEqual([]);
    });
  });
});
