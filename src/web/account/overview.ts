import type { Request, Response } from 'express';
import type { StoredCredential } from '../../domain/storage/credentials';
import { Refusal } from '../../domain/refusal';
import type { LoginUseCase } from '../../usecases/login/call';
import { accountOverview, type AccountOverview } from '../../usecases/account/overview';
import { callUseCase } from '../login-calls';
import { VALIDATE_SCRIPT } from '../form-fields';
import { pageFailure } from '../hosted';
import { brandOf, escape, sendPage, type PageLocale } from '../pages';
import { actionForm, DONE, type Key, type Page, requestOf, say, sayHtml, type Section, type Shown, type Signed, type SignedWork, signedOutPage } from './parts';
import { profileSection } from './profile';
import { passwordSection } from './password';
import { ADD_PASSKEY_SCRIPT, passkeysSection } from './passkeys';
import { totpSection } from './second-factor';
import { identitiesSection } from './identities';
import { organizationsSection } from './organizations';
import { sessionsSection } from './sessions';
import { activitySection } from './activity';
import { dataSection } from './your-data';

/** The page's sections, in the order the page shows them and links them at the top. */
const SECTIONS: readonly Section[] = [
  profileSection, passwordSection, passkeysSection, totpSection, identitiesSection, organizationsSection, sessionsSection, activitySection, dataSection,
];

/** Each time of the page (dateOf, parts.ts) as a `<time>` element, in UTC. */
const timed = (locale: PageLocale, html: string) => html.replace(/\u0001([0-9T:.Z-]+)\u0001/g, (_m, iso: string) =>
  `<time datetime="${iso}" lang="${locale}">${escape(new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(iso)))} UTC</time>`);
/** Shows each time of the page in the viewer's time zone (without the script: in UTC, said so). */
const LOCAL_TIMES_SCRIPT = 'document.querySelectorAll(\'time[datetime]\').forEach((t)=>{try{t.textContent=new Intl.DateTimeFormat(t.lang,'
  + '{year:\'numeric\',month:\'short\',day:\'numeric\',hour:\'numeric\',minute:\'2-digit\',timeZoneName:\'short\'}).format(new Date(t.dateTime))}catch(e){}});';

/** The account page: every section, with what the last POST did. */
export async function showAccount(p: Page, req: Request, res: Response, s: Signed, status: number, shown: Shown = {}): Promise<void> {
  const { locale, app } = s;
  const got = await callUseCase(p.services, req, res, app, accountOverview as LoginUseCase<{ token: StoredCredential }, AccountOverview>, requestOf(s), { token: s.session });
  if (!got.result) {
    // the account gone (or disabled) meanwhile: signed out; anything else (a database down, a limit) said as it is
    if (got.error instanceof Refusal && got.error.reason === 'not_signed_in') return signedOutPage(res, app, locale, 401, say(locale, 'signedOut'));
    const { status, shown: failed } = pageFailure(res, locale, 'account', got.error);
    return signedOutPage(res, app, locale, status, failed.notice ?? say(locale, 'signedOut'));
  }
  const o = got.result;
  const token = p.formToken(s.session);
  const t = sayHtml(locale);
  const who = o.record.email ?? o.record.username ?? o.record.uuid;
  const done = shown.done ? `<p class="notice done" role="status">${t(`done${shown.done.charAt(0).toUpperCase()}${shown.done.slice(1)}` as Key)}</p>` : '';
  const notice = `<p class="notice" id="page-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`;

  let body = `<h1>${t('title')}</h1><p>${t('signedInAs', { who })}</p>${done}${notice}`;
  const drawn: [Section, string][] = [];
  for (const section of SECTIONS) {
    const html = await section.draw({ p, s, o, token, shown });
    if (html !== undefined) drawn.push([section, html]);
  }
  // the page is long: its sections, linked at the top
  body += `<nav class="links" aria-label="${t('sectionsNav')}">${drawn.map(([{ id, title }]) => `<a href="#${id}">${t(title)}</a>`).join('')}</nav>`;
  if (shown.reauth) body += `<p class="notice" role="alert">${t('reauth')} <a href="/account/reauth">${t('reauthLink')}</a></p>`;
  body += drawn.map(([{ id, title }, html]) => `<section aria-labelledby="${id}"><h2 id="${id}">${t(title)}</h2>${html}</section>`).join('');

  body += actionForm('/account/signout', token, say(locale, 'signOut'), {}, '', true);
  sendPage(res, status, locale, say(locale, 'title'), timed(locale, body), {
    brand: brandOf(app), formAction: "'self'", script: [VALIDATE_SCRIPT, ADD_PASSKEY_SCRIPT, LOCAL_TIMES_SCRIPT], connect: true,
  });
}

/** GET /account: the page, saying what the POST before did (`done`). */
export const showOverview = (p: Page): SignedWork => async (req, res, s) => {
  const done = DONE.find((d) => d === req.query.done);
  await showAccount(p, req, res, s, 200, { done });
};
