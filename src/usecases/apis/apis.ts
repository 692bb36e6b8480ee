import { randomBytes } from 'node:crypto';
import {
  API_TOKEN_SECONDS, API_TOKEN_SECONDS_RANGE, apiIdentifierProblem, apiScopesOf, MAX_API_NAME, MAX_APIS,
} from '../../domain/apis';
import { event, type Acting } from '../../domain/events';
import { invalidField, Refusal } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import { DuplicateApiError, type ApiChange, type StoredApi } from '../../domain/storage/apis';
import type { Services } from '../services';

/**
 * An application's APIs (docs/openid-connect.md#apis), for its owner clients and the operators:
 * each the resource server of one resource indicator, with the scopes a client may ask of it and
 * the lifetime of its JWT access tokens. Each change is one use case recorded as an event.
 */

/** An API as its owner sees it. */
export interface ApiView {
  id: string; identifier: string; name: string; scopes: string[];
  /** The scopes each client (by client id) may ask for in its own tokens (client credentials). */
  clientScopes: Record<string, string[]>;
  /** Its access tokens' lifetime (the default unless it says otherwise). */
  tokenSeconds: number;
  /** A person's token has only the scopes their roles give; it lists them in `permissions`. */
  rbac: boolean; permissionsInToken: boolean;
  createdAt: Date; updatedAt: Date;
}

export const apiView = (api: StoredApi): ApiView => ({
  id: api.publicId, identifier: api.identifier, name: api.name, scopes: api.scopes, clientScopes: api.clientScopes,
  tokenSeconds: api.tokenSeconds ?? API_TOKEN_SECONDS, rbac: api.rbac, permissionsInToken: api.permissionsInToken, createdAt: api.createdAt, updatedAt: api.updatedAt,
});

/** What a command may set besides the identifier: each as given on the wire (a string), validated here. */
export interface ApiSettings {
  name?: string;
  /** Scopes separated by spaces or commas; '' for none. */
  scopes?: string;
  /** Seconds, 60 to 86400; '' for the default. */
  tokenLifetime?: string;
  /** true or false (default false): a person's token has only the scopes their roles give. */
  rbac?: string;
  /** true or false (default false): a person's token lists the scopes their roles give (`permissions`). */
  permissionsInToken?: string;
}

function flagOf(field: 'rbac' | 'permissionsInToken', raw: string): boolean {
  if (raw === 'true') return true;
  if (raw === 'false' || raw === '') return false;
  throw invalidField(field, 'must be true or false');
}

type Deps = Pick<Services, 'clock' | 'db' | 'work'>;

function nameOf(raw: string): string {
  const name = raw.trim();
  if (name.length === 0 || name.length > MAX_API_NAME) throw invalidField('name', `must be 1 to ${MAX_API_NAME} characters`);
  return name;
}

function scopesOf(raw: string): string[] {
  const parsed = apiScopesOf(raw);
  if ('problem' in parsed) throw invalidField('scopes', parsed.problem);
  return parsed.scopes;
}

function tokenSecondsOf(raw: string): number | null {
  if (raw.trim() === '') return null;
  const { min, max } = API_TOKEN_SECONDS_RANGE;
  if (!/^\d{1,6}$/.test(raw.trim()) || Number(raw) < min || Number(raw) > max) {
    throw invalidField('tokenLifetime', `must be a whole number of seconds from ${min} to ${max} (default ${API_TOKEN_SECONDS}): a JWT access token cannot be revoked before it expires`);
  }
  return Number(raw);
}

const unknownApi = () => invalidField('id', 'is not an API of this application (/apis/list names them)');
const taken = (identifier: string) => invalidField('identifier', `is ${identifier}, an API of this application already (/apis/list names it): update that one`);

/** Registers an API; answers it. */
export async function addApi(deps: Deps, command: { app: Application; acting: Acting; identifier: string } & ApiSettings): Promise<ApiView> {
  const identifier = command.identifier.trim();
  const problem = apiIdentifierProblem(identifier);
  if (problem) throw invalidField('identifier', problem);
  const name = nameOf(command.name ?? identifier.slice(0, MAX_API_NAME));
  const scopes = scopesOf(command.scopes ?? '');
  const tokenSeconds = tokenSecondsOf(command.tokenLifetime ?? '');
  const rbac = flagOf('rbac', command.rbac ?? '');
  const permissionsInToken = flagOf('permissionsInToken', command.permissionsInToken ?? '');
  const stored = await deps.work.run(async (uow) => {
    // counted under the application's row, claimed (written) first: parallel adds never pass the limit
    await deps.db.applications.claim(command.app.id, deps.clock.now(), uow.tx);
    if ((await deps.db.apis.list(command.app.id, uow.tx)).length >= MAX_APIS) {
      throw new Refusal('invalid', `an application has at most ${MAX_APIS} APIs; remove one first`, { field: 'identifier' });
    }
    const now = deps.clock.now();
    let api: StoredApi;
    try {
      api = await deps.db.apis.insert({
        applicationId: command.app.id, publicId: `api_${randomBytes(12).toString('hex')}`, identifier, name, scopes, clientScopes: {}, tokenSeconds, rbac, permissionsInToken,
      }, now, uow.tx);
    } catch (e) {
      if (e instanceof DuplicateApiError) throw taken(identifier);
      throw e;
    }
    uow.record(event('api.added', command.app.id, now, command.acting, { kind: 'api', id: api.publicId }, { identifier, scopes }));
    return api;
  });
  return apiView(stored);
}

