import type { StoredCredential } from './storage/credentials';

/**
 * How a person proved who they are, as OpenID Connect's `amr` names it (RFC 8176): `pwd` a
 * password, `fed` a social identity provider. A second factor and passkeys add theirs (`otp`,
 * `hwk`, `swk`).
 */
/** RFC 8176 names: `pwd` a password, `fed` a social identity provider, `otp` a one-time code (TOTP or a recovery code). */
export type AuthMethod = 'pwd' | 'fed' | 'otp';

/**
 * The facts of a session (docs/architecture.md#the-sign-in-seam): how the person signed in and
 * when. Every token of the session carries them in its row (`extra.session`), from the sign-in's
 * access token and code to every token the code, a refresh rotation or a mobile SDK's refresh
 * gives later, so an OpenID ID token (`amr`, `auth_time`) or a step-up check can read them from any
 * token of the session.
 */
export interface SessionFacts { amr: AuthMethod[]; auth_time: string }

/** The facts of a sign-in proven now by `amr`. */
export const sessionOf = (amr: AuthMethod[], at: Date): SessionFacts => ({ amr, auth_time: at.toISOString() });

/** The session facts a stored credential carries, if any (tokens a client minted for a record have none). */
export function sessionFacts(credential: Pick<StoredCredential, 'extra'>): SessionFacts | undefined {
  const session = credential.extra?.session as Partial<SessionFacts> | undefined;
  if (!session || !Array.isArray(session.amr) || typeof session.auth_time !== 'string') return undefined;
  return { amr: session.amr, auth_time: session.auth_time };
}
