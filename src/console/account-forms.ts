import type { Response } from 'express';
import { roleMay } from '../domain/operators';
import { LimitReachedError, Refusal } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { DuplicateAttributeError, type UserRecord } from '../domain/storage/records';
import { consoleRecord } from '../usecases/operators/console-reads';
import { createAccount, editableAttributes, editAccount, type EditableAttribute } from '../usecases/operators/account-forms';
import { AttributeRefusedError, RecordGoneError } from '../usecases/records/change-record';
import { escape } from '../web/pages';
import { appBase, inApp, q, say, type ConsoleParts, type PageCall, type Signed } from './parts';

/**
 * Accounts made and edited by an operator (docs/console.md#accounts): a new account's address,
 * names and the flow's other attributes, with a password or a mailed link to set one; an account's
 * attributes edited, each change the record writer's with the operator as actor. Support and
 * admins, as the roles say; accounts of the operators' application are made by `operators:add`
 * only, and edited by admins only.
 */

const FIELD_PREFIX = 'a_';

/** The fields of `attributes`, filled with `values`. */
function fields(s: Signed, attributes: EditableAttribute[], values: Record<string, string>, required: Set<string>): string {
  return attributes.map((a) => {
    const id = escape(`${FIELD_PREFIX}${a.attribute}`);
    const label = a.label === a.attribute ? say(s.locale, `attr_${a.attribute}`) : a.label;
    const shownLabel = label === `attr_${a.attribute}` ? a.attribute : label;
    const value = values[a.attribute] ?? '';
    const input = a.type === 'select' && a.options
      ? `<select id="${id}" name="${id}"><option value=""></option>${a.options.map((o) => `<option value="${escape(o.value)}"${o.value === value ? ' selected' : ''}>${escape(o.label)}</option>`).join('')}</select>`
      : `<input id="${id}" name="${id}" type="${a.type === 'email' ? 'email' : a.type === 'date' ? 'date' : 'text'}" value="${escape(value)}" maxlength="${a.type === 'email' ? 254 : 1000}"`
        + `${required.has(a.attribute) ? ' required' : ''} autocomplete="off" spellcheck="false">`;
    return `<div><label for="${id}">${escape(shownLabel)} <small><code>${escape(a.attribute)}</code></small></label>${input}</div>`;
  }).join('');
}

/** The attributes a form sent (its a_ fields that are editable). */
const sent = (body: Record<string, string>, attributes: EditableAttribute[]) =>
  Object.fromEntries(attributes.filter((a) => body[`${FIELD_PREFIX}${a.attribute}`] !== undefined).map((a) => [a.attribute, body[`${FIELD_PREFIX}${a.attribute}`]!]));

/** What a refused create or edit tells the operator. */
function refusalText(s: Signed, e: unknown): string | undefined {
  if (e instanceof DuplicateAttributeError) return say(s.locale, 'attributeTaken', { attribute: e.attribute });
  if (e instanceof AttributeRefusedError) return `${e.attribute}: ${e.message}`;
  if (e instanceof RecordGoneError) return e.message;
  if (e instanceof Refusal) return `${e.detail.field ? `${e.detail.field.replace(/^attributes\./, '')}: ` : ''}${e.message}`;
  if (e instanceof LimitReachedError) return e.message;
  return undefined;
}

/** A record's values by attribute, as the form shows them. */
const valuesOf = (r: UserRecord, attributes: EditableAttribute[]) => Object.fromEntries(attributes.map((a) => {
  const v = a.attribute === 'email' ? r.email : a.attribute === 'username' ? r.username : r.attributes[a.attribute];
  return [a.attribute, v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v)];
}));

/** Whether the operator may make or edit accounts of `a` (the operators' own: admins edit them, and none is made here); a page saying why not otherwise. */
const mayChange = ({ res, s, p }: PageCall, a: Application, making: boolean): boolean => {
  if (a.id === s.operatorsApp.id && (making || !roleMay(s.operator.role, 'administer'))) {
    p.problem(res, 403, s.locale, say(s.locale, making ? 'operatorsMadeByCli' : 'roleForbids'), s);
    return false;
  }
  return true;
};
const accountUrl = (a: Application, id: number, locale: string, done?: string) => `${appBase(a)}/accounts/${id}${q({ locale, done })}`;

