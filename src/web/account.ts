import express, { type Request, type Response } from 'express';
import QRCode from 'qrcode';
import type { Application } from '../domain/storage/applications';
import type { StoredCredential } from '../domain/storage/credentials';
import type { Client } from '../domain/clients';
import type { FlowVersion } from '../domain/flows';
import { prefillFrom } from '../domain/profile-fields';
import { Refusal } from '../domain/refusal';
import { safeEqual } from '../domain/secrets';
import { totpUri } from '../domain/second-factor';
import { mayResetPassword } from '../domain/tokens';
import type { CallContext, Services } from '../usecases/services';
import { peerBudgetKey } from '../domain/addresses';
import type { FlowRequest, LoginUseCase } from '../usecases/login/call';
import { updateProfile } from '../usecases/login/update-profile';
import { linkAccount, unlinkAccount } from '../usecases/login/social';
import { startLinking, type AccountLinking } from './social';
import { accountOverview, type AccountOverview, type ActivityView } from '../usecases/account/overview';
import { accountClient } from '../usecases/account/account-client';
import { disownActivity } from '../usecases/activity/disown-activity';
import { exportOwnAccount } from '../usecases/account/export-account';
import { renderAccountExport } from '../domain/account-export';
import { ACCOUNT_CALLBACK_PATH, accountCallbackOf, endSessions, finishOffer, offerOf, startBrowserSession, type SessionView } from '../usecases/account/browser-sessions';
import { beginPasskeyRegistration } from '../usecases/factors/begin-passkey-registration';
import { finishPasskeyRegistration } from '../usecases/factors/finish-passkey-registration';
import { removePasskey, renamePasskey } from '../usecases/factors/manage-passkeys';
import { enrollTotp } from '../usecases/factors/enroll-totp';
import { confirmTotp } from '../usecases/factors/confirm-totp';
import { removeTotp } from '../usecases/factors/remove-totp';
import { newRecoveryCodes } from '../usecases/factors/renew-recovery-codes';
import { callUseCase, clientFlow, pageCall, type PageRefusal } from './login-calls';
import { organizationsOf, removeMember, switchOrganization } from '../usecases/organizations/members';
import { acceptInvitation, createInvitation, invitationOfLink, invitedAddress, INVITATION_PATH } from '../usecases/organizations/invitations';
import { listRoles } from '../usecases/organizations/roles';
import { isOwner, managesMembers } from '../domain/organizations';
import type { Membership } from '../domain/storage/organizations';
import { asAccount } from '../usecases/services';
import { formValues, renderFields, VALIDATE_SCRIPT } from './form-fields';
import { pageFailure, type HostedPages, type HostedReturn } from './hosted';
import { accountState, browserSessionOfRequest, returnedState, sessionCookieName } from './account-sign-in';
import { INTERACTION_UID } from '../domain/openid-routes';
import { registrationOpen } from '../domain/registration';
import { brandOf, crossSite, escape, originOf, pageForm, pageHandler, pageLocale, providerLabel, sendError, sendPage, stringFields, type PageLocale } from './pages';
import { filled, textsOf } from '../texts';

/**
 * The account page (docs/account-page.md): a person's own view of their account, in the
 * application's look and language. It signs in through the hosted /signin like any app, with the
 * login client the link names (`client_id`, else the application's `account_client_id` setting,
 * else its only login client), and keeps a server-side browser session (a `browser_session`
 * credential) whose value only an HttpOnly cookie holds. Every section calls the use cases the
 * API's endpoints call, with that session in place of an access token: the same rules, limits,
 * events and emails, and the same "signed in minutes ago" before changing how the account signs in.
 */

type Key = keyof ReturnType<typeof accountTexts>;
const accountTexts = (locale: PageLocale) => textsOf('account', locale);
const say = (locale: PageLocale, key: string, values: Record<string, string> = {}) => filled(accountTexts(locale)[key] ?? key, values);

/** What a successful POST says once it has redirected back (`done`). */
const DONE = [
  'profile', 'password', 'passkeyAdded', 'passkeyRenamed', 'passkeyRemoved', 'totpOff', 'identityLinked', 'identityUnlinked', 'sessionEnded', 'othersEnded', 'disowned',
  'organizationSwitched', 'organizationLeft', 'organizationJoined', 'organizationInvited',
] as const;
type Done = (typeof DONE)[number];


/** What a signed-in request of the page works with: its session, its login client and that client's flow. */
interface Signed { app: Application; locale: PageLocale; session: StoredCredential; client: Client; flow: FlowVersion }

/** What the page shows besides the account: what the last POST did, or why not (and in which form). */
interface Shown { done?: Done; notice?: string; reauth?: boolean; form?: string; values?: Record<string, string>; invalid?: Record<string, string[]> }

/**
 * `formToken`: the CSRF token of a session's forms, a keyed MAC (SECRET_KEY) of the session's
 * hash: the same in every tab of the browser, worthless without the session's cookie, and ended
 * with the session. A POST must bring it and come from this origin (crossSite).
 */
interface Page { services: Services; formToken: (session: StoredCredential) => string; secure: (req: Request) => boolean }

const sessionCookie = (p: Page, req: Request) => sessionCookieName(req, p.services.baseUrls.secure);

/** Sends the browser to the hosted sign-in, which comes back to the callback with a code (accountState). */
function toSignIn(p: Page, req: Request, res: Response, app: Application, client: Client, locale: PageLocale): void {
  const state = accountState(req, res, p.services.baseUrls.secure, client.clientId);
  const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: accountCallbackOf(p.services, app), state, locale });
  res.redirect(303, `/signin?${query}`);
}

