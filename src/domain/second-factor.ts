import { randomInt } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import type { Application } from './storage/applications';
import type { SecretBox } from './secrets';

/**
 * TOTP (RFC 6238) as authenticator apps speak it: SHA-1, 6 digits, 30-second steps, a 160-bit
 * secret in base32 (docs/second-factor.md). The arithmetic is otpauth's (docs/decisions.md); what a
 * code may prove, and when, is Gatehouse's: a code is accepted for its own step or the one before
 * or after it (a phone's clock a little off), never twice, never for a step older than the last one
 * accepted.
 */
export const TOTP_PERIOD_SECONDS = 30;
export const TOTP_DIGITS = 6;
/** Steps accepted on either side of the current one. */
export const TOTP_WINDOW = 1;
/** Recovery codes an account gets at once; each signs in once in place of a code. */
export const RECOVERY_CODES = 10;
/** How long a sign-in waits for its second factor. */
export const MFA_TOKEN_SECONDS = 300;
/** A sign-in sent to add a second factor has this long to add one. */
export const ENROLL_TOKEN_SECONDS = 300;

/** The application's policy (setting `second_factor`): `off`, `optional` (the default) or `required`. */
export type SecondFactorPolicy = 'off' | 'optional' | 'required';
export const SECOND_FACTOR_POLICIES: readonly SecondFactorPolicy[] = ['off', 'optional', 'required'];
export const secondFactorPolicy = (app: Application): SecondFactorPolicy => {
  const v = app.settings.second_factor;
  return v === 'off' || v === 'required' ? v : 'optional';
};

/** What a sign-in paused for its second factor may finish with. */
export type SecondFactorMethod = 'totp' | 'recovery_code' | 'passkey';

/** A new secret: 160 random bits, as base32. */
export const newTotpSecret = (): string => new Secret({ size: 20 }).base32;

const totpOf = (secret: string, issuer = '', label = '') =>
  new TOTP({ issuer, label, algorithm: 'SHA1', digits: TOTP_DIGITS, period: TOTP_PERIOD_SECONDS, secret: Secret.fromBase32(secret) });

/** The `otpauth://totp/…` URI an authenticator app reads (from its QR code): issuer and account named. */
export const totpUri = (secret: string, issuer: string, account: string): string => totpOf(secret, issuer, account).toString();

/** The step a time falls in. */
export const totpStep = (at: Date): number => Math.floor(at.getTime() / 1000 / TOTP_PERIOD_SECONDS);

/**
 * The time step whose code `code` is, within the window around `at`; undefined when it is none of
 * them (or not six digits). Which steps were used already is storage's to say.
 */
export function matchTotp(secret: string, code: string, at: Date): number | undefined {
  const token = code.replace(/\s+/g, '');
  if (!/^\d{6}$/.test(token)) return undefined;
  const delta = totpOf(secret).validate({ token, timestamp: at.getTime(), window: TOTP_WINDOW });
  return delta === null ? undefined : totpStep(at) + delta;
}

/** The code of the step `at` falls in (tests and the bench compute theirs elsewhere: oathtool, pyotp). */
export const totpCode = (secret: string, at: Date): string => totpOf(secret).generate({ timestamp: at.getTime() });

/** What a sealed TOTP secret is bound to: it opens for this account only. */
export const totpBinding = (applicationId: number, entityId: number) => `totp:${applicationId}:${entityId}`;

export const sealTotpSecret = (box: SecretBox, applicationId: number, entityId: number, secret: string) => box.seal(secret, totpBinding(applicationId, entityId));
export const openTotpSecret = (box: SecretBox, applicationId: number, entityId: number, sealed: string) => box.open(sealed, totpBinding(applicationId, entityId));

/** Letters and digits a person reads without mistaking one for another (no 0/o, 1/l/i). */
const RECOVERY_ALPHABET = 'abcdefghjkmnpqrstuvwxyz23456789';

/** A recovery code: ten characters of 31 (49 bits) shown as two groups of five, `k7m2p-x9wq4`. */
export function newRecoveryCode(): string {
  const chars = Array.from({ length: 10 }, () => RECOVERY_ALPHABET[randomInt(RECOVERY_ALPHABET.length)]);
  return `${chars.slice(0, 5).join('')}-${chars.slice(5).join('')}`;
}

/** A recovery code as typed (any case, with or without its dash or spaces) in the form it is hashed in. */
export const normalRecoveryCode = (typed: string): string => typed.toLowerCase().replace(/[\s-]+/g, '');

/**
 * What a recovery code is stored under: a keyed digest (HMAC with SECRET_KEY) of the code as
 * typed, whose SHA-256 is the credential's hash. 49 random bits are within reach of a stolen
 * table's offline search; without the key they are not.
 */
export const recoveryCodeKey = (box: SecretBox, typed: string): string => box.tag(normalRecoveryCode(typed), 'recovery code');
