import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { type Api, createApi, session } from './api';
import './styles.css';
import type { Me, Role } from './types';
import { ErrorBox } from './ui';
import { Inbox } from './views/inbox';
import { Logs } from './views/logs';
import { Queues } from './views/queues';
import { SigningKey } from './views/signing-key';
import { Timeline } from './views/timeline';
import { Tools } from './views/tools';

/** What each view needs, and what each role may do there (the server enforces it either way). */
const VIEWS = [
  { path: 'inbox', title: 'Inbox', key: '1', roles: ['approver', 'auditor'] },
  { path: 'queues', title: 'Queues', key: '2', roles: ['approver', 'verifier', 'auditor'] },
  { path: 'logs', title: 'Log', key: '3', roles: ['auditor'] },
  {
    path: 'signing-key',
    title: 'Signing key',
    key: '4',
    roles: ['approver', 'verifier', 'auditor', 'gateway', 'policy', 'admin', 'redactor'],
  },
  { path: 'tools', title: 'Tools', key: '5', roles: ['admin', 'auditor'] },
] as const satisfies ReadonlyArray<{ path: string; title: string; key: string; roles: readonly Role[] }>;

const ALLOWS: Record<Role, string> = {
  approver: 'read and answer approval requests (not your own); read proposals and queues',
  auditor: 'read everything, browse logs and verify them in this browser',
  verifier: 'read proposals and the verification queues',
  gateway: 'propose and execute (through the API, not this console)',
  policy: 'record decisions (through the API)',
  admin: 'issue and revoke keys (through the API); approve changed tool definitions',
  redactor: 'erase fields of field-committed events (through the API or `vouch redact`)',
};

function useHash(): string {
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const on = () => setHash(window.location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return hash;
}

function SignIn({ onSignedIn }: { onSignedIn: (key: string, me: Me) => void }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>(null);
  const submit = async (e: Event) => {
    e.preventDefault();
    try {
      const me = await createApi(key.trim(), () => 'default').get<Me>('/v1/me');
      session.save(key.trim());
      onSignedIn(key.trim(), me);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <main class="sign-in">
      <form onSubmit={submit}>
        <h1>
          <span class="mark">▣</span> Vouch console
        </h1>
        <p class="muted">
          Sign in with your API key. It stays in this tab's session storage and is sent only to this server.
        </p>
        <label>
          API key
          <input
            type="password"
            autoComplete="off"
            class="mono"
            value={key}
            onInput={(e) => setKey(e.currentTarget.value)}
          />
        </label>
        <button type="submit" class="primary" disabled={!key.trim()}>
          Sign in
        </button>
        <ErrorBox error={error} />
      </form>
    </main>
  );
}

function App() {
  const [key, setKey] = useState<string | null>(session.load());
  const [me, setMe] = useState<Me | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [log, setLog] = useState('default');
  const hash = useHash();
  const api: Api | null = useMemo(() => (key ? createApi(key, () => log) : null), [key, log]);

  useEffect(() => {
    if (api && !me) {
      api.get<Me>('/v1/me').then(setMe, (e) => {
        setError(e);
        session.clear();
        setKey(null);
      });
    }
  }, [api, me]);

  const allowed = VIEWS.filter((v) => me?.roles.some((r) => (v.roles as readonly Role[]).includes(r)));
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (
        e.target instanceof HTMLInputElement ||
        e.target instanceof HTMLTextAreaElement ||
        e.target instanceof HTMLSelectElement
      )
        return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const view = allowed.find((v) => v.key === e.key);
      if (view) window.location.hash = `#/${view.path}`;
      if (e.key === 'Escape' && hash.startsWith('#/proposal/')) window.history.back();
    };
    window.addEventListener('keydown', onKey);
    return () => window.removeEventListener('keydown', onKey);
  }, [allowed, hash]);

  if (!key || !api) {
    return (
      <>
        <SignIn
          onSignedIn={(k, m) => {
            setKey(k);
            setMe(m);
            setError(null);
          }}
        />
        {error ? <ErrorBox error={error} /> : null}
      </>
    );
  }
  if (!me) return <p class="muted pad">Signing in…</p>;

  const [, route = '', param = ''] = hash.split('/');
  const view =
    route === 'proposal'
      ? 'proposal'
      : (allowed.find((v) => v.path === route)?.path ?? allowed[0]?.path ?? 'none');

  return (
    <div class="shell">
      <nav class="side" aria-label="console">
        <div class="brand">
          <span class="mark">▣</span> Vouch
        </div>
        <ul>
          {allowed.map((v) => (
            <li key={v.path}>
              <a href={`#/${v.path}`} aria-current={view === v.path ? 'page' : undefined}>
                {v.title} <kbd>{v.key}</kbd>
              </a>
            </li>
          ))}
        </ul>
        <form
          class="open-proposal"
          onSubmit={(e) => {
            e.preventDefault();
            const input = (e.currentTarget as HTMLFormElement).elements.namedItem(
              'proposal',
            ) as HTMLInputElement;
            if (input.value.trim())
              window.location.hash = `#/proposal/${encodeURIComponent(input.value.trim())}`;
          }}
        >
          <input
            name="proposal"
            placeholder="open proposal id…"
            aria-label="open proposal by id"
            class="mono"
          />
        </form>
        <div class="whoami" data-testid="whoami">
          <div class="identity">{me.identity}</div>
          <ul class="allows">
            {me.roles.map((r) => (
              <li key={r}>
                <strong>{r}</strong>: {ALLOWS[r]}
              </li>
            ))}
          </ul>
          {me.environments ? <p class="muted">environments: {me.environments.join(', ')}</p> : null}
          <p class="muted">log: {log}</p>
          <button
            type="button"
            class="link"
            onClick={() => {
              session.clear();
              setKey(null);
              setMe(null);
            }}
          >
            Sign out
          </button>
          <p class="muted keys">
            <kbd>j</kbd>/<kbd>k</kbd> move · <kbd>Enter</kbd> open · <kbd>Esc</kbd> back
          </p>
        </div>
      </nav>
      <main class="content">
        {view === 'inbox' ? <Inbox api={api} me={me} apiKey={key} log={log} /> : null}
        {view === 'queues' ? <Queues api={api} /> : null}
        {view === 'logs' ? <Logs api={api} log={log} setLog={setLog} /> : null}
        {view === 'signing-key' ? <SigningKey api={api} me={me} /> : null}
        {view === 'tools' ? <Tools api={api} me={me} /> : null}
        {view === 'proposal' ? <Timeline api={api} id={decodeURIComponent(param)} /> : null}
        {view === 'none' ? <p>This key's roles have no view in the console.</p> : null}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);
