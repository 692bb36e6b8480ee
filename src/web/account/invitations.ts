import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import { safeEqual } from '../../domain/secrets';
import { registrationOpen } from '../../domain/registration';
import { accountClient } from '../../usecases/account/account-client';
import { accountCallbackOf } from '../../usecases/account/browser-sessions';
import { acceptInvitation, invitationOfLink, invitedAddress, INVITATION_PATH } from '../../usecases/organizations/invitations';
import { asAccount } from '../../usecases/services';
import { accountState } from '../account-sign-in';
import { pageCall } from '../login-calls';
import { pageFailure } from '../hosted';
import { brandOf, crossSite, escape, originOf, pageLocale, sendError, sendPage, stringFields, type PageLocale } from '../pages';
import { textsOf } from '../../texts';
import { actionForm, type Key, type OpenWork, type Page, say, sayHtml, signedOf, signedOutPage } from './parts';

/** Where an invitation's link leads (its secret in `token`), in the page's language. */
export const invitationHref = (secret: string, locale: PageLocale) => `${INVITATION_PATH}?${new URLSearchParams({ token: secret, locale })}`;
const secretOf = (raw: unknown) => (typeof raw === 'string' && raw.length <= 64 ? raw : '');

/**
 * The page of an invitation's link (docs/organizations.md#invitations): what it invites to and
 * whom; signed in with the invited address, a button to join; signed in with another, how to
 * switch; not signed in, to sign in or to register (the address prefilled), then back here.
 * Nothing joins before the button is pressed: a link opened by a mail scanner does nothing.
 */
async function showInvitation(p: Page, req: Request, res: Response, app: Application, asked: PageLocale, status: number, notice?: string): Promise<void> {
  const secret = secretOf(req.query.token ?? req.body?.token);
  const found = await invitationOfLink(p.services, { app, secret });
  // the invitation's language (its email's), unless the link names another
  const named = req.query.locale ?? req.body?.locale;
  const locale = found && named === undefined ? pageLocale(found.invitation.locale, req.headers['accept-language']) : asked;
  const title = say(locale, 'invitationTitle');
  res.setHeader('Referrer-Policy', 'no-referrer');
  if (!found) return signedOutPage(res, app, locale, 404, say(locale, 'invitationInvalid'));
  const { invitation, organization, standing } = found;
  const t = sayHtml(locale);
  const heading = `<h1>${t('invitationJoin', { organization: organization.name })}</h1>`;
  if (standing !== 'pending') {
    const why: Key = standing === 'accepted' ? 'invitationAccepted' : standing === 'revoked' ? 'invitationRevoked' : 'invitationExpired';
    return sendPage(res, 410, locale, title, `${heading}<p class="notice" role="status">${t(why)}</p>`, { brand: brandOf(app) });
  }
  let body = `${heading}<p>${t('invitationIntro', { organization: organization.name, email: invitation.email, roles: invitation.roles.join(', ') })}</p>`
    + `<p class="notice" role="alert"${notice ? '' : ' hidden'}>${escape(notice ?? '')}</p>`;
  const s = await signedOf(p, req, app, locale);
  const record = s?.session.entityId == null ? undefined : await p.services.db.records.find(app.id, { id: s.session.entityId });
  if (s && record) {
    const token = p.formToken(s.session);
    if (record.email !== null && invitedAddress(record.email) === invitation.email) {
      body += actionForm(`${INVITATION_PATH}/accept`, token, say(locale, 'invitationAccept', { organization: organization.name }), { token: secret, locale });
    } else {
      body += `<p>${t('invitationOtherAccount', { current: record.email ?? record.username ?? record.uuid, email: invitation.email })}</p>`
        + actionForm('/account/signout', token, say(locale, 'signOut'), {}, '', true);
    }
  } else {
    const query = (register: boolean) => new URLSearchParams({ token: secret, locale, ...(register && { register: '1' }) });
    // (no way to register where the application takes no registrations: its backend or an operator makes the account)
    body += `<p class="links"><a class="button" href="${escape(`${INVITATION_PATH}/signin?${query(false)}`)}">${t('invitationSignIn')}</a>`
      + (registrationOpen(app) ? `<a class="button secondary" href="${escape(`${INVITATION_PATH}/signin?${query(true)}`)}">${t('invitationRegister', { email: invitation.email })}</a>` : '') + '</p>';
  }
  sendPage(res, status, locale, title, body, { brand: brandOf(app), formAction: "'self'" });
}

/** GET of an invitation's link: its page. */
export const invitationPage = (p: Page): OpenWork => (req, res, app, locale) => showInvitation(p, req, res, app, locale, 200);

/** To sign in (or register, `register=1`, the invited address typed in already) for an invitation, then back to it. */
export const invitationSignIn = (p: Page): OpenWork => async (req, res, app, locale) => {
  const secret = secretOf(req.query.token);
  const found = await invitationOfLink(p.services, { app, secret });
  if (!found) return signedOutPage(res, app, locale, 404, say(locale, 'invitationInvalid'));
  const client = await accountClient(p.services, app, req.query.client_id);
  if (!client) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'the application has no login client for its pages: set the application setting account_client_id' });
  const state = accountState(req, res, p.services.baseUrls.secure, client.clientId, { invitation: secret });
  const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: accountCallbackOf(p.services, app), state, locale, login_hint: found.invitation.email });
  res.redirect(303, `${req.query.register === '1' ? '/register' : '/signin'}?${query}`);
};

/** The join button: the signed-in account accepts the invitation, then the account page shows its organizations. */
export const invitationAccept = (p: Page): OpenWork => async (req, res, app, locale) => {
  const body = stringFields(req.body);
  const s = await signedOf(p, req, app, locale);
  if (!s || s.session.entityId === null) return showInvitation(p, req, res, app, locale, 401);
  if (crossSite(req) || !safeEqual(body.csrf ?? '', p.formToken(s.session))) return showInvitation(p, req, res, app, locale, 403, textsOf('hosted', locale).expired);
  const entityId = s.session.entityId;
  const accepted = await pageCall(res, () => acceptInvitation(p.services, { app, acting: asAccount({ origin: originOf(req, res) }, entityId, s.client), entityId, secret: secretOf(body.token) }));
  if (accepted.error) {
    const { status, shown } = pageFailure(res, locale, 'invitation', accepted.error);
    return showInvitation(p, req, res, app, locale, status, shown.notice);
  }
  res.redirect(303, `/account?locale=${encodeURIComponent(locale)}&done=organizationJoined#h-organizations`);
};
