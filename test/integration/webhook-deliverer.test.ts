import http from 'node:http';
import { Webhook } from 'standardwebhooks';
import { createLogger } from '../../src/logger';
import { webhookTransport } from '../../src/jobs/webhook-sender';
import { createWebhookDeliverer, RETRY_FOR_MS } from '../../src/usecases/webhooks/delivery';
import { addWebhook } from '../../src/usecases/webhooks/endpoints';
import request from 'supertest';
import { basic, startTestApp, type TestApp } from '../helpers/backend';
import { mailsTo } from '../helpers/mail-files';
import { stored } from '../helpers/stored';
import { freePort } from '../helpers/processes';

// docs/webhooks.md#deliveries: due deliveries are sent in each account's order, verified by the
// standardwebhooks package; a failure waits and is tried again; a delivery is given up after
// RETRY_FOR_MS; 410 removes the endpoint; five days of failures disable it and tell the owner.

let t: TestApp;
let receiver: http.Server;
let port: number;
let status = 204;
const got: { id: string; body: string; headers: http.IncomingHttpHeaders; path: string }[] = [];
const acting = { actor: { kind: 'operator' as const, name: 'test' }, origin: {} };
/** A new endpoint's first seconds read back (what its catch-up job does eight seconds after it is added): its deliveries may go. */
const caughtUp = (endpointId: string) => stored(t.runtime.db).change('UPDATE webhook_endpoints SET events_from = NULL WHERE endpoint_id = ?', [endpointId]);

beforeAll(async () => {
  t = await startTestApp({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } });
  port = await freePort();
  receiver = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      got.push({ id: String(req.headers['webhook-id']), body, headers: req.headers, path: req.url ?? '' });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(port, '127.0.0.1', resolve));
});
afterAll(async () => {
  receiver?.closeAllConnections();
  await new Promise<void>((resolve) => receiver.close(() => resolve()));
  await t?.close();
});

it('delivers what is due in each account\'s order, tries a failure again later, and gives up after the retry window', async () => {
  const app = (await t.runtime.db.applications.findByName('local'))!;
  const { endpoint, secret } = await addWebhook(t.runtime.services, { app, acting, url: `http://127.0.0.1:${port}/hook`, types: ['*'] });
  const stored = (await t.runtime.db.webhooks.find(app.id, endpoint.id))!;
  await caughtUp(endpoint.id);
  const T0 = new Date();
  const payload = (n: number) => JSON.stringify({ type: 'user.updated', timestamp: T0.toISOString(), data: { n } });
  await t.runtime.db.transaction((tx) => t.runtime.db.webhooks.insertDeliveries([1, 2, 3].map((n) => ({
    applicationId: app.id, endpointId: stored.id, messageId: `msg_${n}`, type: 'user.updated', accountKey: n === 3 ? 'b' : 'a', accountId: null, eventSeq: n, payload: payload(n),
  })), T0, tx));
  const deliverer = createWebhookDeliverer({ services: { ...t.runtime.services, logger: createLogger('silent') }, transport: webhookTransport({ allowPrivate: true }) });
  const after = (ms: number) => () => new Date(T0.getTime() + ms);

  status = 503;
  expect(await deliverer.deliverDue(after(1000))).toEqual({ delivered: 0, failed: 2 });
  // msg_2 waited for msg_1 (the same account); msg_3 (another) went beside it
  expect(got.map((g) => g.id).sort()).toEqual(['msg_1', 'msg_3']);
  // nothing is due before the wait
  expect(await deliverer.deliverDue(after(2000))).toEqual({ delivered: 0, failed: 0 });

  status = 204;
  // the two due, then msg_2, due once msg_1 was delivered, in the same run
  expect(await deliverer.deliverDue(after(10_000))).toEqual({ delivered: 3, failed: 0 });
  expect(await deliverer.deliverDue(after(11_000))).toEqual({ delivered: 0, failed: 0 });
  // the failed two again (side by side), then msg_2 once msg_1 was delivered; the same webhook-id on every attempt
  expect([got.slice(0, 2).map((g) => g.id).sort(), got.slice(2, 4).map((g) => g.id).sort(), got.slice(4).map((g) => g.id)])
    .toEqual([['msg_1', 'msg_3'], ['msg_1', 'msg_3'], ['msg_2']]);
  for (const g of got) {
    const wire = { 'webhook-id': g.id, 'webhook-timestamp': String(g.headers['webhook-timestamp']), 'webhook-signature': String(g.headers['webhook-signature']) };
    expect(new Webhook(secret).verify(g.body, wire)).toMatchObject({ type: 'user.updated' });
  }

  // a delivery failing past the window is given up
  await t.runtime.db.transaction((tx) => t.runtime.db.webhooks.insertDeliveries([{
    applicationId: app.id, endpointId: stored.id, messageId: 'msg_late', type: 'user.updated', accountKey: 'c', accountId: null, eventSeq: 4, payload: payload(4),
  }], T0, tx));
  status = 500;
  expect(await deliverer.deliverDue(after(RETRY_FOR_MS + 1000))).toEqual({ delivered: 0, failed: 1 });
  const late = (await t.runtime.db.webhooks.listDeliveries(app.id, stored.id, 10)).find((d) => d.messageId === 'msg_late')!;
  expect(late).toMatchObject({ state: 'failed', attempts: 1, lastStatus: 500 });
});

