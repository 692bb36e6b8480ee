import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { stored } from '../helpers/stored';
import { exportAccount } from '../../src/usecases/account/export-account';
import { oathtool } from '../helpers/totp';

// docs/lifecycle.md#export: the right of access. /entity.export answers what the API shows of the
// record and everything kept beside it (identities, second factor, passkeys, sessions, activity,
// history), and no secret: no password hash, token, authenticator secret, recovery code or key.

const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 5_000));
let t: TestApp;
let owner: string;
const PASSWORD = 'correct horse battery';

const asOwner = (route: string, params: Record<string, string>, auth = owner) => request(t.app).post(route).set('Authorization', auth).type('form').send(params);
const post = (route: string, params: Record<string, string>) => request(t.app).post(route).type('form').send(params);

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
});
afterAll(() => t.close());

it('matches what the API shows, with identities, authenticator, passkeys, sessions, activity and every version; no secret', async () => {
  const login = t.local.clients.login.client_id;
  const email = 'export-me@example.com';
  const created = await asOwner('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada' }) });
  const { uuid, id } = created.body as { uuid: string; id: number };
  clock.advance(1000);
  await asOwner('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ givenName: 'Augusta' }) });
  clock.advance(1000);
  const signedIn = await post('/oauth/auth_native_traditional', {
    client_id: login, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD, response_type: 'code_and_token', redirect_uri: 'https://app.example.com/cb',
  });
  const token = signedIn.body.access_token as string;
  const enrolled = await post('/oauth/totp_enroll_native', { access_token: token });
  const confirmed = await post('/oauth/totp_confirm_native', { access_token: token, code: oathtool(enrolled.body.secret, clock.now()) });
  expect(confirmed.body.stat).toBe('ok');
  const app = (await t.runtime.db.applications.findByName('local'))!;
  await t.runtime.db.social.profiles.insert({ applicationId: app.id, entityId: id, provider: 'idp', identifier: 'https://idp.example.test/ada', data: { name: 'Ada' } }, clock.now());
  await t.runtime.db.transaction((tx) => t.runtime.db.passkeys.add({
    applicationId: app.id, entityId: id, credentialId: 'cred-export', publicKey: 'pQECAyYgASFYIPUBLICKEY', counter: 0, deviceType: 'multiDevice', backedUp: true,
    transports: ['internal'], aaguid: '00000000-0000-0000-0000-000000000000', name: 'Ada’s laptop', createdAt: clock.now(),
  }, tx));
  await t.runtime.queue.idle!();

  const res = await asOwner('/entity.export', { type_name: 'user', uuid });
  expect(res.body.stat).toBe('ok');
  const doc = res.body.result;
  const shown = (await asOwner('/entity', { type_name: 'user', uuid })).body.result;
  expect(doc.record).toEqual(shown);
  expect(doc).toMatchObject({
    format: 'gatehouse-account-export/1', application: 'local',
    account: { has_password: true, disabled: null },
    identities: [{ provider: 'idp', identifier: 'https://idp.example.test/ada', profile: { name: 'Ada' } }],
    second_factor: { authenticator: 'on', recovery_codes_left: confirmed.body.recovery_codes.length },
    passkeys: [{ name: 'Ada’s laptop', device_type: 'multiDevice', backed_up: true, transports: ['internal'] }],
  });
  expect(doc.sessions).toEqual(expect.arrayContaining([expect.objectContaining({ kind: 'access_token', client_id: login, methods: ['pwd'] })]));
  expect(doc.activity.map((e: { type: string }) => e.type)).toEqual(expect.arrayContaining(['account.registered', 'account.signed_in', 'account.second_factor_added']));
  // every version, oldest first: created, renamed, signed in (lastLogin), the authenticator, the identity is not a version (written beneath)
  const versions = Number((await stored(t.runtime.db).rows<{ n: number }>('SELECT COUNT(*) AS n FROM entity_versions WHERE entity_id = ?', [id]))[0].n);
  expect(doc.history).toHaveLength(versions);
  expect(doc.history[0].record.givenName).toBe('Ada');
  expect(doc.history[1].record.givenName).toBe('Augusta');
  expect(doc.history.map((v: { version: number }) => v.version)).toEqual([...doc.history.map((v: { version: number }) => v.version)].sort((a, b) => a - b));

  // no secret: the password hash, the tokens and code, the authenticator's secret, the recovery codes, the passkey's public key
  const text = JSON.stringify(res.body);
  const record = (await t.runtime.db.records.find(app.id, { id }))!;
  for (const secret of [record.passwordHash!, token, signedIn.body.authorization_code, enrolled.body.secret, ...confirmed.body.recovery_codes, 'PUBLICKEY', '$argon2']) {
    expect(text).not.toContain(secret);
  }

  // the use case directly answers the same document's data
  const direct = await exportAccount(t.runtime.services, { app, entityId: id });
  expect(direct.history).toHaveLength(versions);
  expect(direct.record.uuid).toBe(uuid);
});

it('bad input and who may: a reader may export, a login client may not; an unknown record is 310', async () => {
  expect((await asOwner('/entity.export', {})).body).toMatchObject({ stat: 'error', code: 100, argument_name: 'uuid' });
  expect((await asOwner('/entity.export', { uuid: '00000000-0000-4000-8000-000000000000' })).body).toMatchObject({ stat: 'error', code: 310, argument_name: 'uuid' });
  const loginClient = t.local.clients.login;
  expect((await asOwner('/entity.export', { id: '1' }, basic(loginClient.client_id, loginClient.client_secret))).body).toMatchObject({ stat: 'error', code: 403 });
});
