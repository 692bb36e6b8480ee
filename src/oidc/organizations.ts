import type Provider from 'oidc-provider';
import type { Configuration, FindAccount, KoaContextWithOIDC, ResourceServer, TokenEndpointGrantContext } from 'oidc-provider';
import type { Application } from '../domain/storage/applications';
import { organizationExists, organizationTokenClaims, type OrganizationTokenClaims } from '../usecases/organizations/tokens';
import type { Services } from '../usecases/services';
import type { oidcProviderModule } from './provider-module';
import { perRequest } from './per-request';
import { inProviderRealm } from './realm';

/**
 * Organizations' access tokens (docs/organizations.md#tokens): each organization of the
 * application is a resource (RFC 8707) named `urn:gatehouse:organization:ORG_ID`, whose access
 * tokens are JWTs signed with the application's keys, holding `org_id`, `org_roles` and
 * `org_permissions`, read afresh for each token. A relying party asks for one with the
 * `organization` parameter of its authorization request (its code then gives that organization's
 * token, and so does each refresh), or exchanges its refresh token for another organization's
 * (RFC 8693 token exchange), as many times as it switches. An account that is not a member gets
 * `invalid_target`.
 */

export const ORGANIZATION_RESOURCE = 'urn:gatehouse:organization:';
export const TOKEN_EXCHANGE = 'urn:ietf:params:oauth:grant-type:token-exchange';
const REFRESH_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:refresh_token';
const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';
/** How long an organization's access token lives: as every access token of the provider. */
const ORGANIZATION_TOKEN_SECONDS = 3600;
const ORGANIZATION_ID = /^org_[0-9a-f]{24}$/;
/** The provider's routes of an authorization request, where the person may not have signed in yet. */
const AUTHORIZATION_ROUTES = new Set(['authorization', 'resume', 'pushed_authorization_request']);

/** The organization a resource indicator names, if it names one. */
export function organizationOfResource(indicator: string): string | undefined {
  if (!indicator.startsWith(ORGANIZATION_RESOURCE)) return undefined;
  const id = indicator.slice(ORGANIZATION_RESOURCE.length);
  return ORGANIZATION_ID.test(id) ? id : undefined;
}

type Module = ReturnType<typeof oidcProviderModule>;

