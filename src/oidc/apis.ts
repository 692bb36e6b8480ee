import type { KoaContextWithOIDC, ResourceServer } from 'oidc-provider';
import type { Application } from '../domain/storage/applications';
import { apiOfResource, type ApiView } from '../usecases/apis/apis';
import { apiPermissionsOfAccount } from '../usecases/apis/roles';
import type { Services } from '../usecases/services';
import type { oidcProviderModule } from './provider-module';
import { perRequest } from './per-request';
import { inProviderRealm } from './realm';

/**
 * The application's APIs as the provider's resource servers (docs/openid-connect.md#apis): a client
 * asking `resource=<identifier>` gets a JWT access token for that API (RFC 9068: `typ` at+jwt, `aud`
 * the identifier, `scope` what was asked of the API's scopes), signed with the application's keys.
 * A person's token carries the scopes the grant gave, limited to those their roles give when the
 * API has role-based access (`rbac`), and lists those (`permissions`) when the API asks for it; a
 * client's own token (client credentials) the scopes the API was told the client may have
 * (/apis/grant), never more. Read afresh for each token request: a change reaches every pod at once.
 */
export function apiResources(services: Pick<Services, 'db'>, app: Application, mod: ReturnType<typeof oidcProviderModule>) {
  // one read of an API and of an account's permissions per token request: what the resource's check found is what the token says
  const apis = perRequest<ApiView | undefined>();
  const permissions = perRequest<string[]>();
  const apiOf = (ctx: object, identifier: string) => apis(ctx, identifier, () => apiOfResource(services, { app, identifier }));
  const permissionsOf = (ctx: object, accountUuid: string, api: ApiView) =>
    permissions(ctx, `${accountUuid} ${api.id}`, () => apiPermissionsOfAccount(services, { app, accountUuid, apiId: api.id, scopes: api.scopes }));
  /** Whose token this is: the account of the code or token being exchanged, else of the session (an authorization request). */
  const accountOf = (ctx: KoaContextWithOIDC): string | undefined => ctx.oidc.account?.accountId ?? ctx.oidc.session?.accountId;

  async function resourceServer(ctx: KoaContextWithOIDC, indicator: string): Promise<ResourceServer> {
    const api = await apiOf(ctx, indicator);
    if (!api) {
      throw new mod.errors.InvalidTarget(`${indicator.slice(0, 255)} is not an API of this application: register it with /apis/add (or ask for an organization: urn:gatehouse:organization:ORG_ID)`);
    }
    let scopes = api.scopes;
    if (ctx.oidc.route === 'token' && ctx.oidc.params?.grant_type === 'client_credentials') {
      // a client's own token: the scopes it was given, and none is no token at all
      const clientId = ctx.oidc.client?.clientId;
      scopes = (clientId !== undefined ? api.clientScopes[clientId] ?? [] : []).filter((s) => api.scopes.includes(s));
      if (scopes.length === 0) throw new mod.errors.InvalidTarget(`this client was given none of the scopes of ${api.identifier} for its own tokens: /apis/grant gives them`);
    } else if (api.rbac && ctx.oidc.route === 'token') {
      // a person's token: only what their roles give as it is issued (the grant keeps what was asked, so that a role
      // given later shows at the next refresh)
      const accountUuid = accountOf(ctx);
      scopes = accountUuid !== undefined ? await permissionsOf(ctx, accountUuid, api) : [];
    }
    return inProviderRealm({
      scope: scopes.join(' '), audience: api.identifier, accessTokenFormat: 'jwt', accessTokenTTL: api.tokenSeconds, jwt: { sign: { alg: 'ES256' } },
    });
  }

  /** A person's token for an API that asks for it lists the scopes their roles give it (`permissions`, as they are now). */
  async function extraTokenClaims(ctx: KoaContextWithOIDC, token: { resourceServer?: { audience?: unknown }; accountId?: unknown }): Promise<Record<string, unknown> | undefined> {
    const audience = token.resourceServer?.audience;
    if (typeof audience !== 'string' || typeof token.accountId !== 'string') return undefined;
    const api = await apiOf(ctx, audience);
    if (!api?.permissionsInToken) return undefined;
    return inProviderRealm({ permissions: await permissionsOf(ctx, token.accountId, api) });
  }

  return { resourceServer, extraTokenClaims, exists: async (ctx: KoaContextWithOIDC, indicator: string) => (await apiOf(ctx, indicator)) !== undefined };
}