/** GET /account/callback: the code of the hosted sign-in becomes this browser's session. */
const callback = (p: Page) => async (req: Request, res: Response, app: Application, locale: PageLocale) => {
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

/** The call of a use case the page runs itself (finding its session, ending one it replaces). */
const callOf = (p: Page, req: Request, res: Response, app: Application): CallContext =>
  ({ origin: originOf(req, res), app, clientAddress: peerBudgetKey(req.ip), services: p.services });

/** The browser and system of a User-Agent, as a person names them ("Firefox on Linux"); '' when unknown. */
export function deviceOf(agent: string | undefined): string {
  const ua = agent ?? '';
  const browser = /Edg\//.test(ua) ? 'Edge' : /OPR\//.test(ua) ? 'Opera' : /Firefox\//.test(ua) ? 'Firefox' : /Chrom(e|ium)\//.test(ua) ? 'Chrome'
    : /Safari\//.test(ua) ? 'Safari' : '';
  const system = /Android/.test(ua) ? 'Android' : /iPhone|iPad/.test(ua) ? 'iOS' : /Mac OS X/.test(ua) ? 'macOS' : /Windows/.test(ua) ? 'Windows'
    : /CrOS/.test(ua) ? 'ChromeOS' : /Linux/.test(ua) ? 'Linux' : '';
  return [browser, system].filter(Boolean).join(' / ');
}

/** A page for a browser without a session: a message and the way to sign in. */
function signedOutPage(res: Response, app: Application, locale: PageLocale, status: number, message: string): void {
  const title = say(locale, 'title');
  sendPage(res, status, locale, title, `<h1>${escape(title)}</h1><p class="notice" role="status">${escape(message)}</p>`
    + `<a class="button" href="/account?locale=${escape(encodeURIComponent(locale))}">${escape(say(locale, 'signInAgain'))}</a>`, { brand: brandOf(app) });
}

/** A date as the page's locale writes it, in UTC (the page does not know the person's time zone). */
/**
 * A time on the page: a mark that survives escaping, which `timed` turns into a `<time>` element,
 * written in UTC and shown in the viewer's own time zone by LOCAL_TIMES_SCRIPT.
 */
const dateOf = (_locale: PageLocale, at: Date) => `\u0001${at.toISOString()}\u0001`;
const timed = (locale: PageLocale, html: string) => html.replace(/\u0001([0-9T:.Z-]+)\u0001/g, (_m, iso: string) =>
  `<time datetime="${iso}" lang="${locale}">${escape(new Intl.DateTimeFormat(locale, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' }).format(new Date(iso)))} UTC</time>`);
/** Shows each time of the page in the viewer's time zone (without the script: in UTC, said so). */
const LOCAL_TIMES_SCRIPT = 'document.querySelectorAll(\'time[datetime]\').forEach((t)=>{try{t.textContent=new Intl.DateTimeFormat(t.lang,'
  + '{year:\'numeric\',month:\'short\',day:\'numeric\',hour:\'numeric\',minute:\'2-digit\',timeZoneName:\'short\'}).format(new Date(t.dateTime))}catch(e){}});';

/** A small form of the page: one action, the CSRF token, hidden values, and its button. */
function actionForm(action: string, token: string, button: string, fields: Record<string, string> = {}, inner = '', secondary = false): string {
  return `<form method="post" action="${escape(action)}">${inner}`
    + Object.entries(fields).map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('')
    + `<input type="hidden" name="csrf" value="${escape(token)}">`
    + `<button type="submit"${secondary ? ' class="secondary"' : ''}>${escape(button)}</button></form>`;
}

/** A form of the flow (editProfileForm, changePasswordForm) with what the last attempt showed. */
function flowForm(p: Page, s: Signed, name: string, action: string, button: string, values: Record<string, string>, shown: Shown, token: string): string {
  const form = p.services.flows.form(s.app, s.flow, name);
  if (!form) return '';
  const mine = shown.form === name;
  return `<form method="post" action="${action}" data-validate>`
    + renderFields(p.services.flows, s.flow, form, s.locale, mine ? { ...values, ...shown.values } : values, mine ? shown.invalid ?? {} : {})
    + `<input type="hidden" name="csrf" value="${escape(token)}"><button type="submit">${escape(button)}</button></form>`;
}

/**
 * Adds a passkey from the page: the browser asks this page for the options (a POST with the form's
 * token), creates the passkey, and posts it back. Without WebAuthn the button stays hidden; a
 * session too old to add one goes to sign in again.
 */
const ADD_PASSKEY_SCRIPT = `(()=>{const f=document.getElementById('passkey-add'),n=document.getElementById('page-notice');`
  + `if(!f||!window.PublicKeyCredential||!PublicKeyCredential.parseCreationOptionsFromJSON)return;const b=document.getElementById('passkey-add-button');b.hidden=false;`
  + `b.addEventListener('click',async()=>{try{const r=await fetch('/account/passkeys/begin',{method:'POST',body:new URLSearchParams({csrf:f.elements.namedItem('csrf').value})});`
  + `const j=await r.json();if(j.reauth){location.assign('/account/reauth');return}if(!j.options)throw new Error('refused');`
  + `const c=await navigator.credentials.create({publicKey:PublicKeyCredential.parseCreationOptionsFromJSON(j.options)});`
  + `f.elements.namedItem('credential').value=JSON.stringify(c.toJSON());f.submit()}catch(e){n.textContent=f.dataset.failed;n.hidden=false}})})();`;

const factorsOf = (locale: PageLocale, session: Pick<SessionView, 'factors'>) => {
  const names = [...new Set((session.factors.length ? session.factors : ['unknown']).map((f) => say(locale, `factor_${f}`)))];
  return names.join(say(locale, 'and'));
};

/** The account page: every section, with what the last POST did. */
async function showAccount(p: Page, req: Request, res: Response, s: Signed, status: number, shown: Shown = {}): Promise<void> {
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
  const t = (key: Key, values?: Record<string, string>) => escape(say(locale, key, values));
  const who = o.record.email ?? o.record.username ?? o.record.uuid;
  const done = shown.done ? `<p class="notice done" role="status">${t(`done${shown.done.charAt(0).toUpperCase()}${shown.done.slice(1)}` as Key)}</p>` : '';
  const notice = `<p class="notice" id="page-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`;
  const reauthHtml = `<p class="tip">${t('reauth')} <a href="/account/reauth">${t('reauthLink')}</a></p>`;

  let body = `<h1>${t('title')}</h1><p>${t('signedInAs', { who })}</p>${done}${notice}`;
  // a flow without editProfileForm has no profile to edit here
  const editForm = p.services.flows.form(app, s.flow, 'editProfileForm');
  // the page is long: its sections, linked at the top
  const sections: [string, Key][] = [
    ...(editForm ? [['h-profile', 'profile'] as [string, Key]] : []),
    ['h-password', 'password'], ['h-passkeys', 'passkeys'], ...(o.policy !== 'off' ? [['h-totp', 'totp'] as [string, Key]] : []),
    ['h-identities', 'identities'], ['h-organizations', 'organizations'], ['h-sessions', 'sessions'], ['h-activity', 'activity'], ['h-data', 'yourData'],
  ];
  body += `<nav class="links" aria-label="${t('sectionsNav')}">${sections.map(([id, key]) => `<a href="#${id}">${t(key)}</a>`).join('')}</nav>`;
  if (shown.reauth) body += `<p class="notice" role="alert">${t('reauth')} <a href="/account/reauth">${t('reauthLink')}</a></p>`;

  if (editForm) {
    body += `<section aria-labelledby="h-profile"><h2 id="h-profile">${t('profile')}</h2>`
      + flowForm(p, s, 'editProfileForm', '/account/profile', say(locale, 'save'), prefillFrom(editForm, o.record), shown, token) + '</section>';
  }

  body += `<section aria-labelledby="h-password"><h2 id="h-password">${t('password')}</h2>`
    + (o.hasPassword ? flowForm(p, s, 'changePasswordForm', '/account/password', say(locale, 'changePassword'), {}, shown, token) : `<p>${t('noPassword')}</p>`)
    + '</section>';

  body += `<section aria-labelledby="h-passkeys"><h2 id="h-passkeys">${t('passkeys')}</h2>`;
  body += o.passkeys.length === 0 ? `<p>${t('noPasskeys')}</p>` : '<ul class="items">' + o.passkeys.map((k) => {
    const used = k.lastUsedAt ? say(locale, 'lastUsed', { date: dateOf(locale, k.lastUsedAt) }) : say(locale, 'neverUsed');
    const id = `passkey-${k.id}`;
    return `<li><p><strong>${escape(k.name)}</strong><br>${t('passkeyDates', { created: dateOf(locale, k.createdAt), used })}${k.backedUp ? ` ${t('synced')}` : ''}</p>`
      + actionForm('/account/passkeys/rename', token, say(locale, 'rename'), { passkey: String(k.id) },
        `<label for="${id}">${t('passkeyName')}</label><input id="${id}" name="name" type="text" maxlength="100" value="${escape(k.name)}" required>`, true)
      + actionForm('/account/passkeys/remove', token, say(locale, 'removeNamed', { name: k.name }), { passkey: String(k.id) }, '', true)
      + '</li>';
  }).join('') + '</ul>';
  if (!o.fresh) body += reauthHtml;
  body += `<form method="post" action="/account/passkeys/add" id="passkey-add" data-failed="${t('passkeyFailed')}">`
    + `<input type="hidden" name="csrf" value="${escape(token)}"><input type="hidden" name="credential" value="">`
    + `<button type="button" id="passkey-add-button" hidden>${t('addPasskey')}</button></form></section>`;

  if (o.policy !== 'off') {
    body += `<section aria-labelledby="h-totp"><h2 id="h-totp">${t('totp')}</h2>`;
    if (o.totp === 'on') {
      // each form's own label: two fields may not be told apart by their labels alone
      const code = (id: string, label: Key) => `<label for="${id}">${t(label)}</label>`
        + `<input id="${id}" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="8" required>`;
      body += `<p>${t('totpOn')} ${t('codesLeft', { count: String(o.recoveryCodesLeft) })}</p>`
        + actionForm('/account/recovery-codes', token, say(locale, 'newCodes'), {}, code('codes-code', 'totpCodeForCodes'), true)
        + actionForm('/account/totp/remove', token, say(locale, 'totpTurnOff'), {}, code('remove-code', 'totpCodeForRemove'), true);
    } else {
      body += `<p>${t('totpOff')}</p>` + (o.fresh ? '' : reauthHtml) + actionForm('/account/totp/enroll', token, say(locale, 'totpTurnOn'));
    }
    body += '</section>';
  }

  // each provider of the application not linked yet can be
  const providers = (await p.services.providers.list(app.id)).map((v) => v.name).filter((name) => !o.identities.some((i) => i.provider === name));
  body += `<section aria-labelledby="h-identities"><h2 id="h-identities">${t('identities')}</h2>`
    + (o.identities.length === 0 ? `<p>${t('noIdentities')}</p>` : '<ul class="items">' + o.identities.map((i) => `<li>`
      + actionForm('/account/identities/unlink', token, say(locale, 'unlink', { provider: providerLabel(i.provider) }), { identifier: i.identifier }, '', true)
      + '</li>').join('') + '</ul>')
    // a link, not a form: the provider's page is on another origin, where form-action lets no form go; its token is the forms'
    + providers.map((name) => `<a class="button provider" href="${escape(`/account/identities/link?${new URLSearchParams({ provider: name, csrf: token })}`)}">`
      + `${t('link', { provider: providerLabel(name) })}</a>`).join('')
    + '</section>';

  // the organizations the account belongs to (docs/organizations.md#for-members), the active one first
  const memberships = s.session.entityId === null ? [] : await organizationsOf(p.services, { app, entityId: s.session.entityId });
  const roleNames = memberships.some((m) => managesMembers(m.member.roles)) ? (await listRoles(p.services, { app })).map((r) => r.name) : [];
  body += `<section aria-labelledby="h-organizations"><h2 id="h-organizations">${t('organizations')}</h2>`
    + (memberships.length === 0 ? `<p>${t('noOrganizations')}</p>` : '<ul class="items">' + memberships.map((m, i) => {
      const active = i === 0 && m.member.activeAt !== null;
      return `<li><p><strong>${escape(m.organization.name)}</strong>${active ? ` <span class="tag">${t('activeOrganization')}</span>` : ''}<br>`
        + `${t('organizationRoles', { roles: m.member.roles.join(', ') })}</p>`
        + (active ? '' : actionForm('/account/organizations/switch', token, say(locale, 'makeActive', { name: m.organization.name }), { organization: m.organization.organizationId }, '', true))
        + actionForm('/account/organizations/leave', token, say(locale, 'leaveOrganization', { name: m.organization.name }), { organization: m.organization.organizationId }, '', true)
        // its owners and admins invite (an owner may invite an owner)
        + (managesMembers(m.member.roles) ? inviteForm(locale, token, m, roleNames) : '')
        + '</li>';
    }).join('') + '</ul>')
    + '</section>';

  body += `<section aria-labelledby="h-sessions"><h2 id="h-sessions">${t('sessions')}</h2><ul class="items">` + o.sessions.map((v) => {
    const where = v.current ? say(locale, 'thisBrowser') : v.kind === 'browser' ? say(locale, 'browserSession', { device: v.device || '?' }) : say(locale, 'appSession', { client: v.client });
    const when = v.signedInAt ? say(locale, 'signedInWith', { date: dateOf(locale, v.signedInAt), factors: factorsOf(locale, v) }) : '';
    const last = v.lastUsedAt ? say(locale, 'lastUsed', { date: dateOf(locale, v.lastUsedAt) }) : '';
    return `<li><p><strong>${escape(where)}</strong><br>${escape(when)} ${escape(last)}</p>`
      + (v.current ? '' : actionForm('/account/sessions/end', token, say(locale, 'endSession'), { session: v.id }, '', true)) + '</li>';
  }).join('') + '</ul>'
    + (o.sessions.some((v) => !v.current) ? actionForm('/account/sessions/end', token, say(locale, 'endOthers'), { others: '1' }, '', true) : '')
    + '</section>';

  body += activitySection(locale, o.activity, token);
  // the right of access: everything kept of the account, as one file
  body += `<section aria-labelledby="h-data"><h2 id="h-data">${t('yourData')}</h2><p>${t('exportHelp')}</p>`
    + actionForm('/account/export', token, say(locale, 'exportData'), {}, '', true) + '</section>';

  body += actionForm('/account/signout', token, say(locale, 'signOut'), {}, '', true);
  sendPage(res, status, locale, say(locale, 'title'), timed(locale, body), {
    brand: brandOf(app), formAction: "'self'", script: [VALIDATE_SCRIPT, ADD_PASSKEY_SCRIPT, LOCAL_TIMES_SCRIPT], connect: true,
  });
}

/** The page's text of an activity type (`account.passkey_added`: act_passkey_added; `token.reuse_detected`: act_reuse_detected). */
export const activityTextKey = (type: string) => `act_${type.slice(type.indexOf('.') + 1)}`;

/** What one entry of the activity says happened, in the page's words. */
function activityWhat(locale: PageLocale, e: ActivityView): string {
  if (e.kind === 'failures') return say(locale, activityTextKey(e.type), { count: String(e.count), reason: say(locale, `reason_${e.reason}`) });
  const d = e.data;
  switch (e.type) {
    case 'account.signed_in': {
      const factors = [String(d.method ?? 'unknown'), ...(typeof d.factor === 'string' ? [d.factor] : [])];
      return say(locale, activityTextKey(e.type), { factors: factorsOf(locale, { factors: factors as SessionView['factors'] }) });
    }
    case 'account.identity_linked':
    case 'account.identity_unlinked':
      return say(locale, activityTextKey(e.type), { provider: providerLabel(String(d.provider ?? '')) });
    default:
      return say(locale, activityTextKey(e.type));
  }
}

/**
 * The account's recent activity, newest first: what, when (in the viewer's time zone), through
 * which app, from which device and address; and "this wasn't me". The user agent is shown as the
 * device it names, and whole (escaped) on hover.
 */
function activitySection(locale: PageLocale, activity: ActivityView[], token: string): string {
  const t = (key: Key, values?: Record<string, string>) => escape(say(locale, key, values));
  const items = activity.map((e) => {
    const device = e.userAgent === undefined ? '' : deviceOf(e.userAgent) || say(locale, 'unknownDevice');
    const where = [e.clientName ?? (e.clientId === undefined ? '' : e.clientId), device, e.address ?? ''].filter((w) => w !== '');
    const title = e.userAgent === undefined ? '' : ` title="${escape(e.userAgent)}"`;
    return `<li><p><strong>${escape(activityWhat(locale, e))}</strong><br>${escape(dateOf(locale, e.at))}`
      + (where.length > 0 ? ` <span${title}>${escape(where.join(' · '))}</span>` : '') + '</p></li>';
  });
  return `<section aria-labelledby="h-activity"><h2 id="h-activity">${t('activity')}</h2>`
    + (items.length === 0 ? `<p>${t('activityNone')}</p>` : `<ul class="items">${items.join('')}</ul>`)
    + `<p class="tip">${t('notMeHelp')}</p>` + actionForm('/account/activity/disown', token, say(locale, 'notMe'), {}, '', true)
    + '</section>';
}

const requestOf = (s: Signed): FlowRequest => ({ client: s.client, flow: s.flow, responseType: 'code' });

/** A use case refused because the session's sign-in is too old for the change: the page asks to sign in again. */
const tooOld = (e: PageRefusal) => e instanceof Refusal && e.reason === 'invalid' && e.detail.field === 'accessToken';

type SignedWork = (req: Request, res: Response, s: Signed, body: Record<string, string>) => Promise<void>;

/**
 * A page request of a signed-in browser: without a live session it goes to sign in (a GET) or
 * back to the page (a POST, which did nothing); a POST needs the page's CSRF token.
 */
const signed = (p: Page, resolveApp: (host: string | undefined) => Promise<Application>, work: SignedWork) =>
  pageHandler(resolveApp, async (req, res, app, locale) => {
    const s = await signedOf(p, req, app, locale);
    if (!s) {
      if (req.method === 'POST') return res.redirect(303, `/account?locale=${encodeURIComponent(locale)}`);
      const named = await accountClient(p.services, app, req.query.client_id);
      if (!named) {
        return sendError(res, 400, locale, app, {
          key: 'badLink', detail: 'open /account with the client_id of a login client of this application, or set the application setting account_client_id',
        });
      }
      return toSignIn(p, req, res, app, named, locale);
    }
    const body = req.method === 'POST' ? stringFields(req.body) : {};
    if (req.method === 'POST' && (crossSite(req) || !safeEqual(body.csrf ?? '', p.formToken(s.session)))) return showAccount(p, req, res, s, 403, { notice: textsOf('hosted', locale).expired });
    await work(req, res, s, body);
  });

/** The browser's live session, its login client and that client's flow; undefined without one (or when its client has no flow to show). */
async function signedOf(p: Page, req: Request, app: Application, locale: PageLocale): Promise<Signed | undefined> {
  const session = await browserSessionOfRequest(p.services, req, app);
  const stored = session?.clientId == null ? undefined : await p.services.db.clients.findById(app.id, session.clientId);
  const client = stored && await p.services.clients.find(app.id, stored.clientId);
  const flow = client && await clientFlow(p.services, app, client, locale);
  return session && client && flow ? { app, locale, session, client, flow } : undefined;
}

/**
 * The end of a social sign-in the page started to link an identity (the social callback, a GET
 * bound to this browser by the sign-in's state cookie; the start was the page's link with its form token):
 * linked to the signed-in account through the API's use case, or the page saying why not.
 */
async function finishLink(p: Page, req: Request, res: Response, app: Application, locale: PageLocale, socialToken: string, family: string): Promise<void> {
  const s = await signedOf(p, req, app, locale);
  // the very session that started it: a browser signed in to another account meanwhile links nothing
  if (!s || s.session.family !== family) return signedOutPage(res, app, locale, 401, say(locale, 'stateLost'));
  await act(p, linkAccount, () => ({ accessToken: s.session, token: socialToken }), 'identityLinked')(req, res, s, {});
}

/** After a POST that did what it said: back to the page (a reload repeats nothing), which says so. */
const doneTo = (res: Response, s: Signed, done: Done) => res.redirect(303, `/account?locale=${encodeURIComponent(s.locale)}&done=${done}`);

/** Runs a use case for the page, then back to the page saying `done`, or the page with what failed. */
const act = <C>(p: Page, useCase: LoginUseCase<C, unknown>, command: (s: Signed, body: Record<string, string>) => C, done: Done, form?: string): SignedWork =>
  async (req, res, s, body) => {
    const result = await callUseCase(p.services, req, res, s.app, useCase, requestOf(s), command(s, body));
    if (!result.error) return doneTo(res, s, done);
    if (tooOld(result.error)) return showAccount(p, req, res, s, 403, { reauth: true });
    const { status, shown } = pageFailure(res, s.locale, form ?? 'account', result.error);
    await showAccount(p, req, res, s, status, { ...shown, form, values: form ? body : undefined });
  };

const passkeyId = (body: Record<string, string>) => (/^\d{1,15}$/.test(body.passkey ?? '') ? Number(body.passkey) : -1);

/** The authenticator's QR code and its first code; then the recovery codes, once. */
const enrollPage = (p: Page): SignedWork => async (req, res, s, body) => {
  const { locale, app } = s;
  let secret = body.secret;
  let uri: string;
  let notice: string | undefined;
  if (body.code !== undefined && secret && /^[A-Z2-7]{16,64}$/.test(secret)) {
    const confirmed = await callUseCase(p.services, req, res, app, confirmTotp, requestOf(s), { token: s.session, code: body.code.trim().slice(0, 16) });
    if (confirmed.result) return codesPage(res, s, confirmed.result.recoveryCodes);
    if (tooOld(confirmed.error)) return showAccount(p, req, res, s, 403, { reauth: true });
    notice = pageFailure(res, locale, 'enroll', confirmed.error).shown.notice;
    // the same QR code again (a wrong code asks for another code, not another scan), named as before
    const record = s.session.entityId === null ? undefined : await p.services.db.records.find(app.id, { id: s.session.entityId });
    uri = totpUri(secret, brandOf(app).name, record?.email ?? record?.username ?? record?.uuid ?? '');
  } else {
    const enrolled = await callUseCase(p.services, req, res, app, enrollTotp, requestOf(s), { token: s.session });
    if (!enrolled.result) {
      if (tooOld(enrolled.error)) return showAccount(p, req, res, s, 403, { reauth: true });
      const { status, shown } = pageFailure(res, locale, 'enroll', enrolled.error);
      return showAccount(p, req, res, s, status, shown);
    }
    ({ secret, uri } = enrolled.result);
  }
  const hosted = textsOf('hosted', locale);
  const qr = await QRCode.toString(uri, { type: 'svg', errorCorrectionLevel: 'M', margin: 2 });
  const title = say(locale, 'totp');
  const page = `<h1>${escape(hosted.enrollTitle)}</h1><p>${escape(filled(hosted.enrollIntro, { app: brandOf(app).name }))}</p>`
    + `<p class="notice" role="alert"${notice ? '' : ' hidden'}>${escape(notice ?? '')}</p>`
    + `<div class="qr" role="img" aria-label="${escape(hosted.enrollTitle)}">${qr}</div><p>${escape(hosted.enrollSecret)} <code id="secret">${escape(secret!)}</code></p>`
    + actionForm('/account/totp/enroll', p.formToken(s.session), hosted.enrollButton, { secret: secret! },
      `<label for="code">${escape(hosted.codeLabel)}</label><input id="code" name="code" type="text" inputmode="numeric" autocomplete="one-time-code" maxlength="8" required autofocus>`)
    + `<p class="links"><a href="/account?locale=${escape(encodeURIComponent(locale))}">${escape(say(locale, 'backToAccount'))}</a></p>`;
  sendPage(res, notice ? 400 : 200, locale, title, page, { brand: brandOf(app), formAction: "'self'" });
};

/** Recovery codes, shown once (never cached: every page is no-store). */
function codesPage(res: Response, s: Signed, codes: string[]): void {
  const { locale } = s;
  const title = say(locale, 'codesTitle');
  sendPage(res, 200, locale, title, `<h1>${escape(title)}</h1><p class="notice done" role="status">${escape(textsOf('hosted', locale).enrolledIntro)}</p>`
    + `<ul class="codes">${codes.map((c) => `<li><code>${escape(c)}</code></li>`).join('')}</ul>`
    + `<a class="button" href="/account?locale=${escape(encodeURIComponent(locale))}">${escape(say(locale, 'backToAccount'))}</a>`, { brand: brandOf(s.app) });
}

/** Where a registration's passkey offer lives (docs/account-page.md#a-passkey-after-registration). */
export const OFFER_PATH = '/register/passkey';

/**
 * The offer after a registration on /register (the login client's or application's setting
 * `passkey_after_registration` = `offer`): the session the registration started (for this offer
 * only) adds a passkey, or not, then the app gets its code and the session ends (finishOffer).
 */
async function showOffer(p: Page, res: Response, s: Signed, back: HostedReturn, status: number, shown: { added?: boolean; notice?: string } = {}): Promise<void> {
  const { locale, app } = s;
  const hosted = textsOf('hosted', locale);
  const token = p.formToken(s.session);
  const entry = { locale };
  const body = `<h1>${escape(hosted.offerTitle)}</h1>`
    + (shown.added ? `<p class="notice done" role="status">${escape(hosted.offerAdded)}</p>` : `<p>${escape(hosted.offerIntro)}</p>`)
    + `<p class="notice" id="page-notice" role="alert"${shown.notice ? '' : ' hidden'}>${escape(shown.notice ?? '')}</p>`
    + (shown.added ? '' : `<form method="post" action="${OFFER_PATH}" id="passkey-add" data-failed="${escape(say(locale, 'passkeyFailed'))}">`
      + Object.entries(entry).map(([k, v]) => `<input type="hidden" name="${escape(k)}" value="${escape(v)}">`).join('')
      + `<input type="hidden" name="csrf" value="${escape(token)}"><input type="hidden" name="credential" value="">`
      + `<button type="button" id="passkey-add-button" hidden>${escape(say(locale, 'addPasskey'))}</button></form>`)
    + actionForm('/register/continue', token, shown.added ? hosted.offerContinue : hosted.offerSkip, entry, '', !shown.added);
  sendPage(res, status, locale, hosted.offerTitle, body, {
    brand: brandOf(app), formAction: `'self' ${new URL(back.redirectUri).origin}`, script: shown.added ? undefined : ADD_PASSKEY_SCRIPT, connect: !shown.added,
  });
}

/** An owner's or admin's form to invite an address to the organization with a role. */
function inviteForm(locale: PageLocale, token: string, m: Membership, roleNames: string[]): string {
  const id = `invite-${m.organization.organizationId}`;
  const roles = roleNames.filter((r) => r !== 'owner' || isOwner(m.member.roles));
  return actionForm('/account/organizations/invite', token, say(locale, 'invite'), { organization: m.organization.organizationId },
    `<label for="${id}-email">${escape(say(locale, 'inviteEmail', { name: m.organization.name }))}</label><input id="${id}-email" name="email" type="email" maxlength="254" autocomplete="off" required>`
    + `<label for="${id}-role">${escape(say(locale, 'inviteRole'))}</label><select id="${id}-role" name="role">`
    + roles.map((r) => `<option value="${escape(r)}"${r === 'member' ? ' selected' : ''}>${escape(r)}</option>`).join('') + '</select>', true);
}

/** A change of the account's organizations from the page (switch, leave): then back to the page saying `done`, or the page with why not. */
const organizationWork = (p: Page, done: Done, work: (s: Signed, acting: AccountActing, organizationId: string, body: Record<string, string>) => Promise<void>): SignedWork =>
  async (req, res, s, body) => {
    if (s.session.entityId === null) return signedOutPage(res, s.app, s.locale, 401, say(s.locale, 'signedOut'));
    const acting = asAccount({ origin: originOf(req, res) }, s.session.entityId, s.client) as AccountActing;
    const outcome = await pageCall(res, () => work(s, acting, (body.organization ?? '').slice(0, 64), body));
    if (!outcome.error) return doneTo(res, s, done);
    const { status, shown } = pageFailure(res, s.locale, 'account', outcome.error);
    await showAccount(p, req, res, s, status, shown);
  };
type AccountActing = ReturnType<typeof asAccount> & { actor: { kind: 'account'; accountId: number } };

/** Where an invitation's link leads (its secret in `token`), in the page's language. */
const invitationHref = (secret: string, locale: PageLocale) => `${INVITATION_PATH}?${new URLSearchParams({ token: secret, locale })}`;
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
  const t = (key: Key, values?: Record<string, string>) => escape(say(locale, key, values));
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

/** To sign in (or register, `register=1`, the invited address typed in already) for an invitation, then back to it. */
async function invitationSignIn(p: Page, req: Request, res: Response, app: Application, locale: PageLocale): Promise<void> {
  const secret = secretOf(req.query.token);
  const found = await invitationOfLink(p.services, { app, secret });
  if (!found) return signedOutPage(res, app, locale, 404, say(locale, 'invitationInvalid'));
  const client = await accountClient(p.services, app, req.query.client_id);
  if (!client) return sendError(res, 400, locale, app, { key: 'badLink', detail: 'the application has no login client for its pages: set the application setting account_client_id' });
  const state = accountState(req, res, p.services.baseUrls.secure, client.clientId, { invitation: secret });
  const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: accountCallbackOf(p.services, app), state, locale, login_hint: found.invitation.email });
  res.redirect(303, `${req.query.register === '1' ? '/register' : '/signin'}?${query}`);
}

