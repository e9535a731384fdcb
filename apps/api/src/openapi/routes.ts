import type { VouchApp } from '../app';
import { renderDocsPage } from './docs-page';
import { openApiDocument } from './document';

// No scripts at all, nothing from another origin: the page is static text.
const DOCS_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/** `GET /openapi.json` and `GET /docs`, generated once from the routes registered on `app`. */
export function registerOpenApiRoutes(app: VouchApp, options: { version: string }): void {
  let cached: { document: ReturnType<typeof openApiDocument>; html: string } | undefined;
  // Built on first request, when every route has been registered.
  const build = () => {
    if (!cached) {
      const document = openApiDocument(app, options.version);
      cached = { document, html: renderDocsPage(document) };
    }
    return cached;
  };
  app.get('/openapi.json', (c) => c.json(build().document));
  app.get('/docs', (c) => {
    c.header('Content-Security-Policy', DOCS_CSP);
    return c.html(build().html);
  });
}
