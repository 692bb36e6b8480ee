import { randomUUID } from 'node:crypto';

/**
 * Back-channel logout (OpenID Connect Back-Channel Logout 1.0, docs/openid-connect.md#back-channel-logout):
 * when a session of an account ends, each app it signed in to that has a `backchannel_logout_uri`
 * is sent a logout token naming the account (`sub`) and the session the app was given (`sid`).
 */

/** The event a logout token carries, the only member of its `events` claim. */
export const BACKCHANNEL_LOGOUT_EVENT = 'http://schemas.openid.net/event/backchannel-logout';

/** How long a logout token is valid after it is signed (each attempt signs a new one with the same `jti`). */
export const LOGOUT_TOKEN_SECONDS = 120;

/** One client owed a logout token: the session id it was given (none: every session of the account), and the token's id. */
export interface LogoutNotice { clientId: string; sid: string | null; jti: string }

/** What a session's end owes: the account (its public id, the tokens' `sub`) and one notice per client and session. */
export interface OwedLogouts { subject: string; notices: LogoutNotice[] }

/** The client settings back-channel logout reads: where to (`backchannel_logout_uri`), and whether a `sid` must be in every token. */
export interface LogoutTarget { uri: string; sessionRequired: boolean }

/** A client's back-channel logout address, when its settings give one. */
export function logoutTargetOf(settings: Record<string, string>): LogoutTarget | undefined {
  const uri = settings.backchannel_logout_uri;
  if (!uri) return undefined;
  return { uri, sessionRequired: settings.backchannel_logout_session_required === 'true' };
}

/**
 * The apps a provider session signed in to, each with the session id it was given: the
 * session's `authorizations` (client id → `{ sid, grantId }`), as the provider keeps them. With
 * `grantId`, only the app holding that grant.
 */
export function authorizationsOf(payload: Record<string, unknown>, grantId?: string): Array<{ clientId: string; sid: string | null }> {
  const authorizations = payload.authorizations;
  if (typeof authorizations !== 'object' || authorizations === null) return [];
  return Object.entries(authorizations as Record<string, unknown>).flatMap(([clientId, a]) => {
    if (typeof a !== 'object' || a === null) return [];
    const { sid, grantId: grant } = a as { sid?: unknown; grantId?: unknown };
    if (grantId !== undefined && grant !== grantId) return [];
    return [{ clientId, sid: typeof sid === 'string' && sid.length <= 64 ? sid : null }];
  });
}

/**
 * The notices owed for ended sessions' authorizations, one per client and session id, to the
 * clients with an address (`targetOf`); a client that requires a `sid` gets none for an
 * authorization without one.
 */
export function noticesFor(authorizations: ReadonlyArray<{ clientId: string; sid: string | null }>, targetOf: (clientId: string) => LogoutTarget | undefined): LogoutNotice[] {
  const seen = new Set<string>();
  const notices: LogoutNotice[] = [];
  for (const { clientId, sid } of authorizations) {
    const target = targetOf(clientId);
    if (!target || (target.sessionRequired && sid === null)) continue;
    const key = `${clientId}\n${sid ?? ''}`;
    if (seen.has(key)) continue;
    seen.add(key);
    notices.push({ clientId, sid, jti: randomUUID() });
  }
  return notices;
}

/** A logout token's claims (Back-Channel Logout 1.0, 2.4): never a `nonce`. */
export function logoutClaims(input: { issuer: string; clientId: string; subject: string | null; sid: string | null; jti: string; now: Date }): Record<string, unknown> {
  const iat = Math.floor(input.now.getTime() / 1000);
  return {
    iss: input.issuer, aud: input.clientId, iat, exp: iat + LOGOUT_TOKEN_SECONDS, jti: input.jti,
    ...(input.subject !== null && { sub: input.subject }), ...(input.sid !== null && { sid: input.sid }),
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} },
  };
}
