import { changeAccountRoles } from '../usecases/apis/roles';
import type { Response } from 'express';
import { renderAccountExport } from '../domain/account-export';
import type { Acting } from '../domain/events';
import type { HistoryEntry } from '../domain/history';
import { roleMay } from '../domain/operators';
import { Refusal } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { isDisabled } from '../domain/storage/records';
import { consoleAccount, consoleAccountAt, consoleApplication, type ConsoleAccount } from '../usecases/operators/console-reads';
import { disableUser, MAX_DISABLE_REASON } from '../usecases/operators/disable-user';
import { enableUser } from '../usecases/operators/enable-user';
import { eraseUser } from '../usecases/operators/erase-user';
import { exportUser } from '../usecases/operators/export-user';
import { resetSecondFactor } from '../usecases/operators/reset-second-factor';
import { sendPasswordReset } from '../usecases/operators/send-password-reset';
import { signOutUser } from '../usecases/operators/sign-out-user';
import { verifyEmailAsOperator } from '../usecases/operators/verify-email';
import { escape, type PageLocale } from '../web/pages';
import { accountPath, lastSignIn, q, say, shown, time, typedTime, type ConsoleParts, type PageCall, type PageHandler, type Signed } from './parts';
import { actorWords, clientWords, detailsWords, eventSentence, whereWords } from './words';

/**
 * An account's page (docs/console.md#an-account): a summary first (state, sign-in methods,
 * last sign-in, organizations), the record beside how it signs in and where it is signed in, the
 * actions for support and admins, and its history (each version's changes, the record as it was
 * at a time) beside its activity. Each action is one use case with the operator as its actor.
 */

const ACTIONS = ['disable', 'enable', 'signout', 'reset-second-factor', 'send-reset', 'verify-email', 'erase', 'export', 'roles'] as const;
type AccountAction = (typeof ACTIONS)[number];
/** What an account's page (and the search, after an erasure) says was just done. */
export const ACCOUNT_DONE = ['disabled', 'enabled', 'signedOut', 'secondFactorReset', 'resetSent', 'emailVerified', 'erased', 'nothingToDo', 'created', 'createdLinkSent', 'edited', 'rolesChanged'] as const;
type Done = (typeof ACCOUNT_DONE)[number];

/** The account a path names, with its application; a page saying why not otherwise. */
const accountOf = async ({ req, res, s, p }: PageCall): Promise<{ app: Application; entityId: number } | undefined> => {
  const found = await consoleApplication(p.services, String(req.params.app));
  const id = /^\d{1,15}$/.test(String(req.params.id)) ? Number(req.params.id) : undefined;
  if (!found || id === undefined) {
    p.problem(res, 404, s.locale, say(s.locale, 'noSuchAccount'), s);
    return undefined;
  }
  return { app: found, entityId: id };
};

/** An account's page; `at` shows the record as it was then, `cursor` older activity. */
export const showAccount: PageHandler = async (call) => {
  const { req, res, s, p } = call;
  const named = await accountOf(call);
  if (!named) return;
  const cursor = typeof req.query.cursor === 'string' && /^\d{1,15}\.[ef]\d{1,20}$/.test(req.query.cursor) ? req.query.cursor : undefined;
  const account = await consoleAccount(p.services, { ...named, cursor });
  if (!account) return p.problem(res, 404, s.locale, say(s.locale, 'noSuchAccount'), s);
  const at = typeof req.query.at === 'string' ? typedTime(req.query.at) : undefined;
  const asOf = at instanceof Date ? await consoleAccountAt(p.services, { ...named, at }) : undefined;
  const done = ACCOUNT_DONE.find((d) => d === req.query.done);
  accountPage(p, res, 200, s, named.app, account, {
    done, cursor, atText: typeof req.query.at === 'string' ? req.query.at.slice(0, 40) : '', at: at instanceof Date ? at : undefined, asOf, badAt: at === 'bad',
  });
};

interface AccountShown { done?: Done; notice?: string; cursor?: string; atText?: string; at?: Date; asOf?: Record<string, unknown>; badAt?: boolean }

function accountPage(p: ConsoleParts, res: Response, status: number, s: Signed, a: Application, account: ConsoleAccount, shownNow: AccountShown): void {
  const { locale } = s;
  const r = account.record;
  const now = p.services.clock.now();
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
    + tile(say(locale, 'appRoles'), escape(account.roles.join(', ') || say(locale, 'none')))
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
  if (roleMay(s.operator.role, a.id === s.operatorsApp.id ? 'administer' : 'account')) body += actionsOf(p, s, a, account);
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
  p.page(res, status, locale, title, body, s);
}

