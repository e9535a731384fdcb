import { canonicalJson } from '@vouch/audit';
import { expect, it } from 'vitest';

it('resolves source', () => {
  expect(canonicalJson({ a: 1 })).toBe('{"a":1}');
});
