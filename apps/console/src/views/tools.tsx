import { useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { shortHash, time } from '../format';
import { signatureHeader } from '../signing-key';
import type { Me, ToolRecord } from '../types';
import { Badge, ErrorBox, toneOf } from '../ui';

/** Whether a tool's definition is pinned, changed since (awaiting approval), or was never reported. */
function definitionState(tool: ToolRecord): 'changed' | 'pinned' | 'not pinned' {
  if (tool.changed_definition_sha256) return 'changed';
  return tool.definition_sha256 ? 'pinned' : 'not pinned';
}

/**
 * The tool registry: each tool's latest registration, and first the tools whose upstream now
 * serves another definition than the approved one (a gateway refuses their calls until an
 * admin approves the new definition here).
 */
export function Tools({ api, me }: { api: Api; me: Me }) {
  const [tools, setTools] = useState<ToolRecord[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const load = async () => {
    try {
      setTools((await api.get<{ tools: ToolRecord[] }>('/v1/tools')).tools);
      setError(null);
    } catch (e) {
      setError(e);
    }
  };
  useEffect(() => {
    void load();
  }, [api]);
  const approve = async (tool: ToolRecord) => {
    try {
      const body = {
        server_id: tool.server_id,
        tool_name: tool.tool_name,
        definition_sha256: tool.changed_definition_sha256,
        replaces_version: tool.version,
      };
      // An admin holding a browser key signs the approval, as the server then requires.
      const headers = await signatureHeader(me, {
        log: 'default',
        action: 'tool.approve_definition',
        claims: body,
      });
      await api.post('/v1/tools/definition-approvals', body, headers);
      await load();
    } catch (e) {
      setError(e);
    }
  };
  const changed = (tools ?? []).filter((tool) => definitionState(tool) === 'changed');
  const isAdmin = me.roles.includes('admin');
  return (
    <section aria-labelledby="tools-title">
      <header class="view-head">
        <h1 id="tools-title">Tools</h1>
      </header>
      <ErrorBox error={error} />
      <h2>Changed tool definitions</h2>
      <p class="muted">
        The upstream serves another definition (description, input schema or annotations) than the one
        approved. Gateways refuse its calls until the new one is approved.
      </p>
      {tools === null ? (
        <p class="muted">Loading…</p>
      ) : changed.length === 0 ? (
        <p class="empty">No tool definition changed.</p>
      ) : (
        <ul class="changed-definitions">
          {changed.map((tool) => (
            <li key={tool.id} data-testid="changed-definition">
              <strong>
                {tool.server_id}/{tool.tool_name}
              </strong>{' '}
              <Badge tone="bad">definition changed</Badge>
              <div class="mono">
                approved {shortHash(tool.definition_sha256 ?? '')} → served{' '}
                {shortHash(tool.changed_definition_sha256 ?? '')}
              </div>
              <div class="muted">
                seen by {tool.registered_by}, {time(tool.registered_at)} (version {tool.version})
              </div>
              {isAdmin ? (
                <button type="button" class="primary" onClick={() => approve(tool)}>
                  Approve new definition
                </button>
              ) : (
                <p class="muted">An admin approves it.</p>
              )}
            </li>
          ))}
        </ul>
      )}
      <h2>Registry</h2>
      {tools && tools.length > 0 ? (
        <table class="list">
          <thead>
            <tr>
              <th>tool</th>
              <th>version</th>
              <th>side effect</th>
              <th>definition</th>
              <th>registered by</th>
              <th>at</th>
            </tr>
          </thead>
          <tbody>
            {tools.map((tool) => (
              <tr key={tool.id} data-testid="tool-row">
                <td>
                  {tool.server_id}/{tool.tool_name}
                </td>
                <td>{tool.version}</td>
                <td>
                  <Badge tone={toneOf(tool.side_effect)}>{tool.side_effect}</Badge>
                </td>
                <td>
                  <Badge tone={definitionState(tool) === 'changed' ? 'bad' : 'neutral'}>
                    {definitionState(tool)}
                  </Badge>{' '}
                  {tool.definition_sha256 ? <code>{shortHash(tool.definition_sha256)}</code> : null}
                </td>
                <td>{tool.registered_by}</td>
                <td>{time(tool.registered_at)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : tools ? (
        <p class="empty">No tool is registered.</p>
      ) : null}
    </section>
  );
}