/** The application's APIs, oldest first. */
export async function listApis(deps: Pick<Services, 'db'>, command: { app: Application }): Promise<ApiView[]> {
  return (await deps.db.apis.list(command.app.id)).map(apiView);
}

/** Changes an API's name, scopes or token lifetime (its identifier names it for good: add another and remove this one). */
export async function updateApi(deps: Deps, command: { app: Application; acting: Acting; id: string } & ApiSettings): Promise<ApiView> {
  const change: ApiChange = {
    ...(command.name !== undefined && { name: nameOf(command.name) }),
    ...(command.scopes !== undefined && { scopes: scopesOf(command.scopes) }),
    ...(command.tokenLifetime !== undefined && { tokenSeconds: tokenSecondsOf(command.tokenLifetime) }),
    ...(command.rbac !== undefined && { rbac: flagOf('rbac', command.rbac) }),
    ...(command.permissionsInToken !== undefined && { permissionsInToken: flagOf('permissionsInToken', command.permissionsInToken) }),
  };
  const fields = Object.keys(change);
  if (fields.length === 0) throw invalidField('name', 'nothing to change: send name, scopes, token_lifetime, rbac or permissions_in_token');
  const updated = await deps.work.run(async (uow) => {
    const now = deps.clock.now();
    // found (and locked) first: MariaDB counts an UPDATE that writes what is there already as no row changed
    if (!(await deps.db.apis.find(command.app.id, command.id, uow.tx))) throw unknownApi();
    await deps.db.apis.update(command.app.id, command.id, change, now, uow.tx);
    const api = (await deps.db.apis.find(command.app.id, command.id, uow.tx))!;
    uow.record(event('api.updated', command.app.id, now, command.acting, { kind: 'api', id: api.publicId }, { identifier: api.identifier, fields }));
    return api;
  });
  return apiView(updated);
}

/**
 * Gives a client (by its client id) the scopes of the API it may ask for in its own tokens (the
 * client credentials grant: a backend calling the API as itself); '' takes them back. Scopes the
 * API stops defining are no longer issued, whatever a client was given.
 */
export async function grantApiToClient(
  deps: Deps, command: { app: Application; acting: Acting; id: string; forClientId: string; scopes: string },
): Promise<ApiView> {
  const scopes = scopesOf(command.scopes);
  const updated = await deps.work.run(async (uow) => {
    const api = await deps.db.apis.find(command.app.id, command.id, uow.tx);
    if (!api) throw unknownApi();
    if (!(await deps.db.clients.find(command.app.id, command.forClientId))) throw invalidField('forClientId', 'is not a client of this application (/clients/list names them)');
    const undefinedScopes = scopes.filter((s) => !api.scopes.includes(s));
    if (undefinedScopes.length > 0) {
      throw invalidField('scopes', `names ${undefinedScopes.slice(0, 5).join(', ')}, which the API does not define (it defines ${api.scopes.join(' ') || 'none'}): /apis/update adds scopes`);
    }
    const { [command.forClientId]: _before, ...others } = api.clientScopes;
    const clientScopes = scopes.length > 0 ? { ...others, [command.forClientId]: scopes } : others;
    const now = deps.clock.now();
    await deps.db.apis.update(command.app.id, command.id, { clientScopes }, now, uow.tx);
    uow.record(event('api.client_scopes_granted', command.app.id, now, command.acting, { kind: 'api', id: api.publicId }, {
      identifier: api.identifier, client: command.forClientId, scopes,
    }));
    return { ...api, clientScopes, updatedAt: now };
  });
  return apiView(updated);
}

/** Removes an API: no token is issued for it from now on (those issued live out their lifetime). */
export async function removeApi(deps: Deps, command: { app: Application; acting: Acting; id: string }): Promise<void> {
  await deps.work.run(async (uow) => {
    const api = await deps.db.apis.find(command.app.id, command.id, uow.tx);
    if (!api || !(await deps.db.apis.remove(command.app.id, command.id, uow.tx))) throw unknownApi();
    uow.record(event('api.removed', command.app.id, deps.clock.now(), command.acting, { kind: 'api', id: api.publicId }, { identifier: api.identifier }));
  });
}

/** The API a resource indicator names, as the OpenID provider issues its tokens (undefined: none of this application's). */
export async function apiOfResource(deps: Pick<Services, 'db'>, command: { app: Application; identifier: string }): Promise<ApiView | undefined> {
  if (apiIdentifierProblem(command.identifier)) return undefined;
  const api = await deps.db.apis.findByIdentifier(command.app.id, command.identifier);
  return api ? apiView(api) : undefined;
}
