import { roleMay } from '../domain/operators';
import { FlowDefinitionError } from '../domain/flow-definition';
import type { Application } from '../domain/storage/applications';
import { flowDifference, importFlowDocuments, type ApplicationView } from '../usecases/operators/console-admin';
import { escape } from '../web/pages';
import { adminForm, appBase, inApp, q, say, shown, type Signed } from './parts';

/**
 * An application's flows (docs/console.md#applications): each one's latest version with what its
 * last change changed, any two versions compared, and for admins a flow's two documents imported
 * as its next version (checked as `gatehouse flows:import` checks them).
 */

/** The flows section of an application's page. */
export const flowsSection = (s: Signed, a: Application, flows: ApplicationView['flows']) => {
  const { locale } = s;
  return `<section aria-labelledby="h-flows"><h2 id="h-flows">${escape(say(locale, 'flows'))}</h2>`
    + (flows.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>` : `<ul>${flows.map((f) => `<li><code>${escape(f.name)}</code> — ${escape(say(locale, 'latestVersion', { version: String(f.latest) }))}`
      + (f.latest > 1 ? ` · <a href="${escape(`${appBase(a)}/flows/${encodeURIComponent(f.name)}${q({ from: f.latest - 1, to: f.latest, locale })}`)}">${escape(say(locale, 'flowChanges', { from: String(f.latest - 1), to: String(f.latest) }))}</a>` : '')
      + '</li>').join('')}</ul>`)
    + (roleMay(s.operator.role, 'administer') ? adminForm(s, `${appBase(a)}/flows`, say(locale, 'importFlow'),
      `<label for="flow">flow.json</label><textarea id="flow" name="flow" rows="6" required spellcheck="false"></textarea>`
      + `<label for="translations">translations.json</label><textarea id="translations" name="translations" rows="6" required spellcheck="false"></textarea>`
      + `<p class="tip">${escape(say(locale, 'importFlowTip'))}</p>`) : '')
    + '</section>';
};

/** A flow's two documents, pasted: its next version, or the problems found in them. */
export const importFlow = inApp(async ({ res, s, p, body }, a) => {
  let imported: Awaited<ReturnType<typeof importFlowDocuments>>;
  try {
    imported = await importFlowDocuments(p.services, { app: a, flow: body.flow ?? '', translations: body.translations ?? '', acting: s.operator.acting });
  } catch (e) {
    if (!(e instanceof FlowDefinitionError)) throw e;
    return p.page(res, 400, s.locale, say(s.locale, 'flowRefused'), `<ul class="notice" role="alert">${e.problems.slice(0, 50).map((x) => `<li>${escape(x)}</li>`).join('')}</ul>`
      + `<p><a href="${escape(`${appBase(a)}${q({ locale: s.locale })}#h-flows`)}">${escape(say(s.locale, 'backToApp', { app: a.name }))}</a></p>`, s);
  }
  res.redirect(303, `${appBase(a)}${q({ locale: s.locale, done: imported.unchanged ? 'flowUnchanged' : 'flowImported' })}#h-flows`);
});

/** What changed in a flow between two of its versions, path by path. */
export const flowChanges = inApp(async ({ req, res, s, p }, a) => {
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
  if (from === undefined || to === undefined) return p.page(res, 400, locale, say(locale, 'flows'), `${back}<p class="notice" role="alert">${escape(say(locale, 'twoVersions'))}</p>${picker}`, s);
  const changes = await flowDifference(p.services, { app: a, name, from, to });
  const title = say(locale, 'flowChangesOf', { flow: name, from: String(from), to: String(to) });
  if (!changes) return p.page(res, 404, locale, title, `${back}<p class="notice" role="alert">${escape(say(locale, 'noSuchFlow'))}</p>${picker}`, s);
  p.page(res, 200, locale, title, `${back}${picker}`
    + (changes.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>` : `<div class="scroll"><table><thead><tr><th scope="col">${escape(say(locale, 'path'))}</th>`
      + `<th scope="col">${escape(say(locale, 'before'))}</th><th scope="col">${escape(say(locale, 'after'))}</th></tr></thead><tbody>`
      + changes.map((c) => `<tr><td><code>${escape(c.attribute)}</code></td><td>${c.from === undefined ? '—' : `<del>${escape(shown(c.from))}</del>`}</td>`
        + `<td>${c.to === undefined ? '—' : `<ins>${escape(shown(c.to))}</ins>`}</td></tr>`).join('') + '</tbody></table></div>'), s);
});
