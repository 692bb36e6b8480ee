import type { UserRecord } from '../../domain/storage/records';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { Proof } from '../../domain/tokens';
import type { SocialProfile } from '../../domain/social/profile';
import { randomToken, sha256Hex } from '../../domain/secrets';
import { ENROLL_TOKEN_SECONDS, MFA_TOKEN_SECONDS, secondFactorPolicy, type SecondFactorMethod } from '../../domain/second-factor';
import { Refusal } from '../../domain/refusal';
import type { SignInFactor } from '../../domain/session';
import { loginTokens, RESPONSE_TYPES, type FlowRequest, type IssuedTokens, type Paused, type Proven, type ResponseType } from './call';
import type { Tx } from '../../domain/storage';
import type { Issue } from '../../domain/tokens';
import type { CallContext, Services } from '../services';
import { secondFactorsOf } from '../factors/second-factors-of';

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
  factors: SignInFactor[];
  refreshSecret?: string;
  also: SignInAlso;
  /** The hash the password was checked against: a password changed meanwhile ends the paused sign-in. */
  passwordHash?: string;
  /**
   * A code exchange paused instead (a password reset's emailed code at /oauth/token): it finishes
   * with the pair the exchange would have given, of this family and with this proof.
   */
  exchange?: { family: string; proof: Proof | null; transactionState?: unknown };
}

/** How a paused sign-in answers when it finishes: per response type in the flow's locale (none for a paused code exchange). */
export interface PausedAnswer { response_type: ResponseType; flow: { name: string; version: number; locale: string } }

/** What a paused sign-in's row keeps in clear: how to answer. The rest is sealed to this row: a refresh secret and a social token sign in, so they are never stored in clear. */
type PausedExtra = Partial<PausedAnswer> & { sealed: string; methods?: SecondFactorMethod[] };

/** The second factors a paused sign-in's row says may finish it (a row without them: a code or a recovery code). */
export const pausedMethods = (row: StoredCredential): SecondFactorMethod[] => {
  const methods = (row.extra as Partial<PausedExtra> | null)?.methods;
  return Array.isArray(methods) ? methods : ['totp', 'recovery_code'];
};

const binding = (hash: string) => `mfa_token:${hash}`;

/** secondFactorsOf for a login use case. */
export const secondFactorOwed = (ctx: CallContext<'db'>, record: UserRecord): Promise<SecondFactorMethod[]> => secondFactorsOf(ctx.services.db, ctx.app, record.id);

/**
 * The mfa_token row of a paused sign-in (one use, 5 minutes, bound to the client and the redirect
 * URI), to issue in the caller's transaction, and its value.
 */
export function pausedRow(
  box: Services['box'],
  where: { app: Application; client: Client; entityId: number; redirectUri?: string; answer?: PausedAnswer; methods: SecondFactorMethod[] },
  paused: PausedSignIn,
) {
  const value = randomToken(20);
  const extra: PausedExtra = { ...where.answer, methods: where.methods, sealed: box.seal(JSON.stringify(paused), binding(sha256Hex(value))) };
  return {
    issue: {
      kind: 'mfa_token' as const, app: where.app, entityId: where.entityId, client: where.client, redirectUri: where.redirectUri,
      seconds: MFA_TOKEN_SECONDS, extra: extra as unknown as Record<string, unknown>,
    },
    value,
  };
}

/** 214: what `value` (an mfa_token) waits for (one of `methods`), and where to send it. */
const secondFactorRequired = (value: string, what: string, methods: SecondFactorMethod[]): Refusal => {
  const how = [
    ...(methods.includes('totp') ? ['a code from its authenticator app (code) or a recovery code (recovery_code)'] : []),
    ...(methods.includes('passkey') ? ['a passkey (challenge_token from /oauth/passkey_auth_begin with mfa_token, and credential)'] : []),
  ].join(', or ');
  return new Refusal('second_factor_required', `${what} and this account signs in with a second factor too: `
    + `send ${how} with mfa_token to /oauth/mfa_verify_native within 5 minutes`, {
    secondFactor: { token: value, methods, expiresIn: MFA_TOKEN_SECONDS },
  });
};

