import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROLES, type Role } from '../auth/roles';
import { createHarness, type Harness } from '../testing/app-harness';

// Who may call what, written out independently of the routes' own ACCESS table, so a wrong
// entry there fails here. Every documented operation must be listed (see the last test).
const EXPECTED: Record<string, readonly Role[]> = {
  'POST /v1/keys': ['admin'],
  'GET /v1/keys': ['admin'],
  'POST /v1/keys/{id}/revoke': ['admin'],
  'POST /v1/signing-keys': ['admin'],
  'POST /v1/signing-keys/enrolment-codes': ['admin'],
  'POST /v1/signing-keys/enrol': [
    'gateway',
    'policy',
    'approver',
    'verifier',
    'auditor',
    'admin',
    'redactor',
  ],
  'GET /v1/signing-keys': ['gateway', 'policy', 'approver', 'verifier', 'auditor', 'admin', 'redactor'],
  'GET /v1/me': ['gateway', 'policy', 'approver', 'verifier', 'auditor', 'admin', 'redactor'],
  'POST /v1/tools': ['admin', 'gateway'],
  'GET /v1/tools': ['admin', 'gateway', 'auditor'],
  'POST /v1/tools/definition-approvals': ['admin'],
  'POST /v1/proposals': ['gateway'],
  'GET /v1/proposals': ['approver', 'verifier', 'auditor'],
  'GET /v1/proposals/{id}': ['gateway', 'policy', 'approver', 'verifier', 'auditor'],
  'POST /v1/proposals/{id}/decision': ['policy'],
  'POST /v1/proposals/{id}/authorize': ['gateway'],
  'GET /v1/approvals': ['approver', 'auditor'],
  'GET /v1/approvals/events': ['approver', 'auditor'],
  'GET /v1/approvals/{id}': ['approver', 'auditor', 'gateway'],
  'POST /v1/approvals/{id}/approve': ['approver'],
  'POST /v1/approvals/{id}/deny': ['approver'],
  'POST /v1/observations': ['gateway'],
  'POST /v1/observations/{id}/verify': ['verifier', 'gateway'],
  'POST /v1/verifications': ['verifier'],
  'GET /v1/verifications': ['approver', 'verifier', 'auditor'],
  'GET /v1/logs': ['approver', 'verifier', 'auditor'],
  'GET /v1/logs/{log}/events': ['auditor'],
  'GET /v1/logs/{log}/head': ['auditor'],
  'GET /v1/logs/{log}/verify': ['auditor'],
  'GET /v1/logs/{log}/export': ['auditor'],
  'GET /v1/logs/{log}/checkpoint': ['auditor'],
  'GET /v1/logs/{log}/checkpoints/{tree_size}': ['auditor'],
  'GET /v1/logs/{log}/proofs/inclusion': ['auditor'],
  'GET /v1/logs/{log}/proofs/consistency': ['auditor'],
  'POST /v1/logs/{log}/checkpoints/{tree_size}/cosignatures': ['auditor'],
  'GET /v1/logs/{log}/bundle': ['auditor'],
  'GET /v1/webhooks/deliveries': ['admin', 'auditor'],
  'POST /v1/logs/{log}/events/{seq}/redactions': ['redactor'],
};

let h: Harness;
const keyOf = {} as Record<Role, string>;
let documented: string[] = [];

beforeAll(async () => {
  h = await createHarness();
  for (const role of ROLES) keyOf[role] = await h.keyFor(`user:only-${role}`, [role]);
  const doc = (await (await h.call('GET', '/openapi.json')).json()) as {
    paths: Record<string, Record<string, unknown>>;
  };
  documented = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item)
      .filter((m) => ['get', 'post', 'put', 'patch', 'delete'].includes(m))
      .map((m) => `${m.toUpperCase()} ${path}`),
  );
});
afterAll(async () => {
  await h.close();
});

const pairs = Object.entries(EXPECTED).flatMap(([route, allowed]) =>
  ROLES.map((role) => ({ route, role, allowed: allowed.includes(role) })),
);

async function callAs(route: string, role: Role) {
  const [method, template] = route.split(' ') as [string, string];
  const path = template
    .replace('{log}', 'default')
    .replace('{id}', 'key_doesNotExist1')
    .replace(/\{[^}]+\}/g, '1');
  const before = await h.rowCounts();
  const response = await h.call(method, path, {
    key: keyOf[role],
    ...(method === 'POST' ? { body: {} } : {}),
  });
  // An event stream does not end: its first bytes say the role check passed.
  const streaming = response.headers.get('content-type')?.startsWith('text/event-stream');
  if (streaming) await response.body?.cancel();
  const body = streaming
    ? null
    : ((await response.json().catch(() => null)) as { error?: { code: string } } | null);
  return {
    status: response.status,
    code: body?.error?.code,
    changed: JSON.stringify(before) !== JSON.stringify(await h.rowCounts()),
  };
}

describe('role × route access', () => {
  describe.each(pairs.filter((p) => !p.allowed))('when $role calls $route', ({ route, role }) => {
    it('is refused with 403 ROLE_FORBIDDEN and writes nothing', async () => {
      const result = await callAs(route, role);
      expect(result).toEqual({ status: 403, code: 'ROLE_FORBIDDEN', changed: false });
    });
  });

  describe.each(pairs.filter((p) => p.allowed))('when $role calls $route', ({ route, role }) => {
    it('gets past the role check', async () => {
      const result = await callAs(route, role);
      expect(result.code).not.toBe('ROLE_FORBIDDEN');
      expect(result.status).not.toBe(401);
    });
  });

  describe('when the API documents its operations', () => {
    it('lists every one of them in this table', () => {
      const secured = documented.filter((route) => route.includes(' /v1/'));
      expect([...secured].sort()).toEqual(Object.keys(EXPECTED).sort());
    });
  });
});
