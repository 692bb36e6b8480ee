import type { Request, Response } from 'express';
import type { Application } from '../../domain/storage/applications';
import { safeEqual } from '../../domain/secrets';
import { mayResetPassword } from '../../domain/tokens';
import { linkAccount, unlinkAccount } from '../../usecases/login/social';
import { startLinking } from '../social';
import { crossSite, escape, providerLabel, type PageLocale } from '../pages';
import { textsOf } from '../../texts';
import { act, actionForm, type Page, say, sayHtml, type Section, type SignedWork, signedOf, signedOutPage } from './parts';

/** The account's social identities, each to unlink, and a link for each provider of the application not linked yet. */
export const identitiesSection: Section = {
  id: 'h-identities',
  title: 'identities',
  draw: async ({ p, s: { app, locale }, o, token }) => {
    const t = sayHtml(locale);
    // each provider of the application not linked yet can be
    const providers = (await p.services.providers.list(app.id)).map((v) => v.name).filter((name) => !o.identities.some((i) => i.provider === name));
    return (o.identities.length === 0 ? `<p>${t('noIdentities')}</p>` : '<ul class="items">' + o.identities.map((i) => `<li>`
      + actionForm('/account/identities/unlink', token, say(locale, 'unlink', { provider: providerLabel(i.provider) }), { identifier: i.identifier }, '', true)
      + '</li>').join('') + '</ul>')
      // a link, not a form: the provider's page is on another origin, where form-action lets no form go; its token is the forms'
      + providers.map((name) => `<a class="button provider" href="${escape(`/account/identities/link?${new URLSearchParams({ provider: name, csrf: token })}`)}">`
        + `${t('link', { provider: providerLabel(name) })}</a>`).join('');
  },
};

/** A provider's link: the social sign-in that links its identity (finishLink, at the social callback). */
export const identityLink = (p: Page): SignedWork => async (req, res, s) => {
  // the page's token, in the link: another site cannot start linking its identity to this account
  if (crossSite(req) || !safeEqual(String(req.query.csrf ?? ''), p.formToken(s.session))) {
    return p.show(req, res, s, 403, { notice: textsOf('hosted', s.locale).expired });
  }
  // the provider's round trip must end within the minutes a link allows: a session too old signs in again first
  if (!mayResetPassword(s.session, p.services.clock.now())) return p.show(req, res, s, 403, { reauth: true });
  await startLinking(p.services, req, res, s.app, s.locale, String(req.query.provider ?? ''), s.session.family ?? '');
};

export const identityUnlink = (p: Page) => act(p, unlinkAccount, (s, body) => ({ accessToken: s.session, identifier: body.identifier ?? '' }), 'identityUnlinked');

/**
 * The end of a social sign-in the page started to link an identity (the social callback, a GET
 * bound to this browser by the sign-in's state cookie; the start was the page's link with its form token):
 * linked to the signed-in account through the API's use case, or the page saying why not.
 */
export async function finishLink(p: Page, req: Request, res: Response, app: Application, locale: PageLocale, socialToken: string, family: string): Promise<void> {
  const s = await signedOf(p, req, app, locale);
  // the very session that started it: a browser signed in to another account meanwhile links nothing
  if (!s || s.session.family !== family) return signedOutPage(res, app, locale, 401, say(locale, 'stateLost'));
  await act(p, linkAccount, () => ({ accessToken: s.session, token: socialToken }), 'identityLinked')(req, res, s, {});
}