/** The join button: the signed-in account accepts the invitation, then the account page shows its organizations. */
async function acceptFromPage(p: Page, req: Request, res: Response, app: Application, locale: PageLocale): Promise<void> {
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
}

/** The account page's routes: the page, its sign-in callback, one POST per change, and a registration's passkey offer. */
export function accountRoutes(services: Services, resolveApp: (host: string | undefined) => Promise<Application>, hosted: HostedPages) {
  const router = express.Router();
  const p: Page = {
    services, formToken: (session) => services.box.tag(session.valueHash, 'account form'), secure: (req) => req.secure || services.baseUrls.secure,
  };
  const on = (work: SignedWork) => signed(p, resolveApp, work);
  const form = pageForm({ limit: '80kb', parameterLimit: 40 });
  router.get('/account', on(async (req, res, s) => {
    const done = DONE.find((d) => d === req.query.done);
    await showAccount(p, req, res, s, 200, { done });
  }));
  router.get(ACCOUNT_CALLBACK_PATH, pageHandler(resolveApp, callback(p)));
  router.get('/account/reauth', pageHandler(resolveApp, async (req, res, app, locale) => {
    const session = await browserSessionOfRequest(services, req, app);
    const stored = session?.clientId == null ? undefined : await services.db.clients.findById(app.id, session.clientId);
    const client = await accountClient(services, app, stored?.clientId ?? req.query.client_id);
    if (!client) return res.redirect(303, `/account?locale=${encodeURIComponent(locale)}`);
    toSignIn(p, req, res, app, client, locale);
  }));
  router.post('/account/profile', form, on(async (req, res, s, body) => {
    const editForm = services.flows.form(s.app, s.flow, 'editProfileForm');
    const values = editForm ? formValues(editForm, body) : {};
    await act(p, updateProfile, () => ({ form: { name: 'editProfileForm', values }, accessToken: s.session }), 'profile', 'editProfileForm')(req, res, s, body);
  }));
  router.post('/account/password', form, on(async (req, res, s, body) => {
    const passwordForm = services.flows.form(s.app, s.flow, 'changePasswordForm');
    const values = passwordForm ? formValues(passwordForm, body) : {};
    await act(p, updateProfile, () => ({ form: { name: 'changePasswordForm', values }, accessToken: s.session }), 'password', 'changePasswordForm')(req, res, s, body);
  }));
  router.post('/account/passkeys/begin', form, on(async (req, res, s) => {
    const begun = await callUseCase(services, req, res, s.app, beginPasskeyRegistration, requestOf(s), { token: s.session });
    if (begun.result) return void res.json({ options: begun.result });
    // the status the page would answer (a limit: 429 with Retry-After; a dependency down: 500)
    res.status(pageFailure(res, s.locale, 'passkey', begun.error).status).json({ reauth: tooOld(begun.error) });
  }));
  router.post('/account/passkeys/add', form, on(async (req, res, s, body) => {
    let credential: unknown;
    try {
      credential = JSON.parse(body.credential ?? '');
    } catch {
      return showAccount(p, req, res, s, 400, { notice: say(s.locale, 'passkeyFailed') });
    }
    await act(p, finishPasskeyRegistration, () => ({ token: s.session, credential, name: deviceOf(req.headers['user-agent']) || undefined }), 'passkeyAdded')(req, res, s, body);
  }));
  router.post('/account/passkeys/rename', form, on(act(p, renamePasskey, (s, body) => ({ token: s.session, passkeyId: passkeyId(body), name: body.name ?? '' }), 'passkeyRenamed')));
  router.post('/account/passkeys/remove', form, on(act(p, removePasskey, (s, body) => ({ token: s.session, passkeyId: passkeyId(body) }), 'passkeyRemoved')));
  router.post('/account/totp/enroll', form, on(enrollPage(p)));
  router.post('/account/totp/remove', form, on(act(p, removeTotp, (s, body) => ({ token: s.session, code: (body.code ?? '').trim().slice(0, 16) }), 'totpOff')));
  router.post('/account/recovery-codes', form, on(async (req, res, s, body) => {
    const renewed = await callUseCase(services, req, res, s.app, newRecoveryCodes, requestOf(s), { token: s.session, code: (body.code ?? '').trim().slice(0, 16) });
    if (renewed.result) return codesPage(res, s, renewed.result.recoveryCodes);
    const { status, shown } = pageFailure(res, s.locale, 'codes', renewed.error);
    await showAccount(p, req, res, s, status, shown);
  }));
  router.get('/account/identities/link', on(async (req, res, s) => {
    // the page's token, in the link: another site cannot start linking its identity to this account
    if (crossSite(req) || !safeEqual(String(req.query.csrf ?? ''), p.formToken(s.session))) {
      return showAccount(p, req, res, s, 403, { notice: textsOf('hosted', s.locale).expired });
    }
    // the provider's round trip must end within the minutes a link allows: a session too old signs in again first
    if (!mayResetPassword(s.session, services.clock.now())) return showAccount(p, req, res, s, 403, { reauth: true });
    await startLinking(services, req, res, s.app, s.locale, String(req.query.provider ?? ''), s.session.family ?? '');
  }));
  router.post('/account/identities/unlink', form, on(act(p, unlinkAccount, (s, body) => ({ accessToken: s.session, identifier: body.identifier ?? '' }), 'identityUnlinked')));
  router.post('/account/sessions/end', form, on(async (req, res, s, body) => {
    const others = body.others === '1';
    await act(p, endSessions, () => ({ token: s.session, ...(others ? { others } : { session: body.session ?? '' }) }), others ? 'othersEnded' : 'sessionEnded')(req, res, s, body);
  }));
  // "this wasn't me": every other session ends, and the page asks for a new password
  router.post('/account/activity/disown', form, on(act(p, disownActivity, (s) => ({ token: s.session }), 'disowned')));
  router.post('/account/organizations/switch', form, on(organizationWork(p, 'organizationSwitched', (s, acting, organizationId) =>
    switchOrganization(services, { app: s.app, acting, organizationId }))));
  router.post('/account/organizations/leave', form, on(organizationWork(p, 'organizationLeft', (s, acting, organizationId) =>
    removeMember(services, { app: s.app, acting, organizationId, entityId: acting.actor.accountId }))));
  router.post('/account/organizations/invite', form, on(organizationWork(p, 'organizationInvited', async (s, acting, organizationId, body) => {
    await createInvitation(services, { app: s.app, acting, organizationId, email: (body.email ?? '').slice(0, 254), roles: [(body.role ?? 'member').slice(0, 64)], locale: s.locale });
  })));
  router.get(INVITATION_PATH, pageHandler(resolveApp, (req, res, app, locale) => showInvitation(p, req, res, app, locale, 200)));
  router.get(`${INVITATION_PATH}/signin`, pageHandler(resolveApp, (req, res, app, locale) => invitationSignIn(p, req, res, app, locale)));
  router.post(`${INVITATION_PATH}/accept`, form, pageHandler(resolveApp, (req, res, app, locale) => acceptFromPage(p, req, res, app, locale)));
  router.post('/account/export', form, on(async (req, res, s) => {
    const got = await callUseCase(services, req, res, s.app, exportOwnAccount, requestOf(s), { token: s.session });
    if (got.error) {
      const { status, shown } = pageFailure(res, s.locale, 'account', got.error);
      return showAccount(p, req, res, s, status, shown);
    }
    const day = got.result.exportedAt.toISOString().slice(0, 10);
    res.set('Content-Disposition', `attachment; filename="${s.app.name}-account-${day}.json"`).set('Cache-Control', 'no-store')
      .type('application/json').send(`${JSON.stringify(renderAccountExport(got.result, { forThePerson: true }), null, 2)}\n`);
  }));
  router.post('/account/signout', form, on(async (req, res, s) => {
    await callUseCase(services, req, res, s.app, endSessions, requestOf(s), { token: s.session, session: s.session.family ?? '' });
    res.clearCookie(sessionCookie(p, req), { path: '/', secure: p.secure(req) });
    signedOutPage(res, s.app, s.locale, 200, say(s.locale, 'signedOut'));
  }));
  /**
   * The app a registration's session waits to go back to (kept in the session when it started),
   * still allowed as the hosted pages allow it; else an error page. Nothing of the request names it.
   */
  const offerEntry = async (res: Response, s: Signed): Promise<HostedReturn | undefined> => {
    const offer = offerOf(s.session);
    const back = offer
      ? await hosted.hostedReturn(s.app, { client_id: offer.clientId, redirect_uri: offer.redirectUri, ...(offer.state && { state: offer.state }) }, s.locale)
      : { key: 'badLink', detail: 'this page follows a registration that offered a passkey, and this browser has none waiting' };
    if (!('key' in back)) return back;
    sendError(res, 400, s.locale, s.app, back);
    return undefined;
  };
  router.get(OFFER_PATH, on(async (_req, res, s) => {
    const back = await offerEntry(res, s);
    if (back) await showOffer(p, res, s, back, 200);
  }));
  router.post(OFFER_PATH, form, on(async (req, res, s, body) => {
    const back = await offerEntry(res, s);
    if (!back) return;
    let credential: unknown;
    try {
      credential = JSON.parse(body.credential ?? '');
    } catch {
      return showOffer(p, res, s, back, 400, { notice: say(s.locale, 'passkeyFailed') });
    }
    const added = await callUseCase(services, req, res, s.app, finishPasskeyRegistration, requestOf(s), {
      token: s.session, credential, name: deviceOf(req.headers['user-agent']) || undefined,
    });
    if (added.result) return showOffer(p, res, s, back, 200, { added: true });
    await showOffer(p, res, s, back, 400, { notice: pageFailure(res, s.locale, 'passkey', added.error).shown.notice ?? say(s.locale, 'passkeyFailed') });
  }));
  router.post('/register/continue', form, on(async (req, res, s) => {
    const back = await offerEntry(res, s);
    const client = back && await services.clients.find(s.app.id, back.clientId);
    if (!back || !client) return;
    const made = await callUseCase(services, req, res, s.app, finishOffer, requestOf(s), { session: s.session, client });
    if (!made.result) {
      const { status, shown } = pageFailure(res, s.locale, 'offer', made.error);
      return showOffer(p, res, s, back, status, shown);
    }
    // the session was the offer's only: it ended with it
    res.clearCookie(sessionCookie(p, req), { path: '/', secure: p.secure(req) });
    const target = new URL(made.result.offer.redirectUri);
    target.searchParams.set('code', made.result.code);
    if (made.result.offer.state) target.searchParams.set('state', made.result.offer.state);
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.redirect(303, target.toString());
  }));
  const linking: AccountLinking = { finishLink: (req, res, app, locale, socialToken, family) => finishLink(p, req, res, app, locale, socialToken, family) };
  return { router, linking };
}
