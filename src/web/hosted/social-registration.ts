import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import { Refusal } from '../../domain/refusal';
import { socialRegister, socialSignIn } from '../../usecases/login/social';
import { callUseCase } from '../login-calls';
import { sendError, type PageLocale } from '../pages';
import { entryOf, flowRequest, FORMS, type Hosted, type HostedReturn, pageFailure } from './parts';
import { show } from './form-page';
import { toAppOrPause } from './outcome';
import { submit } from './submit';

/** The social registration form's POST: registers the identity of the social token the page holds. */
export const submitSocialRegistration = submit('social', socialRegister, (submitted, held) => ({ form: submitted, token: held.token ?? '' }));

/**
 * The end of a social sign-in started from a hosted page (called by the social callback with the
 * provider's one-time token): a linked account goes to the app with a code; a new identity gets
 * the social registration form, prefilled; an email that an account holds gets the sign-in form,
 * which links the identity once the password is right.
 */
export async function finishSocial(
  h: Hosted, req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, provider: string, socialToken: string,
): Promise<void> {
  const entry = await entryOf(h.services, app, { client_id: back.clientId, redirect_uri: back.redirectUri, state: back.state }, locale);
  if ('key' in entry) return sendError(res, 400, locale, app, entry);
  const result = await callUseCase(h.services, req, res, app, socialSignIn, flowRequest(entry), { token: socialToken, thinRegistration: false, registrationForm: FORMS.social });
  if (result.result) return toAppOrPause(h, req, res, app, entry, result.result);
  const e = result.error!;
  // an account deleted while signing in: its identity registers anew
  if (e instanceof Refusal && (e.reason === 'unknown_identity' || e.reason === 'gone')) {
    const values = Object.fromEntries(Object.entries(e.detail.prefill ?? {}).filter((v): v is [string, string] => typeof v[1] === 'string'));
    return show(h, req, res, app, entry, 'social', 200, { values, token: socialToken, provider });
  }
  if (e instanceof Refusal && e.reason === 'email_in_use') return show(h, req, res, app, entry, 'signin', 200, { mergeToken: socialToken, provider });
  const { status, shown } = pageFailure(res, locale, FORMS.signin, e);
  return show(h, req, res, app, entry, 'signin', status, shown);
}