it('removes an endpoint whose receiver answers 410 Gone, and disables one failing for five days, writing to the application\'s owner', async () => {
  const app = (await t.runtime.db.applications.findByName('local'))!;
  expect((await request(t.app).post('/settings/set_default').set('Authorization', basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret))
    .type('form').send({ key: 'owner_email', value: 'platform@example.com' })).body.stat).toBe('ok');
  const withOwner = (await t.runtime.db.applications.findByName('local'))!;
  const deliverer = createWebhookDeliverer({ services: { ...t.runtime.services, logger: createLogger('silent') }, transport: webhookTransport({ allowPrivate: true }) });
  const queued = async (id: number, messageId: string) => t.runtime.db.transaction((tx) => t.runtime.db.webhooks.insertDeliveries([{
    applicationId: app.id, endpointId: id, messageId, type: 'user.updated', accountKey: messageId, accountId: null, eventSeq: 1, payload: '{"type":"user.updated"}',
  }], new Date(), tx));

  const gone = await addWebhook(t.runtime.services, { app: withOwner, acting, url: `http://127.0.0.1:${port}/gone`, types: ['*'] });
  const goneId = (await t.runtime.db.webhooks.find(app.id, gone.endpoint.id))!.id;
  await caughtUp(gone.endpoint.id);
  await queued(goneId, 'msg_gone');
  status = 410;
  await deliverer.deliverDue(() => new Date(), [goneId]);
  expect(await t.runtime.db.webhooks.find(app.id, gone.endpoint.id)).toBeUndefined();
  const [removed] = await t.runtime.db.events.latest(app.id, 1);
  expect(removed).toMatchObject({ type: 'webhook.removed', actor: { kind: 'system' }, subject: { kind: 'webhook', id: gone.endpoint.id }, data: { reason: 'gone' } });

  const failing = await addWebhook(t.runtime.services, { app: withOwner, acting, url: `http://127.0.0.1:${port}/failing`, types: ['*'] });
  const failingId = (await t.runtime.db.webhooks.find(app.id, failing.endpoint.id))!.id;
  await caughtUp(failing.endpoint.id);
  await queued(failingId, 'msg_failing');
  status = 503;
  const T0 = new Date();
  await deliverer.deliverDue(() => T0, [failingId]);
  expect((await t.runtime.db.webhooks.find(app.id, failing.endpoint.id))!).toMatchObject({ failingSince: T0, disabledAt: null });
  // failing: a fan-out's call leaves it to the recurring run (which serves every endpoint with something due)
  const tried = got.filter((g) => g.path === '/failing').length;
  await deliverer.deliverDue(() => new Date(T0.getTime() + 3_600_000), [failingId]);
  expect(got.filter((g) => g.path === '/failing').length).toBe(tried);
  // four days later (the delivery given up after 26 hours): still tried; five days, a new event: disabled, its owner told
  await deliverer.deliverDue(() => new Date(T0.getTime() + 4 * 86_400_000));
  expect(got.filter((g) => g.path === '/failing').length).toBe(tried + 1);
  expect((await t.runtime.db.webhooks.find(app.id, failing.endpoint.id))!.disabledAt).toBeNull();
  await queued(failingId, 'msg_failing_later');
  await deliverer.deliverDue(() => new Date(T0.getTime() + 5 * 86_400_000 + 1000));
  expect((await t.runtime.db.webhooks.find(app.id, failing.endpoint.id))!.disabledAt).toEqual(expect.any(Date));
  const [disabled] = await t.runtime.db.events.latest(app.id, 1);
  expect(disabled).toMatchObject({ type: 'webhook.disabled', actor: { kind: 'system' }, data: { reason: 'failing' } });
  const [mail] = await mailsTo(t.runtime, 'platform@example.com');
  expect(mail.subject).toContain('webhook endpoint');
  expect(mail.text).toContain(`http://127.0.0.1:${port}/failing`);
  // a disabled endpoint is sent nothing
  const sent = got.filter((g) => g.path === '/failing').length;
  await queued(failingId, 'msg_failing_disabled');
  await deliverer.deliverDue(() => new Date(T0.getTime() + 6 * 86_400_000));
  expect(got.filter((g) => g.path === '/failing').length).toBe(sent);
  status = 204;
});
