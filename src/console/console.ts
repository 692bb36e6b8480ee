import { randomUUID } from 'node:crypto';
import express, { type NextFunction, type Request, type Response } from 'express';
import { peerBudgetKey } from '../domain/addresses';
import { renderAccountExport } from '../domain/account-export';
import { CONSOLE_CALLBACK_PATH } from '../domain/base-urls';
import { keptUserAgent, type Acting } from '../domain/events';
import { FilterError, FilterUseError } from '../domain/filter';
import { StatementTimeoutError } from '../domain/storage/transactions';
import type { HistoryEntry } from '../domain/history';
import { AuditQueryError } from '../domain/audit-query';
import { OperatorForbiddenError, roleMay, type ConsoleAction } from '../domain/operators';
import { invalidField, Refusal } from '../domain/refusal';
import { FEATURES, NoSuchClientError, parseFeatures } from '../domain/clients';
import { randomToken, safeEqual } from '../domain/secrets';
import type { Application } from '../domain/storage/applications';
import { isDisabled, type UserRecord } from '../domain/storage/records';
import type { Logger } from '../logger';
import { filled, textsOf } from '../texts';
import { registrationOpen } from '../domain/registration';
import { consoleAccount, consoleAccountAt, consoleApplication, consoleApplications, consoleAudit, SEARCH_COUNT_CAP, SEARCH_PAGE, searchAccounts, type ConsoleAccount } from '../usecases/operators/console-reads';
import { applicationView, changeOneSetting, flowDifference, importFlowDocuments } from '../usecases/operators/console-admin';
import { FlowDefinitionError } from '../domain/flow-definition';
import { addClient } from '../usecases/clients/add-client';
import { resetSecret } from '../usecases/clients/reset-secret';
import { rotateSigningKeys } from '../usecases/keys/signing-keys';
import { addProvider } from '../usecases/providers/add-provider';
import { removeProvider } from '../usecases/providers/remove-provider';
import { PROVIDER_KINDS, ProviderInputError, ProviderNameError } from '../domain/social/providers';
import { consoleLoginClient, consoleOperator, endConsoleSession, openConsoleSession, type Operator } from '../usecases/operators/console';
import { disableUser, MAX_DISABLE_REASON } from '../usecases/operators/disable-user';
import { enableUser } from '../usecases/operators/enable-user';
import { eraseUser } from '../usecases/operators/erase-user';
import { exportUser } from '../usecases/operators/export-user';
import { resetSecondFactor } from '../usecases/operators/reset-second-factor';
import { signOutUser } from '../usecases/operators/sign-out-user';
import { sendPasswordReset } from '../usecases/operators/send-password-reset';
import { verifyEmailAsOperator } from '../usecases/operators/verify-email';
import type { CallContext, Services } from '../usecases/services';
import { deviceOf } from '../web/account';
import { mountWebhooks, webhooksSection, type ConsoleParts } from './webhooks';
import { connectionsSection, mountSaml, samlSection } from './saml';
import { mountScim, scimSection } from './scim';
import { mountOverview } from './overview';
import { mountAccountForms } from './account-forms';
import { mountOperators } from './operators';
import { mountOrganizations } from './organizations';
import { actorName, actorWords, clientWords, detailsWords, eventSentence, numberWords, whereWords } from './words';
import { cookieValue, crossSite, escape, pageLocale, sendPage, stringFields, type PageLocale } from '../web/pages';

/**
 * The operators' console (docs/console.md): server-rendered pages on a port of their own, signed in
 * through the operators' application's hosted sign-in (two factors, a role), every action one use
 * case with the operator as its actor. The same discipline as the hosted pages: a strict
 * Content-Security-Policy with no script at all, no framing, nothing cached, every POST from this
 * origin with the session's form token.
 */
export interface ConsoleOptions {
  services: Services;
  /** The operators' application's name (CONSOLE_APP). */
  operatorsApp: string;
  /** Where browsers reach the console (CONSOLE_PUBLIC_URL), without a trailing slash. */
  publicUrl: string;
  trustProxy?: string;
  /** The queue dashboard's routes (bull-board), behind the same sign-in (with Redis only). */
  queues?: { router: express.Router };
  logger: Logger;
}

/** A path of the console to go back to after the sign-in: one slash, then printable characters without a backslash (`//host` and `/\\host` are other sites to a browser). */
const LOCAL_PATH = /^\/(?![/\\])[\x21-\x5b\x5d-\x7e]{0,500}$/;
const SESSION_COOKIE = 'gh_console';
const STATE_COOKIE = 'gh_console_state';
const STATE_SECONDS = 15 * 60;
const ACTIONS = ['disable', 'enable', 'signout', 'reset-second-factor', 'send-reset', 'verify-email', 'erase', 'export'] as const;
type AccountAction = (typeof ACTIONS)[number];
const DONE = ['disabled', 'enabled', 'signedOut', 'secondFactorReset', 'resetSent', 'emailVerified', 'erased', 'nothingToDo', 'created', 'createdLinkSent', 'edited'] as const;
type Done = (typeof DONE)[number];