const newPage = (p: ConsoleParts, res: Response, status: number, s: Signed, a: Application, attributes: EditableAttribute[], values: Record<string, string>, notice?: string) => {
  const { locale } = s;
  const t = (k: string) => escape(say(locale, k));
  p.page(res, status, locale, say(locale, 'newAccountOf', { app: a.name }),
    (notice ? `<p class="notice" role="alert">${escape(notice)}</p>` : '')
    + `<form method="post" action="${escape(`${appBase(a)}/new-account${q({ locale })}`)}"><input type="hidden" name="csrf" value="${escape(s.token)}">`
    + `<div class="row">${fields(s, attributes, values, new Set(['email']))}</div>`
    + `<fieldset><legend>${t('newAccountPassword')}</legend>`
    + `<label class="choice"><input type="radio" name="how" value="link"${values.how !== 'password' ? ' checked' : ''}> ${t('newAccountMailLink')}</label>`
    + `<label class="choice"><input type="radio" name="how" value="password"${values.how === 'password' ? ' checked' : ''}> ${t('newAccountSetPassword')}</label>`
    + `<label for="password">${t('password')}</label><input id="password" name="password" type="password" autocomplete="new-password" maxlength="1000" aria-describedby="password-tip">`
    + `<p class="tip" id="password-tip">${t('newAccountPasswordTip')}</p></fieldset>`
    + `<button type="submit">${t('createAccount')}</button></form>`, s);
};

/** The form of a new account. */
export const newAccountPage = inApp(async (call, a) => {
  const { res, s, p } = call;
  if (!mayChange(call, a, true)) return;
  newPage(p, res, 200, s, a, await editableAttributes(p.services, { app: a, locale: s.locale }), {});
});

/** A new account made: its page, or the form again saying why not. */
export const createAccountFromForm = inApp(async (call, a) => {
  const { res, s, p, body } = call;
  if (!mayChange(call, a, true)) return;
  const attributes = await editableAttributes(p.services, { app: a, locale: s.locale });
  const values = sent(body, attributes);
  const byPassword = body.how === 'password';
  try {
    const created = await createAccount(p.services, {
      app: a, acting: s.operator.acting, email: values.email ?? '', attributes: values, mailLink: !byPassword, ...(byPassword && { password: body.password ?? '' }),
    });
    res.redirect(303, accountUrl(a, created.id, s.locale, byPassword ? 'created' : 'createdLinkSent'));
  } catch (e) {
    const text = refusalText(s, e);
    if (text === undefined) throw e;
    newPage(p, res, 400, s, a, attributes, { ...values, how: byPassword ? 'password' : 'link' }, text);
  }
});

const editPage = (p: ConsoleParts, res: Response, status: number, s: Signed, a: Application, record: UserRecord, attributes: EditableAttribute[], values: Record<string, string>, notice?: string) => {
  const { locale } = s;
  p.page(res, status, locale, say(locale, 'editAccountOf', { account: record.email ?? record.username ?? record.uuid }),
    `<p class="links"><a href="${escape(accountUrl(a, record.id, locale))}">${escape(say(locale, 'backToAccount'))}</a></p>`
    + (notice ? `<p class="notice" role="alert">${escape(notice)}</p>` : '')
    + `<form method="post" action="${escape(`${appBase(a)}/accounts/${record.id}/edit${q({ locale })}`)}"><input type="hidden" name="csrf" value="${escape(s.token)}">`
    + `<div class="row">${fields(s, attributes, values, new Set())}</div><p class="tip">${escape(say(locale, 'editAccountTip'))}</p>`
    + `<button type="submit">${escape(say(locale, 'save'))}</button></form>`, s);
};
/** The account the path names (`:id`); a page saying so otherwise. */
const recordOf = async ({ req, res, s, p }: PageCall, a: Application) => {
  const id = /^\d{1,15}$/.test(String(req.params.id)) ? Number(req.params.id) : undefined;
  const record = id === undefined ? undefined : await consoleRecord(p.services, { app: a, entityId: id });
  if (!record) p.problem(res, 404, s.locale, say(s.locale, 'noSuchAccount'), s);
  return record;
};

/** An account's form, filled with what it holds. */
export const editAccountPage = inApp(async (call, a) => {
  const { res, s, p } = call;
  const record = mayChange(call, a, false) ? await recordOf(call, a) : undefined;
  if (!record) return;
  const attributes = await editableAttributes(p.services, { app: a, locale: s.locale });
  editPage(p, res, 200, s, a, record, attributes, valuesOf(record, attributes));
});

/** An account's changes saved (only the fields changed): its page, or the form again saying why not. */
export const saveAccount = inApp(async (call, a) => {
  const { res, s, p, body } = call;
  const record = mayChange(call, a, false) ? await recordOf(call, a) : undefined;
  if (!record) return;
  const attributes = await editableAttributes(p.services, { app: a, locale: s.locale });
  const values = sent(body, attributes);
  // only what changed: a field left as it was is no change
  const before = valuesOf(record, attributes);
  const changed = Object.fromEntries(Object.entries(values).filter(([k, v]) => v.trim() !== (before[k] ?? '')));
  if (Object.keys(changed).length === 0) return res.redirect(303, accountUrl(a, record.id, s.locale, 'nothingToDo'));
  try {
    await editAccount(p.services, { app: a, acting: s.operator.acting, entityId: record.id, attributes: changed });
    res.redirect(303, accountUrl(a, record.id, s.locale, 'edited'));
  } catch (e) {
    const text = refusalText(s, e);
    if (text === undefined) throw e;
    editPage(p, res, 400, s, a, record, attributes, { ...before, ...values }, text);
  }
});
