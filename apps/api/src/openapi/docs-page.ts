/**
 * A human-readable API reference rendered on the server from the OpenAPI document: plain
 * HTML and inline CSS, no scripts and nothing loaded from elsewhere, so an auditor can read
 * it on a machine without internet and without running third-party JavaScript.
 */

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const METHODS = ['get', 'post', 'put', 'patch', 'delete'] as const;

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&#39;');
}

/** Inline `code` spans only; everything else in descriptions is escaped text. */
function inline(text: string): string {
  return escapeHtml(text).replace(/`([^`]+)`/g, '<code>$1</code>');
}

/**
 * A description as HTML: paragraphs at blank lines, `- ` lines as a list, and fenced blocks
 * (a Mermaid diagram) as preformatted text, shown as written since the page runs no script.
 */
function prose(text: unknown): string {
  if (typeof text !== 'string') return '';
  return text
    .split(/(```[^\n]*\n[\s\S]*?```)/)
    .flatMap((part) => {
      const fenced = part.match(/^```[^\n]*\n([\s\S]*?)```$/);
      if (fenced) return [`<pre>${escapeHtml(fenced[1]!.trimEnd())}</pre>`];
      return part
        .split(/\n\s*\n/)
        .filter((block) => block.trim() !== '')
        .map((block) => {
          const lines = block.trim().split('\n');
          if (lines.every((line) => line.startsWith('- '))) {
            return `<ul>${lines.map((line) => `<li>${inline(line.slice(2))}</li>`).join('')}</ul>`;
          }
          return `<p>${inline(block.trim())}</p>`;
        });
    })
    .join('');
}

function anchor(text: string): string {
  return text.toLowerCase().replace(/[^a-z0-9]+/g, '-');
}

function asObject(value: unknown): JsonObject {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonObject) : {};
}

function schemaLink(schema: unknown): string {
  const ref = asObject(schema).$ref;
  if (typeof ref === 'string') {
    const name = ref.split('/').pop()!;
    return `<a href="#schema-${anchor(name)}">${escapeHtml(name)}</a>`;
  }
  return `<pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre>`;
}

function renderOperation(path: string, method: string, op: JsonObject): string {
  const parts: string[] = [];
  const id = anchor(`${method} ${path}`);
  parts.push(
    `<section class="op" id="${id}"><h3><span class="method ${method}">${method.toUpperCase()}</span> <code>${escapeHtml(path)}</code></h3>`,
  );
  if (typeof op.summary === 'string') parts.push(`<p class="summary">${inline(op.summary)}</p>`);
  if (op.description) parts.push(prose(op.description));
  parts.push(
    `<p class="auth">${Array.isArray(op.security) && op.security.length > 0 ? 'Needs <code>Authorization: Bearer &lt;key&gt;</code>' : 'No key needed'}</p>`,
  );
  const params = Array.isArray(op.parameters) ? op.parameters.map(asObject) : [];
  if (params.length > 0) {
    parts.push(
      '<table><tr><th>parameter</th><th>in</th><th>required</th><th>schema</th><th>description</th></tr>',
    );
    for (const p of params) {
      parts.push(
        `<tr><td><code>${escapeHtml(String(p.name))}</code></td><td>${escapeHtml(String(p.in))}</td><td>${p.required ? 'yes' : 'no'}</td><td><code>${escapeHtml(JSON.stringify(p.schema ?? {}))}</code></td><td>${prose(p.description)}</td></tr>`,
      );
    }
    parts.push('</table>');
  }
  const body = asObject(op.requestBody);
  for (const [mediaType, media] of Object.entries(asObject(body.content))) {
    parts.push(
      `<h4>Request body <code>${escapeHtml(mediaType)}</code></h4>${schemaLink(asObject(media).schema)}`,
    );
  }
  parts.push('<h4>Responses</h4><table><tr><th>status</th><th>description</th><th>body</th></tr>');
  for (const [status, response] of Object.entries(asObject(op.responses))) {
    const r = asObject(response);
    const bodies = Object.entries(asObject(r.content))
      .map(
        ([mediaType, media]) => `<code>${escapeHtml(mediaType)}</code> ${schemaLink(asObject(media).schema)}`,
      )
      .join('<br>');
    parts.push(`<tr><td>${escapeHtml(status)}</td><td>${prose(r.description)}</td><td>${bodies}</td></tr>`);
  }
  parts.push('</table></section>');
  return parts.join('\n');
}

/** Render the reference page for an OpenAPI 3.1 document. */
export function renderDocsPage(document: unknown): string {
  const doc = asObject(document);
  const info = asObject(doc.info);
  const paths = asObject(doc.paths);
  const operations: Array<{ path: string; method: string; op: JsonObject; tag: string }> = [];
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const op = asObject(item)[method];
      if (op === undefined) continue;
      const tags = asObject(op).tags;
      operations.push({
        path,
        method,
        op: asObject(op),
        tag: Array.isArray(tags) ? String(tags[0]) : 'other',
      });
    }
  }
  const tags = (Array.isArray(doc.tags) ? doc.tags.map(asObject) : []).filter((t) =>
    operations.some((o) => o.tag === t.name),
  );
  const toc = operations
    .map(
      ({ path, method }) =>
        `<li><a href="#${anchor(`${method} ${path}`)}"><span class="method ${method}">${method.toUpperCase()}</span> ${escapeHtml(path)}</a></li>`,
    )
    .join('\n');
  const sections = tags
    .map(
      (tag) =>
        `<h2 id="tag-${anchor(String(tag.name))}">${escapeHtml(String(tag.name))}</h2>${prose(tag.description)}\n` +
        operations
          .filter((o) => o.tag === tag.name)
          .map((o) => renderOperation(o.path, o.method, o.op))
          .join('\n'),
    )
    .join('\n');
  const schemas = Object.entries(asObject(asObject(doc.components).schemas))
    .map(
      ([name, schema]) =>
        `<section id="schema-${anchor(name)}"><h3>${escapeHtml(name)}</h3><pre>${escapeHtml(JSON.stringify(schema, null, 2))}</pre></section>`,
    )
    .join('\n');
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(String(info.title ?? 'API'))} ${escapeHtml(String(info.version ?? ''))} reference</title>
<style>
body{font:15px/1.5 system-ui,sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}
code,pre{font:13px/1.4 ui-monospace,monospace}pre{background:#f5f5f5;padding:.6rem;overflow:auto}
table{border-collapse:collapse;margin:.5rem 0}td,th{border:1px solid #ddd;padding:.3rem .5rem;text-align:left;vertical-align:top}
.op{border-top:1px solid #ccc;padding-top:.5rem}.method{font-weight:700;font-family:ui-monospace,monospace}
.get{color:#05668d}.post{color:#2d6a4f}.delete{color:#9d0208}.summary{font-weight:600}.auth{color:#555}
</style>
</head>
<body>
<h1>${escapeHtml(String(info.title ?? 'API'))} <small>${escapeHtml(String(info.version ?? ''))}</small></h1>
${prose(info.description)}
<p>Machine-readable: <a href="/openapi.json">/openapi.json</a> (OpenAPI ${escapeHtml(String(doc.openapi ?? ''))}).</p>
<h2>Operations</h2>
<ul>${toc}</ul>
${sections}
<h2>Schemas</h2>
${schemas}
</body>
</html>
`;
}