/** The provider's configuration for organizations' tokens, and the token exchange to register once it is built. */
export function organizationTokens(
  services: Pick<Services, 'db'>, app: Application, mod: Module,
  /** The provider's other resources (the application's APIs): their servers, and their tokens' claims. */
  others: {
    resourceServer(ctx: KoaContextWithOIDC, indicator: string): Promise<ResourceServer>;
    extraTokenClaims(ctx: KoaContextWithOIDC, token: { resourceServer?: { audience?: unknown }; accountId?: unknown }): Promise<Record<string, unknown> | undefined>;
    /** Whether a resource indicator names one of them now. */
    exists(ctx: KoaContextWithOIDC, indicator: string): Promise<boolean>;
  },
) {
  // one read per token request: what the resource's check found is what the token says
  const once = perRequest<OrganizationTokenClaims | undefined>();
  const claimsFor = (ctx: object, accountId: string, organizationId: string) =>
    once(ctx, `${accountId} ${organizationId}`, () => organizationTokenClaims(services, { app, accountId, organizationId }));
  /** Who the request is about: the account of the code or token being exchanged, else of the session (an authorization request). */
  const accountOf = (ctx: KoaContextWithOIDC): string | undefined => ctx.oidc.account?.accountId ?? ctx.oidc.session?.accountId;

  async function resourceServer(ctx: KoaContextWithOIDC, indicator: string): Promise<ResourceServer> {
    const organizationId = organizationOfResource(indicator);
    // any other resource is one of the application's APIs, or none
    if (!organizationId) return others.resourceServer(ctx, indicator);
    const accountId = accountOf(ctx);
    if (accountId === undefined) {
      // an authorization request before the person signed in: the organization must exist. Anywhere
      // else without an account (a client's own token): an organization's token is a member's only
      if (!AUTHORIZATION_ROUTES.has(ctx.oidc.route)) throw new mod.errors.InvalidTarget('an organization\'s access token is for a member: the client credentials grant gets none');
      if (!(await organizationExists(services, { app, organizationId }))) throw new mod.errors.InvalidTarget(`there is no organization ${organizationId}`);
    } else if (!(await claimsFor(ctx, accountId, organizationId))) {
      throw new mod.errors.InvalidTarget(`the account is not a member of the organization ${organizationId}`);
    }
    return inProviderRealm({ scope: '', audience: indicator, accessTokenFormat: 'jwt', accessTokenTTL: ORGANIZATION_TOKEN_SECONDS, jwt: { sign: { alg: 'ES256' } } });
  }

  const configuration: Pick<Configuration, 'extraParams' | 'extraTokenClaims'> & { features: Pick<NonNullable<Configuration['features']>, 'resourceIndicators'> } = {
    extraParams: ['organization'],
    features: {
      resourceIndicators: {
        enabled: true,
        // the organization parameter of an authorization request is its resource; a code or token of one organization gives its tokens
        defaultResource: (ctx, _client, oneOf) => {
          if (oneOf) return oneOf.length === 1 ? oneOf[0] : oneOf;
          const organization = ctx.oidc.params?.organization;
          return typeof organization === 'string' && organization !== '' ? `${ORGANIZATION_RESOURCE}${organization}` : undefined;
        },
        // a code or refresh token for one resource (an organization, an API) gives that resource's tokens without naming it again
        // (an API removed since: the refresh gives the app's own token, and the refresh token lives on, instead of being
        // spent for a token the provider then refuses to make)
        useGrantedResource: async (ctx, model) => typeof model.resource === 'string'
          && (organizationOfResource(model.resource) !== undefined || await others.exists(ctx, model.resource)),
        getResourceServerInfo: (ctx, indicator) => resourceServer(ctx, indicator),
      },
    },
    // an organization's access token says the account's roles and permissions in it, as they are now
    extraTokenClaims: async (ctx, token) => {
      const audience = token.resourceServer?.audience;
      const organizationId = typeof audience === 'string' ? organizationOfResource(audience) : undefined;
      if (!organizationId) {
        const own = await others.extraTokenClaims(ctx, token as { resourceServer?: { audience?: unknown }; accountId?: unknown });
        // an API's token asked for in an organization (the exchange with organization and resource): the member's roles there too
        const chosen = ctx.oidc.params?.grant_type === TOKEN_EXCHANGE ? ctx.oidc.params.organization : undefined;
        if (typeof chosen !== 'string' || chosen === '' || !('accountId' in token) || typeof token.accountId !== 'string') return own;
        const claims = ORGANIZATION_ID.test(chosen) ? await claimsFor(ctx, token.accountId, chosen) : undefined;
        if (!claims) throw new mod.errors.InvalidTarget(`the account is not a member of the organization ${chosen.slice(0, 64)}`);
        return inProviderRealm({ ...own, ...claims });
      }
      if (!('accountId' in token) || typeof token.accountId !== 'string') return undefined;
      const claims = await claimsFor(ctx, token.accountId, organizationId);
      // (checked when the resource was: a membership ended in between issues no token)
      if (!claims) throw new mod.errors.InvalidTarget(`the account is not a member of the organization ${organizationId}`);
      // (an object of the provider's realm: it checks that what it gets is a plain object)
      return inProviderRealm({ ...claims });
    },
  };

  /**
   * RFC 8693: a refresh token of the client (subject_token, of type refresh_token) for an access
   * token of one organization (`organization`, or `resource` naming it). The refresh token is
   * neither spent nor rotated: it is the proof of the grant, checked as a refresh would check it.
   */
  function registerExchange(provider: Provider, findAccount: FindAccount): void {
    provider.registerGrantType(TOKEN_EXCHANGE, async (ctx: TokenEndpointGrantContext<{ subject_token?: string; subject_token_type?: string; organization?: string }>) => {
      const { params, client } = ctx.oidc;
      // the exchange gives bearer tokens only: a client whose tokens are bound to its key (DPoP, FAPI 2.0) gets its
      // organization's or API's token from its sign-in (organization, resource), never a bearer copy here
      const metadata = client.metadata();
      if (metadata.dpop_bound_access_tokens === true || metadata.security_profile === 'fapi2' || ctx.get('dpop') !== '') {
        throw new mod.errors.InvalidRequest('the token exchange issues bearer tokens only: a client with DPoP-bound tokens asks for the organization or API at its sign-in');
      }
      if (!params.subject_token) throw new mod.errors.InvalidRequest('missing required parameter \'subject_token\' (the refresh token)');
      if (params.subject_token_type !== REFRESH_TOKEN_TYPE) throw new mod.errors.InvalidRequest(`subject_token_type must be ${REFRESH_TOKEN_TYPE}: a refresh token is exchanged for an organization's access token`);
      const indicator = typeof params.resource === 'string' ? params.resource : params.organization ? `${ORGANIZATION_RESOURCE}${params.organization}` : undefined;
      if (!indicator) throw new mod.errors.InvalidRequest('name the organization: organization=ORG_ID (or resource=urn:gatehouse:organization:ORG_ID)');
      const refreshToken = await provider.RefreshToken.find(params.subject_token, { ignoreExpiration: true });
      if (!refreshToken) throw new mod.errors.InvalidGrant('the refresh token is invalid, expired or spent');
      if (refreshToken.clientId !== client.clientId) throw new mod.errors.InvalidGrant('the refresh token is another client\'s');
      // a spent refresh token back: it leaked, and its grant ends, as at a refresh (its tokens revoked, the reuse recorded)
      if (refreshToken.consumed) {
        await Promise.all([
          refreshToken.destroy(),
          ...(refreshToken.grantId ? [provider.AccessToken.revokeByGrantId(refreshToken.grantId), provider.RefreshToken.revokeByGrantId(refreshToken.grantId),
            provider.AuthorizationCode.revokeByGrantId(refreshToken.grantId), provider.Grant.adapter.destroy(refreshToken.grantId)] : []),
        ]);
        if (refreshToken.grantId) provider.emit('grant.revoked', ctx, refreshToken.grantId);
        throw new mod.errors.InvalidGrant('the refresh token was used already: its grant ended');
      }
      if (refreshToken.isExpired) throw new mod.errors.InvalidGrant('the refresh token has expired');
      // a refresh token bound to a key (a public client's, with DPoP) proves nothing without its key: refused here
      if (refreshToken.jkt) throw new mod.errors.InvalidGrant('the refresh token is bound to a DPoP key: the token exchange takes none');
      const grant = refreshToken.grantId ? await provider.Grant.find(refreshToken.grantId) : undefined;
      if (!grant || grant.clientId !== client.clientId || !refreshToken.accountId || grant.accountId !== refreshToken.accountId) throw new mod.errors.InvalidGrant('the refresh token\'s grant ended');
      const account = await findAccount(ctx, refreshToken.accountId, refreshToken);
      if (!account) throw new mod.errors.InvalidGrant('the refresh token\'s account is disabled or gone');
      ctx.oidc.entity('Account', account);
      const at = new provider.AccessToken({
        accountId: account.accountId, client, expiresWithSession: refreshToken.expiresWithSession, grantId: grant.jti,
        gty: TOKEN_EXCHANGE, sessionUid: refreshToken.sessionUid, sid: refreshToken.sid, scope: '',
      });
      const server = await resourceServer(ctx, indicator);
      if (!organizationOfResource(indicator)) {
        // an API: only one the grant gave (at the sign-in), with the scopes it gave that the API gives now
        const granted = new Set(grant.getResourceScope(indicator).split(' ').filter(Boolean));
        const scopes = (server.scope ?? '').split(' ').filter((s) => granted.has(s));
        if (granted.size === 0) throw new mod.errors.InvalidTarget(`the refresh token's grant does not include ${indicator.slice(0, 255)}: ask for it (resource) at the sign-in`);
        at.scope = scopes.join(' ');
      }
      at.resourceServer = new provider.ResourceServer(indicator, server);
      ctx.oidc.entity('AccessToken', at);
      const value = await at.save();
      ctx.body = { access_token: value, issued_token_type: ACCESS_TOKEN_TYPE, token_type: at.tokenType, expires_in: at.expiration };
    }, ['subject_token', 'subject_token_type', 'organization', 'resource', 'scope', 'requested_token_type', 'audience']);
  }

  return { configuration, registerExchange };
}
