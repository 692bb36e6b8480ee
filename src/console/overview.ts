import type { Application } from '../domain/storage/applications';
import { consoleApplications } from '../usecases/operators/console-reads';
import { consoleOverview, type Overview, type OverviewDay } from '../usecases/operators/console-overview';
import { escape, type PageLocale } from '../web/pages';
import { q, say, time, type PageHandler, type Signed } from './parts';
import { numberWords } from './words';

/**
 * The overview (docs/console.md#the-overview), the console's first page: sign-ins, registrations
 * and failed sign-ins per day over thirty days as a chart drawn on the server (an SVG with its
 * accessible name, and the same numbers in a table beside it), the accounts active today and over
 * the thirty days, the sign-in methods, the failures' reasons, the webhook endpoints failing and
 * the jobs failed; for every application or one. No script: the chart is markup.
 */

const SERIES = [
  { key: 'signedIn', label: 'overviewSignIns', css: 's-in' },
  { key: 'registered', label: 'overviewRegistrations', css: 's-reg' },
  { key: 'failed', label: 'overviewFailures', css: 's-fail' },
] as const;


/** A round step for the chart's scale: the top of the axis, at least 4. */
function axisTop(max: number): number {
  if (max <= 4) return 4;
  const magnitude = 10 ** Math.floor(Math.log10(max));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s * 4 >= max)!;
  return step * 4;
}

/** The chart: one line per series over the days, four gridlines with their values, a date every week. */
function chartSvg(locale: PageLocale, days: OverviewDay[], name: string): string {
  const W = 480;
  const H = 200;
  const left = 40;
  const right = 20;
  const top = 12;
  const bottom = 28;
  const top4 = axisTop(Math.max(0, ...days.flatMap((d) => SERIES.map((s) => d[s.key]))));
  const x = (i: number) => left + (days.length <= 1 ? 0 : (i * (W - left - right)) / (days.length - 1));
  const y = (v: number) => top + (H - top - bottom) * (1 - v / top4);
  const grid = [0, 1, 2, 3, 4].map((k) => {
    const v = (top4 / 4) * k;
    return `<line class="grid" x1="${left}" x2="${W - right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}"/>`
      + `<text class="axis" x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end">${escape(numberWords(locale, v))}</text>`;
  }).join('');
  const dates = days.map((d, i) => ((days.length - 1 - i) % 7 === 0
    ? `<text class="axis" x="${x(i).toFixed(1)}" y="${H - 8}" text-anchor="middle">${escape(d.day.slice(5))}</text>` : '')).join('');
  const lines = SERIES.map((s) => `<polyline class="${s.css}" points="${days.map((d, i) => `${x(i).toFixed(1)},${y(d[s.key]).toFixed(1)}`).join(' ')}"/>`).join('');
  const summary = SERIES.map((s) => `${say(locale, s.label)}: ${numberWords(locale, days.reduce((n, d) => n + d[s.key], 0))}`).join(', ');
  return `<svg viewBox="0 0 ${W} ${H}" role="img" aria-labelledby="chart-title chart-desc" focusable="false">`
    + `<title id="chart-title">${escape(name)}</title><desc id="chart-desc">${escape(summary)}</desc>${grid}${dates}${lines}</svg>`;
}

