import express, { type Request, type Response } from 'express';
import type Provider from 'oidc-provider';
import type { Application } from '../domain/storage/applications';
import { isHttpUrl, isOpenIdProvider, settingOfList } from '../domain/settings';
import { INTERACTION_UID } from '../domain/openid-routes';
import { accountCallbackOf } from '../usecases/account/browser-sessions';
import { decideProviderSignIn } from '../usecases/oidc/sign-in-decision';
import { connectionForOrganization } from '../usecases/sso/discovery';
import type { Services } from '../usecases/services';
import { accountState, browserSessionOfRequest } from './account-sign-in';
import { brandOf, crossSite, escape, pageForm, pageHandler, pageLocale, sendError, sendPage, stringFields, text, type PageLocale } from './pages';
import { providerRequest, withGrant, withProviderRequest } from './provider-request';
import { consentAsked, refuseConsent } from '../usecases/oidc/consent';
import { safeEqual } from '../domain/secrets';
import type { Client } from '../domain/clients';

/**
 * The OpenID provider's interactions (docs/openid-connect.md#signing-in): the provider sends the
 * browser here when a sign-in or a consent is needed. Sign-in is the hosted `/signin` of the
 * relying party's login client, which ends in the browser session of the account page: that
 * session is the application's single sign-on session. So a browser already signed in is not asked
 * again (unless the app asks with `prompt=login`, `max_age` or for a stronger sign-in with
 * `acr_values`), and `prompt=none` without one answers `login_required`. A sign-in that cannot
 * meet the `acr_values` asked for (an account without a second factor) answers
 * `unmet_authentication_requirements`. The login clients are the application's own apps: their consent is
 * given without a page.
 */

/** The page locale an app asked for with ui_locales (its first one we have), else the browser's. */
const localeOf = (req: Request, uiLocales: unknown): PageLocale =>
  pageLocale(typeof uiLocales === 'string' ? uiLocales.split(' ')[0] : undefined, req.headers['accept-language']);

export function oidcInteractionRoutes(
  services: Services, resolveApp: (host: string | undefined) => Promise<Application>, providerFor: (app: Application) => Promise<Provider>,
) {
  const router = express.Router();
  /**
   * The provider's interaction this browser is in, for a page of it: undefined (an error page
   * sent) when the application is no provider, the link is not one of its sign-ins, or the
   * browser has no interaction going on (its cookie gone, the interaction over).
   */
  async function interactionOf(req: Request, res: Response, app: Application, locale: PageLocale) {
    if (!isOpenIdProvider(app) || !INTERACTION_UID.test(String(req.params.uid))) {
      sendError(res, 404, locale, app, { key: 'badLink', detail: 'this application is not an OpenID provider, or the link is not one of its sign-ins' });
      return undefined;
    }
    const provider = await providerFor(app);
    try {
      return { provider, details: await provider.interactionDetails(req, res) };
    } catch {
      sendError(res, 400, locale, app, { key: 'badLink', detail: 'this sign-in is over or was started in another browser; start it again from the app' });
      return undefined;
    }
  }

  router.get('/oidc/interaction/:uid', pageHandler(resolveApp, (req, res, app, locale) => withProviderRequest(req, res, async () => {
    const found = await interactionOf(req, res, app, locale);
    if (!found) return;
    const { provider, details } = found;
    const pageLang = localeOf(req, details.params.ui_locales);
    const clientId = String(details.params.client_id ?? '');
    const client = await services.clients.find(app.id, clientId);
    if (!client) return sendError(res, 400, pageLang, app, { key: 'badLink', detail: 'the client of this sign-in is not a login client of this application any more' });

    if (details.prompt.name === 'login') {
      const decision = await decideProviderSignIn(services, {
        app, interactionUid: details.uid, reasons: details.prompt.reasons, claims: details.params.claims, acrValues: details.params.acr_values,
        session: await browserSessionOfRequest(services, req, app),
      });
      if (decision.kind === 'unmet') {
        return provider.interactionFinished(req, res, {
          error: 'unmet_authentication_requirements',
          error_description: 'the app asked for a stronger sign-in (two factors, or a passkey) than this account can give: add an authenticator app or a passkey on the account page, then try again',
        }, { mergeWithLastSubmission: false });
      }
      if (decision.kind === 'session') {
        const { accountId, amr, acr, authTime } = decision;
        return provider.interactionFinished(req, res, {
          login: { accountId, amr, ...(acr !== undefined && { acr }), ts: authTime, remember: true },
        }, { mergeWithLastSubmission: false });
      }
      // to the hosted sign-in of the app's login client, which comes back here through the account page's callback
      const state = accountState(req, res, services.baseUrls.secure, client.clientId, { interaction: details.uid });
      const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: accountCallbackOf(services, app), state, locale: pageLang });
      // an app signing in a member of one organization (`organization`) that has a connection: straight to its identity provider
      const connection = typeof details.params.organization === 'string' ? await connectionForOrganization(services, app, details.params.organization) : undefined;
      if (connection) return res.redirect(303, `/sso/${connection}/start?${query}`);
      // the app knows who signs in (OpenID Connect Core 3.1.2.1): the page has it typed in (and an address at an organization's domain goes to its connection)
      if (typeof details.params.login_hint === 'string') query.set('login_hint', details.params.login_hint);
      return res.redirect(303, `/signin?${query}`);
    }

    if (details.prompt.name === 'consent') {
      // a login client is one of the application's own apps: what it asks for is granted, unless its consent page is on
      if (consentAsked(client)) return consentPage(res, app, pageLang, client, details, services.box.tag(details.uid, 'consent form'));
      return grantAsked(req, res, provider, details, clientId, 'implied', pageLang, app);
    }
    return sendError(res, 400, pageLang, app, { key: 'badLink', detail: `this sign-in asks for a step Gatehouse does not offer (${details.prompt.name})` });
  })));

  // the consent page's answer: allowed, the grant is saved (consent given); refused, the app is told access_denied
  router.post('/oidc/interaction/:uid/consent', pageForm({ limit: '8kb', parameterLimit: 10 }), pageHandler(resolveApp, (req, res, app, locale) => withProviderRequest(req, res, async () => {
    const found = await interactionOf(req, res, app, locale);
    if (!found) return;
    const { provider, details } = found;
    const body = stringFields(req.body);
    const pageLang = localeOf(req, details.params.ui_locales);
    const clientId = String(details.params.client_id ?? '');
    const client = await services.clients.find(app.id, clientId);
    // this browser's interaction, answered from this page: the form's token is the interaction's own
    if (details.uid !== req.params.uid || details.prompt.name !== 'consent' || !client || crossSite(req)
      || !safeEqual(body.csrf ?? '', services.box.tag(details.uid, 'consent form'))) {
      return sendError(res, 400, pageLang, app, { key: 'badLink', detail: 'this consent is not this browser\'s current one; start the sign-in again from the app' });
    }
    if (body.choice === 'allow') return grantAsked(req, res, provider, details, clientId, 'given', pageLang, app);
    const accountUuid = details.session?.accountId;
    if (accountUuid) {
      await refuseConsent(services, { app, accountUuid, client, scopes: askedScopes(details), origin: providerRequest().origin });
    }
    return provider.interactionFinished(req, res, {
      error: 'access_denied', error_description: 'the person did not allow the app what it asked for',
    }, { mergeWithLastSubmission: false });
  })));
  return router;
}