/** A sign-in paused for one of `methods`, finished with the mfa_token `token`. */
export const pausedFor = (token: string, proven: string, methods: SecondFactorMethod[]): Paused =>
  ({ pause: { kind: 'second_factor', token, methods, expiresIn: MFA_TOKEN_SECONDS, proven } });

/** A sign-in sent to add a second factor first, with the enroll_token `token`. */
export const sentToEnroll = (token: string, proven: string): Paused =>
  ({ pause: { kind: 'enroll', token, methods: ['totp', 'passkey'], expiresIn: ENROLL_TOKEN_SECONDS, proven } });

/**
 * The step between "credential proven" and "session issued" (docs/second-factor.md), for a
 * sign-in that owes a second factor (secondFactorOwed): it is paused. An mfa_token (one use, 5
 * minutes, bound to the client, the response type and the redirect URI) keeps what finishing it
 * needs; the pause carries it to the caller with the methods that may finish it.
 */
export async function pauseForSecondFactor(
  ctx: CallContext<'box' | 'tokens' | 'work'>, request: FlowRequest, record: UserRecord, paused: PausedSignIn, methods: SecondFactorMethod[],
): Promise<Paused> {
  const { tokens, work, box } = ctx.services;
  const answer: PausedAnswer = {
    response_type: request.responseType, flow: { name: request.flow.name, version: request.flow.version, locale: request.flow.locale },
  };
  const row = pausedRow(box, { app: ctx.app, client: request.client, entityId: record.id, redirectUri: request.redirectUri, answer, methods }, paused);
  await work.run(({ tx }) => tokens.issueAll([row], tx));
  return pausedFor(row.value, provenBy(paused.factors), methods);
}

/** What the first step of a sign-in proved, as its pause says it. */
const provenBy = (factors: SignInFactor[]) => (factors.includes('password') ? 'the password is right' : 'the first credential is right');

/**
 * The application requires a second factor (`second_factor` = `required`) and the account has
 * none: nothing is issued but an enroll_token (5 minutes, the enrollment endpoints only, the
 * client's), with which the person adds an authenticator app or a passkey. The sign-in waits
 * meanwhile, paused as for a second factor: adding one proves it, and the sign-in goes on with it
 * (continueAfterEnrollment), never asking for the password again.
 */
export async function sendToEnroll(ctx: CallContext<'box' | 'clock' | 'tokens' | 'work'>, request: FlowRequest, record: UserRecord, paused: PausedSignIn): Promise<Paused> {
  const { tokens, work } = ctx.services;
  const rows = enrollRows(ctx, request, record.id, paused);
  await work.run(({ tx }) => tokens.issueAll(rows.issue, tx));
  return sentToEnroll(rows.value, provenBy(paused.factors));
}

/**
 * The enroll_token row of an account sent to add a second factor, and the paused sign-in it goes on
 * with once the factor is added (an mfa_token row, its value sealed in the enroll_token's row), to
 * issue in the caller's transaction; and the enroll_token's value.
 */
export function enrollRows(ctx: CallContext<'box' | 'clock'>, request: FlowRequest, entityId: number, paused: PausedSignIn) {
  const answer: PausedAnswer = { response_type: request.responseType, flow: { name: request.flow.name, version: request.flow.version, locale: request.flow.locale } };
  const resume = pausedRow(ctx.services.box, { app: ctx.app, client: request.client, entityId, redirectUri: request.redirectUri, answer, methods: [] }, paused);
  const enroll = enrollRow({ app: ctx.app, client: request.client, entityId }, ctx.services.clock.now());
  enroll.issue.extra = { ...enroll.issue.extra, resume: ctx.services.box.seal(resume.value, resumeBinding(sha256Hex(enroll.value))) };
  return { issue: [enroll, resume], value: enroll.value };
}

const resumeBinding = (enrollHash: string) => `enroll_token:${enrollHash}`;

