import { AuditQueryError } from '../domain/audit-query';
import { consoleAudit } from '../usecases/operators/console-reads';
import { escape } from '../web/pages';
import { accountPath, applicationOf, appPicker, q, say, time, typedTime, type PageHandler } from './parts';
import { actorName, clientWords, detailsWords } from './words';

/**
 * The audit log (docs/console.md#the-audit-log): an application's entries, newest first, with the
 * filters of /audit/list (type, actor, subject, since, until), each actor and client named.
 */
export const auditPage: PageHandler = async ({ req, res, s, p }) => {
  const { locale } = s;
  const { apps, app: chosen } = await applicationOf(p.services, req.query.app, s);
  const filters = Object.fromEntries(['type', 'actor', 'subject', 'since', 'until', 'before']
    .map((k) => [k, typeof req.query[k] === 'string' && req.query[k] !== '' ? String(req.query[k]).slice(0, 200) : undefined])
    .filter((e): e is [string, string] => e[1] !== undefined));
  // a time as the console writes it, or a date, as well as ISO 8601 with its zone
  const bounds = Object.fromEntries((['since', 'until'] as const).filter((k) => filters[k] !== undefined).map((k) => {
    const typed = typedTime(filters[k]);
    return [k, typed instanceof Date ? typed.toISOString() : filters[k]!];
  }));
  const field = (k: string, tip: string) => `<div><label for="f-${k}">${escape(say(locale, `audit_${k}`))}</label><input id="f-${k}" name="${k}" type="text" value="${escape(filters[k] ?? '')}" placeholder="${escape(tip)}"></div>`;
  let body = `<form method="get" action="/audit"><input type="hidden" name="locale" value="${escape(locale)}"><div class="row"><div>${appPicker(apps, chosen, locale)}</div>`
    + field('type', 'account.disabled') + field('actor', 'operator:ada@example.com') + field('subject', 'record:42') + field('since', '2026-01-01T00:00:00Z') + field('until', '')
    + `<div><button type="submit">${escape(say(locale, 'filter'))}</button></div></div></form>`;
  if (!chosen) return p.page(res, 404, locale, say(locale, 'audit'), `${body}<p class="notice" role="alert">${escape(say(locale, 'noSuchApp'))}</p>`, s);
  let listed: Awaited<ReturnType<typeof consoleAudit>>;
  try {
    listed = await consoleAudit(p.services, { app: chosen, filters: { ...filters, ...bounds } });
  } catch (e) {
    if (e instanceof AuditQueryError) return p.page(res, 400, locale, say(locale, 'audit'), `${body}<p class="notice" role="alert">${escape(`${e.field}: ${e.message}`)}</p>`, s);
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
  p.page(res, 200, locale, say(locale, 'audit'), body, s);
};
