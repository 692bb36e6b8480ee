import { event, EVENT_TYPES, kept, recordSubject } from '../../src/domain/events';
import {
  CATCH_UP_AFTER_MS, isPrivateAddress, newWebhookSecret, STALE_AFTER_MS, subscribes, subscriptionProblem, WEBHOOK_TYPE_OF, WEBHOOK_TYPES, webhookBody, webhookUrlProblem,
} from '../../src/domain/webhooks';
import { watchWebhookSubscriptions, webhooks } from '../../src/usecases/subscribers/webhooks';

// docs/webhooks.md: what an endpoint may subscribe to, and which URLs it may have.

it('names every event type of the union, delivered or not; the account events as user.*', () => {
  expect(Object.keys(WEBHOOK_TYPE_OF).sort()).toEqual([...EVENT_TYPES].sort());
  for (const t of ['user.created', 'user.updated', 'user.deleted', 'user.erased', 'user.disabled', 'user.enabled', 'user.signed_in', 'user.password_changed',
    'user.email_verified', 'user.identity_linked', 'user.identity_unlinked', 'user.factor_added', 'user.factor_removed', 'user.sessions_ended',
    'user.refresh_reuse_detected', 'client.created', 'client.changed', 'client.secret_reset', 'client.deleted', 'settings.changed', 'ping']) {
    expect(WEBHOOK_TYPES).toContain(t);
  }
});

it('takes known types or * alone', () => {
  expect(subscriptionProblem(['user.created', 'ping'])).toBeUndefined();
  expect(subscriptionProblem(['*'])).toBeUndefined();
  expect(subscriptionProblem([])).toMatch(/at least one/);
  expect(subscriptionProblem(['*', 'user.created'])).toMatch(/alone/);
  expect(subscriptionProblem(['user.nope'])).toMatch(/unknown event type "user.nope"/);
  expect([subscribes('*', 'user.created'), subscribes(['user.created'], 'user.created'), subscribes(['user.created'], 'user.deleted')]).toEqual([true, true, false]);
});

