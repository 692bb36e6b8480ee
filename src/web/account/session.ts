import { INTERACTION_UID } from '../../domain/openid-routes';
import { accountClient } from '../../usecases/account/account-client';
import { accountCallbackOf, endSessions, startBrowserSession } from '../../usecases/account/browser-sessions';
import { browserSessionOfRequest, returnedState } from '../account-sign-in';
import { callUseCase, clientFlow } from '../login-calls';
import { sendError } from '../pages';
import { callOf, deviceOf, OFFER_PATH, type OpenWork, type Page, requestOf, say, sessionCookie, type SignedWork, signedOutPage, toSignIn } from './parts';
import { invitationHref } from './invitations';

// This browser's session of the account page: started by the hosted sign-in's callback, renewed by
// a sign-in again (a change that needs a recent one), ended by the sign-out.

/** GET /account/callback: the code of the hosted sign-in becomes this browser's session. */
export const callback = (p: Page): OpenWork => async (req, res, app, locale) => {
  const state = typeof req.query.state === 'string' ? req.query.state : '';
  const code = typeof req.query.code === 'string' ? req.query.code : '';
  const returned = returnedState(req, res, p.services.baseUrls.secure, state);
  const client = returned && code ? await accountClient(p.services, app, returned.clientId) : undefined;
  if (!client) return signedOutPage(res, app, locale, 400, say(locale, 'stateLost'));
  const flow = await clientFlow(p.services, app, client, locale);
  if (!flow) return sendError(res, 500, locale, app, { key: 'unavailable', detail: 'this login client has no default flow (default_flow_name, default_flow_version)' });
  // a registration's passkey offer: where its app waits, kept in the session it starts
  const next = returned!.next;
  const offer = next?.client_id && next.redirect_uri ? { clientId: next.client_id, redirectUri: next.redirect_uri, ...(next.state && { state: next.state }) } : undefined;
  const interaction = next?.interaction && INTERACTION_UID.test(next.interaction) ? next.interaction : undefined;
  // a SAML service provider's sign-in in progress (docs/saml.md): the session made for it answers it, even when it asked for a new sign-in
  const saml = next?.saml && INTERACTION_UID.test(next.saml) ? next.saml : undefined;
  const started = await callUseCase(p.services, req, res, app, startBrowserSession, { client, flow, responseType: 'code' }, {
    client, code, redirectUri: accountCallbackOf(p.services, app), device: deviceOf(req.headers['user-agent']), offer, interaction: interaction ?? saml,
  });
  if (started.error) return signedOutPage(res, app, locale, 400, say(locale, 'stateLost'));
  // the session this browser had before (a sign-in again to change a factor) ends: one per browser
  const old = await browserSessionOfRequest(p.services, req, app);
  if (old?.family) await endSessions(callOf(p, req, res, app), { token: old, session: old.family }).catch(() => undefined);
  res.cookie(sessionCookie(p, req), started.result.value, {
    httpOnly: true, sameSite: 'lax', secure: p.secure(req), path: '/', expires: started.result.expiresAt,
  });
  // an OpenID sign-in in progress goes back to its interaction, which the session now answers
  if (interaction) return res.redirect(303, `/oidc/interaction/${interaction}`);
  if (saml) return res.redirect(303, `/saml/sso/continue/${saml}`);
  // an invitation being accepted: back to it, now signed in
  if (next?.invitation) return res.redirect(303, invitationHref(next.invitation, locale));
  // a registration's passkey offer, or the account page
  res.redirect(303, `${offer ? OFFER_PATH : '/account'}?locale=${encodeURIComponent(locale)}`);
};

/** A sign-in again, with the session's login client (a change of how the account signs in needs a recent one). */
export const reauth = (p: Page): OpenWork => async (req, res, app, locale) => {
  const session = await browserSessionOfRequest(p.services, req, app);
  const stored = session?.clientId == null ? undefined : await p.services.db.clients.findById(app.id, session.clientId);
  const client = await accountClient(p.services, app, stored?.clientId ?? req.query.client_id);
  if (!client) return res.redirect(303, `/account?locale=${encodeURIComponent(locale)}`);
  toSignIn(p, req, res, app, client, locale);
};

/** The sign-out: this browser's session ends. */
export const signOut = (p: Page): SignedWork => async (req, res, s) => {
  await callUseCase(p.services, req, res, s.app, endSessions, requestOf(s), { token: s.session, session: s.session.family ?? '' });
  res.clearCookie(sessionCookie(p, req), { path: '/', secure: p.secure(req) });
  signedOutPage(res, s.app, s.locale, 200, say(s.locale, 'signedOut'));
};
