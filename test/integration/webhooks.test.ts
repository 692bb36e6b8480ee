import request from 'supertest';
import { basic, startTestApp, type TestApp } from '../helpers/backend';
import { until } from '../helpers/processes';

// docs/webhooks.md#endpoints: an application's owner adds, lists, rotates and removes its webhook
// endpoints; each change is in the audit log; a secret is shown once; each spec error the calls
// return has its argument named.

let t: TestApp;
let owner: string;
let login: string;
beforeAll(async () => {
  t = await startTestApp();
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  login = basic(t.local.clients.login.client_id, t.local.clients.login.client_secret);
});
afterAll(() => t?.close());

const call = (path: string, params: Record<string, string>, auth = owner) => request(t.app).post(path).set('Authorization', auth).type('form').send(params);

it('adds an endpoint with its secret shown once, lists it without, rotates the secret, removes it; the audit log names each change', async () => {
  const added = await call('/webhooks/add', { url: 'https://hooks.example.com/gatehouse', events: 'user.created, user.deleted', description: 'billing', include_record: 'true' });
  expect(added.body).toMatchObject({
    stat: 'ok', result: { id: expect.stringMatching(/^ep_[0-9a-f]{24}$/), url: 'https://hooks.example.com/gatehouse', events: ['user.created', 'user.deleted'], description: 'billing', include_record: true, disabled: null },
  });
  const { id, secret } = added.body.result as { id: string; secret: string };
  expect(secret).toMatch(/^whsec_/);
  const every = await call('/webhooks/add', { url: 'https://hooks.example.com/all', events: '["*"]' });
  expect(every.body.result.events).toBe('*');

  const listed = await call('/webhooks/list', {});
  expect(listed.body.results.map((e: { id: string }) => e.id)).toEqual([id, every.body.result.id]);
  expect(JSON.stringify(listed.body)).not.toContain('whsec_');

  const rotated = await call('/webhooks/rotate_secret', { id });
  expect(rotated.body).toMatchObject({ stat: 'ok', secret: expect.stringMatching(/^whsec_/), previous_valid_until: expect.any(String) });
  expect(rotated.body.secret).not.toBe(secret);
  const stored = (await t.runtime.db.webhooks.find((await t.runtime.db.applications.findByName('local'))!.id, id))!;
  expect([stored.secretSealed, stored.previousSecretSealed].join(' ')).not.toContain('whsec_');
  expect(t.runtime.services.box.open(stored.secretSealed, id)).toBe(rotated.body.secret);
  expect(t.runtime.services.box.open(stored.previousSecretSealed!, id)).toBe(secret);

  expect((await call('/webhooks/remove', { id })).body.stat).toBe('ok');
  expect((await call('/webhooks/remove', { id })).body).toMatchObject({ stat: 'error', argument_name: 'id' });
  const audit = await call('/audit/list', { type: 'webhook.' });
  expect(audit.body.results.map((e: { type: string }) => e.type)).toEqual(['webhook.removed', 'webhook.secret_rotated', 'webhook.added', 'webhook.added']);
  expect(JSON.stringify(audit.body)).not.toContain('whsec_');
});

it('refuses what it cannot use, naming the argument', async () => {
  const cases: [Record<string, string>, string][] = [
    [{ events: 'user.created' }, 'url'],
    [{ url: 'https://hooks.example.com/x' }, 'events'],
    [{ url: 'http://hooks.example.com/x', events: '*' }, 'url'],
    [{ url: 'https://127.0.0.1/x', events: '*' }, 'url'],
    [{ url: 'https://169.254.169.254/latest', events: '*' }, 'url'],
    [{ url: 'https://[::1]/x', events: '*' }, 'url'],
    [{ url: 'https://10.0.0.8/x', events: '*' }, 'url'],
    [{ url: 'https://hooks.localhost/x', events: '*' }, 'url'],
    [{ url: 'not a url', events: '*' }, 'url'],
    [{ url: 'https://hooks.example.com/x', events: 'user.nope' }, 'events'],
    [{ url: 'https://hooks.example.com/x', events: '*,user.created' }, 'events'],
    [{ url: 'https://hooks.example.com/x', events: '[1]' }, 'events'],
    [{ url: 'https://hooks.example.com/x', events: '["user.created"' }, 'events'],
    [{ url: 'https://hooks.example.com/x', events: '*', include_record: 'yes' }, 'include_record'],
    [{ url: 'https://hooks.example.com/x', events: '*', description: 'x'.repeat(201) }, 'description'],
  ];
  for (const [params, argument] of cases) {
    const res = await call('/webhooks/add', params);
    expect({ params, body: res.body }).toMatchObject({ params, body: { stat: 'error', argument_name: argument, error_description: expect.any(String), request_id: expect.any(String) } });
  }
  expect((await call('/webhooks/rotate_secret', { id: 'ep_nope' })).body).toMatchObject({ stat: 'error', argument_name: 'id' });
  // owner clients only
  const notOwner = await call('/webhooks/list', {}, login);
  expect(notOwner.body).toMatchObject({ stat: 'error' });
  expect(notOwner.body.error).not.toBe('ok');
});

