/**
 * The files of a new verifier plugin package, as `vouch verifier init` writes them: an ESM
 * package that builds with tsc, tests its verifier with the SDK's harness under node:test, and
 * loads from `vouch.config.json` through its `exports` (the `import` condition).
 */

/** What the scaffold is made from. */
export interface ScaffoldInput {
  /** The npm package name, e.g. `acme-vouch-item-done`. */
  packageName: string;
  /** The verifier id, `vendor/name`. */
  id: string;
  /** The version of @vouch/verifier-sdk a host must provide (the peer range). */
  sdkVersion: string;
  /** Where the author's install takes the SDK from: `file:` a tarball or directory, never the registry. */
  sdkSpec: string;
}

/** Relative path → file content. */
export function verifierScaffold({
  packageName,
  id,
  sdkVersion,
  sdkSpec,
}: ScaffoldInput): Record<string, string> {
  const postcondition = `${id.split('/')[1]}`.replaceAll('-', '.');
  const json = (value: unknown) => `${JSON.stringify(value, null, 2)}\n`;
  return {
    'package.json': json({
      name: packageName,
      version: '0.1.0',
      description: `A Vouch verifier: ${id}`,
      type: 'module',
      exports: { '.': { types: './dist/index.d.ts', import: './dist/index.js' } },
      files: ['dist'],
      scripts: {
        build: 'tsc -p tsconfig.json',
        test: 'npm run build && node --test dist/',
        prepack: 'npm run build',
      },
      peerDependencies: { '@vouch/verifier-sdk': `^${sdkVersion}` },
      dependencies: { zod: '^4.1.0' },
      devDependencies: {
        '@types/node': '^20.19.0',
        '@vouch/verifier-sdk': sdkSpec,
        typescript: '^5.9.0',
      },
    }),
    'tsconfig.json': json({
      compilerOptions: {
        target: 'ES2022',
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        strict: true,
        declaration: true,
        rootDir: 'src',
        outDir: 'dist',
        types: ['node'],
        skipLibCheck: true,
      },
      include: ['src'],
    }),
    '.gitignore': 'node_modules\ndist\n',
    'src/index.ts': `import { defineVerifier, sourceUnavailable, VERIFIER_API_VERSION } from '@vouch/verifier-sdk';
import { z } from 'zod';

/**
 * ${id}: reads the item the agent acted on back from the system that owns it, and passes when
 * that system says it is done. Replace the URL and the rule with your own source.
 */
export const verifier = defineVerifier({
  id: '${id}',
  version: '0.1.0',
  apiVersion: VERIFIER_API_VERSION,
  description: 'Reads an item back from its owner and checks that it is done.',
  handles: ['${postcondition}'],
  options: z
    .object({
      /** The base URL of the system of record, e.g. https://items.example. */
      baseUrl: z.url(),
      /** The name recorded as the check's source: the system you read, not the tool that wrote. */
      source: z.string().min(1).default('items-api'),
    })
    .strict(),
  // The host hands the network over (an SSRF-guarded fetch): a verifier never brings its own.
  requires: ['fetch'],
  async check({ proposal, postcondition, options, fetch, signal }) {
    const url = new URL(\`items/\${encodeURIComponent(proposal.target.id)}\`, options.baseUrl.replace(/\\/?$/, '/'));
    const response = await fetch!(url, { signal, headers: { accept: 'application/json' } });
    const base = { name: postcondition.name, source: options.source, evidence: { url: url.href, status: response.status } };
    if (response.status === 404) return { ...base, status: 'fail', message: 'the item does not exist' };
    // Could not read the source: throw, never return fail. The host records it as inconclusive.
    if (!response.ok) throw sourceUnavailable(\`\${options.source} answered \${response.status}\`);
    const item = (await response.json()) as { status?: unknown };
    const done = item.status === 'done';
    return { ...base, status: done ? 'pass' : 'fail', observed: { status: String(item.status) }, expected: { status: 'done' } };
  },
});

export default verifier;
`,
    'src/index.test.ts': `import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { VerifierTester } from '@vouch/verifier-sdk/testing';
import { verifier } from './index.js';

// A stand-in for the system of record, on loopback.
const items: Record<string, unknown> = { 'item-1': { status: 'done' }, 'item-2': { status: 'open' } };
const server = createServer((req, res) => {
  const id = decodeURIComponent((req.url ?? '').split('/').pop() ?? '');
  if (id === 'broken') return void res.writeHead(503).end();
  const item = items[id];
  res.writeHead(item ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(item ?? {}));
});
let baseUrl = '';
before(async () => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = \`http://127.0.0.1:\${(server.address() as AddressInfo).port}\`;
});
after(() => server.close());

const target = (id: string) => ({ kind: 'item', id, env: 'test' });
const options = () => ({ baseUrl });

// In tests the plain fetch stands in for the guarded one the host grants.
new VerifierTester({ describe, it, grants: { fetch: (input, init) => fetch(input, init) } }).run('${id}', verifier, {
  pass: [{ get options() { return options(); }, proposal: { target: target('item-1') } }],
  fail: [
    { name: 'an open item', get options() { return options(); }, proposal: { target: target('item-2') } },
    { name: 'a missing item', get options() { return options(); }, proposal: { target: target('item-9') } },
  ],
  inconclusive: [
    { name: 'the source is down', reason: 'SOURCE_UNAVAILABLE', get options() { return options(); }, proposal: { target: target('broken') } },
  ],
  invalidOptions: [{ name: 'a base URL that is not a URL', options: { baseUrl: 'items' }, field: '/options/baseUrl' }],
});
`,
    'vouch.config.example.json': json({
      $schema: './node_modules/@vouch/api/vouch.config.schema.json',
      connections: { items: { type: 'http', allowHosts: [] } },
      verifiers: [
        {
          use: packageName,
          connection: 'items',
          options: { baseUrl: 'https://items.example', source: 'items-api' },
        },
      ],
    }),
    'README.md': `# ${packageName}

A [Vouch](https://www.npmjs.com/package/@vouch/api) verifier plugin: \`${id}\` checks the
postcondition \`${postcondition}\` by reading the item back from the system that owns it.

\`\`\`sh
npm install
npm test        # builds with tsc, then runs the SDK's VerifierTester under node:test
npm pack        # a tarball to install next to vouch.config.json
\`\`\`

\`@vouch/verifier-sdk\` is not on the public npm registry: \`npm install\` takes it from
\`${sdkSpec.replace(/^file:/, '')}\` (\`devDependencies\`), the tarball that
\`node scripts/pack-workspaces.mjs DEST\` packs in a Vouch clone (its docs/install.md). If you move
the tarball, change that path.

Install the package where \`vouch.config.json\` lives and name it in \`use\` (see
\`vouch.config.example.json\`): Vouch resolves it from that directory through its \`exports\`.
Vouch loads plugins as built JavaScript; \`src/\` is compiled to \`dist/\` by \`npm run build\`.
Try it there against the live source before the server runs it:
\`npx --no-install vouch verifier run --config vouch.config.json --observation story.json\` runs
it once for a story (as \`GET /v1/proposals/{id}\` answers it) and prints its checks.

A plugin runs inside the Vouch server with the server's privileges: install only plugins you
trust, and keep network access to the \`fetch\` the host grants (it is SSRF-guarded).
`,
  };
}