/** The mfa_token of the sign-in an enroll_token's row waits with, if it has one (sealed to that row). */
export function resumeOf(ctx: CallContext<'box'>, enrollRow: StoredCredential): string | undefined {
  const sealed = (enrollRow.extra as { resume?: unknown } | null)?.resume;
  if (typeof sealed !== 'string') return undefined;
  try {
    return ctx.services.box.open(sealed, resumeBinding(enrollRow.valueHash));
  } catch {
    return undefined;
  }
}

/** The enroll_token row of an account sent to add a second factor (issued in the caller's transaction), and its value. */
export function enrollRow(where: { app: Application; client: Client; entityId: number }, now: Date) {
  return {
    issue: {
      kind: 'enroll_token' as const, app: where.app, entityId: where.entityId, client: where.client, seconds: ENROLL_TOKEN_SECONDS,
      extra: { authenticated_at: now.toISOString() } as Record<string, unknown>,
    },
    value: randomToken(20),
  };
}

/**
 * The tokens a registration issues with its new account: its first session, or, when the
 * application requires a second factor, only an enroll_token (the registration then answers
 * sentToEnroll), in `tx`.
 */
export async function registrationTokens(
  ctx: CallContext<'box' | 'clock' | 'db' | 'tokens'>, request: FlowRequest, proven: Proven, tx: Tx, refreshSecret: string | undefined, also: { issue: Issue; value: string }[] = [],
): Promise<IssuedTokens & { enrollToken?: string }> {
  if (secondFactorPolicy(ctx.app) !== 'required') return loginTokens(ctx, request, proven, tx, refreshSecret, also);
  // the registration's sign-in waits for the factor to be added, then goes on with it
  const rows = enrollRows(ctx, request, proven.entityId, { factors: proven.factors, refreshSecret, also: {} });
  await ctx.services.tokens.issueAll([...rows.issue, ...also], tx);
  return { enrollToken: rows.value };
}

/** A pause as the refusal the API answers it with: 214 second_factor_required, or 215 second_factor_enrollment_required. */
export const pauseRefusal = ({ pause }: Paused): Refusal =>
  (pause.kind === 'enroll' ? enrollmentRequired(pause.token, pause.proven, pause.methods) : secondFactorRequired(pause.token, pause.proven, pause.methods));

/** 215: the enroll_token `value`, and what it adds. */
function enrollmentRequired(value: string, proven: string, methods: SecondFactorMethod[]): Refusal {
  return new Refusal('second_factor_enrollment_required', `${proven}, and this application requires a second factor, which this `
    + 'account has not added: add an authenticator app (totp_enroll_native, totp_confirm_native) or a passkey (passkey_register_begin, '
    + 'passkey_register_finish) with enroll_token within 5 minutes: adding it finishes this sign-in', {
    secondFactor: { token: value, methods, expiresIn: ENROLL_TOKEN_SECONDS, enroll: true },
  });
}

/** A paused sign-in's row opened: how to answer (a sign-in's), and what it resumes with. */
export function openPaused(ctx: CallContext<'box'>, row: StoredCredential): { answer?: PausedAnswer; paused: PausedSignIn } | undefined {
  const extra = row.extra as Partial<PausedExtra> | null;
  if (!extra?.sealed) return undefined;
  const answer = extra.flow && RESPONSE_TYPES.includes(extra.response_type as ResponseType)
    ? { response_type: extra.response_type as ResponseType, flow: extra.flow } : undefined;
  try {
    const paused = JSON.parse(ctx.services.box.open(extra.sealed, binding(row.valueHash))) as PausedSignIn;
    // a sign-in answers per its response type; only a code exchange has none. A row paused by an
    // earlier release (its facts named otherwise) starts again.
    if ((!answer && !paused.exchange) || !Array.isArray(paused.factors)) return undefined;
    return { answer, paused };
  } catch {
    // sealed with another SECRET_KEY (rotated meanwhile), or not this row's: the sign-in starts again
    return undefined;
  }
}
