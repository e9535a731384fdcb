import { sameIdentity } from '@vouch/audit';
import { useCallback, useEffect, useState } from 'preact/hooks';
import type { Api } from '../api';
import { type BrowserKey, browserKeys, generateBrowserKey, signAsAuthor } from '../signing-key';
import type { Me } from '../types';
import { Badge, ErrorBox } from '../ui';

interface EnrolledKey {
  key_id: string;
  identity: string;
  public_key: string;
  enrolled_at: string;
  revoked_at: string | null;
}

/**
 * Enrol a signing key held by this browser: WebCrypto generates it (non-extractable), the
 * one-time code an admin issued binds it to the signed-in identity, and the key proves it is
 * held by signing `{identity, public_key, code_commitment}`.
 */
async function enrol(api: Api, me: Me, code: string): Promise<BrowserKey> {
  const key = await generateBrowserKey(me.identity);
  const commitment = await codeCommitment(code);
  const proof = await signAsAuthor(key, {
    log: 'system',
    action: 'signing_key.enrol_by_code',
    claims: { identity: me.identity, public_key: key.publicKey, code_commitment: commitment },
  });
  await api.post('/v1/signing-keys/enrol', { public_key: key.publicKey, code, proof });
  await browserKeys.save(key);
  return key;
}

/** `sha256("vouch/enrolment-code/v1\n" + code)`, hex: what the log records of a code. */
async function codeCommitment(code: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    'SHA-256',
    new TextEncoder().encode(`vouch/enrolment-code/v1\n${code}`),
  );
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

export function SigningKey({ api, me }: { api: Api; me: Me }) {
  const [local, setLocal] = useState<BrowserKey | null | undefined>(undefined);
  const [enrolled, setEnrolled] = useState<EnrolledKey[] | null>(null);
  const [code, setCode] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  const load = useCallback(async () => {
    try {
      const [stored, listed] = await Promise.all([
        browserKeys.load(me.identity),
        api.get<{ keys: EnrolledKey[] }>('/v1/signing-keys'),
      ]);
      setLocal(stored);
      setEnrolled(listed.keys.filter((k) => sameIdentity(k.identity, me.identity)));
    } catch (e) {
      setError(e);
    }
  }, [api, me.identity]);
  useEffect(() => void load(), [load]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      await enrol(api, me, code.trim());
      setCode('');
      await load();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const forget = async () => {
    await browserKeys.remove(me.identity);
    await load();
  };
  const live = enrolled?.filter((k) => k.revoked_at === null) ?? [];
  const localEnrolled = local ? live.some((k) => k.key_id === local.keyId) : false;

  return (
    <section aria-labelledby="signing-key-title">
      <header class="view-head">
        <h1 id="signing-key-title">Signing key</h1>
      </header>
      <p class="muted">
        Your answers are signed in this browser with a key that never leaves it: WebCrypto creates it so that
        no script can read it, and the server learns only its public half. Once {me.identity} holds an
        enrolled key, the server refuses any answer in that name without its signature.
      </p>
      <div data-testid="browser-key" data-key-id={local?.keyId ?? ''}>
        {local === undefined ? (
          <p class="muted">Loading…</p>
        ) : local ? (
          <p>
            This browser signs as <strong>{me.identity}</strong> with key <code>{local.keyId}</code>{' '}
            {localEnrolled ? (
              <Badge tone="good">enrolled</Badge>
            ) : (
              <Badge tone="bad">not enrolled (revoked, or never)</Badge>
            )}{' '}
            <button type="button" class="link" onClick={forget}>
              Forget this browser's key
            </button>
          </p>
        ) : (
          <p>This browser holds no signing key for {me.identity}.</p>
        )}
      </div>
      <form class="enrol" onSubmit={submit}>
        <label>
          One-time enrolment code
          <input
            class="mono"
            autoComplete="off"
            value={code}
            onInput={(e) => setCode(e.currentTarget.value)}
            placeholder="from your admin: POST /v1/signing-keys/enrolment-codes"
          />
        </label>
        <button type="submit" class="primary" disabled={busy || !code.trim()}>
          {local ? 'Enrol a new key in this browser' : 'Enrol a key in this browser'}
        </button>
      </form>
      <ErrorBox error={error} />
      <h2>Keys enrolled for {me.identity}</h2>
      {enrolled === null ? null : enrolled.length === 0 ? (
        <p class="muted">None: your answers are accepted unsigned (unless every author must sign).</p>
      ) : (
        <ul data-testid="enrolled-keys">
          {enrolled.map((k) => (
            <li key={k.key_id}>
              <code>{k.key_id}</code> enrolled {k.enrolled_at}
              {k.revoked_at ? `, revoked ${k.revoked_at}` : ''}
              {local?.keyId === k.key_id ? ' (this browser)' : ''}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
