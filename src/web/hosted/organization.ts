import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import { connectionForAddress } from '../../usecases/sso/discovery';
import { connectionSignIn, ConnectionRefusal, type CheckedResponse } from '../../usecases/sso/connection-sign-in';
import { callUseCase } from '../login-calls';
import { brandOf, escape, sendError, sendPage, type PageLocale } from '../pages';
import {
  type Entry, entryOf, entryQuery, type EntryWork, flowRequest, FORMS, hidden, type Hosted, type HostedReturn, ORGANIZATION_PATH, pageFailure, say,
} from './parts';
import { show } from './form-page';
import { toAppOrPause } from './outcome';

// An organization's own identity provider: the page that asks for the work address (home-realm
// discovery), the way to its connection, and the end of the sign-in the connection made.

/** The page that asks for the work address, or says no organization signs in with it. */
function showOrganizationAsk(h: Hosted, req: Request, res: Response, app: Application, entry: Entry, status: number, shown: { notice?: string; email?: string } = {}): void {
  const { locale } = entry;
  const title = say(locale, 'organizationTitle');
  const body = `<h1>${escape(title)}</h1><p>${escape(say(locale, 'organizationAsk'))}</p>`
    + `<p class="notice" id="form-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`
    + `<form method="post" action="${ORGANIZATION_PATH}" aria-describedby="form-notice">`
    + `<label for="email">${escape(say(locale, 'emailLabel'))}</label>`
    + `<input id="email" name="email" type="email" autocomplete="email" maxlength="254" required autofocus value="${escape(shown.email ?? '')}">`
    + hidden({ client_id: entry.client.clientId, redirect_uri: entry.redirectUri, state: entry.state, locale, csrf: h.token.issue(req, res) })
    + `<button type="submit">${escape(say(locale, 'organizationButton'))}</button></form>`
    + `<p class="links"><a href="${escape(`/signin?${entryQuery(entry)}`)}">${escape(say(locale, 'backToSignIn'))}</a></p>`;
  sendPage(res, status, locale, title, body, { formAction: "'self'", brand: brandOf(app) });
}

/** The page's GET: the work address asked for. */
export const askOrganization = (h: Hosted): EntryWork => async (req, res, app, entry) => showOrganizationAsk(h, req, res, app, entry, 200);

/** The work address's POST: to its organization's connection, or the page again saying none signs in with it. */
export const submitOrganization = (h: Hosted): EntryWork => async (req, res, app, entry, body) => {
  const email = (body.email ?? '').trim().slice(0, 254);
  if (await toConnection(h, res, app, entry, email, true)) return;
  showOrganizationAsk(h, req, res, app, entry, 400, { email, notice: say(entry.locale, 'organizationNone') });
};

/** Sends the browser to the connection of an address's organization (home-realm discovery), if it has one: true when it did. */
export async function toConnection(h: Hosted, res: Response, app: Application, entry: Entry, address: string, afterForm = false): Promise<boolean> {
  const connection = await connectionForAddress(h.services, app, address);
  if (!connection) return false;
  const start = `/sso/${connection}/start?${entryQuery(entry, { login_hint: address.trim() })}`;
  if (!afterForm) {
    res.redirect(303, start);
    return true;
  }
  // a form's answer may redirect only where the page's form-action allows, and the identity provider is
  // elsewhere: a page of this site goes on by itself (a refresh is no form's), with a link for the person
  const title = say(entry.locale, 'organizationTitle');
  sendPage(res, 200, entry.locale, title, `<meta http-equiv="refresh" content="0;url=${escape(start)}"><h1>${escape(title)}</h1>`
    + `<p><a class="button" href="${escape(start)}">${escape(say(entry.locale, 'organizationButton'))}</a></p>`, { brand: brandOf(app) });
  return true;
}

/** An organization's connection signed the person in (its response checked): to the app with a code, or the second factor's page; what failed, on the sign-in page. */
export async function finishConnection(h: Hosted, req: Request, res: Response, app: Application, locale: PageLocale, back: HostedReturn, checked: CheckedResponse): Promise<void> {
  const entry = await entryOf(h.services, app, { client_id: back.clientId, redirect_uri: back.redirectUri, state: back.state }, locale);
  if ('key' in entry) return sendError(res, 400, locale, app, entry);
  let result;
  try {
    result = await callUseCase(h.services, req, res, app, connectionSignIn, flowRequest(entry), { checked });
  } catch (e) {
    if (e instanceof ConnectionRefusal) return sendError(res, 400, locale, app, { key: 'badLink', detail: e.message });
    throw e;
  }
  if (result.result) return toAppOrPause(h, req, res, app, entry, result.result);
  const { status, shown } = pageFailure(res, locale, FORMS.signin, result.error!);
  return show(h, req, res, app, entry, 'signin', status, shown);
}
