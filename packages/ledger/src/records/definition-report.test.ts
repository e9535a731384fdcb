import { describe, expect, it } from 'vitest';
import { isDefinitionReport } from './definition-report';

const A = 'a'.repeat(64);
const B = 'b'.repeat(64);
const C = 'c'.repeat(64);
const tool = (over: Record<string, unknown> = {}) => ({
  id: 'tool_1',
  server_id: 'mail',
  tool_name: 'send_mail',
  version: 1,
  side_effect: 'read_only',
  source: 'manual',
  registered_by: 'user:admin',
  registered_at: '2026-12-08T00:00:00.000Z',
  ...over,
});
const next = (over: Record<string, unknown>) =>
  tool({
    id: 'tool_2',
    version: 2,
    registered_by: 'agent:gw',
    registered_at: '2026-12-08T00:01:00.000Z',
    ...over,
  });

describe('isDefinitionReport', () => {
  describe('when the tool has no pinned definition', () => {
    it('accepts the first definition and nothing else changed', () => {
      expect(isDefinitionReport(tool(), next({ definition_sha256: A }))).toBe(true);
    });
    it('refuses a version that also changes the class', () => {
      expect(isDefinitionReport(tool(), next({ definition_sha256: A, side_effect: 'irreversible' }))).toBe(
        false,
      );
    });
  });

  describe('when a definition is pinned', () => {
    it('accepts another one recorded as changed beside the pin', () => {
      expect(
        isDefinitionReport(
          tool({ definition_sha256: A }),
          next({ definition_sha256: A, changed_definition_sha256: B }),
        ),
      ).toBe(true);
      expect(
        isDefinitionReport(
          tool({ definition_sha256: A, changed_definition_sha256: B }),
          next({ definition_sha256: A, changed_definition_sha256: C }),
        ),
      ).toBe(true);
    });
    it('refuses moving the pin, which only an operator approves', () => {
      expect(isDefinitionReport(tool({ definition_sha256: A }), next({ definition_sha256: B }))).toBe(false);
      expect(
        isDefinitionReport(
          tool({ definition_sha256: A, changed_definition_sha256: B }),
          next({ definition_sha256: B }),
        ),
      ).toBe(false);
    });
    it('refuses a version that reports nothing new', () => {
      expect(isDefinitionReport(tool({ definition_sha256: A }), next({ definition_sha256: A }))).toBe(false);
    });
  });
});
