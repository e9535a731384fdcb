// The signing key of this browser: an Ed25519 key WebCrypto generates non-extractable, kept
// in IndexedDB as the CryptoKey itself (the browser stores it; no script can read its bytes),
// one per identity. Only its public key ever leaves: at enrolment, with a one-time code.
import {
  AUTHOR_STATEMENT_TYPE,
  authorKeyId,
  authorStatement,
  canonicalJson,
  formatAuthorPublicKey,
  preAuthEncoding,
} from '@vouch/audit';

/** A key as this browser keeps it. */
export interface BrowserKey {
  identity: string;
  keyId: string;
  /** `ed25519:<base64>`, as the server enrols it. */
  publicKey: string;
  privateKey: CryptoKey;
  createdAt: string;
}

const DB_NAME = 'vouch-console';
const STORE = 'signing-keys';

function openStore(): Promise<IDBDatabase> {
  return new Promise((resolve, reject) => {
    const request = indexedDB.open(DB_NAME, 1);
    request.onupgradeneeded = () => request.result.createObjectStore(STORE, { keyPath: 'identity' });
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
}

async function inStore<T>(mode: IDBTransactionMode, work: (store: IDBObjectStore) => IDBRequest): Promise<T> {
  const db = await openStore();
  try {
    return await new Promise<T>((resolve, reject) => {
      const request = work(db.transaction(STORE, mode).objectStore(STORE));
      request.onsuccess = () => resolve(request.result as T);
      request.onerror = () => reject(request.error);
    });
  } finally {
    db.close();
  }
}

export const browserKeys = {
  load: async (identity: string): Promise<BrowserKey | null> =>
    (await inStore<BrowserKey | undefined>('readonly', (s) => s.get(identity))) ?? null,
  save: (key: BrowserKey): Promise<unknown> => inStore('readwrite', (s) => s.put(key)),
  remove: (identity: string): Promise<unknown> => inStore('readwrite', (s) => s.delete(identity)),
};

const base64 = (bytes: Uint8Array) => btoa(String.fromCharCode(...bytes));

/** A new key for `identity`: the private half cannot be exported, by this code or any other. */
export async function generateBrowserKey(identity: string): Promise<BrowserKey> {
  const pair = (await crypto.subtle.generateKey({ name: 'Ed25519' }, false, [
    'sign',
    'verify',
  ])) as CryptoKeyPair;
  const raw = new Uint8Array(await crypto.subtle.exportKey('raw', pair.publicKey));
  return {
    identity,
    keyId: authorKeyId(raw),
    publicKey: formatAuthorPublicKey(raw),
    privateKey: pair.privateKey,
    createdAt: new Date().toISOString(),
  };
}

/**
 * The detached signature (`keyid=<hex>; sig=<base64>`, the `Vouch-Signature` header) of the
 * author statement `{log, action, signer, claims}`: Ed25519 over DSSE's PAE of its canonical JSON.
 */
export async function signAsAuthor(
  key: BrowserKey,
  statement: { log: string; action: string; claims: unknown },
): Promise<string> {
  const payload = new TextEncoder().encode(
    canonicalJson(authorStatement(statement.log, statement.action, key.identity, statement.claims)),
  );
  const message = new Uint8Array(preAuthEncoding(AUTHOR_STATEMENT_TYPE, payload));
  const sig = new Uint8Array(await crypto.subtle.sign('Ed25519', key.privateKey, message));
  return `keyid=${key.keyId}; sig=${base64(sig)}`;
}

/**
 * The `Vouch-Signature` header over a request, when this browser holds a signing key for the
 * signed-in identity (the Signing key page enrols one); none otherwise.
 */
export async function signatureHeader(
  me: { identity: string },
  statement: { log: string; action: string; claims: unknown },
): Promise<Record<string, string> | undefined> {
  const key = await browserKeys.load(me.identity);
  return key ? { 'vouch-signature': await signAsAuthor(key, statement) } : undefined;
}