it('keeps at most 20 endpoints per application, under parallel adds too', async () => {
  const app = (await t.runtime.db.applications.findByName('local'))!;
  const before = (await t.runtime.db.webhooks.list(app.id)).length;
  const answers = await Promise.all(Array.from({ length: 25 }, (_, i) => call('/webhooks/add', { url: `https://hooks.example.com/p${i}`, events: 'ping' })));
  expect(answers.filter((a) => a.body.stat === 'ok')).toHaveLength(20 - before);
  expect((await t.runtime.db.webhooks.list(app.id)).length).toBe(20);
});

it('takes private addresses where the operator allows them (WEBHOOKS_ALLOW_PRIVATE)', async () => {
  const internal = await startTestApp({ env: { WEBHOOKS_ALLOW_PRIVATE: 'true' } });
  try {
    const res = await request(internal.app).post('/webhooks/add').set('Authorization', basic(internal.local.clients.owner.client_id, internal.local.clients.owner.client_secret))
      .type('form').send({ url: 'http://127.0.0.1:4000/hook', events: '*' });
    expect(res.body.stat).toBe('ok');
  } finally {
    await internal.close();
  }
});

it('a test sends a ping delivered like any event; the deliveries list it, and refuse what they cannot use', async () => {
  // (room for one more endpoint)
  const all = await call('/webhooks/list', {});
  expect((await call('/webhooks/remove', { id: all.body.results[0].id })).body.stat).toBe('ok');
  const added = await call('/webhooks/add', { url: 'https://hooks.example.com/ping', events: 'user.created' });
  const { id } = added.body.result as { id: string };
  const ping = await call('/webhooks/test', { id });
  expect(ping.body).toMatchObject({ stat: 'ok', message_id: expect.stringMatching(/^msg_[0-9a-f]{32}$/) });
  // (sent once the new endpoint's first seconds are read back; hooks.example.com takes no delivery: the attempt failed, and waits for the next)
  await until('the ping was tried', async () => (await call('/webhooks/deliveries', { id, limit: '5' })).body.results[0]?.attempts === 1, 30_000);
  const listed = await call('/webhooks/deliveries', { id, limit: '5' });
  expect(listed.body.results).toEqual([expect.objectContaining({
    message_id: ping.body.message_id, type: 'ping', state: 'pending', attempts: 1, last_status: null, last_answer: expect.any(String), next_attempt: expect.any(String),
  })]);
  for (const [params, argument] of [[{ id: 'ep_nope' }, 'id'], [{ id, limit: '0' }, 'limit'], [{ id, limit: '101' }, 'limit'], [{ id, limit: 'x' }, 'limit'], [{}, 'id']] as const) {
    expect((await call('/webhooks/deliveries', params)).body).toMatchObject({ stat: 'error', argument_name: argument });
  }
  expect((await call('/webhooks/test', { id: 'ep_nope' })).body).toMatchObject({ stat: 'error', argument_name: 'id' });
});

it('disables and enables an endpoint, sends deliveries again, and refuses what it cannot use, naming the argument', async () => {
  const [endpoint] = (await call('/webhooks/list', {})).body.results as { id: string }[];
  const id = endpoint.id;
  expect((await call('/webhooks/disable', { id })).body.stat).toBe('ok');
  expect((await call('/webhooks/list', {})).body.results.find((e: { id: string }) => e.id === id).disabled).toEqual(expect.any(String));
  expect((await call('/webhooks/enable', { id })).body.stat).toBe('ok');
  expect((await call('/webhooks/list', {})).body.results.find((e: { id: string }) => e.id === id).disabled).toBeNull();
  expect((await call('/webhooks/redeliver', { id, since: '2026-01-01 00:00:00' })).body).toMatchObject({ stat: 'ok', queued: 0 });
  const cases: [string, Record<string, string>, string][] = [
    ['/webhooks/disable', { id: 'ep_nope' }, 'id'], ['/webhooks/enable', {}, 'id'], ['/webhooks/redeliver', { id: 'ep_nope', since: '2026-01-01 00:00:00' }, 'id'],
    ['/webhooks/redeliver', { id }, 'delivery'], ['/webhooks/redeliver', { id, delivery: '1', since: '2026-01-01 00:00:00' }, 'since'],
    ['/webhooks/redeliver', { id, delivery: 'one' }, 'delivery'], ['/webhooks/redeliver', { id, delivery: '999999999' }, 'delivery'],
    ['/webhooks/redeliver', { id, since: 'yesterday' }, 'since'], ['/webhooks/redeliver', { id, since: '2999-01-01 00:00:00' }, 'since'],
  ];
  for (const [path, params, argument] of cases) {
    const res = await call(path, params);
    expect({ path, params, body: res.body }).toMatchObject({ path, params, body: { stat: 'error', argument_name: argument, error_description: expect.any(String), request_id: expect.any(String) } });
  }
  const audit = await call('/audit/list', { type: 'webhook.' });
  expect(audit.body.results.slice(0, 3).map((e: { type: string }) => e.type)).toEqual(['webhook.redelivered', 'webhook.enabled', 'webhook.disabled']);
});
