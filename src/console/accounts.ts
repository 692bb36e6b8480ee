import { FilterError, FilterUseError } from '../domain/filter';
import { roleMay } from '../domain/operators';
import type { UserRecord } from '../domain/storage/records';
import { StatementTimeoutError } from '../domain/storage/transactions';
import { SEARCH_COUNT_CAP, SEARCH_PAGE, searchAccounts } from '../usecases/operators/console-reads';
import { escape } from '../web/pages';
import { ACCOUNT_DONE } from './account';
import { accountPath, appBase, applicationOf, appPicker, doneNotice, lastSignIn, q, say, stateBadge, time, type PageHandler } from './parts';
import { numberWords } from './words';

/**
 * The search of accounts (docs/console.md#accounts): an application's accounts by address, name or
 * a filter of /entity.find, with the count of matches (counted within a bound), each one's name,
 * last sign-in, creation and state; a link to make one for support and admins.
 */

/** The name an account gives: its given and family names, else its display name. */
const nameOf = (r: UserRecord) => [r.attributes.givenName, r.attributes.familyName].filter((v) => typeof v === 'string').join(' ')
  || (typeof r.attributes.displayName === 'string' ? r.attributes.displayName : '');

export const searchPage: PageHandler = async ({ req, res, s, p }) => {
  const { locale } = s;
  const { apps, app: chosen } = await applicationOf(p.services, req.query.app, s);
  const text = typeof req.query.q === 'string' ? req.query.q.slice(0, 4096) : '';
  const pageNo = typeof req.query.page === 'string' && /^\d{1,6}$/.test(req.query.page) ? Number(req.query.page) : 0;
  let body = doneNotice(locale, ACCOUNT_DONE.find((d) => d === req.query.done))
    + `<form method="get" action="/accounts" role="search"><input type="hidden" name="locale" value="${escape(locale)}"><div class="row"><div>${appPicker(apps, chosen, locale)}</div>`
    + `<div><label for="q">${escape(say(locale, 'search'))}</label><input id="q" name="q" type="search" value="${escape(text)}" aria-describedby="q-tip"></div>`
    + `<div><button type="submit">${escape(say(locale, 'find'))}</button></div></div><p class="tip" id="q-tip">${escape(say(locale, 'searchTip'))}</p></form>`;
  if (!chosen) return p.page(res, 404, locale, say(locale, 'accounts'), `${body}<p class="notice" role="alert">${escape(say(locale, 'noSuchApp'))}</p>`, s);
  if (roleMay(s.operator.role, 'account') && chosen.id !== s.operatorsApp.id) {
    body += `<p class="links"><a href="${escape(`${appBase(chosen)}/new-account${q({ locale })}`)}">${escape(say(locale, 'newAccount'))}</a></p>`;
  }
  let found: Awaited<ReturnType<typeof searchAccounts>>;
  try {
    found = await searchAccounts(p.services, { app: chosen, text, page: pageNo });
  } catch (e) {
    if (e instanceof FilterError || e instanceof FilterUseError) {
      return p.page(res, 400, locale, say(locale, 'accounts'), `${body}<p class="notice" role="alert">${escape(say(locale, 'badFilter', { reason: e.message }))}</p>`, s);
    }
    // the database stopped it (ENTITY_QUERY_TIMEOUT_MS), as /entity.find's are
    if (e instanceof StatementTimeoutError) return p.page(res, 503, locale, say(locale, 'accounts'), `${body}<p class="notice" role="alert">${escape(say(locale, 'searchTimedOut'))}</p>`, s);
    throw e;
  }
  const total = found.total === undefined ? say(locale, 'matchesMore', { count: numberWords(locale, (pageNo + 1) * SEARCH_PAGE) }) : found.total > SEARCH_COUNT_CAP ? say(locale, 'matchesMore', { count: numberWords(locale, SEARCH_COUNT_CAP) })
    : say(locale, found.total === 1 ? 'matchesOne' : 'matches', { count: numberWords(locale, found.total) });
  body += found.rows.length === 0 ? `<p class="notice" role="status">${escape(say(locale, 'noneFound'))}</p>`
    : `<p role="status">${escape(total)}</p><div class="scroll"><table><caption class="visually-hidden">${escape(say(locale, 'accounts'))}</caption><thead><tr><th scope="col">${escape(say(locale, 'email'))}</th>`
      + `<th scope="col">${escape(say(locale, 'name'))}</th><th scope="col">${escape(say(locale, 'lastSignIn'))}</th><th scope="col">${escape(say(locale, 'created'))}</th><th scope="col">${escape(say(locale, 'state'))}</th></tr></thead><tbody>`
      + found.rows.map(({ record: r }) => `<tr><td><a href="${accountPath(chosen, r.id, locale)}">${escape(r.email ?? r.username ?? r.uuid)}</a></td>`
        + `<td>${escape(nameOf(r))}</td><td>${escape(lastSignIn(r) ?? say(locale, 'never'))}</td><td>${escape(time(r.created))}</td><td>${stateBadge(p.services, r, locale)}</td></tr>`).join('')
      + '</tbody></table></div>';
  const pager = [
    pageNo > 0 ? `<a href="/accounts${q({ app: chosen.name, q: text, page: pageNo - 1, locale })}" rel="prev">${escape(say(locale, 'previous'))}</a>` : '',
    found.more ? `<a href="/accounts${q({ app: chosen.name, q: text, page: pageNo + 1, locale })}" rel="next">${escape(say(locale, 'next'))}</a>` : '',
  ].filter(Boolean).join(' ');
  p.page(res, 200, locale, say(locale, 'accounts'), body + (pager ? `<p class="links">${pager}</p>` : ''), s);
};
