import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import type { Client } from '../../domain/clients';
import { isPaused, type FormSubmission, type LoginUseCase, type SignedIn, type SignInOutcome } from '../../usecases/login/call';
import { accountCallbackOf } from '../../usecases/account/browser-sessions';
import { accountState } from '../account-sign-in';
import { callUseCase } from '../login-calls';
import { formValues } from '../form-fields';
import { type Entry, type EntryWork, flowRequest, FORMS, type Held, HOLD_COOKIE, type Hosted, pageFailure, type View } from './parts';
import { show } from './form-page';
import { toAppOrPause } from './outcome';
import { toConnection } from './organization';

/**
 * Whether a registration on this page offers a passkey before going back to the app: the login
 * client's setting `passkey_after_registration` (else the application's) is `offer`.
 */
const offersPasskey = (app: Application, client: Client) => (client.settings.passkey_after_registration ?? app.settings.passkey_after_registration) === 'offer';

/**
 * A registration that offers a passkey: its code goes to the account page's callback, which
 * starts the new account's browser session in this browser and goes on to the offer (then the app
 * gets a code made from that session).
 */
function toOffer(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, signedIn: SignedIn): void {
  res.clearCookie(HOLD_COOKIE, { path: '/' });
  const next = { client_id: entry.client.clientId, redirect_uri: entry.redirectUri, locale: entry.locale, ...(entry.state && { state: entry.state }) };
  const state = accountState(req, res, h.services.baseUrls.secure, entry.client.clientId, next);
  const target = new URL(accountCallbackOf(h.services, app));
  target.searchParams.set('code', String(signedIn.authorizationCode));
  target.searchParams.set('state', state);
  res.redirect(303, target.toString());
}

/** A POST that signs in or registers: redirected with a code, or the form again with what failed. */
export const submit = <C>(view: View, useCase: LoginUseCase<C, SignInOutcome>, command: (form: FormSubmission, held: Held, body: Record<string, string>) => C) =>
  (h: Hosted): EntryWork => async (req, res, app, entry, body, held) => {
    const form = h.services.flows.form(app, entry.flow, FORMS[view]);
    const fields = form ? formValues(form, body) : {};
    // home-realm discovery: an address at an organization's verified domain signs in through its connection, never with a password here
    const address = view === 'signin'
      ? Object.entries(fields).find(([name, v]) => !/password/i.test(name) && /^[^\s@]{1,64}@[^\s@]{1,253}$/.test(v.trim()))?.[1] : undefined;
    if (address !== undefined && await toConnection(h, res, app, entry, address, true)) return;
    // (not for a registration on the account page's own sign-in: it is going to a session already)
    const offer = (view === 'register' || view === 'social') && offersPasskey(app, entry.client) && entry.redirectUri !== accountCallbackOf(h.services, app);
    const request = offer ? { ...flowRequest(entry), redirectUri: accountCallbackOf(h.services, app) } : flowRequest(entry);
    const result = await callUseCase(h.services, req, res, app, useCase, request, command({ values: fields }, held, body));
    if (result.result) return offer && !isPaused(result.result) ? toOffer(h, req, res, app, entry, result.result) : toAppOrPause(h, req, res, app, entry, result.result);
    const { status, shown } = pageFailure(res, entry.locale, FORMS[view], result.error!);
    await show(h, req, res, app, entry, view, status, { ...shown, values: fields, ...held });
  };