/** The versions, newest first: when, by what and whom, and each attribute it changed (from, to). */
function historyOf(history: HistoryEntry[], locale: PageLocale, clients: ReadonlyMap<string, string>, self: number): string {
  if (history.length === 0) return `<p>${escape(say(locale, 'none'))}</p>`;
  // a run of versions that only moved lastLogin (each a sign-in) is one line: the real changes stay in sight
  const signInOnly = (h: HistoryEntry) => h.changes.length > 0 && h.changes.every((c) => c.attribute === 'lastLogin');
  const runs: HistoryEntry[][] = [];
  for (const h of history) {
    const last = runs[runs.length - 1];
    if (last && signInOnly(h) && signInOnly(last[0]!)) last.push(h);
    else runs.push([h]);
  }
  return '<ol class="items" reversed>' + runs.map((run) => {
    const h = run[0]!;
    if (run.length > 1) {
      return `<li><p>${escape(say(locale, 'signInVersions', {
        from: String(run[run.length - 1]!.version), to: String(h.version), count: String(run.length), at: time(h.at),
      }))}</p></li>`;
    }
    const by = h.by ? `<code>${escape(h.by.type)}</code> ${actorWords(say, locale, h.by.actor, clients, self) || escape(say(locale, 'byThePerson'))}` : '';
    return `<li><p><strong>${escape(say(locale, 'version', { version: String(h.version) }))}</strong> — ${escape(time(h.at))}${by ? ` — ${by}` : ''}</p>`
      + (h.changes.length === 0 ? '' : `<ul class="changes">${h.changes.map((c) => `<li><code>${escape(c.attribute)}</code>: `
        + (c.from === undefined ? '' : `<del>${escape(shown(c.from))}</del> `) + (c.to === undefined ? escape(say(locale, 'removed')) : `<ins>${escape(shown(c.to))}</ins>`) + '</li>').join('')}</ul>`)
      + '</li>';
  }).join('') + '</ol>';
}

/** The actions on an account, each a form with its confirmation. */
function actionsOf(p: ConsoleParts, s: Signed, a: Application, account: ConsoleAccount): string {
  const { locale } = s;
  const r = account.record;
  const base = `/apps/${encodeURIComponent(a.name)}/accounts/${r.id}`;
  const confirm = (id: string) => `<label class="choice"><input type="checkbox" name="confirm" value="yes" required id="confirm-${id}"> ${escape(say(locale, 'confirm'))}</label>`;
  const one = (action: AccountAction, label: string, fields = '', secondary = true) => `<form method="post" action="${escape(`${base}/${action}${q({ locale })}`)}" aria-label="${escape(label)}">`
    + `<input type="hidden" name="csrf" value="${escape(s.token)}">${fields}${confirm(action)}<button type="submit"${secondary ? ' class="secondary"' : ''}>${escape(label)}</button></form>`;
  const disabledNow = r.disabled && isDisabled(r, p.services.clock.now());
  return `<section aria-labelledby="h-actions" class="actions"><h2 id="h-actions">${escape(say(locale, 'actions'))}</h2><div class="grid">`
    + (disabledNow ? one('enable', say(locale, 'enable'))
      : one('disable', say(locale, 'disable'), `<div class="row"><div><label for="reason">${escape(say(locale, 'reason'))}</label><input id="reason" name="reason" type="text" maxlength="${MAX_DISABLE_REASON}"></div>`
        + `<div><label for="until">${escape(say(locale, 'until'))}</label><input id="until" name="until" type="text" inputmode="numeric" placeholder="2026-01-31 18:00" aria-describedby="until-tip"></div></div>`
        + `<p class="tip" id="until-tip">${escape(say(locale, 'untilTip'))}</p>`))
    + one('signout', say(locale, 'signOutEverywhere'))
    + (account.totp !== 'off' || account.recoveryCodesLeft > 0 ? one('reset-second-factor', say(locale, 'resetSecondFactor')) : '')
    + (r.email ? one('send-reset', say(locale, 'sendReset')) : '')
    + (r.email && !r.emailVerified ? one('verify-email', say(locale, 'verifyEmail')) : '')
    // the application's roles give its APIs' permissions: an admin's to change (docs/console.md#an-account)
    + (account.appRoles.length === 0 || !roleMay(s.operator.role, 'administer') ? '' : one('roles', say(locale, 'changeRoles'), `<fieldset><legend>${escape(say(locale, 'appRoles'))}</legend>`
      + account.appRoles.map((name) => `<label class="choice"><input type="checkbox" name="roles" value="${escape(name)}"${account.roles.includes(name) ? ' checked' : ''}> <code>${escape(name)}</code></label>`).join(' ')
      + `</fieldset><p class="tip">${escape(say(locale, 'appRolesTip'))}</p>`))
    + one('export', say(locale, 'export'))
    + one('erase', say(locale, 'erase'), `<label for="erase-name">${escape(say(locale, 'eraseType', { name: '\u0000' })).replace('\u0000', `<span class="value">${escape(r.email ?? r.uuid)}</span>`)}</label><input id="erase-name" name="name" type="text" required autocomplete="off">`
      + `<p class="tip">${escape(say(locale, 'eraseTip'))}</p>`)
    + '</div></section>';
}