const say = (locale: PageLocale, key: string, values: Record<string, string> = {}) => filled(textsOf('console', locale)[key] ?? key, values);
/** A time as operators read it: to the second, in UTC. */
const time = (d: Date | null | undefined) => (d ? `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC` : '—');
const shown = (v: unknown) => (v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));
const q = (params: Record<string, string | number | undefined>) => {
  const entries = Object.entries(params).filter((e): e is [string, string | number] => e[1] !== undefined && e[1] !== '');
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]): [string, string] => [k, String(v)]))}` : '';
};
/** A time an operator typed: ISO 8601 with or without its zone (without one: UTC), or a date. */
function typedTime(text: string | undefined): Date | undefined | 'bad' {
  const t = (text ?? '').trim();
  if (t === '') return undefined;
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(t)) return 'bad';
  const withZone = /[T ]\d{2}:\d{2}/.test(t) && !/(Z|[+-]\d{2}:?\d{2})$/.test(t) ? `${t.replace(' ', 'T')}Z` : t.replace(' ', 'T');
  const d = new Date(withZone.length === 10 ? `${withZone}T00:00:00Z` : withZone);
  return Number.isNaN(d.getTime()) ? 'bad' : d;
}

interface Signed { operator: Operator; operatorsApp: Application; locale: PageLocale; token: string }

export function buildConsole(options: ConsoleOptions): express.Express {
  const { services, publicUrl, queues, logger } = options;
  const secure = publicUrl.startsWith('https:');
  const cookieName = (name: string) => (secure ? `__Host-${name}` : name);
  const callbackUrl = `${publicUrl}${CONSOLE_CALLBACK_PATH}`;
  const formToken = (operator: Operator) => services.box.tag(operator.session.valueHash, 'console form');

  const app = express();
  app.disable('x-powered-by');
  if (options.trustProxy !== undefined) app.set('trust proxy', options.trustProxy === 'true' ? true : options.trustProxy);
  app.use((_req, res, next) => {
    res.locals.requestId = randomUUID();
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Referrer-Policy', 'same-origin');
    next();
  });
  app.get('/healthz', (_req, res) => void res.json({ stat: 'ok' }));

  const localeOf = (req: Request) => pageLocale(req.query.locale, req.headers['accept-language']);
  const callOf = (req: Request, res: Response, appOf: Application): CallContext => ({
    origin: { requestId: String(res.locals.requestId), address: peerBudgetKey(req.ip), userAgent: keptUserAgent(req.headers['user-agent']) },
    app: appOf, clientAddress: peerBudgetKey(req.ip), services,
  });

  /** A page of the console: its navigation (for a signed-in operator), its body; no script, forms to this origin only. */
  const page = (res: Response, status: number, locale: PageLocale, title: string, body: string, s?: Signed) => {
    const nav = s ? `<nav aria-label="${escape(say(locale, 'navigation'))}"><a href="/${q({ locale })}">${escape(say(locale, 'overview'))}</a><a href="/accounts${q({ locale })}">${escape(say(locale, 'accounts'))}</a>`
      + `<a href="/audit${q({ locale })}">${escape(say(locale, 'audit'))}</a><a href="/apps${q({ locale })}">${escape(say(locale, 'applications'))}</a>`
      + (roleMay(s.operator.role, 'administer') ? `<a href="/operators${q({ locale })}">${escape(say(locale, 'operators'))}</a>` : '')
      + (queues ? `<a href="/queues/">${escape(say(locale, 'queues'))}</a>` : '')
      + `<a href="${escape(services.baseUrls.of(s.operatorsApp.name))}/account">${escape(say(locale, 'yourAccount'))}</a>`
      + `<span>${escape(say(locale, 'signedInAs', { name: s.operator.name, role: say(locale, `role_${s.operator.role}`) }))}</span>`
      + `<form method="post" action="/signout"><input type="hidden" name="csrf" value="${escape(s.token)}"><button type="submit" class="secondary">${escape(say(locale, 'signOut'))}</button></form></nav>` : '';
    sendPage(res, status, locale, `${title} · ${say(locale, 'console')}`, `${nav}<h1>${escape(title)}</h1>${body}`, { wide: true, formAction: "'self'" });
  };
  const problem = (res: Response, status: number, locale: PageLocale, message: string, s?: Signed) =>
    page(res, status, locale, say(locale, status === 403 ? 'forbidden' : 'problem'), `<p class="notice" role="alert">${escape(message)}</p>`, s);

  /** The operators' application, or a page saying how to make it. */
  const operatorsApp = async (res: Response, locale: PageLocale): Promise<Application | undefined> => {
    const found = await consoleApplication(services, options.operatorsApp);
    if (!found) problem(res, 503, locale, say(locale, 'noOperatorsApp', { app: options.operatorsApp }));
    // an operators' application that takes registrations may hold an account someone made to be given a role
    else if (registrationOpen(found)) return void problem(res, 503, locale, say(locale, 'operatorsAppOpen', { app: options.operatorsApp }));
    return found;
  };

  /**
   * A request of a signed-in operator allowed `action`: without a session, a page goes to the
   * sign-in (a POST says it ended); a role that does not allow it gets 403 and nothing is done; a
   * POST from another site or without the session's form token gets 403.
   */
  const signed = (action: ConsoleAction, work: (req: Request, res: Response, s: Signed, body: Record<string, string>) => Promise<void>, own: { csrf?: 'its own' } = {}) =>
    async (req: Request, res: Response, next: NextFunction) => {
      const locale = localeOf(req);
      try {
        const ops = await operatorsApp(res, locale);
        if (!ops) return;
        const value = cookieValue(req, cookieName(SESSION_COOKIE));
        const post = req.method !== 'GET' && req.method !== 'HEAD' && own.csrf === undefined;
        let operator: Operator | undefined;
        try {
          operator = value ? await consoleOperator(callOf(req, res, ops), { value, action: post ? action : 'read' }) : undefined;
        } catch (e) {
          if (!(e instanceof OperatorForbiddenError)) throw e;
          return problem(res, 403, locale, say(locale, 'roleForbids'));
        }
        if (!operator) {
          if (post) return problem(res, 401, locale, say(locale, 'sessionEnded'));
          return res.redirect(303, `/signin${q({ locale, next: req.originalUrl.startsWith('/') && !req.originalUrl.startsWith('//') ? req.originalUrl : undefined })}`);
        }
        const s: Signed = { operator, operatorsApp: ops, locale, token: formToken(operator) };
        const body = post ? stringFields(req.body) : {};
        // no field of the console holds a control character (a line break in a reason is the exception)
        if (Object.values(body).some((v) => /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/.test(v))) return problem(res, 400, locale, say(locale, 'badInput'), s);
        if (post && (crossSite(req) || !safeEqual(body.csrf ?? '', s.token))) return problem(res, 403, locale, say(locale, 'forged'), s);
        // a page reached by GET still needs its role for what it shows (the queue dashboard's actions are POSTs)
        if (!post && !roleMay(operator.role, action)) return problem(res, 403, locale, say(locale, 'roleForbids'), s);
        await work(req, res, s, body);
      } catch (e) {
        next(e);
      }
    };

  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });

  // signing in: the operators' application's hosted sign-in, back to the callback with a code
  app.get('/signin', async (req, res, next) => {
    const locale = localeOf(req);
    try {
      const ops = await operatorsApp(res, locale);
      if (!ops) return;
      const client = await consoleLoginClient(services, ops);
      if (!client) return problem(res, 503, locale, say(locale, 'noLoginClient', { app: ops.name }));
      const nextPath = typeof req.query.next === 'string' && LOCAL_PATH.test(req.query.next) ? req.query.next : '/';
      const state = randomToken(16);
      // (hex, then where to go after: a cookie holds base64url characters only)
      res.cookie(cookieName(STATE_COOKIE), `${state}_${Buffer.from(nextPath).toString('base64url')}`, {
        httpOnly: true, sameSite: 'lax', secure, path: '/', maxAge: STATE_SECONDS * 1000,
      });
      const query = new URLSearchParams({ client_id: client.clientId, redirect_uri: callbackUrl, state, locale });
      res.redirect(303, `${services.baseUrls.of(ops.name)}/signin?${query}`);
    } catch (e) {
      next(e);
    }
  });

  app.get(CONSOLE_CALLBACK_PATH, async (req, res, next) => {
    const locale = localeOf(req);
    try {
      const ops = await operatorsApp(res, locale);
      if (!ops) return;
      const cookie = cookieValue(req, cookieName(STATE_COOKIE)) ?? '';
      const held = cookie.slice(0, Math.max(0, cookie.indexOf('_')));
      const nextCoded = cookie.slice(cookie.indexOf('_') + 1);
      res.clearCookie(cookieName(STATE_COOKIE), { path: '/', secure });
      const state = typeof req.query.state === 'string' ? req.query.state : '';
      const code = typeof req.query.code === 'string' ? req.query.code : '';
      const client = await consoleLoginClient(services, ops);
      if (!held || !state || !safeEqual(held, state) || !code || !client) return problem(res, 400, locale, say(locale, 'stateLost'));
      let opened: { value: string; expiresAt: Date };
      try {
        opened = await openConsoleSession(callOf(req, res, ops), { client, code, redirectUri: callbackUrl, device: deviceOf(req.headers['user-agent']) });
      } catch (e) {
        if (e instanceof Refusal) return problem(res, 403, locale, e.reason === 'wrong_credentials' ? e.message : say(locale, 'stateLost'));
        throw e;
      }
      res.cookie(cookieName(SESSION_COOKIE), opened.value, { httpOnly: true, sameSite: 'lax', secure, path: '/', expires: opened.expiresAt });
      const nextPath = Buffer.from(nextCoded ?? '', 'base64url').toString();
      res.redirect(303, LOCAL_PATH.test(nextPath) ? nextPath : '/');
    } catch (e) {
      next(e);
    }
  });

  app.post('/signout', form, signed('read', async (req, res, s) => {
    await endConsoleSession(callOf(req, res, s.operatorsApp), { session: s.operator.session });
    res.clearCookie(cookieName(SESSION_COOKIE), { path: '/', secure });
    page(res, 200, s.locale, say(s.locale, 'signedOut'), `<p><a class="button" href="/signin${q({ locale: s.locale })}">${escape(say(s.locale, 'signIn'))}</a></p>`);
  }));

  /** The application a request names (`app`), else the first one that is not the operators'. */
  const applicationOf = async (name: unknown, s: Signed): Promise<{ apps: Application[]; app?: Application }> => {
    const apps = await consoleApplications(services);
    const app = typeof name === 'string' && name !== '' ? apps.find((a) => a.name === name) : apps.find((a) => a.id !== s.operatorsApp.id) ?? apps[0];
    return { apps, app };
  };
  const appPicker = (apps: Application[], chosen: Application | undefined, locale: PageLocale) =>
    `<label for="app">${escape(say(locale, 'application'))}</label><select id="app" name="app">`
    + apps.map((a) => `<option value="${escape(a.name)}"${a.id === chosen?.id ? ' selected' : ''}>${escape(a.name)}</option>`).join('') + '</select>';

  // the pages of modules of their own (mounted once their parts exist, below), before the routes here that would take their paths
  const pages = express.Router();
  app.use(pages);

  // accounts: the search
  app.get('/accounts', signed('read', async (req, res, s) => {
    const { locale } = s;
    const { apps, app: chosen } = await applicationOf(req.query.app, s);
    const text = typeof req.query.q === 'string' ? req.query.q.slice(0, 4096) : '';
    const pageNo = typeof req.query.page === 'string' && /^\d{1,6}$/.test(req.query.page) ? Number(req.query.page) : 0;
    const done = DONE.find((d) => d === req.query.done);
    let body = (done ? `<p class="notice done" role="status">${escape(say(locale, `done_${done}`))}</p>` : '')
      + `<form method="get" action="/accounts" role="search"><input type="hidden" name="locale" value="${escape(locale)}"><div class="row"><div>${appPicker(apps, chosen, locale)}</div>`
      + `<div><label for="q">${escape(say(locale, 'search'))}</label><input id="q" name="q" type="search" value="${escape(text)}" aria-describedby="q-tip"></div>`
      + `<div><button type="submit">${escape(say(locale, 'find'))}</button></div></div><p class="tip" id="q-tip">${escape(say(locale, 'searchTip'))}</p></form>`;
    if (!chosen) return page(res, 404, locale, say(locale, 'accounts'), `${body}<p class="notice" role="alert">${escape(say(locale, 'noSuchApp'))}</p>`, s);
    if (roleMay(s.operator.role, 'account') && chosen.id !== s.operatorsApp.id) {
      body += `<p class="links"><a href="${escape(`/apps/${encodeURIComponent(chosen.name)}/new-account${q({ locale })}`)}">${escape(say(locale, 'newAccount'))}</a></p>`;
    }
    let found: Awaited<ReturnType<typeof searchAccounts>>;
    try {
      found = await searchAccounts(services, { app: chosen, text, page: pageNo });
    } catch (e) {
      if (e instanceof FilterError || e instanceof FilterUseError) {
        return page(res, 400, locale, say(locale, 'accounts'), `${body}<p class="notice" role="alert">${escape(say(locale, 'badFilter', { reason: e.message }))}</p>`, s);
      }
      // the database stopped it (ENTITY_QUERY_TIMEOUT_MS), as /entity.find's are
      if (e instanceof StatementTimeoutError) return page(res, 503, locale, say(locale, 'accounts'), `${body}<p class="notice" role="alert">${escape(say(locale, 'searchTimedOut'))}</p>`, s);
      throw e;
    }
    const total = found.total === undefined ? say(locale, 'matchesMore', { count: numberWords(locale, (pageNo + 1) * SEARCH_PAGE) }) : found.total > SEARCH_COUNT_CAP ? say(locale, 'matchesMore', { count: numberWords(locale, SEARCH_COUNT_CAP) })
      : say(locale, found.total === 1 ? 'matchesOne' : 'matches', { count: numberWords(locale, found.total) });
    body += found.rows.length === 0 ? `<p class="notice" role="status">${escape(say(locale, 'noneFound'))}</p>`
      : `<p role="status">${escape(total)}</p><div class="scroll"><table><caption class="visually-hidden">${escape(say(locale, 'accounts'))}</caption><thead><tr><th scope="col">${escape(say(locale, 'email'))}</th>`
        + `<th scope="col">${escape(say(locale, 'name'))}</th><th scope="col">${escape(say(locale, 'lastSignIn'))}</th><th scope="col">${escape(say(locale, 'created'))}</th><th scope="col">${escape(say(locale, 'state'))}</th></tr></thead><tbody>`
        + found.rows.map(({ record: r }) => `<tr><td><a href="${accountPath(chosen, r.id, locale)}">${escape(r.email ?? r.username ?? r.uuid)}</a></td>`
          + `<td>${escape(nameOf(r))}</td><td>${escape(lastSignIn(r) ?? say(locale, 'never'))}</td><td>${escape(time(r.created))}</td><td>${stateBadge(r, locale)}</td></tr>`).join('')
        + '</tbody></table></div>';
    const pager = [
      pageNo > 0 ? `<a href="/accounts${q({ app: chosen.name, q: text, page: pageNo - 1, locale })}" rel="prev">${escape(say(locale, 'previous'))}</a>` : '',
      found.more ? `<a href="/accounts${q({ app: chosen.name, q: text, page: pageNo + 1, locale })}" rel="next">${escape(say(locale, 'next'))}</a>` : '',
    ].filter(Boolean).join(' ');
    page(res, 200, locale, say(locale, 'accounts'), body + (pager ? `<p class="links">${pager}</p>` : ''), s);
  }));

  const accountPath = (a: Application, id: number, locale: PageLocale, extra: Record<string, string> = {}) =>
    escape(`/apps/${encodeURIComponent(a.name)}/accounts/${id}${q({ locale, ...extra })}`);
  /** When the account last signed in (its lastLogin), as operators read times. */
  const lastSignIn = (r: UserRecord) => {
    const at = typeof r.attributes.lastLogin === 'string' ? new Date(r.attributes.lastLogin) : undefined;
    return at && !Number.isNaN(at.getTime()) ? time(at) : undefined;
  };
  const nameOf = (r: UserRecord) => [r.attributes.givenName, r.attributes.familyName].filter((v) => typeof v === 'string').join(' ')
    || (typeof r.attributes.displayName === 'string' ? r.attributes.displayName : '');
  const stateBadge = (r: UserRecord, locale: PageLocale) => (isDisabled(r, services.clock.now())
    ? `<span class="badge off">${escape(say(locale, 'disabled'))}</span>` : `<span class="badge">${escape(say(locale, 'active'))}</span>`);

  /** The account a path names, with its application; a page saying why not otherwise. */
  const accountOf = async (req: Request, res: Response, s: Signed): Promise<{ app: Application; entityId: number } | undefined> => {
    const found = await consoleApplication(services, String(req.params.app));
    const id = /^\d{1,15}$/.test(String(req.params.id)) ? Number(req.params.id) : undefined;
    if (!found || id === undefined) {
      problem(res, 404, s.locale, say(s.locale, 'noSuchAccount'), s);
      return undefined;
    }
    return { app: found, entityId: id };
  };

  app.get('/apps/:app/accounts/:id', signed('read', async (req, res, s) => {
    const named = await accountOf(req, res, s);
    if (!named) return;
    const cursor = typeof req.query.cursor === 'string' && /^\d{1,15}\.[ef]\d{1,20}$/.test(req.query.cursor) ? req.query.cursor : undefined;
    const account = await consoleAccount(services, { ...named, cursor });
    if (!account) return problem(res, 404, s.locale, say(s.locale, 'noSuchAccount'), s);
    const at = typeof req.query.at === 'string' ? typedTime(req.query.at) : undefined;
    const asOf = at instanceof Date ? await consoleAccountAt(services, { ...named, at }) : undefined;
    const done = DONE.find((d) => d === req.query.done);
    accountPage(res, 200, s, named.app, account, {
      done, cursor, atText: typeof req.query.at === 'string' ? req.query.at.slice(0, 40) : '', at: at instanceof Date ? at : undefined, asOf, badAt: at === 'bad',
    });
  }));

  interface AccountShown { done?: Done; notice?: string; cursor?: string; atText?: string; at?: Date; asOf?: Record<string, unknown>; badAt?: boolean }

  function accountPage(res: Response, status: number, s: Signed, a: Application, account: ConsoleAccount, shownNow: AccountShown): void {
    const { locale } = s;
    const r = account.record;
    const now = services.clock.now();
    const title = r.email ?? r.username ?? r.uuid;
    const row = (k: string, v: string) => `<tr><th scope="row">${escape(k)}</th><td>${v}</td></tr>`;
    const table = (caption: string, head: string[], rows: string[]) => (rows.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><caption class="visually-hidden">${escape(caption)}</caption><thead><tr>${head.map((h) => `<th scope="col">${escape(h)}</th>`).join('')}</tr></thead><tbody>${rows.join('')}</tbody></table></div>`);
    const disabledNow = r.disabled && isDisabled(r, now) ? r.disabled : null;
    const editable = roleMay(s.operator.role, a.id === s.operatorsApp.id ? 'administer' : 'account');
    let body = `<p class="links"><a href="/accounts${q({ app: a.name, locale })}">${escape(say(locale, 'backToSearch', { app: a.name }))}</a>`
      + (editable ? `<a href="${escape(`/apps/${encodeURIComponent(a.name)}/accounts/${r.id}/edit${q({ locale })}`)}">${escape(say(locale, 'editAccount'))}</a>` : '') + '</p>'
      + (shownNow.done ? `<p class="notice done" role="status">${escape(say(locale, `done_${shownNow.done}`))}</p>` : '')
      + (shownNow.notice ? `<p class="notice" role="alert">${escape(shownNow.notice)}</p>` : '');
    // the summary: what an operator looks at first
    const methods = [
      ...(account.passwordFormat === null ? [] : [say(locale, 'with_password')]),
      ...(account.totp === 'on' ? [say(locale, 'with_totp')] : []),
      ...(account.passkeys.length > 0 ? [say(locale, 'passkeysCount', { count: String(account.passkeys.length) })] : []),
      ...account.identities.map((i) => i.provider),
    ];
    const tile = (label: string, value: string) => `<div class="tile"><span>${escape(label)}</span><p>${value}</p></div>`;
    body += `<div class="tiles summary" role="group" aria-label="${escape(say(locale, 'summary'))}">`
      + tile(say(locale, 'state'), disabledNow ? `<span class="badge off">${escape(say(locale, 'disabled'))}</span>${disabledNow.reason ? ` ${escape(disabledNow.reason)}` : ''}`
        : `<span class="badge">${escape(say(locale, 'active'))}</span>${r.emailVerified ? '' : ` ${escape(say(locale, 'unverifiedAddress'))}`}`)
      + tile(say(locale, 'signInMethods'), escape(methods.join(', ') || say(locale, 'none')))
      + tile(say(locale, 'lastSignIn'), escape(lastSignIn(r) ?? say(locale, 'never')))
      + tile(say(locale, 'organizations'), account.organizations.length === 0 ? escape(say(locale, 'none'))
        : account.organizations.map((o) => `<a href="${escape(`/apps/${encodeURIComponent(a.name)}/organizations/${encodeURIComponent(o.organizationId)}${q({ locale })}`)}" title="${escape(o.organizationId)}">${escape(o.name)}</a>`
          + `${o.roles.length ? ` <small>(${escape(o.roles.join(', '))})</small>` : ''}`).join('<br>'))
      + '</div>';
    // the record
    body += `<div class="columns"><section aria-labelledby="h-record"><h2 id="h-record">${escape(say(locale, 'record'))}</h2><div class="scroll"><table><tbody>`
      + row('id', escape(String(r.id))) + row('uuid', `<code>${escape(r.uuid)}</code>`) + row(say(locale, 'email'), escape(r.email ?? '—'))
      + row(say(locale, 'emailVerified'), escape(time(r.emailVerified))) + row(say(locale, 'username'), escape(r.username ?? '—'))
      + row(say(locale, 'created'), escape(time(r.created))) + row(say(locale, 'lastUpdated'), escape(time(r.lastUpdated)))
      + row(say(locale, 'state'), disabledNow ? `<span class="badge off">${escape(say(locale, 'disabled'))}</span> ${escape(say(locale, 'disabledSince', { at: time(disabledNow.at), until: disabledNow.until ? time(disabledNow.until) : say(locale, 'untilEnabled') }))}`
        + (disabledNow.reason ? ` — ${escape(disabledNow.reason)}` : '') : `<span class="badge">${escape(say(locale, 'active'))}</span>`)
      + Object.entries(r.attributes).sort(([x], [y]) => x.localeCompare(y)).map(([k, v]) => `<tr><th scope="row"><code>${escape(k)}</code></th><td>${escape(shown(v ?? '—'))}</td></tr>`).join('')
      + '</tbody></table></div></section>';
    // how it signs in, and where it is signed in
    body += `<section aria-labelledby="h-signin"><h2 id="h-signin">${escape(say(locale, 'signingIn'))}</h2><div class="scroll"><table><tbody>`
      + row(say(locale, 'password'), escape(account.passwordFormat === null ? say(locale, 'no')
        : account.passwordFormat === 'argon2id' ? say(locale, 'yes') : say(locale, 'passwordImported', { format: account.passwordFormat })))
      + row(say(locale, 'totp'), escape(say(locale, `totp_${account.totp}`)) + (account.totp === 'on' ? ` (${escape(say(locale, 'codesLeft', { count: String(account.recoveryCodesLeft) }))})` : ''))
      + row(say(locale, 'passkeys'), account.passkeys.length === 0 ? escape(say(locale, 'none'))
        : `<ul>${account.passkeys.map((k) => `<li>${escape(k.name)} — ${escape(say(locale, 'addedAt', { at: time(k.createdAt) }))}${k.lastUsedAt ? `, ${escape(say(locale, 'usedAt', { at: time(k.lastUsedAt) }))}` : ''}</li>`).join('')}</ul>`)
      + row(say(locale, 'identities'), account.identities.length === 0 ? escape(say(locale, 'none'))
        : `<ul>${account.identities.map((i) => `<li>${escape(i.provider)}: <code>${escape(i.identifier)}</code></li>`).join('')}</ul>`)
      + '</tbody></table></div>'
      + `<h3>${escape(say(locale, 'sessions'))}</h3>`
      + table(say(locale, 'sessions'), [say(locale, 'kind'), say(locale, 'client'), say(locale, 'issued'), say(locale, 'expires'), say(locale, 'methods')],
        account.sessions.map((x) => `<tr><td>${escape(say(locale, `kind_${x.kind}`))}</td><td>${x.clientId ? clientWords(x.clientId, account.clientNames) : '—'}</td><td>${escape(time(x.issuedAt))}</td><td>${escape(time(x.expiresAt))}</td><td>${escape((x.methods ?? []).join(' ') || '—')}</td></tr>`))
      + '</section></div>';
    // actions: for support and admin only (the server refuses them to a viewer as well)
    if (roleMay(s.operator.role, a.id === s.operatorsApp.id ? 'administer' : 'account')) body += actionsOf(s, a, account);
    // history beside activity
    body += `<div class="columns"><section aria-labelledby="h-history"><h2 id="h-history">${escape(say(locale, 'history'))}</h2>`
      + historyOf(account.history, locale, account.clientNames, r.id)
      + `<form method="get" action="${accountPath(a, r.id, locale).split('?')[0]}"><input type="hidden" name="locale" value="${escape(locale)}">`
      + `<label for="at">${escape(say(locale, 'asOf'))}</label><input id="at" name="at" type="text" inputmode="numeric" placeholder="2026-01-31 18:00" value="${escape(shownNow.atText ?? '')}" aria-describedby="at-tip"${shownNow.badAt ? ' aria-invalid="true"' : ''}>`
      + `<p class="tip" id="at-tip">${escape(say(locale, 'asOfTip'))}</p><button type="submit" class="secondary">${escape(say(locale, 'show'))}</button></form>`
      + (shownNow.badAt ? `<p class="error" role="alert">${escape(say(locale, 'badTime'))}</p>` : '')
      + (shownNow.at ? (shownNow.asOf ? `<h3>${escape(say(locale, 'asItWas', { at: time(shownNow.at) }))}</h3><pre>${escape(JSON.stringify(shownNow.asOf, null, 2))}</pre>`
        : `<p class="notice" role="status">${escape(say(locale, 'notThen', { at: time(shownNow.at) }))}</p>`) : '')
      + `</section><section aria-labelledby="h-activity"><h2 id="h-activity">${escape(say(locale, 'activity'))}</h2>`
      + table(say(locale, 'activity'), [say(locale, 'when'), say(locale, 'what'), say(locale, 'app'), say(locale, 'details')], account.activity.map((e) => {
        const by = e.kind === 'event' ? actorWords(say, locale, e.actor, account.clientNames, r.id) : '';
        const where = whereWords(say, locale, e);
        return `<tr><td>${escape(time(e.at))}</td><td><span class="event" title="${escape(e.type)}">${escape(eventSentence(say, locale, e))}</span>${by ? ` ${by}` : ''}${where ? ` ${where}` : ''}</td>`
          + `<td>${e.clientId ? clientWords(e.clientId, account.clientNames) : '—'}</td><td>${e.kind === 'event' ? detailsWords(say, locale, e.data) : ''}</td></tr>`;
      }))
      + (account.activityNext ? `<p class="links"><a href="${accountPath(a, r.id, locale, { cursor: account.activityNext })}#h-activity">${escape(say(locale, 'older'))}</a></p>` : '')
      + '</section></div>';
    page(res, status, locale, title, body, s);
  }

  /** The versions, newest first: when, by what and whom, and each attribute it changed (from, to). */
  function historyOf(history: HistoryEntry[], locale: PageLocale, clients: ReadonlyMap<string, string>, self: number): string {
    if (history.length === 0) return `<p>${escape(say(locale, 'none'))}</p>`;
    return '<ol class="items" reversed>' + history.map((h) => {
      const by = h.by ? `<code>${escape(h.by.type)}</code> ${actorWords(say, locale, h.by.actor, clients, self) || escape(say(locale, 'byThePerson'))}` : '';
      return `<li><p><strong>${escape(say(locale, 'version', { version: String(h.version) }))}</strong> — ${escape(time(h.at))}${by ? ` — ${by}` : ''}</p>`
        + (h.changes.length === 0 ? '' : `<ul class="changes">${h.changes.map((c) => `<li><code>${escape(c.attribute)}</code>: `
          + (c.from === undefined ? '' : `<del>${escape(shown(c.from))}</del> `) + (c.to === undefined ? escape(say(locale, 'removed')) : `<ins>${escape(shown(c.to))}</ins>`) + '</li>').join('')}</ul>`)
        + '</li>';
    }).join('') + '</ol>';
  }

  /** The actions on an account, each a form with its confirmation. */
  function actionsOf(s: Signed, a: Application, account: ConsoleAccount): string {
    const { locale } = s;
    const r = account.record;
    const base = `/apps/${encodeURIComponent(a.name)}/accounts/${r.id}`;
    const confirm = (id: string) => `<label class="choice"><input type="checkbox" name="confirm" value="yes" required id="confirm-${id}"> ${escape(say(locale, 'confirm'))}</label>`;
    const one = (action: AccountAction, label: string, fields = '', secondary = true) => `<form method="post" action="${escape(`${base}/${action}${q({ locale })}`)}" aria-label="${escape(label)}">`
      + `<input type="hidden" name="csrf" value="${escape(s.token)}">${fields}${confirm(action)}<button type="submit"${secondary ? ' class="secondary"' : ''}>${escape(label)}</button></form>`;
    const disabledNow = r.disabled && isDisabled(r, services.clock.now());
    return `<section aria-labelledby="h-actions" class="actions"><h2 id="h-actions">${escape(say(locale, 'actions'))}</h2><div class="grid">`
      + (disabledNow ? one('enable', say(locale, 'enable'))
        : one('disable', say(locale, 'disable'), `<div class="row"><div><label for="reason">${escape(say(locale, 'reason'))}</label><input id="reason" name="reason" type="text" maxlength="${MAX_DISABLE_REASON}"></div>`
          + `<div><label for="until">${escape(say(locale, 'until'))}</label><input id="until" name="until" type="text" inputmode="numeric" placeholder="2026-01-31 18:00" aria-describedby="until-tip"></div></div>`
          + `<p class="tip" id="until-tip">${escape(say(locale, 'untilTip'))}</p>`))
      + one('signout', say(locale, 'signOutEverywhere'))
      + (account.totp !== 'off' || account.recoveryCodesLeft > 0 ? one('reset-second-factor', say(locale, 'resetSecondFactor')) : '')
      + (r.email ? one('send-reset', say(locale, 'sendReset')) : '')
      + (r.email && !r.emailVerified ? one('verify-email', say(locale, 'verifyEmail')) : '')
      + one('export', say(locale, 'export'))
      + one('erase', say(locale, 'erase'), `<label for="erase-name">${escape(say(locale, 'eraseType', { name: '\u0000' })).replace('\u0000', `<span class="value">${escape(r.email ?? r.uuid)}</span>`)}</label><input id="erase-name" name="name" type="text" required autocomplete="off">`
        + `<p class="tip">${escape(say(locale, 'eraseTip'))}</p>`)
      + '</div></section>';
  }

  app.post('/apps/:app/accounts/:id/:action', form, signed('account', async (req, res, s, body) => {
    const { locale } = s;
    const action = ACTIONS.find((x) => x === req.params.action);
    const named = await accountOf(req, res, s);
    if (!named) return;
    if (!action) return problem(res, 404, locale, say(locale, 'noSuchAction'), s);
    // the operators themselves: only an admin acts on them (support would otherwise disable or erase its admins)
    if (named.app.id === s.operatorsApp.id && !roleMay(s.operator.role, 'administer')) return problem(res, 403, locale, say(locale, 'roleForbids'), s);
    const account = await consoleAccount(services, named);
    if (!account) return problem(res, 404, locale, say(locale, 'noSuchAccount'), s);
    const again = (status: number, notice: string) => accountPage(res, status, s, named.app, account, { notice });
    if (body.confirm !== 'yes') return again(400, say(locale, 'notConfirmed'));
    const acting: Acting = s.operator.acting;
    const command = { ...named, acting };
    const to = (done: Done) => res.redirect(303, `/apps/${encodeURIComponent(named.app.name)}/accounts/${named.entityId}${q({ locale, done })}`);
    try {
      switch (action) {
        case 'disable': {
          const until = typedTime(body.until);
          if (until === 'bad') return again(400, say(locale, 'badTime'));
          await disableUser(services, { ...command, ...(until && { until }), ...(body.reason && { reason: body.reason }) });
          return to('disabled');
        }
        case 'enable': return to((await enableUser(services, command)).wasDisabled ? 'enabled' : 'nothingToDo');
        case 'signout': await signOutUser(services, command); return to('signedOut');
        case 'reset-second-factor': return to((await resetSecondFactor(services, command)).removed ? 'secondFactorReset' : 'nothingToDo');
        case 'verify-email': await verifyEmailAsOperator(services, command); return to('emailVerified');
        case 'send-reset': await sendPasswordReset(services, command); return to('resetSent');
        case 'export': {
          const document = renderAccountExport(await exportUser(services, command));
          res.setHeader('Content-Disposition', `attachment; filename="account-${account.record.uuid}.json"`);
          return void res.type('application/json').send(JSON.stringify(document, null, 2));
        }
        case 'erase': {
          const typed = (body.name ?? '').trim().toLowerCase();
          if (typed === '' || (typed !== (account.record.email ?? '').toLowerCase() && typed !== account.record.uuid)) return again(400, say(locale, 'eraseNotTyped'));
          await eraseUser(services, command);
          return res.redirect(303, `/accounts${q({ app: named.app.name, locale, done: 'erased' })}`);
        }
      }
    } catch (e) {
      if (e instanceof Refusal) return again(e.reason === 'gone' ? 404 : e.reason === 'misconfigured' ? 500 : 400, e.message);
      throw e;
    }
  }));

  // the audit log, with the filters of /audit/list
  app.get('/audit', signed('read', async (req, res, s) => {
    const { locale } = s;
    const { apps, app: chosen } = await applicationOf(req.query.app, s);
    const filters = Object.fromEntries(['type', 'actor', 'subject', 'since', 'until', 'before']
      .map((k) => [k, typeof req.query[k] === 'string' && req.query[k] !== '' ? String(req.query[k]).slice(0, 200) : undefined])
      .filter((e): e is [string, string] => e[1] !== undefined));
    const field = (k: string, tip: string) => `<div><label for="f-${k}">${escape(say(locale, `audit_${k}`))}</label><input id="f-${k}" name="${k}" type="text" value="${escape(filters[k] ?? '')}" placeholder="${escape(tip)}"></div>`;
    let body = `<form method="get" action="/audit"><input type="hidden" name="locale" value="${escape(locale)}"><div class="row"><div>${appPicker(apps, chosen, locale)}</div>`
      + field('type', 'account.disabled') + field('actor', 'operator:ada@example.com') + field('subject', 'record:42') + field('since', '2026-01-01T00:00:00Z') + field('until', '')
      + `<div><button type="submit">${escape(say(locale, 'filter'))}</button></div></div></form>`;
    if (!chosen) return page(res, 404, locale, say(locale, 'audit'), `${body}<p class="notice" role="alert">${escape(say(locale, 'noSuchApp'))}</p>`, s);
    let listed: Awaited<ReturnType<typeof consoleAudit>>;
    try {
      listed = await consoleAudit(services, { app: chosen, filters });
    } catch (e) {
      if (e instanceof AuditQueryError) return page(res, 400, locale, say(locale, 'audit'), `${body}<p class="notice" role="alert">${escape(`${e.field}: ${e.message}`)}</p>`, s);
      throw e;
    }
    body += listed.entries.length === 0 ? `<p class="notice" role="status">${escape(say(locale, 'noneFound'))}</p>`
      : `<div class="scroll"><table><caption class="visually-hidden">${escape(say(locale, 'audit'))}</caption><thead><tr>${[say(locale, 'when'), say(locale, 'what'), say(locale, 'who'), say(locale, 'about'), say(locale, 'details')].map((h) => `<th scope="col">${escape(h)}</th>`).join('')}</tr></thead><tbody>`
        + listed.entries.map((e) => `<tr><td>${escape(time(e.occurredAt))}</td><td><code>${escape(e.type)}</code></td><td>${actorName(say, locale, e.actor, listed.clientNames)}</td>`
          + `<td>${e.subject.kind === 'record' ? `<a href="${accountPath(chosen, Number(e.subject.id), locale)}">${escape(say(locale, 'actorAccount', { id: String(e.subject.id) }))}</a>`
            : e.subject.kind === 'client' ? clientWords(e.subject.id, listed.clientNames) : escape(`${e.subject.kind} ${e.subject.id}`)}</td>`
          + `<td>${detailsWords(say, locale, e.data)}${e.address ? escape(say(locale, 'fromWhere', { where: e.address })) : ''}</td></tr>`).join('')
        + '</tbody></table></div>';
    if (listed.next) body += `<p class="links"><a href="/audit${q({ app: chosen.name, ...filters, before: listed.next, locale })}" rel="next">${escape(say(locale, 'older'))}</a></p>`;
    page(res, 200, locale, say(locale, 'audit'), body, s);
  }));

  // applications: settings, clients, identity providers, flows and signing keys; changes for admins
  const appBase = (a: Application) => `/apps/${encodeURIComponent(a.name)}`;
  const adminForm = (s: Signed, action: string, label: string, fields: string, confirm = false) =>
    `<form method="post" action="${escape(`${action}${q({ locale: s.locale })}`)}" aria-label="${escape(label)}"><input type="hidden" name="csrf" value="${escape(s.token)}">${fields}`
    + (confirm ? `<label class="choice"><input type="checkbox" name="confirm" value="yes" required> ${escape(say(s.locale, 'confirm'))}</label>` : '')
    + `<button type="submit" class="secondary">${escape(label)}</button></form>`;
  const settingsTable = (settings: Record<string, string>, locale: PageLocale) => (Object.keys(settings).length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
    : `<div class="scroll"><table><thead><tr><th scope="col">${escape(say(locale, 'key'))}</th><th scope="col">${escape(say(locale, 'value'))}</th></tr></thead><tbody>`
      + Object.entries(settings).sort(([a], [b]) => a.localeCompare(b)).map(([k, v]) => `<tr><td><code>${escape(k)}</code></td><td><code>${escape(v)}</code></td></tr>`).join('') + '</tbody></table></div>');
  const settingForm = (s: Signed, a: Application, client?: string) => adminForm(s, `${appBase(a)}/settings`, say(s.locale, 'setSetting'),
    (client ? `<input type="hidden" name="client" value="${escape(client)}">` : '')
    + `<div class="row"><div><label for="key">${escape(say(s.locale, 'key'))}</label><input id="key" name="key" type="text" required maxlength="64"></div>`
    + `<div><label for="value">${escape(say(s.locale, 'value'))}</label><input id="value" name="value" type="text" maxlength="4000" aria-describedby="value-tip"></div></div>`
    + `<p class="tip" id="value-tip">${escape(say(s.locale, 'settingTip'))}</p>`);

  app.get('/apps', signed('read', async (_req, res, s) => {
    const apps = await consoleApplications(services);
    const rows = apps.map((a) => `<tr><td><a href="${escape(`${appBase(a)}${q({ locale: s.locale })}`)}">${escape(a.name)}</a></td><td><code>${escape(services.baseUrls.of(a.name))}</code></td>`
      + `<td>${a.id === s.operatorsApp.id ? escape(say(s.locale, 'operatorsApp')) : ''}</td></tr>`);
    page(res, 200, s.locale, say(s.locale, 'applications'), `<div class="scroll"><table><thead><tr><th scope="col">${escape(say(s.locale, 'application'))}</th>`
      + `<th scope="col">${escape(say(s.locale, 'baseUrl'))}</th><th scope="col"></th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`, s);
  }));

  /** The application a path names; a page saying so otherwise. */
  const namedApp = async (req: Request, res: Response, s: Signed): Promise<Application | undefined> => {
    const found = await consoleApplication(services, String(req.params.app));
    if (!found) problem(res, 404, s.locale, say(s.locale, 'noSuchApp'), s);
    return found;
  };
  const DONE_ADMIN = ['settingChanged', 'keysRotated', 'flowImported', 'flowUnchanged', 'providerAdded', 'providerRemoved'] as const;

  app.get('/apps/:app', signed('read', async (req, res, s) => {
    const a = await namedApp(req, res, s);
    if (!a) return;
    const view = await applicationView(services, { app: a });
    const { locale } = s;
    const admin = roleMay(s.operator.role, 'administer');
    const done = DONE_ADMIN.find((d) => d === req.query.done);
    let body = (done ? `<p class="notice done" role="status">${escape(say(locale, `done_${done}`))}</p>` : '')
      + `<p><code>${escape(view.baseUrl)}</code> · <a href="/${q({ app: a.name, locale })}">${escape(say(locale, 'overview'))}</a> · <a href="/accounts${q({ app: a.name, locale })}">${escape(say(locale, 'accounts'))}</a> · <a href="${escape(`${appBase(a)}/organizations${q({ locale })}`)}">${escape(say(locale, 'organizations'))}</a> · <a href="/audit${q({ app: a.name, locale })}">${escape(say(locale, 'audit'))}</a></p>`;
    body += `<section aria-labelledby="h-settings"><h2 id="h-settings">${escape(say(locale, 'settings'))}</h2>${settingsTable(a.settings, locale)}${admin ? settingForm(s, a) : ''}</section>`;
    body += `<section aria-labelledby="h-clients"><h2 id="h-clients">${escape(say(locale, 'clients'))}</h2>`
      + `<div class="scroll"><table><thead><tr><th scope="col">client_id</th><th scope="col">${escape(say(locale, 'description'))}</th><th scope="col">${escape(say(locale, 'features'))}</th></tr></thead><tbody>`
      + view.clients.map((c) => `<tr><td><a href="${escape(`${appBase(a)}/clients/${encodeURIComponent(c.clientId)}${q({ locale })}`)}"><code>${escape(c.clientId)}</code></a></td>`
        + `<td>${escape(c.description)}</td><td>${escape(c.features.join(', '))}</td></tr>`).join('') + '</tbody></table></div>'
      + (admin ? adminForm(s, `${appBase(a)}/clients`, say(locale, 'addClient'),
        `<label for="description">${escape(say(locale, 'description'))}</label><input id="description" name="description" type="text" required maxlength="200">`
        + `<fieldset><legend>${escape(say(locale, 'features'))}</legend>${FEATURES.map((f) => `<label class="choice"><input type="checkbox" name="features" value="${f}"${f === 'login_client' ? ' checked' : ''}> <code>${f}</code></label>`).join(' ')}</fieldset>`) : '')
      + '</section>';
    body += `<section aria-labelledby="h-providers"><h2 id="h-providers">${escape(say(locale, 'providers'))}</h2>`
      + (view.providers.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>` : `<ul class="items">${view.providers.map((p) => `<li><p><code>${escape(p.name)}</code> (${escape(p.kind)}) <code>${escape(p.issuer)}</code></p>`
        + (admin ? adminForm(s, `${appBase(a)}/providers/remove`, say(locale, 'removeProvider', { name: p.name }), `<input type="hidden" name="name" value="${escape(p.name)}">`, true) : '')
        + '</li>').join('')}</ul>`)
      + (admin ? adminForm(s, `${appBase(a)}/providers`, say(locale, 'addProvider'),
        `<div class="row"><div><label for="p-name">${escape(say(locale, 'providerName'))}</label><input id="p-name" name="name" type="text" required maxlength="32"></div>`
        + `<div><label for="p-kind">${escape(say(locale, 'kind'))}</label><select id="p-kind" name="kind">${PROVIDER_KINDS.map((k) => `<option value="${k}">${k}</option>`).join('')}</select></div></div>`
        + `<label for="p-issuer">${escape(say(locale, 'issuer'))}</label><input id="p-issuer" name="issuer" type="url" required maxlength="2048">`
        + `<div class="row"><div><label for="p-client">client_id</label><input id="p-client" name="client_id" type="text" required maxlength="512" autocomplete="off"></div>`
        + `<div><label for="p-secret">client_secret</label><input id="p-secret" name="client_secret" type="password" required maxlength="2048" autocomplete="off"></div></div>`
        + `<label for="p-scopes">${escape(say(locale, 'scopes'))}</label><input id="p-scopes" name="scopes" type="text" maxlength="1000" placeholder="openid email profile">`) : '')
      + '</section>';
    body += `<section aria-labelledby="h-flows"><h2 id="h-flows">${escape(say(locale, 'flows'))}</h2>`
      + (view.flows.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>` : `<ul>${view.flows.map((f) => `<li><code>${escape(f.name)}</code> — ${escape(say(locale, 'latestVersion', { version: String(f.latest) }))}`
        + (f.latest > 1 ? ` · <a href="${escape(`${appBase(a)}/flows/${encodeURIComponent(f.name)}${q({ from: f.latest - 1, to: f.latest, locale })}`)}">${escape(say(locale, 'flowChanges', { from: String(f.latest - 1), to: String(f.latest) }))}</a>` : '')
        + '</li>').join('')}</ul>`)
      + (admin ? adminForm(s, `${appBase(a)}/flows`, say(locale, 'importFlow'),
        `<label for="flow">flow.json</label><textarea id="flow" name="flow" rows="6" required spellcheck="false"></textarea>`
        + `<label for="translations">translations.json</label><textarea id="translations" name="translations" rows="6" required spellcheck="false"></textarea>`
        + `<p class="tip">${escape(say(locale, 'importFlowTip'))}</p>`) : '')
      + '</section>';
    body += `<section aria-labelledby="h-keys"><h2 id="h-keys">${escape(say(locale, 'keys'))}</h2>`
      + (view.keys.length === 0 ? `<p>${escape(say(locale, 'noKeys'))}</p>`
        : `<div class="scroll"><table><thead><tr><th scope="col">kid</th><th scope="col">alg</th><th scope="col">${escape(say(locale, 'state'))}</th><th scope="col">${escape(say(locale, 'created'))}</th></tr></thead><tbody>`
          + view.keys.map((k) => `<tr><td><code>${escape(k.kid)}</code></td><td>${escape(k.alg)}</td><td>${escape(k.slot ?? say(locale, 'retired', { at: time(k.retiredAt) }))}</td><td>${escape(time(k.createdAt))}</td></tr>`).join('')
          + '</tbody></table></div>'
          + (admin ? adminForm(s, `${appBase(a)}/keys`, say(locale, 'rotateKeys'), `<p class="tip">${escape(say(locale, 'rotateTip'))}</p>`, true) : ''))
      + '</section>';
    body += await webhooksSection(parts, s, a);
    body += await samlSection(parts, s, a);
    body += await connectionsSection(parts, s, a);
    body += await scimSection(parts, s, a);
    page(res, 200, locale, a.name, body, s);
  }));

  app.get('/apps/:app/clients/:client', signed('read', async (req, res, s) => {
    const a = await namedApp(req, res, s);
    if (!a) return;
    const view = await applicationView(services, { app: a });
    const client = view.clients.find((c) => c.clientId === req.params.client);
    if (!client) return problem(res, 404, s.locale, say(s.locale, 'noSuchClient'), s);
    const { locale } = s;
    const admin = roleMay(s.operator.role, 'administer');
    const done = DONE_ADMIN.find((d) => d === req.query.done);
    page(res, 200, locale, say(locale, 'clientTitle', { client: client.description || client.clientId }),
      (done ? `<p class="notice done" role="status">${escape(say(locale, `done_${done}`))}</p>` : '')
      + `<p><a href="${escape(`${appBase(a)}${q({ locale })}`)}">${escape(say(locale, 'backToApp', { app: a.name }))}</a></p>`
      + `<p>client_id <code>${escape(client.clientId)}</code> · ${escape(client.features.join(', '))}</p>`
      + `<section aria-labelledby="h-settings"><h2 id="h-settings">${escape(say(locale, 'clientSettings'))}</h2>${settingsTable(client.settings, locale)}`
      + (admin ? settingForm(s, a, client.clientId) + adminForm(s, `${appBase(a)}/clients/${encodeURIComponent(client.clientId)}/secret`, say(locale, 'resetSecret'),
        `<p class="tip">${escape(say(locale, 'resetSecretTip'))}</p>`, true) : '')
      + '</section>', s);
  }));

  /** A page that shows a client's secret once (never cached, like every page of the console). */
  const secretPage = (res: Response, s: Signed, a: Application, clientId: string, secret: string, notes: string[]) =>
    page(res, 200, s.locale, say(s.locale, 'secretTitle'), `<p class="notice done" role="status">${escape(say(s.locale, 'secretOnce'))}</p>`
      + `<div class="scroll"><table><tbody><tr><th scope="row">client_id</th><td><code>${escape(clientId)}</code></td></tr>`
      + `<tr><th scope="row">client_secret</th><td><code id="secret">${escape(secret)}</code></td></tr></tbody></table></div>`
      + notes.map((n) => `<p>${escape(n)}</p>`).join('')
      + `<p><a href="${escape(`${appBase(a)}/clients/${encodeURIComponent(clientId)}${q({ locale: s.locale })}`)}">${escape(say(s.locale, 'toClient'))}</a></p>`, s);

  /** An administration change: its page again with what was wrong, or where it leads. */
  const administer = (work: (req: Request, res: Response, s: Signed, a: Application, body: Record<string, string>) => Promise<void>) =>
    signed('administer', async (req, res, s, body) => {
      const a = await namedApp(req, res, s);
      if (!a) return;
      try {
        await work(req, res, s, a, body);
      } catch (e) {
        if (e instanceof Refusal) return problem(res, 400, s.locale, `${e.detail.field ? `${e.detail.field}: ` : ''}${e.message}`, s);
        throw e;
      }
    });

  const parts: ConsoleParts = { services, say, q, time, page, problem, signed, administer, adminForm, namedApp, appBase };
  mountOverview(pages, parts);
  mountAccountForms(pages, parts);
  mountOperators(pages, parts);
  mountOrganizations(pages, parts);
  mountWebhooks(app, parts);
  mountSaml(app, parts);
  mountScim(app, parts);

  app.post('/apps/:app/settings', form, administer(async (_req, res, s, a, body) => {
    const client = body.client || undefined;
    await changeOneSetting(services, { app: a, ...(client && { clientId: client }), key: (body.key ?? '').trim(), value: body.value ?? '', acting: s.operator.acting });
    res.redirect(303, `${client ? `${appBase(a)}/clients/${encodeURIComponent(client)}` : appBase(a)}${q({ locale: s.locale, done: 'settingChanged' })}`);
  }));

  // (features come as one field each: the body parser keeps the last, so they are read from the raw form)
  app.post('/apps/:app/clients', express.urlencoded({ extended: true, limit: '16kb', parameterLimit: 20 }), administer(async (req, res, s, a, body) => {
    const raw = (req.body as Record<string, unknown>).features;
    const features = parseFeatures((Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((f): f is string => typeof f === 'string'), 'features');
    if ((body.description ?? '').trim() === '') throw invalidField('description', say(s.locale, 'describeClient'));
    const added = await addClient(services, { applicationId: a.id, acting: s.operator.acting, description: body.description!.trim().slice(0, 200), features });
    secretPage(res, s, a, added.client.clientId, added.secret, [
      ...(added.settings ? [say(s.locale, 'clientFlow', { flow: `${added.settings.default_flow_name} ${added.settings.default_flow_version}` })] : []),
      ...(added.own ? [say(s.locale, 'setRedirects')] : []),
    ]);
  }));

  app.post('/apps/:app/clients/:client/secret', form, administer(async (req, res, s, a, body) => {
    if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
    const clientId = String(req.params.client);
    let secret: string;
    try {
      secret = await resetSecret(services, { applicationId: a.id, acting: s.operator.acting, forClientId: clientId });
    } catch (e) {
      if (e instanceof NoSuchClientError) return problem(res, 404, s.locale, say(s.locale, 'noSuchClient'), s);
      throw e;
    }
    secretPage(res, s, a, clientId, secret, [say(s.locale, 'oldSecretEnded')]);
  }));

  app.post('/apps/:app/providers', form, administer(async (_req, res, s, a, body) => {
    const kind = PROVIDER_KINDS.find((k) => k === body.kind);
    if (!kind) throw invalidField('kind', `must be one of ${PROVIDER_KINDS.join(', ')}`);
    try {
      await addProvider(services, {
        applicationId: a.id, acting: s.operator.acting,
        provider: { name: body.name ?? '', kind, issuer: body.issuer ?? '', clientId: body.client_id ?? '', clientSecret: body.client_secret ?? '', scopes: body.scopes?.split(/\s+/).filter(Boolean) },
      });
    } catch (e) {
      if (e instanceof ProviderInputError || e instanceof ProviderNameError) throw invalidField(e instanceof ProviderInputError ? e.field : 'name', e.message);
      throw e;
    }
    res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: 'providerAdded' })}#h-providers`);
  }));

  app.post('/apps/:app/providers/remove', form, administer(async (_req, res, s, a, body) => {
    if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
    try {
      await removeProvider(services, { applicationId: a.id, acting: s.operator.acting, name: body.name ?? '' });
    } catch (e) {
      if (e instanceof ProviderNameError) throw invalidField('name', e.message);
      throw e;
    }
    res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: 'providerRemoved' })}#h-providers`);
  }));

  app.post('/apps/:app/keys', form, administer(async (_req, res, s, a, body) => {
    if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
    await rotateSigningKeys(services, { applicationId: a.id, applicationName: a.name, acting: s.operator.acting });
    res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: 'keysRotated' })}#h-keys`);
  }));

  // a flow's two documents, pasted (a flow is about 20 KB; at most 512 KB)
  app.post('/apps/:app/flows', express.urlencoded({ extended: false, limit: '512kb', parameterLimit: 10 }), administer(async (_req, res, s, a, body) => {
    let imported: Awaited<ReturnType<typeof importFlowDocuments>>;
    try {
      imported = await importFlowDocuments(services, { app: a, flow: body.flow ?? '', translations: body.translations ?? '', acting: s.operator.acting });
    } catch (e) {
      if (!(e instanceof FlowDefinitionError)) throw e;
      return page(res, 400, s.locale, say(s.locale, 'flowRefused'), `<ul class="notice" role="alert">${e.problems.slice(0, 50).map((p) => `<li>${escape(p)}</li>`).join('')}</ul>`
        + `<p><a href="${escape(`${appBase(a)}${q({ locale: s.locale })}#h-flows`)}">${escape(say(s.locale, 'backToApp', { app: a.name }))}</a></p>`, s);
    }
    res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: imported.unchanged ? 'flowUnchanged' : 'flowImported' })}#h-flows`);
  }));

  app.get('/apps/:app/flows/:name', signed('read', async (req, res, s) => {
    const a = await namedApp(req, res, s);
    if (!a) return;
    const version = (v: unknown) => (typeof v === 'string' && /^\d{1,9}$/.test(v) ? Number(v) : undefined);
    const from = version(req.query.from);
    const to = version(req.query.to);
    const name = String(req.params.name);
    const { locale } = s;
    const picker = `<form method="get" action="${escape(`${appBase(a)}/flows/${encodeURIComponent(name)}`)}"><input type="hidden" name="locale" value="${escape(locale)}"><div class="row">`
      + `<div><label for="from">${escape(say(locale, 'before'))}</label><input id="from" name="from" type="text" inputmode="numeric" value="${escape(String(from ?? ''))}" required></div>`
      + `<div><label for="to">${escape(say(locale, 'after'))}</label><input id="to" name="to" type="text" inputmode="numeric" value="${escape(String(to ?? ''))}" required></div>`
      + `<div><button type="submit" class="secondary">${escape(say(locale, 'show'))}</button></div></div></form>`;
    const back = `<p><a href="${escape(`${appBase(a)}${q({ locale })}#h-flows`)}">${escape(say(locale, 'backToApp', { app: a.name }))}</a></p>`;
    if (from === undefined || to === undefined) return page(res, 400, locale, say(locale, 'flows'), `${back}<p class="notice" role="alert">${escape(say(locale, 'twoVersions'))}</p>${picker}`, s);
    const changes = await flowDifference(services, { app: a, name, from, to });
    const title = say(locale, 'flowChangesOf', { flow: name, from: String(from), to: String(to) });
    if (!changes) return page(res, 404, locale, title, `${back}<p class="notice" role="alert">${escape(say(locale, 'noSuchFlow'))}</p>${picker}`, s);
    page(res, 200, locale, title, `${back}${picker}`
      + (changes.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>` : `<div class="scroll"><table><thead><tr><th scope="col">${escape(say(locale, 'path'))}</th>`
        + `<th scope="col">${escape(say(locale, 'before'))}</th><th scope="col">${escape(say(locale, 'after'))}</th></tr></thead><tbody>`
        + changes.map((c) => `<tr><td><code>${escape(c.attribute)}</code></td><td>${c.from === undefined ? '—' : `<del>${escape(shown(c.from))}</del>`}</td>`
          + `<td>${c.to === undefined ? '—' : `<ins>${escape(shown(c.to))}</ins>`}</td></tr>`).join('') + '</tbody></table></div>'), s);
  }));

  // the queue dashboard, behind the same sign-in: an admin retries or removes jobs, everyone reads
  if (queues) {
    app.use('/queues', signed('read', async (req, res, s) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        // bull-board's own calls (fetch, JSON): from this origin, by an admin
        if (crossSite(req) || req.headers['sec-fetch-site'] === undefined) return problem(res, 403, s.locale, say(s.locale, 'forged'), s);
        if (!roleMay(s.operator.role, 'administer')) return problem(res, 403, s.locale, say(s.locale, 'roleForbids'), s);
      }
      await new Promise<void>((resolve, reject) => queues.router(req, res, (e?: unknown) => (e ? reject(e) : resolve())));
    }, { csrf: 'its own' }));
  }

  app.use((req, res) => problem(res, 404, localeOf(req), say(localeOf(req), 'notFound')));
  // a failure shows a page with its request id, never a stack trace
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    void _next;
    // a form the body parser refused (too large, too many fields, not decodable): the sender's to fix
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500) return problem(res, status, localeOf(req), say(localeOf(req), 'badInput'));
    logger.error({ err, requestId: res.locals.requestId, path: req.path }, 'console request failed');
    if (res.headersSent) return;
    problem(res, 500, localeOf(req), say(localeOf(req), 'failed', { id: String(res.locals.requestId) }));
  });
  return app;
}
