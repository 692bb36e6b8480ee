import type { CredentialStore } from '../domain/storage/credentials';
import type { StoredCredential } from '../domain/storage/credentials';
import type { Application } from '../domain/storage/applications';
import type { Client, ClientService, Clock, Feature } from '../domain/clients';
import { sha256Hex } from '../domain/secrets';
import { ApiError, errors } from '../errors';
import { assertNoControl, type Params } from './params';
import type { ReplayGuard } from './replay-guard';
import { MAX_CLOCK_SKEW_MS, parseSignatureDate, verifySignature } from '../domain/signature';

/**
 * The schemes of docs/api.md#authentication: `basic` (Authorization: Basic), `signature` (keyed-HMAC),
 * `client_params` (client_id + client_secret parameters), `access_token` (Authorization: OAuth
 * or the access_token parameter), `client_id` (a login client named by client_id alone, docs/api.md#authentication)
 * and `none`.
 */
export type AuthScheme = 'basic' | 'signature' | 'client_params' | 'access_token' | 'client_id' | 'none';

export type Principal =
  | { kind: 'client'; scheme: AuthScheme; client: Client }
  | { kind: 'entity'; scheme: 'access_token'; token: StoredCredential }
  | { kind: 'none' };

export interface AuthPolicy {
  schemes: readonly AuthScheme[];
  /** The client must have one of these features; empty: any client. */
  kinds: readonly Feature[];
  /** /oauth/token reports bad client credentials as 402 invalid_client (docs/api.md#oauthtoken). */
  badCredentials: (why: string) => ApiError;
  /** The endpoint only reads: the same signed request may be sent again within its window. */
  repeatable?: boolean;
}

export interface AuthRequest {
  authorization?: string;
  date?: string;
  path: string;
  params: Params;
}

export interface AuthDeps {
  clients: ClientService;
  credentials: CredentialStore;
  clock: Clock;
  replays: ReplayGuard;
}

const SCHEME_NAMES: Record<string, AuthScheme> = { basic: 'basic', signature: 'signature', oauth: 'access_token' };

/** Which scheme the request presents, before any credential is checked. */
function presented(req: AuthRequest, accepted: readonly AuthScheme[]): { scheme: AuthScheme; value?: string } {
  if (req.authorization) {
    const [word, ...rest] = req.authorization.trim().split(/\s+/);
    const scheme = SCHEME_NAMES[word.toLowerCase()];
    if (!scheme) {
      throw errors.invalidClientCredentials(`unsupported Authorization scheme "${word.slice(0, 20)}"; use Basic, Signature or OAuth`);
    }
    return { scheme, value: rest.join(' ') };
  }
  const p = req.params;
  if (p.get('client_id') !== undefined && p.get('client_secret') !== undefined) return { scheme: 'client_params' };
  // on login endpoints access_token is a parameter of the call, and client_id names the caller
  const token = p.get('access_token');
  if (token !== undefined && accepted.includes('access_token')) return { scheme: 'access_token', value: token };
  if (p.get('client_id') !== undefined) return { scheme: 'client_id' };
  return { scheme: 'none' };
}

function describe(schemes: readonly AuthScheme[]): string {
  const names: Record<AuthScheme, string> = {
    basic: 'Basic authentication',
    signature: 'a Signature',
    client_params: 'client_id and client_secret',
    access_token: 'an access token',
    client_id: 'client_id',
    none: 'nothing',
  };
  return schemes.filter((s) => s !== 'none').map((s) => names[s]).join(', or ');
}

async function clientBySecret(deps: AuthDeps, app: Application, policy: AuthPolicy, id: string | undefined, secret: string | undefined) {
  if (!id || secret === undefined) throw policy.badCredentials('client credentials are malformed; send client_id and client_secret');
  assertNoControl('client_id', id);
  const client = await deps.clients.authenticate(app.id, id, secret);
  if (!client) throw policy.badCredentials('client_id or client_secret is not valid for this application');
  return client;
}

async function clientBySignature(deps: AuthDeps, app: Application, policy: AuthPolicy, req: AuthRequest, value: string) {
  const refused = () => policy.badCredentials('the request signature is not valid or its Date header is more than 5 minutes from the server clock (send Date as UTC YYYY-MM-DD HH:MM:SS)');
  const sep = value.lastIndexOf(':');
  if (sep <= 0 || !req.date) throw refused();
  const date = parseSignatureDate(req.date);
  if (!date || Math.abs(deps.clock.now().getTime() - date.getTime()) > MAX_CLOCK_SKEW_MS) throw refused();
  assertNoControl('Authorization', value);
  const found = await deps.clients.withSecret(app.id, value.slice(0, sep));
  if (!found || !verifySignature(found.secret, value.slice(sep + 1), req.path, req.date, req.params.signed())) throw refused();
  if (!policy.repeatable) {
    // remembered until its Date leaves the window: a second use then fails the Date check anyway
    const ttl = date.getTime() + MAX_CLOCK_SKEW_MS - deps.clock.now().getTime() + 1000;
    if (!(await deps.replays.firstUse(sha256Hex(`${app.id}\n${value}`), ttl))) {
      throw policy.badCredentials('this signed request was already accepted once and cannot be sent again; sign every request anew (with the current Date)');
    }
  }
  return found.client;
}

/**
 * Authenticates a request against the route's policy and the application it addressed. Every
 * lookup is scoped to `app`: credentials of another application never authenticate.
 */
export async function authenticate(req: AuthRequest, app: Application, policy: AuthPolicy, deps: AuthDeps): Promise<Principal> {
  const { scheme, value } = presented(req, policy.schemes);
  if (scheme === 'none') {
    if (policy.schemes.includes('none')) return { kind: 'none' };
    throw policy.badCredentials(`this endpoint needs client credentials: send ${describe(policy.schemes)}`);
  }
  if (!policy.schemes.includes(scheme)) {
    throw policy.badCredentials(`this endpoint does not accept ${describe([scheme])}; send ${describe(policy.schemes)}`);
  }

  if (scheme === 'access_token') {
    const token = value ? await deps.credentials.findActive(app.id, 'access_token', sha256Hex(value), deps.clock.now()) : undefined;
    if (!token) throw errors.invalidAccessToken();
    return { kind: 'entity', scheme, token };
  }

  let client: Client;
  if (scheme === 'basic') {
    const decoded = Buffer.from(value ?? '', 'base64').toString('utf8');
    const sep = decoded.indexOf(':');
    client = await clientBySecret(deps, app, policy, sep > 0 ? decoded.slice(0, sep) : undefined, sep > 0 ? decoded.slice(sep + 1) : undefined);
  } else if (scheme === 'signature') {
    client = await clientBySignature(deps, app, policy, req, value ?? '');
  } else if (scheme === 'client_params') {
    client = await clientBySecret(deps, app, policy, req.params.get('client_id'), req.params.get('client_secret'));
  } else {
    const id = req.params.require('client_id');
    assertNoControl('client_id', id);
    const found = await deps.clients.find(app.id, id);
    if (!found) throw policy.badCredentials('client_id is not a client of this application');
    client = found;
  }

  if (policy.kinds.length > 0 && !policy.kinds.some((k) => client.features.includes(k))) {
    throw errors.permissionError(`client ${client.clientId} may not call this endpoint: it needs the feature ${policy.kinds.join(' or ')}`);
  }
  return { kind: 'client', scheme, client };
}
