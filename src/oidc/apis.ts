import type { KoaContextWithOIDC, ResourceServer } from 'oidc-provider';
import type { Application } from '../domain/storage/applications';
import { apiOfResource } from '../usecases/apis/apis';
import type { Services } from '../usecases/services';
import type { oidcProviderModule } from './provider-module';
import { inProviderRealm } from './realm';

/**
 * The application's APIs as the provider's resource servers (docs/openid-connect.md#apis): a client
 * asking `resource=<identifier>` gets a JWT access token for that API (RFC 9068: `typ` at+jwt, `aud`
 * the identifier, `scope` what was asked of the API's scopes), signed with the application's keys.
 * A person's token carries the scopes the grant gave; a client's own token (client credentials)
 * those the API was told the client may have (/apis/grant), never more. Read afresh for each
 * token request: a change reaches every pod at once.
 */
export function apiResources(services: Pick<Services, 'db'>, app: Application, mod: ReturnType<typeof oidcProviderModule>) {
  return async (ctx: KoaContextWithOIDC, indicator: string): Promise<ResourceServer> => {
    const api = await apiOfResource(services, { app, identifier: indicator });
    if (!api) {
      throw new mod.errors.InvalidTarget(`${indicator.slice(0, 255)} is not an API of this application: register it with /apis/add (or ask for an organization: urn:gatehouse:organization:ORG_ID)`);
    }
    // a client's own token: the scopes it was given, and none is no token at all
    const own = ctx.oidc.route === 'token' && ctx.oidc.params?.grant_type === 'client_credentials';
    const clientId = ctx.oidc.client?.clientId;
    const granted = own ? (clientId !== undefined ? api.clientScopes[clientId] ?? [] : []).filter((s) => api.scopes.includes(s)) : api.scopes;
    if (own && granted.length === 0) {
      throw new mod.errors.InvalidTarget(`this client was given none of the scopes of ${api.identifier} for its own tokens: /apis/grant gives them`);
    }
    return inProviderRealm({
      scope: granted.join(' '), audience: api.identifier, accessTokenFormat: 'jwt', accessTokenTTL: api.tokenSeconds, jwt: { sign: { alg: 'ES256' } },
    });
  };
}