/** One action on an account, confirmed: back to its page saying what was done, or its page again saying why not. */
export const accountAction: PageHandler = async (call) => {
  const { req, res, s, p, body } = call;
  const { locale } = s;
  const action = ACTIONS.find((x) => x === req.params.action);
  const named = await accountOf(call);
  if (!named) return;
  if (!action) return p.problem(res, 404, locale, say(locale, 'noSuchAction'), s);
  // the operators themselves: only an admin acts on them (support would otherwise disable or erase its admins)
  if (named.app.id === s.operatorsApp.id && !roleMay(s.operator.role, 'administer')) return p.problem(res, 403, locale, say(locale, 'roleForbids'), s);
  const account = await consoleAccount(p.services, named);
  if (!account) return p.problem(res, 404, locale, say(locale, 'noSuchAccount'), s);
  const again = (status: number, notice: string) => accountPage(p, res, status, s, named.app, account, { notice });
  if (body.confirm !== 'yes') return again(400, say(locale, 'notConfirmed'));
  const acting: Acting = s.operator.acting;
  const command = { ...named, acting };
  const to = (done: Done) => res.redirect(303, `/apps/${encodeURIComponent(named.app.name)}/accounts/${named.entityId}${q({ locale, done })}`);
  try {
    switch (action) {
      case 'disable': {
        const until = typedTime(body.until);
        if (until === 'bad') return again(400, say(locale, 'badTime'));
        await disableUser(p.services, { ...command, ...(until && { until }), ...(body.reason && { reason: body.reason }) });
        return to('disabled');
      }
      case 'enable': return to((await enableUser(p.services, command)).wasDisabled ? 'enabled' : 'nothingToDo');
      case 'signout': await signOutUser(p.services, command); return to('signedOut');
      case 'reset-second-factor': return to((await resetSecondFactor(p.services, command)).removed ? 'secondFactorReset' : 'nothingToDo');
      case 'verify-email': await verifyEmailAsOperator(p.services, command); return to('emailVerified');
      case 'send-reset': await sendPasswordReset(p.services, command); return to('resetSent');
      case 'roles': {
        if (!roleMay(s.operator.role, 'administer')) return p.problem(res, 403, locale, say(locale, 'roleForbids'), s);
        // the roles checked: each a field of its own (the route reads them from the raw form)
        const raw = (req.body as Record<string, unknown>).roles;
        const wanted = (Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]).filter((r): r is string => typeof r === 'string');
        await changeAccountRoles(p.services, {
          app: named.app, acting, entityId: named.entityId, add: wanted, take: account.roles.filter((r) => !wanted.includes(r)),
        });
        return to('rolesChanged');
      }
      case 'export': {
        const document = renderAccountExport(await exportUser(p.services, command));
        res.setHeader('Content-Disposition', `attachment; filename="account-${account.record.uuid}.json"`);
        return void res.type('application/json').send(JSON.stringify(document, null, 2));
      }
      case 'erase': {
        const typed = (body.name ?? '').trim().toLowerCase();
        if (typed === '' || (typed !== (account.record.email ?? '').toLowerCase() && typed !== account.record.uuid)) return again(400, say(locale, 'eraseNotTyped'));
        await eraseUser(p.services, command);
        return res.redirect(303, `/accounts${q({ app: named.app.name, locale, done: 'erased' })}`);
      }
    }
  } catch (e) {
    if (e instanceof Refusal) return again(e.reason === 'gone' ? 404 : e.reason === 'misconfigured' ? 500 : 400, e.message);
    throw e;
  }
};
