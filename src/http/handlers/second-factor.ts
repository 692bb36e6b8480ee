import QRCode from 'qrcode';
import { ApiError, errors } from '../../errors';
import { enrollTotp } from '../../usecases/factors/enroll-totp';
import { confirmTotp } from '../../usecases/factors/confirm-totp';
import { removeTotp } from '../../usecases/factors/remove-totp';
import { newRecoveryCodes } from '../../usecases/factors/renew-recovery-codes';
import { verifySecondFactor } from '../../usecases/login/verify-second-factor';
import { callOf, credentialParam, enrollingTokenOf, tokenOf } from '../account-request';
import { pairBody, signedInBody } from '../flow-request';
import type { Handler, RequestContext } from '../context';


/** One of two parameters is needed: 100 naming the first, and saying the other. */
const eitherOf = (first: string, what: string, other: string) =>
  new ApiError('missingArgument', `missing required argument: ${first} (${what}) or ${other}`, { extra: { argument_name: first } });

/** A code as typed (digits, or a recovery code with its dash), at most 64 characters. */
function codeOf(ctx: RequestContext, name: string): string | undefined {
  const code = ctx.params.get(name);
  if (code !== undefined && code.length > 64) throw errors.invalidArgument(name, 'is longer than 64 characters');
  return code;
}

/** /oauth/totp_enroll_native: a new secret for the account's authenticator app, its otpauth:// URI and that URI as a QR code (SVG). */
export const totpEnroll: Handler = async (ctx) => {
  const { secret, uri } = await enrollTotp(callOf(ctx), { token: await enrollingTokenOf(ctx) });
  const svg = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  return { secret, otpauth_uri: uri, qr_svg: svg };
};

/** /oauth/totp_confirm_native: the first code from the app turns it on; the recovery codes, shown once. */
export const totpConfirm: Handler = async (ctx) => {
  const code = codeOf(ctx, 'code') ?? ctx.params.require('code');
  const token = await enrollingTokenOf(ctx);
  // added with an enroll_token: the sign-in that was sent to add it goes on, answering what it would have answered
  const { recoveryCodes, signedIn } = await confirmTotp(callOf(ctx), { token, code, continueSignIn: true });
  return signedIn ? { ...signedInBody(signedIn), recovery_codes: recoveryCodes } : { recovery_codes: recoveryCodes };
};

/** /oauth/recovery_codes_native: ten new recovery codes, proven by a current code; the old ones stop working. */
export const recoveryCodes: Handler = async (ctx) => {
  const code = codeOf(ctx, 'code') ?? ctx.params.require('code');
  const { recoveryCodes: codes } = await newRecoveryCodes(callOf(ctx), { token: tokenOf(ctx), code });
  return { recovery_codes: codes };
};

/** /oauth/totp_remove_native: turns the authenticator off, proven by a current code or the password. */
export const totpRemove: Handler = async (ctx) => {
  const token = tokenOf(ctx);
  const code = codeOf(ctx, 'code');
  const currentPassword = ctx.params.get('currentPassword');
  if (code === undefined && currentPassword === undefined) {
    throw eitherOf('code', 'a current code from the authenticator app', 'currentPassword');
  }
  await removeTotp(callOf(ctx), { token, code, currentPassword: code === undefined ? currentPassword : undefined });
  return {};
};

/** /oauth/mfa_verify_native: finishes a sign-in paused for its second factor, with the answer the sign-in would have given. */
export const mfaVerify: Handler = async (ctx) => {
  if (ctx.principal.kind !== 'client') throw errors.missingArgument('client_id');
  const mfaToken = ctx.params.require('mfa_token');
  const code = codeOf(ctx, 'code');
  const recoveryCode = codeOf(ctx, 'recovery_code');
  const challengeToken = ctx.params.get('challenge_token');
  if (code === undefined && recoveryCode === undefined && challengeToken === undefined) {
    throw eitherOf('code', 'from the authenticator app', 'recovery_code, or challenge_token and credential of a passkey');
  }
  const passkey = code === undefined && recoveryCode === undefined ? { challengeToken: challengeToken!, credential: credentialParam(ctx) } : undefined;
  const verified = await verifySecondFactor({ ...callOf(ctx), client: ctx.principal.client }, {
    mfaToken, code, recoveryCode: code === undefined ? recoveryCode : undefined, passkey,
  });
  if ('pair' in verified) return pairBody(verified.pair);
  return verified.social ? { ...signedInBody(verified.signedIn), is_new: false } : signedInBody(verified.signedIn);
};
