import type { StoredCredential } from './storage/credentials';

/**
 * How a person proved who they are, as OpenID Connect's `amr` names it (RFC 8176): `pwd` a
 * password, `fed` a social identity provider, `otp` a one-time code (TOTP or a recovery code),
 * `hwk` a key held by an authenticator (a passkey), `mfa` more than one factor (a passkey that
 * verified the person: the device and its PIN or biometric); `email` beside `otp`: a code or link
 * mailed to the person (the mailbox: one factor).
 */
export type AuthMethod = 'pwd' | 'fed' | 'otp' | 'hwk' | 'mfa' | 'email';

/** Each credential a sign-in was proven with, in Gatehouse's words (what the account page and the audit log say). */
export type SignInFactor = 'password' | 'social' | 'totp' | 'recovery_code' | 'passkey' | 'verified_passkey' | 'email_code' | 'connection';

const AMR: Record<SignInFactor, AuthMethod[]> = {
  password: ['pwd'], social: ['fed'], connection: ['fed'], totp: ['otp'], recovery_code: ['otp'], passkey: ['hwk'], verified_passkey: ['hwk', 'mfa'], email_code: ['otp', 'email'],
};

/**
 * The `amr` of a sign-in proven with `factors`. A mailed code is a one-time code like an
 * authenticator's: with a second factor after it the sign-in says `mfa` too, since `otp` alone no
 * longer tells the two apart.
 */
export function amrOf(factors: readonly SignInFactor[]): AuthMethod[] {
  const amr = factors.flatMap((f) => AMR[f]);
  if (factors.includes('email_code') && factors.some((f) => f !== 'email_code')) amr.push('mfa');
  return [...new Set(amr)];
}

/**
 * The facts of a session (docs/architecture.md#the-sign-in-seam): how the person signed in and
 * when. Every token of the session carries them in its row (`extra.session`), from the sign-in's
 * access token and code to every token the code, a refresh rotation or a mobile SDK's refresh
 * gives later, so an OpenID ID token (`amr`, `auth_time`) or a step-up check can read them from any
 * token of the session.
 */
export interface SessionFacts { amr: AuthMethod[]; auth_time: string; factors?: SignInFactor[] }

/** The facts of a sign-in proven now with `factors`. */
export const sessionOf = (factors: SignInFactor[], at: Date): SessionFacts => ({ amr: amrOf(factors), auth_time: at.toISOString(), factors });

/** The session facts a stored credential carries, if any (tokens a client minted for a record have none). */
export function sessionFacts(credential: Pick<StoredCredential, 'extra'>): SessionFacts | undefined {
  const session = credential.extra?.session as Partial<SessionFacts> | undefined;
  if (!session || !Array.isArray(session.amr) || typeof session.auth_time !== 'string') return undefined;
  return { amr: session.amr, auth_time: session.auth_time, ...(Array.isArray(session.factors) && { factors: session.factors }) };
}

/**
 * The authentication context classes an OpenID client may ask for with `acr_values`
 * (docs/openid-connect.md#a-stronger-sign-in-on-request): two factors (PAPE's multi-factor
 * policy: a password or social identity with a one-time code, or a passkey that verified the
 * person) or a phishing-resistant sign-in (`phr`, OpenID EAP: a passkey).
 */
export const ACR_MULTI_FACTOR = 'http://schemas.openid.net/pape/policies/2007/06/multi-factor';
export const ACR_PHISHING_RESISTANT = 'phr';
export const ACR_VALUES: readonly string[] = [ACR_MULTI_FACTOR, ACR_PHISHING_RESISTANT];

/** Whether a sign-in proven as `amr` says meets the authentication context class `acr`. */
export function acrMet(amr: readonly string[], acr: string): boolean {
  if (acr === ACR_PHISHING_RESISTANT) return amr.includes('hwk');
  // (a mailed code alone is `otp` and `email`: one factor)
  if (acr === ACR_MULTI_FACTOR) return amr.includes('mfa') || (amr.includes('otp') && amr.some((m) => m === 'pwd' || m === 'fed' || m === 'hwk'));
  return false;
}

/** The classes among `acr_values` (space-separated) Gatehouse knows, in the client's order of preference. */
export const requestedAcrs = (acrValues: unknown): string[] =>
  (typeof acrValues === 'string' ? acrValues.split(' ').filter((a) => ACR_VALUES.includes(a)) : []);

/**
 * The classes an app asked for as essential in its `claims` request parameter (OpenID Connect Core
 * 5.5.1.1: `{"id_token":{"acr":{"essential":true,"values":[…]}}}`), among those Gatehouse knows;
 * an essential `acr` without values asks for any of them. Unlike `acr_values`, which the provider
 * meets when it can, a sign-in that falls short of these gives no code.
 */
export function essentialAcrs(claims: unknown): string[] {
  let parsed: unknown = claims;
  if (typeof claims === 'string') {
    try {
      parsed = JSON.parse(claims);
    } catch {
      return [];
    }
  }
  const found = new Set<string>();
  for (const member of ['id_token', 'userinfo']) {
    const acr = (parsed as Record<string, Record<string, { essential?: unknown; value?: unknown; values?: unknown }> | undefined> | null)?.[member]?.acr;
    if (!acr || acr.essential !== true) continue;
    const values = Array.isArray(acr.values) ? acr.values : acr.value !== undefined ? [acr.value] : ACR_VALUES;
    for (const v of values) if (typeof v === 'string' && ACR_VALUES.includes(v)) found.add(v);
  }
  return [...found];
}
