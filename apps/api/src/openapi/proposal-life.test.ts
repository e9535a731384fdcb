import { readFileSync } from 'node:fs';
import { PROPOSAL_OUTCOMES, PROPOSAL_STAGES } from '@vouch/ledger';
import { describe, expect, it } from 'vitest';
import { renderDocsPage } from './docs-page';
import { PROPOSAL_LIFE_DIAGRAM } from './proposal-life';

const recordsDoc = readFileSync(new URL('../../../../docs/records.md', import.meta.url), 'utf8');

describe('the proposal life diagram', () => {
  describe('when the API reference and docs/records.md show it', () => {
    it('is the same diagram in both', () => {
      expect(recordsDoc).toContain(`\`\`\`mermaid\n${PROPOSAL_LIFE_DIAGRAM}\n\`\`\``);
    });
  });

  describe('when a reader looks for a value', () => {
    it.each([...Object.keys(PROPOSAL_OUTCOMES), ...Object.keys(PROPOSAL_STAGES)])('shows %s', (value) => {
      expect(PROPOSAL_LIFE_DIAGRAM).toMatch(new RegExp(`\\b${value}\\b`));
      expect(recordsDoc).toContain(`| \`${value}\``);
    });
  });
});

describe('renderDocsPage', () => {
  describe('when a description holds a list and a fenced diagram', () => {
    it('renders a list, and the diagram as preformatted escaped text', () => {
      const html = renderDocsPage({
        openapi: '3.1.0',
        info: {
          title: 'T',
          version: '1',
          description: 'Values:\n\n- `a`: one\n- `b`: two\n\n```mermaid\nx --> y: <z>\n```',
        },
        paths: {},
      });
      expect(html).toContain('<ul><li><code>a</code>: one</li><li><code>b</code>: two</li></ul>');
      expect(html).toContain('<pre>x --&gt; y: &lt;z&gt;</pre>');
    });
  });
});
