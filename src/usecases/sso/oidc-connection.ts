import { randomBytes } from 'node:crypto';
import type { Checks } from '../../domain/social/relying-party';
import { ProviderError } from '../../domain/social/relying-party';
import type { Application } from '../../domain/storage/applications';
import type { OidcConnectionSettings, StoredConnection } from '../../domain/storage/connections';
import type { StoredProvider } from '../../domain/storage/social';
import { connectionUrls } from '../organizations/connections';
import type { CallContext, Services } from '../services';
import { ConnectionRefusal, OIDC_SUBJECT, type CheckedResponse } from './connection-sign-in';

/**
 * Signing in through an organization's OpenID connection (docs/organizations.md#connections):
 * Gatehouse is the relying party, with the social login's (openid-client: the authorization code
 * with PKCE, state and nonce checked, the ID token validated against the provider's keys). The
 * claims it proves are the connection's facts: its subject, and the claims as attributes.
 */

type OidcConnection = StoredConnection & { settings: OidcConnectionSettings };

async function oidcConnectionOf(deps: Pick<Services, 'db'>, app: Application, publicId: string): Promise<OidcConnection> {
  const connection = /^con_[0-9a-f]{24}$/.test(publicId) ? await deps.db.connections.find(app.id, publicId) : undefined;
  if (!connection || connection.settings.type !== 'oidc') throw new ConnectionRefusal('this link names no OpenID connection of this application (it was removed, or the link is wrong)');
  return connection as OidcConnection;
}

/** The connection as the relying party's provider: its issuer and client, the scopes a sign-in needs. */
const providerOf = (c: OidcConnection): StoredProvider => ({
  id: 0, applicationId: c.applicationId, name: c.name, kind: 'oidc', issuer: c.settings.issuer, clientId: c.settings.clientId,
  secretSealed: c.secretSealed ?? '', scopes: ['openid', 'email', 'profile'],
});

const secretOf = (deps: Pick<Services, 'box'>, c: OidcConnection) => deps.box.open(c.secretSealed ?? '', `connection secret\n${c.publicId}`);

/** Whether a connection is an OpenID one (its sign-in starts here) or a SAML one. */
export async function connectionTypeOf(deps: Pick<Services, 'db'>, app: Application, publicId: string): Promise<'saml' | 'oidc' | undefined> {
  const connection = /^con_[0-9a-f]{24}$/.test(publicId) ? await deps.db.connections.find(app.id, publicId) : undefined;
  return connection?.settings.type;
}

const unreachable = (e: unknown) => (e instanceof ProviderError
  ? new ConnectionRefusal(e.kind === 'unreachable' ? 'the organization\'s identity provider could not be reached: try again in a moment' : 'the organization\'s identity provider did not prove the sign-in: start it again')
  : e);

/** Starts a sign-in at the provider: where the browser goes, and the checks it keeps until it comes back. */
export async function startOidcConnection(ctx: CallContext<'baseUrls' | 'box' | 'db' | 'relyingParty'>, command: { connectionId: string }): Promise<{ url: string; checks: Checks }> {
  const connection = await oidcConnectionOf(ctx.services, ctx.app, command.connectionId);
  try {
    return await ctx.services.relyingParty.start(providerOf(connection), secretOf(ctx.services, connection), connectionUrls(ctx.services, ctx.app, connection.publicId).redirectUri);
  } catch (e) {
    throw unreachable(e);
  }
}

/** Finishes it with what the provider sent back (code, state): the connection's facts, for connectionSignIn. */
export async function finishOidcConnection(
  ctx: CallContext<'baseUrls' | 'box' | 'clock' | 'db' | 'relyingParty'>, command: { connectionId: string; query: Record<string, string>; checks: Checks },
): Promise<CheckedResponse> {
  const connection = await oidcConnectionOf(ctx.services, ctx.app, command.connectionId);
  let claims: Record<string, unknown>;
  try {
    ({ claims } = await ctx.services.relyingParty.finishWithClaims(
      providerOf(connection), secretOf(ctx.services, connection), connectionUrls(ctx.services, ctx.app, connection.publicId).redirectUri, command.query, command.checks,
    ));
  } catch (e) {
    throw unreachable(e);
  }
  if (typeof claims.sub !== 'string' || claims.sub === '') throw new ConnectionRefusal('the identity provider named no subject');
  // an address the provider does not say it verified vouches for nobody
  const attributes = Object.fromEntries(Object.entries(claims)
    .filter(([k]) => !(k === 'email' && claims.email_verified !== true))
    .map(([k, v]) => [k, (Array.isArray(v) ? v : [v]).filter((x) => ['string', 'number', 'boolean'].includes(typeof x)).map(String).slice(0, 100)])
    .filter(([, v]) => v.length > 0));
  return {
    connection: connection.publicId,
    facts: {
      id: randomBytes(16).toString('hex'), issuer: connection.settings.issuer, nameId: claims.sub, nameIdFormat: OIDC_SUBJECT,
      notOnOrAfter: new Date(ctx.services.clock.now().getTime() + 60_000), attributes,
    },
  };
}