/** The page's body for `o`. */
function overviewBody(s: Signed, o: Overview, apps: Application[], chosen: Application | undefined): string {
  const { locale } = s;
  const t = (key: string, values?: Record<string, string>) => escape(say(locale, key, values));
  const total = (key: 'signedIn' | 'registered' | 'failed') => o.days.reduce((n, d) => n + d[key], 0);
  const picker = `<form method="get" action="/" class="row"><input type="hidden" name="locale" value="${escape(locale)}"><div><label for="app">${t('application')}</label>`
    + `<select id="app" name="app"><option value="">${t('overviewAll')}</option>${apps.map((a) => `<option value="${escape(a.name)}"${a.id === chosen?.id ? ' selected' : ''}>${escape(a.name)}</option>`).join('')}</select></div>`
    + `<div><button type="submit" class="secondary">${t('show')}</button></div></form>`;
  const tile = (label: string, value: number, tip?: string) => `<div class="tile"><span>${t(label)}</span><strong>${escape(numberWords(locale, value))}</strong>${tip ? `<small>${t(tip)}</small>` : ''}</div>`;
  const tiles = `<div class="tiles">${tile('overviewActiveToday', o.activeToday)}${tile('overviewActiveMonth', o.activeMonth)}`
    + `${tile('overviewSignIns30', total('signedIn'))}${tile('overviewRegistrations30', total('registered'))}${tile('overviewFailures30', total('failed'))}</div>`;
  const name = say(locale, 'overviewChart', { scope: chosen ? chosen.name : say(locale, 'overviewAll') });
  const legend = `<p class="legend">${SERIES.map((x) => `<span><span class="key ${x.css}"></span>${t(x.label)}</span>`).join(' ')}</p>`;
  const dayTable = `<div class="scroll tall"><table><caption>${t('overviewPerDay')}</caption><thead><tr><th scope="col">${t('overviewDay')}</th>`
    + SERIES.map((x) => `<th scope="col" class="n">${t(x.label)}</th>`).join('') + '</tr></thead><tbody>'
    + [...o.days].reverse().map((d) => `<tr><th scope="row">${escape(d.day)}</th>${SERIES.map((x) => `<td class="n">${escape(numberWords(locale, d[x.key]))}</td>`).join('')}</tr>`).join('')
    + '</tbody></table></div>';
  const list = (title: string, id: string, rows: { name: string; count: number }[]) => `<section aria-labelledby="${id}"><h2 id="${id}">${t(title)}</h2>`
    + (rows.length === 0 ? `<p>${t('none')}</p>` : `<div class="scroll"><table><tbody>${rows.map((r) => `<tr><th scope="row">${escape(r.name)}</th><td class="n">${escape(numberWords(locale, r.count))}</td></tr>`).join('')}</tbody></table></div>`)
    + '</section>';
  const named = (prefix: string, key: string) => {
    const said = say(locale, `${prefix}${key}`);
    return said === `${prefix}${key}` ? key : said;
  };
  const webhooks = `<section aria-labelledby="h-failing"><h2 id="h-failing">${t('overviewWebhooksFailing')}</h2>`
    + (o.webhooksFailing.length === 0 ? `<p>${t('none')}</p>` : `<div class="scroll"><table><thead><tr><th scope="col">${t('application')}</th><th scope="col">${t('webhookUrl')}</th><th scope="col">${t('state')}</th></tr></thead><tbody>`
      + o.webhooksFailing.map(({ application, endpoint: e }) => `<tr><td>${escape(application)}</td><td><a href="${escape(`/apps/${encodeURIComponent(application)}/webhooks/${encodeURIComponent(e.id)}${q({ locale })}`)}"><code>${escape(e.url)}</code></a></td>`
        + `<td>${e.disabledAt ? t('webhookDisabledAt', { at: time(e.disabledAt) }) : t('webhookFailingSince', { at: time(e.failingSince) })}</td></tr>`).join('')
      + '</tbody></table></div>')
    + '</section>';
  const jobs = `<section aria-labelledby="h-jobs"><h2 id="h-jobs">${t('overviewJobsFailed')}</h2>`
    + (o.jobsFailed.length === 0 ? `<p>${t('none')}</p>` : `<div class="scroll"><table><thead><tr><th scope="col">${t('application')}</th><th scope="col">${t('overviewQueue')}</th><th scope="col" class="n">${t('overviewFailed')}</th></tr></thead><tbody>`
      + o.jobsFailed.map((j) => `<tr><td>${escape(j.application)}</td><td>${escape(j.queue)}</td><td class="n">${escape(numberWords(locale, j.failed))}</td></tr>`).join('') + '</tbody></table></div>')
    + '</section>';
  return picker + tiles
    + `<section aria-labelledby="h-days"><h2 id="h-days">${escape(name)}</h2><div class="columns"><div class="chart">${chartSvg(locale, o.days, name)}${legend}</div>${dayTable}</div>`
    + `<p class="tip">${t('overviewTip')}</p></section>`
    + '<div class="columns">'
    + list('overviewSignInMethods', 'h-methods', o.signInMethods.map((m) => ({ name: named('method_', m.method), count: m.count })))
    + list('overviewFailureReasons', 'h-reasons', o.failureReasons.map((r) => ({ name: named('reason_', r.reason), count: r.count })))
    + list('overviewRegistrationMethods', 'h-registrations', o.registrationMethods.map((m) => ({ name: named('method_', m.method), count: m.count })))
    + '</div><div class="columns">' + webhooks + jobs + '</div>';
}

/** The overview at `/`, for every application or the one `app` names. */
export const overviewPage: PageHandler = async ({ req, res, s, p }) => {
  // a search's address from before the overview was the first page
  if (typeof req.query.q === 'string') return res.redirect(301, `/accounts${req.originalUrl.slice(req.path.length)}`);
  const apps = await consoleApplications(p.services);
  const name = typeof req.query.app === 'string' ? req.query.app : '';
  const chosen = name === '' ? undefined : apps.find((a) => a.name === name);
  if (name !== '' && !chosen) return p.problem(res, 404, s.locale, say(s.locale, 'noSuchApp'), s);
  const overview = await consoleOverview(p.services, { ...(chosen && { app: chosen }) });
  p.page(res, 200, s.locale, say(s.locale, 'overview'), overviewBody(s, overview, apps, chosen), s);
};
