import express, { type NextFunction, type Request, type Response } from 'express';
import { roleMay, type ConsoleAction } from '../domain/operators';
import { invalidField } from '../domain/refusal';
import type { Application } from '../domain/storage/applications';
import { parseTimestamp } from '../domain/timestamps';
import { WEBHOOK_TYPES } from '../domain/webhooks';
import type { Operator } from '../usecases/operators/console';
import type { Services } from '../usecases/services';
import {
  addWebhook, listDeliveries, listWebhooks, MAX_DELIVERIES, pingWebhook, redeliverWebhooks, removeWebhook, rotateWebhookSecret, setWebhookEnabled, type EndpointView,
} from '../usecases/webhooks/endpoints';
import { escape, type PageLocale } from '../web/pages';

/**
 * The console's webhooks (docs/console.md#webhooks, docs/webhooks.md): an application's endpoints
 * on its page, each endpoint's page with its latest deliveries (state, attempts, the receiver's
 * status and first bytes; never a payload), and, for admins, adding one (its secret shown once),
 * a ping, a new secret, disabling and enabling, sending one delivery again or every one given up
 * since a time, and removing it. Each is the use case the API and the CLI run.
 */

interface Signed { operator: Operator; operatorsApp: Application; locale: PageLocale; token: string }
type Work = (req: Request, res: Response, s: Signed, body: Record<string, string>) => Promise<void>;

/** What the console hands its webhooks pages: its page, its guards and its forms. */
export interface ConsoleParts {
  services: Services;
  say(locale: PageLocale, key: string, values?: Record<string, string>): string;
  q(params: Record<string, string | number | undefined>): string;
  time(d: Date | null | undefined): string;
  page(res: Response, status: number, locale: PageLocale, title: string, body: string, s?: Signed): void;
  problem(res: Response, status: number, locale: PageLocale, message: string, s?: Signed): void;
  signed(action: ConsoleAction, work: Work): (req: Request, res: Response, next: NextFunction) => Promise<void>;
  administer(work: (req: Request, res: Response, s: Signed, a: Application, body: Record<string, string>) => Promise<void>): (req: Request, res: Response, next: NextFunction) => Promise<void>;
  adminForm(s: Signed, action: string, label: string, fields: string, confirm?: boolean): string;
  namedApp(req: Request, res: Response, s: Signed): Promise<Application | undefined>;
  appBase(a: Application): string;
}

const ACTIONS = ['test', 'rotate', 'disable', 'enable', 'resend', 'replay', 'remove'] as const;
type Action = (typeof ACTIONS)[number];
const DONE = ['webhookTested', 'webhookDisabled', 'webhookEnabled', 'webhookRedelivered'] as const;

/** The state of an endpoint in words: disabled, failing since, or sending. */
const stateOf = (p: ConsoleParts, e: EndpointView, locale: PageLocale) => (e.disabledAt ? p.say(locale, 'webhookDisabledAt', { at: p.time(e.disabledAt) })
  : e.failingSince ? p.say(locale, 'webhookFailingSince', { at: p.time(e.failingSince) }) : p.say(locale, 'webhookSending'));

/** The webhooks section of an application's page. */
export async function webhooksSection(p: ConsoleParts, s: Signed, a: Application): Promise<string> {
  const { locale } = s;
  const endpoints = await listWebhooks(p.services, { app: a });
  const base = `${p.appBase(a)}/webhooks`;
  return `<section aria-labelledby="h-webhooks"><h2 id="h-webhooks">${escape(p.say(locale, 'webhooks'))}</h2>`
    + (endpoints.length === 0 ? `<p>${escape(p.say(locale, 'none'))}</p>`
      : `<div class="scroll"><table><thead><tr><th scope="col">${escape(p.say(locale, 'webhookUrl'))}</th><th scope="col">${escape(p.say(locale, 'webhookEvents'))}</th>`
        + `<th scope="col">${escape(p.say(locale, 'state'))}</th></tr></thead><tbody>`
        + endpoints.map((e) => `<tr><td><a href="${escape(`${base}/${encodeURIComponent(e.id)}${p.q({ locale })}`)}"><code>${escape(e.url)}</code></a>`
          + (e.description ? `<br>${escape(e.description)}` : '') + `</td><td>${escape(e.events === '*' ? '*' : e.events.join(', '))}</td><td>${escape(stateOf(p, e, locale))}</td></tr>`).join('')
        + '</tbody></table></div>')
    + (roleMay(s.operator.role, 'administer') ? p.adminForm(s, base, p.say(locale, 'addWebhook'),
      `<label for="w-url">${escape(p.say(locale, 'webhookUrl'))}</label><input id="w-url" name="url" type="url" required maxlength="2048" placeholder="https://app.example.com/hooks">`
      + `<label for="w-events">${escape(p.say(locale, 'webhookEvents'))}</label><input id="w-events" name="events" type="text" required maxlength="2000" value="*" aria-describedby="w-events-tip">`
      + `<p class="tip" id="w-events-tip">${escape(p.say(locale, 'webhookEventsTip', { types: WEBHOOK_TYPES.join(', ') }))}</p>`
      + `<label for="w-description">${escape(p.say(locale, 'description'))}</label><input id="w-description" name="description" type="text" maxlength="200">`
      + `<label class="choice"><input type="checkbox" name="include_record" value="yes"> ${escape(p.say(locale, 'webhookIncludeRecord'))}</label>`) : '')
    + '</section>';
}