type Details = Awaited<ReturnType<Provider['interactionDetails']>>;
type Missing = { missingOIDCScope?: string[]; missingOIDCClaims?: string[]; missingResourceScopes?: Record<string, string[]> };

/** The scopes an interaction asks consent for (those not granted yet). */
const askedScopes = (details: Details) => (details.prompt.details as Missing).missingOIDCScope ?? [];

/** Gives the app what the interaction asks for: the grant saved through the provider's adapter, whose use case records it (oidc.grant_given). */
async function grantAsked(
  req: Request, res: Response, provider: Provider, details: Details, clientId: string, consent: 'implied' | 'given', locale: PageLocale, app: Application,
): Promise<void> {
  const accountId = details.session?.accountId;
  if (!accountId) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'this sign-in has no account to grant to; start it again from the app' });
  const grant = details.grantId ? await provider.Grant.find(details.grantId) : new provider.Grant({ accountId, clientId });
  if (!grant) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'this sign-in\'s grant is gone; start it again from the app' });
  const missing = details.prompt.details as Missing;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(' '));
  if (missing.missingOIDCClaims) grant.addOIDCClaims(missing.missingOIDCClaims);
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes ?? {})) grant.addResourceScope(indicator, scopes.join(' '));
  const grantId = await withGrant({ scopes: missing.missingOIDCScope ?? [], consent }, () => grant.save());
  return provider.interactionFinished(req, res, { consent: { grantId } }, { mergeWithLastSubmission: true });
}

/**
 * The consent page: the app (its login client's name) and what it asks for, in the person's words,
 * with Allow and Don't allow. The answer goes back to the app, so the form may lead to its
 * redirect URIs' origins.
 */
function consentPage(res: Response, app: Application, locale: PageLocale, client: Client, details: Details, token: string): void {
  const name = client.description || client.clientId;
  const scopes = askedScopes(details).filter((s) => s !== 'openid');
  const origins = settingOfList(client.settings.redirect_uris ?? app.settings.redirect_uris).filter(isHttpUrl).map((u) => new URL(u).origin);
  const t = (key: string, values?: Record<string, string>) => escape(text(locale, key, values));
  const body = `<h1>${t('consentTitle', { app: name })}</h1><p>${t('consentIntro', { app: name })}</p>`
    + `<ul class="items">${['openid', ...scopes].map((s) => `<li>${t(`scope_${s}`)}</li>`).join('')}`
    // the scopes of the application's APIs it asks for, each with the API that gives it (docs/openid-connect.md#apis)
    + Object.entries((details.prompt.details as Missing).missingResourceScopes ?? {}).flatMap(([indicator, asked]) => asked.map((scope) =>
      `<li><code>${escape(scope)}</code> · ${escape(indicator.slice(0, 255))}</li>`)).join('')
    + '</ul>'
    + `<form method="post" action="/oidc/interaction/${escape(details.uid)}/consent"><input type="hidden" name="csrf" value="${escape(token)}">`
    + `<button type="submit" name="choice" value="allow">${t('consentAllow')}</button>`
    + `<button type="submit" name="choice" value="deny" class="secondary">${t('consentDeny')}</button></form>`;
  sendPage(res, 200, locale, text(locale, 'consentTitle', { app: name }), body, {
    brand: brandOf(app), formAction: ["'self'", ...new Set(origins.slice(0, 20))].join(' '),
  });
}
