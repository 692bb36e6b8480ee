import type { Response } from 'express';
import { roleMay } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { parseTimestamp } from '../domain/timestamps';
import { WEBHOOK_TYPES } from '../domain/webhooks';
import {
  addWebhook, listDeliveries, listWebhooks, MAX_DELIVERIES, pingWebhook, redeliverWebhooks, removeWebhook, rotateWebhookSecret, setWebhookEnabled, type EndpointView,
} from '../usecases/webhooks/endpoints';
import { escape, type PageLocale } from '../web/pages';
import { adminForm, appBase, asTyped, doneNotice, inApp, q, say, time, type ConsoleParts, type PageCall, type Signed } from './parts';

/**
 * The console's webhooks (docs/console.md#webhooks, docs/webhooks.md): an application's endpoints
 * on its page, each endpoint's page with its latest deliveries (state, attempts, the receiver's
 * status and first bytes; never a payload), and, for admins, adding one (its secret shown once),
 * a ping, a new secret, disabling and enabling, sending one delivery again or every one given up
 * since a time, and removing it. Each is the use case the API and the CLI run.
 */

const ACTIONS = ['test', 'rotate', 'disable', 'enable', 'resend', 'replay', 'remove'] as const;
type Action = (typeof ACTIONS)[number];
const DONE = ['webhookTested', 'webhookDisabled', 'webhookEnabled', 'webhookRedelivered'] as const;

/** The state of an endpoint in words: disabled, failing since, or sending. */
const stateOf = (e: EndpointView, locale: PageLocale) => (e.disabledAt ? say(locale, 'webhookDisabledAt', { at: time(e.disabledAt) })
  : e.failingSince ? say(locale, 'webhookFailingSince', { at: time(e.failingSince) }) : say(locale, 'webhookSending'));