/** The endpoint pages and their actions. */
export function mountWebhooks(app: express.Express, p: ConsoleParts): void {
  const form = express.urlencoded({ extended: false, limit: '16kb', parameterLimit: 20 });
  const base = (a: Application) => `${p.appBase(a)}/webhooks`;

  /** A page that shows an endpoint's secret once. */
  const secretPage = (res: Response, s: Signed, a: Application, endpointId: string, secret: string, note: string) =>
    p.page(res, 200, s.locale, p.say(s.locale, 'webhookSecretTitle'), `<p class="notice done" role="status">${escape(p.say(s.locale, 'secretOnce'))}</p>`
      + `<div class="scroll"><table><tbody><tr><th scope="row">${escape(p.say(s.locale, 'webhookEndpoint'))}</th><td><code>${escape(endpointId)}</code></td></tr>`
      + `<tr><th scope="row">${escape(p.say(s.locale, 'webhookSecret'))}</th><td><code id="secret">${escape(secret)}</code></td></tr></tbody></table></div>`
      + `<p>${escape(note)}</p><p><a href="${escape(`${base(a)}/${encodeURIComponent(endpointId)}${p.q({ locale: s.locale })}`)}">${escape(p.say(s.locale, 'toWebhook'))}</a></p>`, s);

  app.get('/apps/:app/webhooks/:id', p.signed('read', async (req, res, s) => {
    const a = await p.namedApp(req, res, s);
    if (!a) return;
    const { locale } = s;
    const endpoint = (await listWebhooks(p.services, { app: a })).find((e) => e.id === req.params.id);
    if (!endpoint) return p.problem(res, 404, locale, p.say(locale, 'noSuchWebhook'), s);
    const deliveries = await listDeliveries(p.services, { app: a, endpointId: endpoint.id, limit: MAX_DELIVERIES });
    const admin = roleMay(s.operator.role, 'administer');
    const path = (action: Action) => `${base(a)}/${encodeURIComponent(endpoint.id)}/${action}`;
    const done = DONE.find((d) => d === req.query.done);
    const row = (k: string, v: string) => `<tr><th scope="row">${escape(k)}</th><td>${v}</td></tr>`;
    let body = (done ? `<p class="notice done" role="status">${escape(p.say(locale, `done_${done}`, { count: String(req.query.count ?? '') }))}</p>` : '')
      + `<p><a href="${escape(`${p.appBase(a)}${p.q({ locale })}#h-webhooks`)}">${escape(p.say(locale, 'backToApp', { app: a.name }))}</a></p>`
      + `<div class="scroll"><table><tbody>${row(p.say(locale, 'webhookUrl'), `<code>${escape(endpoint.url)}</code>`)}`
      + row(p.say(locale, 'webhookEvents'), escape(endpoint.events === '*' ? '*' : endpoint.events.join(', ')))
      + row(p.say(locale, 'description'), escape(endpoint.description || '—'))
      + row(p.say(locale, 'webhookIncludeRecord'), escape(p.say(locale, endpoint.includeRecord ? 'yes' : 'no')))
      + row(p.say(locale, 'state'), escape(stateOf(p, endpoint, locale)))
      + row(p.say(locale, 'created'), escape(p.time(endpoint.createdAt))) + '</tbody></table></div>';
    body += `<section aria-labelledby="h-deliveries"><h2 id="h-deliveries">${escape(p.say(locale, 'webhookDeliveries'))}</h2>`
      + (deliveries.length === 0 ? `<p>${escape(p.say(locale, 'none'))}</p>`
        : `<div class="scroll"><table><thead><tr>${['created', 'webhookType', 'state', 'webhookAttempts', 'webhookLastAnswer', 'webhookNextAttempt', ''].map((k) => `<th scope="col">${k ? escape(p.say(locale, k)) : ''}</th>`).join('')}</tr></thead><tbody>`
          + deliveries.map((d) => `<tr><td>${escape(p.time(d.createdAt))}<br><code>${escape(d.messageId)}</code></td><td><code>${escape(d.type)}</code></td>`
            + `<td>${escape(p.say(locale, `delivery_${d.state}`))}</td><td>${d.attempts}</td>`
            + `<td>${d.lastAttemptAt ? `${escape(d.lastStatus === null ? '—' : String(d.lastStatus))} · ${escape(String(d.lastMs ?? '—'))} ms<br><code>${escape((d.lastAnswer ?? '').slice(0, 200))}</code>` : '—'}</td>`
            + `<td>${d.state === 'pending' ? escape(p.time(d.nextAttemptAt)) : '—'}</td>`
            + `<td>${admin && d.state !== 'pending' ? p.adminForm(s, path('resend'), p.say(locale, 'webhookResend'), `<input type="hidden" name="delivery" value="${d.id}">`) : ''}</td></tr>`).join('')
          + '</tbody></table></div>')
      + '</section>';
    if (admin) {
      body += `<section aria-labelledby="h-webhook-actions"><h2 id="h-webhook-actions">${escape(p.say(locale, 'actions'))}</h2>`
        + p.adminForm(s, path('test'), p.say(locale, 'webhookTest'), `<p class="tip">${escape(p.say(locale, 'webhookTestTip'))}</p>`)
        + p.adminForm(s, path('replay'), p.say(locale, 'webhookReplay'),
          `<label for="w-since">${escape(p.say(locale, 'webhookReplaySince'))}</label><input id="w-since" name="since" type="text" required maxlength="40" placeholder="2026-11-27 09:00:00" aria-describedby="w-since-tip">`
          + `<p class="tip" id="w-since-tip">${escape(p.say(locale, 'webhookReplayTip'))}</p>`)
        + p.adminForm(s, path('rotate'), p.say(locale, 'webhookRotate'), `<p class="tip">${escape(p.say(locale, 'webhookRotateTip'))}</p>`, true)
        + (endpoint.disabledAt ? p.adminForm(s, path('enable'), p.say(locale, 'webhookEnable'), '', true)
          : p.adminForm(s, path('disable'), p.say(locale, 'webhookDisable'), `<p class="tip">${escape(p.say(locale, 'webhookDisableTip'))}</p>`, true))
        + p.adminForm(s, path('remove'), p.say(locale, 'webhookRemove'), '', true)
        + '</section>';
    }
    p.page(res, 200, locale, p.say(locale, 'webhookTitle', { id: endpoint.id }), body, s);
  }));

  app.post('/apps/:app/webhooks', form, p.administer(async (_req, res, s, a, body) => {
    const types = (body.events ?? '').split(/[\s,]+/).filter(Boolean);
    const added = await addWebhook(p.services, {
      app: a, acting: s.operator.acting, url: (body.url ?? '').trim(), types, description: body.description, includeRecord: body.include_record === 'yes',
    });
    secretPage(res, s, a, added.endpoint.id, added.secret, p.say(s.locale, 'webhookSecretNote'));
  }));

  app.post('/apps/:app/webhooks/:id/:action', form, p.administer(async (req, res, s, a, body) => {
    const action = ACTIONS.find((x) => x === req.params.action);
    if (!action) return p.problem(res, 404, s.locale, p.say(s.locale, 'noSuchWebhook'), s);
    const endpointId = String(req.params.id);
    const command = { app: a, acting: s.operator.acting, endpointId };
    const back = (done: (typeof DONE)[number] | undefined, extra: Record<string, string> = {}) =>
      res.redirect(303, done ? `${base(a)}/${encodeURIComponent(endpointId)}${p.q({ locale: s.locale, done, ...extra })}` : `${p.appBase(a)}${p.q({ locale: s.locale })}#h-webhooks`);
    const confirmed = () => {
      if (body.confirm !== 'yes') throw invalidField('confirm', p.say(s.locale, 'notConfirmed'));
    };
    switch (action) {
      case 'test':
        await pingWebhook(p.services, command);
        return back('webhookTested');
      case 'rotate': {
        confirmed();
        const rotated = await rotateWebhookSecret(p.services, command);
        return secretPage(res, s, a, endpointId, rotated.secret, p.say(s.locale, 'webhookPreviousUntil', { at: p.time(rotated.previousUntil) }));
      }
      case 'disable':
      case 'enable':
        confirmed();
        await setWebhookEnabled(p.services, { ...command, enabled: action === 'enable' });
        return back(action === 'enable' ? 'webhookEnabled' : 'webhookDisabled');
      case 'resend': {
        if (!/^\d{1,15}$/.test(body.delivery ?? '')) throw invalidField('delivery', p.say(s.locale, 'badInput'));
        const count = await redeliverWebhooks(p.services, { ...command, deliveryId: Number(body.delivery) });
        return back('webhookRedelivered', { count: String(count) });
      }
      case 'replay': {
        const since = parseTimestamp((body.since ?? '').trim());
        if (!since) throw invalidField('since', p.say(s.locale, 'webhookBadTime'));
        const count = await redeliverWebhooks(p.services, { ...command, since });
        return back('webhookRedelivered', { count: String(count) });
      }
      case 'remove':
        confirmed();
        await removeWebhook(p.services, command);
        return back(undefined);
    }
  }));
}
