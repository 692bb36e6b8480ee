import type { UserRecord } from '../../domain/storage/records';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { SocialProfile } from '../../domain/social/profile';
import { randomToken, sha256Hex } from '../../domain/secrets';
import { MFA_TOKEN_SECONDS, secondFactorPolicy, type SecondFactorMethod } from '../../domain/second-factor';
import { Refusal } from '../../domain/refusal';
import type { AuthMethod } from '../../domain/session';
import { RESPONSE_TYPES, type FlowRequest, type ResponseType } from './call';
import type { CallContext } from '../services';

/**
 * What else a sign-in does in its transaction, as data rather than code: a sign-in paused for its
 * second factor resumes with it. `socialToken`: the social login token the sign-in spends;
 * `merge`: the identity of a failed social sign-in (380) that joins the account.
 */
export interface SignInAlso {
  socialToken?: string;
  merge?: { token: string; profile: SocialProfile };
}

/** A sign-in paused between its first credential and its session (sealed in its mfa_token's row). */
export interface PausedSignIn {
  amr: AuthMethod[];
  refreshSecret?: string;
  also: SignInAlso;
  /** The hash the password was checked against: a password changed meanwhile ends the paused sign-in. */
  passwordHash?: string;
}

/** What a paused sign-in's row keeps in clear: how to answer when it finishes. */
interface PausedExtra {
  response_type: ResponseType;
  flow: { name: string; version: number; locale: string };
  /** The rest, sealed to this row: a refresh secret and a social token sign in, so they are never stored in clear. */
  sealed: string;
}

const binding = (hash: string) => `mfa_token:${hash}`;

/** Whether a sign-in into `record` owes a second factor: the account has a confirmed authenticator, and the application's setting is not off. */
export async function secondFactorOwed(ctx: CallContext, record: UserRecord): Promise<boolean> {
  if (secondFactorPolicy(ctx.app) === 'off') return false;
  return Boolean((await ctx.services.db.factors.totp(ctx.app.id, record.id))?.confirmedAt);
}

/**
 * The step between "credential proven" and "session issued" (docs/second-factor.md), for a
 * sign-in that owes a second factor (secondFactorOwed): it is paused. An mfa_token (one use, 5
 * minutes, bound to the client, the response type and the redirect URI) keeps what finishing it
 * needs, and the refusal `second_factor_required` carries it to the caller with the methods that
 * may finish it.
 */
export async function pauseForSecondFactor(ctx: CallContext, request: FlowRequest, record: UserRecord, paused: PausedSignIn): Promise<never> {
  const { tokens, work, box } = ctx.services;
  const value = randomToken(20);
  const extra: PausedExtra = {
    response_type: request.responseType,
    flow: { name: request.flow.name, version: request.flow.version, locale: request.flow.locale },
    sealed: box.seal(JSON.stringify(paused), binding(sha256Hex(value))),
  };
  await work.run(({ tx }) => tokens.issueAll([{
    issue: {
      kind: 'mfa_token', app: ctx.app, entityId: record.id, client: request.client, redirectUri: request.redirectUri,
      seconds: MFA_TOKEN_SECONDS, extra: extra as unknown as Record<string, unknown>,
    },
    value,
  }], tx));
  const methods: SecondFactorMethod[] = ['totp', 'recovery_code'];
  throw new Refusal('second_factor_required', 'the password is right and this account signs in with a second factor too: '
    + 'send a code from its authenticator app (or a recovery code) with mfa_token to /oauth/mfa_verify_native within 5 minutes', {
    secondFactor: { token: value, methods, expiresIn: MFA_TOKEN_SECONDS },
  });
}

/** A paused sign-in's row opened: how to answer, and what it resumes with. */
export function openPaused(ctx: CallContext, row: StoredCredential): { responseType: ResponseType; flow: PausedExtra['flow']; paused: PausedSignIn } | undefined {
  const extra = row.extra as Partial<PausedExtra> | null;
  if (!extra?.flow || !extra.sealed || !RESPONSE_TYPES.includes(extra.response_type as ResponseType)) return undefined;
  try {
    const paused = JSON.parse(ctx.services.box.open(extra.sealed, binding(row.valueHash))) as PausedSignIn;
    return { responseType: extra.response_type as ResponseType, flow: extra.flow, paused };
  } catch {
    // sealed with another SECRET_KEY (rotated meanwhile), or not this row's: the sign-in starts again
    return undefined;
  }
}