/** The webhooks section of an application's page. */
export async function webhooksSection({ s, p }: Pick<PageCall, 's' | 'p'>, a: Application): Promise<string> {
  const { locale } = s;
  const endpoints = await listWebhooks(p.services, { app: a });
  const base = `${appBase(a)}/webhooks`;
  return `<section aria-labelledby="h-webhooks"><h2 id="h-webhooks">${escape(say(locale, 'webhooks'))}</h2>`
    + (endpoints.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr><th scope="col">${escape(say(locale, 'webhookUrl'))}</th><th scope="col">${escape(say(locale, 'webhookEvents'))}</th>`
        + `<th scope="col">${escape(say(locale, 'state'))}</th></tr></thead><tbody>`
        + endpoints.map((e) => `<tr><td><a href="${escape(`${base}/${encodeURIComponent(e.id)}${q({ locale })}`)}"><code>${escape(e.url)}</code></a>`
          + (e.description ? `<br>${escape(e.description)}` : '') + `</td><td>${escape(e.events === '*' ? '*' : e.events.join(', '))}</td><td>${escape(stateOf(e, locale))}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (roleMay(s.operator.role, 'administer') ? adminForm(s, base, say(locale, 'addWebhook'),
      `<label for="w-url">${escape(say(locale, 'webhookUrl'))}</label><input id="w-url" name="url" type="url" required maxlength="2048" placeholder="https://app.example.com/hooks">`
      + `<label for="w-events">${escape(say(locale, 'webhookEvents'))}</label><input id="w-events" name="events" type="text" required maxlength="2000" value="*" aria-describedby="w-events-tip">`
      + `<p class="tip" id="w-events-tip">${escape(say(locale, 'webhookEventsTip', { types: WEBHOOK_TYPES.join(', ') }))}</p>`
      + `<label for="w-description">${escape(say(locale, 'description'))}</label><input id="w-description" name="description" type="text" maxlength="200">`
      + `<label class="choice"><input type="checkbox" name="include_record" value="yes"> ${escape(say(locale, 'webhookIncludeRecord'))}</label>`) : '')
    + '</section>';
}

const base = (a: Application) => `${appBase(a)}/webhooks`;

/** A page that shows an endpoint's secret once. */
const secretPage = (p: ConsoleParts, res: Response, s: Signed, a: Application, endpointId: string, secret: string, note: string) =>
  p.page(res, 200, s.locale, say(s.locale, 'webhookSecretTitle'), `<p class="notice done" role="status">${escape(say(s.locale, 'secretOnce'))}</p>`
    + `<div class="scroll"><table><tbody><tr><th scope="row">${escape(say(s.locale, 'webhookEndpoint'))}</th><td><code>${escape(endpointId)}</code></td></tr>`
    + `<tr><th scope="row">${escape(say(s.locale, 'webhookSecret'))}</th><td><code id="secret">${escape(secret)}</code></td></tr></tbody></table></div>`
    + `<p>${escape(note)}</p><p><a href="${escape(`${base(a)}/${encodeURIComponent(endpointId)}${q({ locale: s.locale })}`)}">${escape(say(s.locale, 'toWebhook'))}</a></p>`, s);

/** An endpoint's page: its latest deliveries, and its actions for admins. */
export const showWebhook = inApp(async ({ req, res, s, p }, a) => {
  const { locale } = s;
  const endpoint = (await listWebhooks(p.services, { app: a })).find((e) => e.id === req.params.id);
  if (!endpoint) return p.problem(res, 404, locale, say(locale, 'noSuchWebhook'), s);
  const deliveries = await listDeliveries(p.services, { app: a, endpointId: endpoint.id, limit: MAX_DELIVERIES });
  const admin = roleMay(s.operator.role, 'administer');
  const path = (action: Action) => `${base(a)}/${encodeURIComponent(endpoint.id)}/${action}`;
  const done = DONE.find((d) => d === req.query.done);
  const row = (k: string, v: string) => `<tr><th scope="row">${escape(k)}</th><td>${v}</td></tr>`;
  let body = doneNotice(locale, done, { count: String(req.query.count ?? '') })
    + `<p><a href="${escape(`${appBase(a)}${q({ locale })}#h-webhooks`)}">${escape(say(locale, 'backToApp', { app: a.name }))}</a></p>`
    + `<div class="scroll"><table><tbody>${row(say(locale, 'webhookUrl'), `<code>${escape(endpoint.url)}</code>`)}`
    + row(say(locale, 'webhookEvents'), escape(endpoint.events === '*' ? '*' : endpoint.events.join(', ')))
    + row(say(locale, 'description'), escape(endpoint.description || '—'))
    + row(say(locale, 'webhookIncludeRecord'), escape(say(locale, endpoint.includeRecord ? 'yes' : 'no')))
    + row(say(locale, 'state'), escape(stateOf(endpoint, locale)))
    + row(say(locale, 'created'), escape(time(endpoint.createdAt))) + '</tbody></table></div>';
  body += `<section aria-labelledby="h-deliveries"><h2 id="h-deliveries">${escape(say(locale, 'webhookDeliveries'))}</h2>`
    + (deliveries.length === 0 ? `<p>${escape(say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr>${['created', 'webhookType', 'state', 'webhookAttempts', 'webhookLastAnswer', 'webhookNextAttempt', ''].map((k) => `<th scope="col">${k ? escape(say(locale, k)) : ''}</th>`).join('')}</tr></thead><tbody>`
        + deliveries.map((d) => `<tr><td>${escape(time(d.createdAt))}<br><code>${escape(d.messageId)}</code></td><td><code>${escape(d.type)}</code></td>`
          + `<td>${escape(say(locale, `delivery_${d.state}`))}</td><td>${d.attempts}</td>`
          + `<td>${d.lastAttemptAt ? `${escape(d.lastStatus === null ? '—' : String(d.lastStatus))} · ${escape(String(d.lastMs ?? '—'))} ms<br><code>${escape((d.lastAnswer ?? '').slice(0, 200))}</code>` : '—'}</td>`
          + `<td>${d.state === 'pending' ? escape(time(d.nextAttemptAt)) : '—'}</td>`
          + `<td>${admin && d.state !== 'pending' ? adminForm(s, path('resend'), say(locale, 'webhookResend'), `<input type="hidden" name="delivery" value="${d.id}">`) : ''}</td></tr>`).join('')
        + '</tbody></table></div>')
    + '</section>';
  if (admin) {
    body += `<section aria-labelledby="h-webhook-actions"><h2 id="h-webhook-actions">${escape(say(locale, 'actions'))}</h2>`
      + adminForm(s, path('test'), say(locale, 'webhookTest'), `<p class="tip">${escape(say(locale, 'webhookTestTip'))}</p>`)
      + adminForm(s, path('replay'), say(locale, 'webhookReplay'),
        `<label for="w-since">${escape(say(locale, 'webhookReplaySince'))}</label><input id="w-since" name="since" type="text" required maxlength="40" placeholder="2026-11-27 09:00:00" aria-describedby="w-since-tip">`
        + `<p class="tip" id="w-since-tip">${escape(say(locale, 'webhookReplayTip'))}</p>`)
      + adminForm(s, path('rotate'), say(locale, 'webhookRotate'), `<p class="tip">${escape(say(locale, 'webhookRotateTip'))}</p>`, true)
      + (endpoint.disabledAt ? adminForm(s, path('enable'), say(locale, 'webhookEnable'), '', true)
        : adminForm(s, path('disable'), say(locale, 'webhookDisable'), `<p class="tip">${escape(say(locale, 'webhookDisableTip'))}</p>`, true))
      + adminForm(s, path('remove'), say(locale, 'webhookRemove'), '', true)
      + '</section>';
  }
  p.page(res, 200, locale, say(locale, 'webhookTitle', { id: endpoint.id }), body, s);
});

/** An endpoint added: its secret, once. */
export const createWebhook = inApp(async ({ res, s, p, body }, a) => {
  const types = (body.events ?? '').split(/[\s,]+/).filter(Boolean);
  const added = await addWebhook(p.services, {
    app: a, acting: s.operator.acting, url: (body.url ?? '').trim(), types, description: body.description, includeRecord: body.include_record === 'yes',
  });
  secretPage(p, res, s, a, added.endpoint.id, added.secret, say(s.locale, 'webhookSecretNote'));
});

/** One action on an endpoint: back to its page saying what was done. */
export const webhookAction = inApp(async ({ req, res, s, p, body }, a) => {
  const action = ACTIONS.find((x) => x === req.params.action);
  if (!action) return p.problem(res, 404, s.locale, say(s.locale, 'noSuchWebhook'), s);
  const endpointId = String(req.params.id);
  const command = { app: a, acting: s.operator.acting, endpointId };
  const back = (done: (typeof DONE)[number] | undefined, extra: Record<string, string> = {}) =>
    res.redirect(303, done ? `${base(a)}/${encodeURIComponent(endpointId)}${q({ locale: s.locale, done, ...extra })}` : `${appBase(a)}${q({ locale: s.locale })}#h-webhooks`);
  const confirmed = () => {
    if (body.confirm !== 'yes') throw invalidField('confirm', say(s.locale, 'notConfirmed'));
  };
  switch (action) {
    case 'test':
      await pingWebhook(p.services, command);
      return back('webhookTested');
    case 'rotate': {
      confirmed();
      const rotated = await rotateWebhookSecret(p.services, command);
      return secretPage(p, res, s, a, endpointId, rotated.secret, say(s.locale, 'webhookPreviousUntil', { at: time(rotated.previousUntil) }));
    }
    case 'disable':
    case 'enable':
      confirmed();
      await setWebhookEnabled(p.services, { ...command, enabled: action === 'enable' });
      return back(action === 'enable' ? 'webhookEnabled' : 'webhookDisabled');
    case 'resend': {
      if (!/^\d{1,15}$/.test(body.delivery ?? '')) throw invalidField('delivery', say(s.locale, 'badInput'));
      const count = await redeliverWebhooks(p.services, { ...command, deliveryId: Number(body.delivery) });
      return back('webhookRedelivered', { count: String(count) });
    }
    case 'replay': {
      const since = parseTimestamp(asTyped(body.since ?? ''));
      if (!since) throw invalidField('since', say(s.locale, 'webhookBadTime'));
      const count = await redeliverWebhooks(p.services, { ...command, since });
      return back('webhookRedelivered', { count: String(count) });
    }
    case 'remove':
      confirmed();
      await removeWebhook(p.services, command);
      return back(undefined);
  }
});