it('judges loopback, private, link-local, metadata, shared, multicast and reserved addresses private, in IPv4 and IPv6', () => {
  for (const a of ['127.0.0.1', '127.8.9.10', '10.1.2.3', '172.16.0.1', '172.31.255.255', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0',
    '224.0.0.1', '255.255.255.255', '::1', '::', 'fc00::1', 'fd12::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1',
    '::127.0.0.1', '64:ff9b::7f00:1', '64:ff9b:1::a00:1', '2002:7f00:1::1', 'not an address',
    // site-local, IPv4-translated, mapped as a URL writes it, discard-only, the IETF's assignments (Teredo)
    'fec0::1', 'feff::1', '::ffff:0:7f00:1', '::ffff:0:a00:1', '::ffff:7f00:1', '100::1', '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', '2001:1ff::1']) {
    expect({ a, private: isPrivateAddress(a) }).toEqual({ a, private: true });
  }
  for (const a of ['93.184.215.14', '172.32.0.1', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8', '::ffff:808:808', '2001:4860:4860::8888', '2001:200::1']) expect({ a, private: isPrivateAddress(a) }).toEqual({ a, private: false });
});

it('wants https to a public host unless private targets are allowed', () => {
  expect(webhookUrlProblem('https://hooks.example.com/gatehouse', false)).toBeUndefined();
  for (const url of ['http://hooks.example.com/', 'https://127.0.0.1/', 'https://[::1]/', 'https://10.0.0.7/', 'https://169.254.169.254/latest/meta-data',
    'https://localhost/', 'https://api.localhost/', 'https://localhost./', 'https://conf.localhost./', 'https://conf.localhost../', 'https://[fec0::1]/',
    'https://[::ffff:0:7f00:1]/', 'https://[::ffff:127.0.0.1]/', 'https://[100::1]/', 'https://[2001::1]/', 'https://u:p@hooks.example.com/', 'https://hooks.example.com/#x', 'hooks.example.com', `https://x.example/${'a'.repeat(2050)}`]) {
    expect({ url: url.slice(0, 60), problem: webhookUrlProblem(url, false) }).toEqual({ url: url.slice(0, 60), problem: expect.any(String) });
  }
  expect(webhookUrlProblem('http://127.0.0.1:4000/hook', true)).toBeUndefined();
  expect(webhookUrlProblem('ftp://127.0.0.1/', true)).toMatch(/https/);
});

it('makes secrets as Standard Webhooks writes them', () => {
  const secret = newWebhookSecret();
  expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
  expect(Buffer.from(secret.slice(6), 'base64')).toHaveLength(24);
  expect(newWebhookSecret()).not.toBe(secret);
});

describe('what a delivery says and when an event leaves a row', () => {
  const acting = { actor: { kind: 'account' as const, accountId: 7, clientId: 'app' }, origin: { address: '192.0.2.1', userAgent: 'UA', requestId: 'r' } };

  it('names the account by its public id, who acted and through which client, and the event\'s own names; never the origin', () => {
    const signedIn = event('account.signed_in', 1, new Date('2026-11-27T10:00:00Z'), acting, recordSubject(7), { method: 'passkey' });
    expect(webhookBody(kept(signedIn), 'user.signed_in', 'uuid-7')).toEqual({
      type: 'user.signed_in', timestamp: '2026-11-27T10:00:00.000Z', data: { user_id: 'uuid-7', actor: 'account', client_id: 'app', method: 'passkey' },
    });
    const passkey = event('account.passkey_removed', 1, new Date(), acting, recordSubject(7), { passkey: 3 });
    expect(webhookBody(kept(passkey), 'user.factor_removed', 'u').data).toMatchObject({ method: 'passkey', passkey: 3 });
    const client = event('client.deleted', 1, new Date(), { actor: { kind: 'operator', name: 'ada' }, origin: {} }, { kind: 'client', id: 'c1' }, {});
    expect(webhookBody(kept(client), 'client.deleted', undefined).data).toEqual({ actor: 'operator', client_id: 'c1' });
    expect(JSON.stringify(webhookBody(kept(signedIn), 'user.signed_in', 'u'))).not.toMatch(/192\.0\.2\.1|UA|"r"|ada/);
  });

  it('leaves a fan-out row only for a type some endpoint of the application wants, a catch-up for a new endpoint (delayed), and reads again after an endpoint changed or when asked after a while', async () => {
    let list: { applicationId: number; types: '*' | string[] }[] = [{ applicationId: 1, types: ['user.signed_in'] }];
    let reads = 0;
    let now = 0;
    const subscriptions = watchWebhookSubscriptions({ listSubscriptions: async () => (reads++, list) }, { everyMs: 1_000, now: () => now });
    try {
      // before the first read: every event is wanted
      expect(subscriptions.wants(2, 'user.created')).toBe(true);
      await subscriptions.refresh();
      expect(subscriptions.wants(1, 'user.signed_in')).toBe(true);
      expect(subscriptions.wants(1, 'user.created')).toBe(false);
      expect(subscriptions.wants(2, 'user.signed_in')).toBe(false);
      const subscriber = webhooks(subscriptions);
      const signedIn = event('account.signed_in', 1, new Date(), acting, recordSubject(7), { method: 'password' });
      expect(subscriber.jobs!(signedIn)).toEqual([expect.objectContaining({ queue: 'webhooks', name: 'fan-out', entityId: 7, eventId: signedIn.eventId, payload: { type: 'user.signed_in' } })]);
      expect(subscriber.jobs!(event('account.signed_in', 2, new Date(), acting, recordSubject(7), { method: 'password' }))).toEqual([]);
      expect(subscriber.jobs!(event('account.exported', 1, new Date(), acting, recordSubject(7), {}))).toEqual([]);
      const at = new Date('2026-11-27T10:00:00Z');
      const added = event('webhook.added', 2, at, acting, { kind: 'webhook', id: 'ep_1' }, { host: 'h', types: '*', includeRecord: false });
      expect(subscriber.jobs!(added)).toEqual([expect.objectContaining({ name: 'catch-up', payload: { endpoint: 'ep_1', notBefore: new Date(at.getTime() + CATCH_UP_AFTER_MS).toISOString() } })]);
      // a change to an endpoint here is read at once
      list = [{ applicationId: 2, types: '*' }];
      await subscriber.afterCommit!([added]);
      expect(subscriptions.wants(2, 'user.created')).toBe(true);
      expect(subscriptions.wants(1, 'user.signed_in')).toBe(false);
      // not read for a while (an idle process, or reads that fail): every event is wanted, and a read is asked for
      const before = reads;
      list = undefined as never;
      now += STALE_AFTER_MS + 1;
      expect(subscriptions.wants(1, 'user.signed_in')).toBe(true);
      expect(reads).toBe(before + 1);
    } finally {
      subscriptions.close();
    }
  });
});
