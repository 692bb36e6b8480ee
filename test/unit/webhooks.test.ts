import { EVENT_TYPES } from '../../src/domain/events';
import { isPrivateAddress, newWebhookSecret, subscribes, subscriptionProblem, WEBHOOK_TYPE_OF, WEBHOOK_TYPES, webhookUrlProblem } from '../../src/domain/webhooks';

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
    '224.0.0.1', '255.255.255.255', '::1', '::', 'fc00::1', 'fd12::1', 'fe80::1', '::ffff:127.0.0.1', '::ffff:10.0.0.1', 'not an address']) {
    expect({ a, private: isPrivateAddress(a) }).toEqual({ a, private: true });
  }
  for (const a of ['93.184.215.14', '172.32.0.1', '8.8.8.8', '2606:4700::1111', '::ffff:8.8.8.8']) expect({ a, private: isPrivateAddress(a) }).toEqual({ a, private: false });
});

it('wants https to a public host unless private targets are allowed', () => {
  expect(webhookUrlProblem('https://hooks.example.com/gatehouse', false)).toBeUndefined();
  for (const url of ['http://hooks.example.com/', 'https://127.0.0.1/', 'https://[::1]/', 'https://10.0.0.7/', 'https://169.254.169.254/latest/meta-data',
    'https://localhost/', 'https://api.localhost/', 'https://u:p@hooks.example.com/', 'https://hooks.example.com/#x', 'hooks.example.com', `https://x.example/${'a'.repeat(2050)}`]) {
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
