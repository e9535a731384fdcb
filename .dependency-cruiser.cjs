// The shape of the code, as docs/ARCHITECTURE.md draws it, checked by `npm test`
// (`npm run deps`). A rule here is a sentence of that document; change both together.

/** Source that ships in a package (not its tests, fixtures or test helpers). */
const SHIPPED = '^(packages|apps)/[^/]+/src/';
const NOT_SHIPPED = '(\\.test\\.ts$|/__fixtures__/|/fixtures/)';

/**
 * `@vouch/ledger/signature-rules` and every module it runs: the console judges author
 * signatures with them in the browser, so they stay a closed, browser-safe set.
 */
const SIGNATURE_RULES =
  '^packages/ledger/src/(signature-rules|errors|keys/(key-history|api-key-events|check-key-authority)|signatures/(author-signature-judge|judge-record-signature|record-signatures|gateway-signatures|signing-key-registry|signing-key-events|enrolment-codes|server-signer)|records/(built-in-decisions|inputs|required-postconditions|shown-record|tool-registration-claims|types)|policy/(built-in-policy|policy-configuration))\\.ts$';

/** A package may import only these packages of ours (besides itself). */
const allowed = {
  audit: [],
  records: [],
  'verifier-sdk': [],
  ledger: ['audit', 'verifier-sdk', 'records'],
  verifiers: ['verifier-sdk'],
  client: ['audit', 'records'],
  telemetry: [],
};

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment:
        'Modules form no cycle at run time: each can be read and tested from the bottom up. (A type imported back, e.g. a route naming the app type it registers on, is not a cycle at run time.)',
      severity: 'error',
      from: { path: '^(packages|apps)/' },
      to: { circular: true, viaOnly: { dependencyTypesNot: ['type-only'] } },
    },
    {
      name: 'packages-not-apps',
      comment: 'Nothing in packages/ imports apps/.',
      severity: 'error',
      from: { path: '^packages/' },
      to: { path: '^apps/' },
    },
    {
      name: 'apps-apart',
      comment: 'An app does not import another app: what they share lives in a package.',
      severity: 'error',
      from: { path: '^apps/([^/]+)/' },
      to: { path: '^apps/', pathNot: '^apps/$1/' },
    },
    {
      name: 'product-not-tests',
      comment: 'Packages and apps do not import the end-to-end tests or the bench.',
      severity: 'error',
      from: { path: '^(packages|apps)/' },
      to: { path: '^(test|bench)/' },
    },
    ...Object.entries(allowed).map(([name, deps]) => ({
      name: `${name}-depends-on-${deps.length === 0 ? 'nothing-of-ours' : deps.join('-')}`,
      comment: `@vouch/${name} imports ${deps.length === 0 ? 'no package of ours' : deps.map((d) => `@vouch/${d}`).join(', ')}.`,
      severity: 'error',
      from: { path: `^packages/${name}/` },
      to: { path: '^(packages|apps)/', pathNot: `^packages/(${[name, ...deps].join('|')})/` },
    })),
    {
      name: 'no-reaching-into-another-package',
      comment:
        'Another package is imported by its name and exports, never by a relative path into its files.',
      severity: 'error',
      from: { path: '^(packages|apps)/([^/]+)/' },
      to: { dependencyTypes: ['local'], path: '^(packages|apps)/', pathNot: '^$1/$2/' },
    },
    {
      name: 'browser-safe',
      comment:
        '@vouch/audit, @vouch/records, @vouch/client and the console run in browsers: no Node built-in outside a *-node.ts entry.',
      severity: 'error',
      from: {
        path: '^(packages/(audit|records|client)|apps/console)/src/',
        pathNot: `(-node\\.ts$|${NOT_SHIPPED})`,
      },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'signature-rules-closed',
      comment:
        '@vouch/ledger/signature-rules runs in the console: its modules import (at run time) only each other, other packages and no Node built-in.',
      severity: 'error',
      from: { path: SIGNATURE_RULES },
      to: {
        dependencyTypesNot: ['type-only'],
        path: '^(packages/ledger/|node_modules/(drizzle-orm|postgres|@electric-sql)/)',
        pathNot: SIGNATURE_RULES,
      },
    },
    {
      name: 'signature-rules-browser-safe',
      comment: '@vouch/ledger/signature-rules runs in the console: no Node built-in.',
      severity: 'error',
      from: { path: SIGNATURE_RULES },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'declared-dependencies',
      comment:
        'Shipped code imports only what its own package.json declares as a dependency (or as a peer the user installs).',
      severity: 'error',
      from: { path: SHIPPED, pathNot: NOT_SHIPPED },
      to: { dependencyTypes: ['npm-no-pkg', 'npm-unknown', 'npm-dev'], dependencyTypesNot: ['npm-peer'] },
    },
    {
      name: 'resolvable',
      comment: 'Every import resolves.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(dist|\\.turbo|coverage|results)/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    combinedDependencies: false,
    enhancedResolveOptions: {
      conditionNames: ['@vouch/source', 'node', 'import', 'types', 'default'],
      exportsFields: ['exports'],
      mainFields: ['module', 'main', 'types'],
      extensions: ['.ts', '.tsx', '.js', '.mjs', '.cjs', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
