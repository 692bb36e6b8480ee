import type { Actor } from '../domain/events';
import type { ActivityEntry } from '../domain/storage/events';
import { deviceOf } from '../web/account';
import { escape, type PageLocale } from '../web/pages';

/**
 * How the console says what happened (docs/console.md#an-account): an account's activity as
 * sentences in the operator's language ("Signed in with a password from Firefox / Linux,
 * 127.0.0.1"), who acted by name (an operator's address, a client's description, a directory),
 * apps by their description with the id on hover, and an event's details as key: value, its JSON
 * only on request.
 */

export type Say = (locale: PageLocale, key: string, values?: Record<string, string>) => string;

/** A number as the operator's language writes it (12,345; 12 345; 12.345). */
export const numberWords = (locale: PageLocale, n: number) => new Intl.NumberFormat(locale).format(n);

/** The words for `key` when there are some, else `fallback` (a method or reason a newer release added). */
const wordsOr = (say: Say, locale: PageLocale, key: string, fallback: string) => {
  const said = say(locale, key);
  return said === key ? fallback : said;
};

/** A sign-in's method and factor, as "a password and an authenticator code". */
function factors(say: Say, locale: PageLocale, data: Record<string, unknown>): string {
  const parts = [data.method, data.factor].filter((f): f is string => typeof f === 'string' && f !== '');
  return parts.map((f) => wordsOr(say, locale, `with_${f}`, f)).join(say(locale, 'and'));
}

/** What the event or the minute of failures says happened, as a sentence. */
export function eventSentence(say: Say, locale: PageLocale, e: ActivityEntry): string {
  if (e.kind === 'failures') return say(locale, 'ev_sign_in_failed', { count: String(e.count), reason: wordsOr(say, locale, `reason_${e.reason}`, e.reason) });
  const d = e.data;
  const key = `ev_${e.type.replace(/\./g, '_')}`;
  const values: Record<string, string> = {
    factors: factors(say, locale, d),
    method: typeof d.method === 'string' ? wordsOr(say, locale, `method_${d.method}`, d.method) : '',
    provider: typeof d.provider === 'string' ? d.provider : '',
    tokens: String(d.tokens ?? d.revoked ?? ''),
    scopes: Array.isArray(d.scopes) ? d.scopes.join(' ') : '',
    // an account's roles of the application: those given (+) and taken (−)
    added: Array.isArray(d.added) ? d.added.map((r) => `+${String(r)}`).join(' ') : '',
    removed: Array.isArray(d.removed) && d.removed.length > 0 ? `${Array.isArray(d.added) && d.added.length > 0 ? ' ' : ''}${d.removed.map((r) => `−${String(r)}`).join(' ')}` : '',
  };
  const said = say(locale, key, values);
  return said === key ? e.type : said;
}

/** Who acted, by name (HTML): an operator's address, a client's description (its id on hover), the directory (its token on hover), an account, Gatehouse. */
export function actorName(say: Say, locale: PageLocale, actor: Actor, clients: ReadonlyMap<string, string>): string {
  switch (actor.kind) {
    case 'operator': return escape(actor.name);
    case 'client': return clientWords(actor.clientId, clients);
    case 'scim': return `<span title="${escape(actor.tokenId)}">${escape(say(locale, 'actorDirectory'))}</span>`;
    case 'account': return escape(say(locale, 'actorAccount', { id: String(actor.accountId) }));
    default: return 'Gatehouse';
  }
}

/** "by" who acted (HTML); '' when the account `self` acted itself. */
export function actorWords(say: Say, locale: PageLocale, actor: Actor, clients: ReadonlyMap<string, string>, self?: number): string {
  if (actor.kind === 'account' && actor.accountId === self) return '';
  const [before, after] = say(locale, 'byWhom', { name: '\u0000' }).split('\u0000');
  return `${escape(before ?? '')}${actorName(say, locale, actor, clients)}${escape(after ?? '')}`;
}

/** A client by its description, its id on hover; the id itself when it has none (or is not the application's any more). */
export function clientWords(clientId: string, clients: ReadonlyMap<string, string>): string {
  const name = clients.get(clientId);
  return name ? `<span title="client_id ${escape(clientId)}">${escape(name)}</span>` : `<code>${escape(clientId)}</code>`;
}

/** Where it came from: the device a user agent names (the whole agent on hover) and the address. */
export function whereWords(say: Say, locale: PageLocale, e: { userAgent?: string; address?: string }): string {
  const device = e.userAgent === undefined ? '' : deviceOf(e.userAgent) || say(locale, 'unknownDevice');
  const where = [device, e.address ?? ''].filter((w) => w !== '').join(', ');
  if (where === '') return '';
  return e.userAgent === undefined ? escape(say(locale, 'fromWhere', { where })) : `<span title="${escape(e.userAgent)}">${escape(say(locale, 'fromWhere', { where }))}</span>`;
}

/** An event's details as key: value (lists joined, objects as JSON), and the whole as JSON behind a disclosure. */
export function detailsWords(say: Say, locale: PageLocale, data: Record<string, unknown>): string {
  const entries = Object.entries(data).filter(([, v]) => v !== undefined && v !== null && v !== '');
  if (entries.length === 0) return '';
  const value = (v: unknown) => (Array.isArray(v) ? v.map((x) => (typeof x === 'string' ? x : JSON.stringify(x))).join(', ') : typeof v === 'string' ? v : JSON.stringify(v));
  return `<dl class="pairs">${entries.map(([k, v]) => `<div><dt>${escape(k)}:</dt><dd>${escape(value(v))}</dd></div>`).join('')}</dl>`
    + `<details><summary>${escape(say(locale, 'asJson'))}</summary><pre>${escape(JSON.stringify(data, null, 2))}</pre></details>`;
}
