import type { Request, Response } from 'express';
import type { Application } from '../domain/storage/applications';
import { isDisabled, type UserRecord } from '../domain/storage/records';
import { filled, textsOf } from '../texts';
import { consoleApplication, consoleApplications } from '../usecases/operators/console-reads';
import type { Operator } from '../usecases/operators/console';
import type { Services } from '../usecases/services';
import { escape, type PageLocale } from '../web/pages';

/**
 * What every page of the console is given (docs/console.md): the operator signed in, the request,
 * its form, and the console's parts: its page, its problem page, its forms. Each page module
 * exports its handlers; routes.ts declares them; console.ts builds the console from that table.
 */

/** The operator a request is made by: its session, the operators' application, the page's language, the session's form token. */
export interface Signed { operator: Operator; operatorsApp: Application; locale: PageLocale; token: string }

/** One request to a page of the console, its operator allowed what the route's table entry names. */
export interface PageCall {
  req: Request;
  res: Response;
  s: Signed;
  /** The form posted (a GET has none): its fields as strings, none with a control character. */
  body: Record<string, string>;
  p: ConsoleParts;
}

export type PageHandler = (call: PageCall) => Promise<void>;

/** What the console's pages share: the page and its problem page (which know the console's navigation), its forms, its words. */
export interface ConsoleParts {
  services: Services;
  page(res: Response, status: number, locale: PageLocale, title: string, body: string, s?: Signed): void;
  problem(res: Response, status: number, locale: PageLocale, message: string, s?: Signed): void;
}

/** A text of the console in `locale`, its placeholders filled (the key itself when it has none). */
export const say = (locale: PageLocale, key: string, values: Record<string, string> = {}) => filled(textsOf('console', locale)[key] ?? key, values);
/**
 * A time as operators read it: to the second, in UTC, in one piece (non-breaking hyphens and spaces:
 * a narrow column never splits a date); `asTyped` reads it back when pasted into a field.
 */
export const time = (d: Date | null | undefined) => (d ? `${d.toISOString().slice(0, 19).replace('T', ' ')} UTC`.replace(/-/g, '\u2011').replace(/ /g, '\u00a0') : '—');
/** A time typed or pasted (from a page of the console: its non-breaking hyphens and spaces as plain ones, without its ` UTC`). */
export const asTyped = (text: string) => text.replace(/\u2011/g, '-').replace(/\u00a0/g, ' ').trim().replace(/ UTC$/i, '');
/** A value of a record as a line of text: a string as it is, anything else as JSON. */
export const shown = (v: unknown) => (v === undefined ? '—' : typeof v === 'string' ? v : JSON.stringify(v));
/** A query string of the parameters that have a value (with its `?`), else nothing. */
export const q = (params: Record<string, string | number | undefined>) => {
  const entries = Object.entries(params).filter((e): e is [string, string | number] => e[1] !== undefined && e[1] !== '');
  return entries.length ? `?${new URLSearchParams(entries.map(([k, v]): [string, string] => [k, String(v)]))}` : '';
};

/** A time an operator typed: ISO 8601 with or without its zone (without one: UTC), or a date. */
export function typedTime(text: string | undefined): Date | undefined | 'bad' {
  const t = asTyped(text ?? '');
  if (t === '') return undefined;
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:?\d{2})?)?$/.test(t)) return 'bad';
  const withZone = /[T ]\d{2}:\d{2}/.test(t) && !/(Z|[+-]\d{2}:?\d{2})$/.test(t) ? `${t.replace(' ', 'T')}Z` : t.replace(' ', 'T');
  const d = new Date(withZone.length === 10 ? `${withZone}T00:00:00Z` : withZone);
  return Number.isNaN(d.getTime()) ? 'bad' : d;
}

/** An application's pages begin here. */
export const appBase = (a: Application) => `/apps/${encodeURIComponent(a.name)}`;
/** An account's page (escaped for an attribute), with more parameters if given. */
export const accountPath = (a: Application, id: number, locale: PageLocale, extra: Record<string, string> = {}) =>
  escape(`${appBase(a)}/accounts/${id}${q({ locale, ...extra })}`);

/** A form of one change (an admin's or support's): its fields, a confirmation when it cannot be undone, one button named for what it does. */
export const adminForm = (s: Signed, action: string, label: string, fields: string, confirm = false) =>
  `<form method="post" action="${escape(`${action}${q({ locale: s.locale })}`)}" aria-label="${escape(label)}"><input type="hidden" name="csrf" value="${escape(s.token)}">${fields}`
  + (confirm ? `<label class="choice"><input type="checkbox" name="confirm" value="yes" required> ${escape(say(s.locale, 'confirm'))}</label>` : '')
  + `<button type="submit" class="secondary">${escape(label)}</button></form>`;

/** What an application's page and its clients' say was just done. */
export const ADMIN_DONE = ['settingChanged', 'keysRotated', 'flowImported', 'flowUnchanged', 'providerAdded', 'providerRemoved'] as const;

/** A notice of what was just done (`done_…` of the texts), when the address says so. */
export const doneNotice = (locale: PageLocale, done: string | undefined, values: Record<string, string> = {}) =>
  (done ? `<p class="notice done" role="status">${escape(say(locale, `done_${done}`, values))}</p>` : '');

/** A page of an application: the one its path names (`:app`), else a page saying there is none. */
export const inApp = (work: (call: PageCall, a: Application) => Promise<void>): PageHandler => async (call) => {
  const a = await consoleApplication(call.p.services, String(call.req.params.app));
  if (!a) return call.p.problem(call.res, 404, call.s.locale, say(call.s.locale, 'noSuchApp'), call.s);
  await work(call, a);
};

/** The application a query names (`app`), else the first one that is not the operators'. */
export async function applicationOf(services: Services, name: unknown, s: Signed): Promise<{ apps: Application[]; app?: Application }> {
  const apps = await consoleApplications(services);
  const app = typeof name === 'string' && name !== '' ? apps.find((a) => a.name === name) : apps.find((a) => a.id !== s.operatorsApp.id) ?? apps[0];
  return { apps, app };
}

/** The applications to choose from, `chosen` selected. */
export const appPicker = (apps: Application[], chosen: Application | undefined, locale: PageLocale) =>
  `<label for="app">${escape(say(locale, 'application'))}</label><select id="app" name="app">`
  + apps.map((a) => `<option value="${escape(a.name)}"${a.id === chosen?.id ? ' selected' : ''}>${escape(a.name)}</option>`).join('') + '</select>';

/** When the account last signed in (its lastLogin), as operators read times. */
export const lastSignIn = (r: UserRecord) => {
  const at = typeof r.attributes.lastLogin === 'string' ? new Date(r.attributes.lastLogin) : undefined;
  return at && !Number.isNaN(at.getTime()) ? time(at) : undefined;
};

/** Whether the account may sign in now, as a badge. */
export const stateBadge = (services: Services, r: UserRecord, locale: PageLocale) => (isDisabled(r, services.clock.now())
  ? `<span class="badge off">${escape(say(locale, 'disabled'))}</span>` : `<span class="badge">${escape(say(locale, 'active'))}</span>`);
