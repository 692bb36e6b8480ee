import { formatTimestamp, parseTimestamp } from '../../domain/timestamps';
import { errors } from '../../errors';
import { addWebhook, listDeliveries, listWebhooks, MAX_DELIVERIES, pingWebhook, redeliverWebhooks, removeWebhook, rotateWebhookSecret, setWebhookEnabled, type DeliveryView, type EndpointView } from '../../usecases/webhooks/endpoints';
import { adminCall, type Handler, type RequestContext } from '../context';

/** An endpoint on the wire (docs/webhooks.md#endpoints): never its secret (the CLI prints it so too). */
export const shown = (e: EndpointView) => ({
  id: e.id, url: e.url, events: e.events, description: e.description, include_record: e.includeRecord,
  created: formatTimestamp(e.createdAt), disabled: e.disabledAt ? formatTimestamp(e.disabledAt) : null,
  failing_since: e.failingSince ? formatTimestamp(e.failingSince) : null,
});

/** `events`: a JSON list (`["user.created"]`), or names separated by commas or spaces, or `*`. */
function eventTypes(ctx: RequestContext): string[] {
  const raw = ctx.params.require('events').trim();
  if (raw.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      throw errors.invalidArgument('events', 'is not a JSON list: send ["user.created","user.updated"], user.created,user.updated, or *');
    }
    if (!Array.isArray(parsed) || parsed.some((t) => typeof t !== 'string')) throw errors.invalidArgument('events', 'must be a list of event type names');
    return parsed as string[];
  }
  return raw.split(/[\s,]+/).filter(Boolean);
}

/** `include_record`: true or false (the default). */
function includeRecord(ctx: RequestContext): boolean {
  const v = ctx.params.get('include_record');
  if (v === undefined || v === 'false') return false;
  if (v === 'true') return true;
  throw errors.invalidArgument('include_record', 'must be true or false');
}

/** /webhooks/add: a new endpoint; its secret is in this answer only. */
export const addEndpoint: Handler = async (ctx) => {
  const { acting } = adminCall(ctx);
  const added = await addWebhook(ctx.services, {
    app: ctx.app, acting, url: ctx.params.require('url'), types: eventTypes(ctx), description: ctx.params.get('description'), includeRecord: includeRecord(ctx),
  });
  return { result: { ...shown(added.endpoint), secret: added.secret } };
};

/** /webhooks/list: the application's endpoints, oldest first. */
export const listEndpoints: Handler = async (ctx) => ({ results: (await listWebhooks(ctx.services, { app: ctx.app })).map(shown) });

/** /webhooks/remove: nothing more is delivered to the endpoint. */
export const removeEndpoint: Handler = async (ctx) => {
  await removeWebhook(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, endpointId: ctx.params.require('id') });
  return {};
};

/** /webhooks/rotate_secret: a new secret (in this answer only); the previous one signs too for 24 hours. */
export const rotateEndpointSecret: Handler = async (ctx) => {
  const rotated = await rotateWebhookSecret(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, endpointId: ctx.params.require('id') });
  return { secret: rotated.secret, previous_valid_until: formatTimestamp(rotated.previousUntil) };
};

/** /webhooks/test: a `ping` to the endpoint, delivered like any event; answers its webhook-id. */
export const testEndpoint: Handler = async (ctx) => ({
  message_id: await pingWebhook(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, endpointId: ctx.params.require('id') }),
});

/** /webhooks/disable and /webhooks/enable: nothing is sent to a disabled endpoint; its deliveries wait for it. */
export const enableEndpoint = (enabled: boolean): Handler => async (ctx) => {
  await setWebhookEnabled(ctx.services, { app: ctx.app, acting: adminCall(ctx).acting, endpointId: ctx.params.require('id'), enabled });
  return {};
};

/** /webhooks/redeliver: one delivery again (`delivery`), or every one given up since a time (`since`); answers how many were queued. */
export const redeliver: Handler = async (ctx) => {
  const command = { app: ctx.app, acting: adminCall(ctx).acting, endpointId: ctx.params.require('id') };
  const delivery = ctx.params.get('delivery');
  const since = ctx.params.get('since');
  if ((delivery === undefined) === (since === undefined)) {
    throw errors.invalidArgument(delivery === undefined ? 'delivery' : 'since',
      'send one of delivery (an id from /webhooks/deliveries) or since (a time, such as 2026-11-27 09:00:00): exactly one');
  }
  if (delivery !== undefined) {
    if (!/^\d{1,15}$/.test(delivery)) throw errors.invalidArgument('delivery', 'must be the id of a delivery, a whole number (/webhooks/deliveries lists them)');
    return { queued: await redeliverWebhooks(ctx.services, { ...command, deliveryId: Number(delivery) }) };
  }
  const at = parseTimestamp(since!);
  if (!at) throw errors.invalidArgument('since', 'is not a time: write it as 2026-11-27 09:00:00 or 2026-11-27T09:00:00Z');
  return { queued: await redeliverWebhooks(ctx.services, { ...command, since: at }) };
};

/** /webhooks/deliveries: the endpoint's latest deliveries, newest first (`limit`, 1 to 100, 20 by default). */
export const endpointDeliveries: Handler = async (ctx) => {
  const raw = ctx.params.get('limit');
  if (raw !== undefined && !/^\d{1,3}$/.test(raw)) throw errors.invalidArgument('limit', `must be a whole number from 1 to ${MAX_DELIVERIES}`);
  const limit = raw === undefined ? undefined : Number(raw);
  if (limit !== undefined && (limit < 1 || limit > MAX_DELIVERIES)) throw errors.invalidArgument('limit', `must be a whole number from 1 to ${MAX_DELIVERIES}`);
  const deliveries = await listDeliveries(ctx.services, { app: ctx.app, endpointId: ctx.params.require('id'), limit });
  return { results: deliveries.map(shownDelivery) };
};

/** A delivery on the wire: what, when, how it went, the receiver's first bytes (the CLI prints it so too). */
export const shownDelivery = (d: DeliveryView) => ({
  id: d.id, message_id: d.messageId, type: d.type, state: d.state, attempts: d.attempts, created: formatTimestamp(d.createdAt),
  next_attempt: d.state === 'pending' ? formatTimestamp(d.nextAttemptAt) : null, last_attempt: d.lastAttemptAt ? formatTimestamp(d.lastAttemptAt) : null,
  last_status: d.lastStatus, last_ms: d.lastMs, last_answer: d.lastAnswer,
});
