import request from 'supertest';
import { basic, manualClock, startTestApp, type TestApp } from '../helpers/backend';
import { mailsTo } from '../helpers/mail-files';
import { oathtool } from '../helpers/totp';

// docs/lifecycle.md: an application's backend disables (until a time, with a reason)
// and enables an account, signs it out everywhere and resets its second factor; each is the
// account's activity and the audit log's entry under the client that did it, and each error of the
// spec's body names its argument. TOTP codes come from oathtool.

const clock = manualClock(new Date(Math.floor(Date.now() / 30_000) * 30_000 + 5_000));
let t: TestApp;
let owner: string;
let login: { client_id: string; client_secret: string };
const PASSWORD = 'correct horse battery';
const BACK = 'https://app.example.com/cb';

const asOwner = (path: string, params: Record<string, string>, auth = owner) => request(t.app).post(path).set('Authorization', auth).type('form').send(params);
const post = (path: string, params: Record<string, string>) => request(t.app).post(path).type('form').send(params);
const signIn = (email: string, extra: Record<string, string> = {}) => post('/oauth/auth_native_traditional', {
  client_id: login.client_id, locale: 'en-US', signInEmailAddress: email, currentPassword: PASSWORD, ...extra,
});
const grant = (body: Record<string, string>) => request(t.app).post('/oauth/token').set('Authorization', basic(login.client_id, login.client_secret)).type('form').send(body);
const asUser = (token: string) => request(t.app).post('/entity').set('Authorization', `OAuth ${token}`).type('form').send({});

beforeAll(async () => {
  t = await startTestApp({ clock, env: { LOGIN_LIMIT_ADDRESS: '10000/900', LOGIN_LIMIT_ACCOUNT: '10000/900' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  login = t.local.clients.login;
});
afterAll(() => t.close());

async function account() {
  const email = `life-${Math.random().toString(36).slice(2)}@example.com`;
  const created = await asOwner('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD, givenName: 'Ada' }) });
  expect(created.body.stat).toBe('ok');
  return { email, id: created.body.id as number, uuid: created.body.uuid as string };
}

const activityTypes = async (uuid: string) => (await asOwner('/entity.activity', { uuid })).body.results as Array<{ type: string; actor: string; client_id: string | null; [k: string]: unknown }>;

describe('/entity.disable and /entity.enable', () => {
  it('20 parallel sign-ins and grants of a disabled account all fail; its live tokens stop at once; at its until it signs in again', async () => {
    const a = await account();
    const live = (await signIn(a.email, { response_type: 'code_and_token', redirect_uri: BACK })).body;
    const pair = (await grant({ grant_type: 'authorization_code', code: live.authorization_code, redirect_uri: BACK })).body;
    expect(pair.refresh_token).toEqual(expect.any(String));
    const unexchanged = (await signIn(a.email, { response_type: 'code', redirect_uri: BACK })).body.authorization_code as string;
    expect((await asUser(live.access_token)).body.stat).toBe('ok');

    const until = new Date(clock.now().getTime() + 3_600_000);
    const disabled = await asOwner('/entity.disable', { type_name: 'user', uuid: a.uuid, until: until.toISOString(), reason: 'chargeback under review' });
    expect(disabled.body).toMatchObject({ stat: 'ok', disabled: { until: expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6} \+0000$/), reason: 'chargeback under review' } });
    expect(disabled.body.sessions_ended).toBeGreaterThanOrEqual(4);

    const attempts = await Promise.all([
      ...Array.from({ length: 8 }, () => signIn(a.email)),
      ...Array.from({ length: 4 }, () => grant({ grant_type: 'refresh_token', refresh_token: pair.refresh_token })),
      ...Array.from({ length: 4 }, () => grant({ grant_type: 'authorization_code', code: unexchanged, redirect_uri: BACK })),
      ...Array.from({ length: 2 }, () => asUser(live.access_token)),
      ...Array.from({ length: 2 }, () => asUser(pair.access_token)),
    ]);
    expect(attempts.map((r) => r.body.stat)).toEqual(Array(20).fill('error'));
    expect(attempts.filter((r) => r.body.access_token || r.body.authorization_code)).toEqual([]);
    // the right password is told why; the others say what any spent credential says
    expect(attempts[0].body.error_description).toBe('this account is disabled by an operator of the service');

    // one millisecond before its until it is still disabled; at it, it signs in again
    clock.advance(3_600_000 - 1);
    expect((await signIn(a.email)).body.stat).toBe('error');
    clock.advance(1);
    const again = await signIn(a.email, { response_type: 'code_and_token', redirect_uri: BACK });
    expect(again.body.stat).toBe('ok');
    const refreshed = await grant({ grant_type: 'authorization_code', code: again.body.authorization_code, redirect_uri: BACK });
    expect((await grant({ grant_type: 'refresh_token', refresh_token: refreshed.body.refresh_token })).body.stat).toBe('ok');
    // the old sessions stay ended
    expect((await asUser(live.access_token)).body.code).toBe(413);

    const types = await activityTypes(a.uuid);
    expect(types.find((e) => e.type === 'account.disabled')).toMatchObject({
      actor: 'client', client_id: t.local.clients.owner.client_id, reason: 'chargeback under review', until: until.toISOString(),
    });
    // enabling after the until is over changes nothing and records nothing
    expect((await asOwner('/entity.enable', { uuid: a.uuid })).body).toEqual({ stat: 'ok', was_disabled: false });
  });

  it('enable: signs in again at once, recorded under the client; the audit log names the client for both', async () => {
    const a = await account();
    expect((await asOwner('/entity.disable', { key_attribute: 'email', key_value: JSON.stringify(a.email) })).body).toMatchObject({
      stat: 'ok', disabled: { until: null, reason: null },
    });
    expect((await signIn(a.email)).body.stat).toBe('error');
    expect((await asOwner('/entity.enable', { id: String(a.id) })).body).toEqual({ stat: 'ok', was_disabled: true });
    expect((await signIn(a.email)).body.stat).toBe('ok');
    const audit = (await asOwner('/audit/list', { subject: `record:${a.id}` })).body.results as Array<{ type: string; actor: Record<string, unknown> }>;
    expect(audit.map((e) => e.type)).toEqual(expect.arrayContaining(['account.disabled', 'account.enabled']));
    for (const e of audit.filter((x) => x.type.startsWith('account.'))) expect(JSON.stringify(e.actor)).toContain(t.local.clients.owner.client_id);
  });

  it('bad input gets the spec\'s error body naming the argument', async () => {
    const a = await account();
    const cases: Array<[Record<string, string>, number, string, RegExp]> = [
      [{ uuid: a.uuid, until: 'next tuesday' }, 200, 'until', /must be a time/],
      [{ uuid: a.uuid, until: new Date(clock.now().getTime() - 1000).toISOString() }, 200, 'until', /not in the future/],
      [{ uuid: a.uuid, reason: 'x'.repeat(501) }, 200, 'reason', /longer than 500/],
      [{}, 100, 'uuid', /identify the record/],
      [{ uuid: '00000000-0000-4000-8000-000000000000' }, 310, 'uuid', /./],
    ];
    for (const [params, code, argument, message] of cases) {
      const res = await asOwner('/entity.disable', params);
      expect(res.body).toMatchObject({ stat: 'error', code, request_id: expect.any(String) });
      if (code !== 310) expect(res.body.argument_name).toBe(argument);
      expect(res.body.error_description).toMatch(message);
    }
    // a login client may not; nor may a person's own access token
    const byLogin = await asOwner('/entity.disable', { uuid: a.uuid }, basic(login.client_id, login.client_secret));
    expect(byLogin.body).toMatchObject({ stat: 'error', code: 403 });
    const token = (await signIn(a.email)).body.access_token as string;
    const byToken = await request(t.app).post('/entity.disable').set('Authorization', `OAuth ${token}`).type('form').send({ uuid: a.uuid });
    expect(byToken.body).toMatchObject({ stat: 'error', code: 402 });
    // nothing happened
    expect((await signIn(a.email)).body.stat).toBe('ok');
  });
});

describe('/entity.signOut and /entity.resetSecondFactor', () => {
  it('sign out everywhere ends every session and tells the person by email', async () => {
    const a = await account();
    const s1 = (await signIn(a.email)).body.access_token as string;
    const s2 = (await signIn(a.email, { response_type: 'code_and_token', redirect_uri: BACK })).body;
    const res = await asOwner('/entity.signOut', { uuid: a.uuid });
    expect(res.body).toMatchObject({ stat: 'ok', sessions_ended: expect.any(Number) });
    expect(res.body.sessions_ended).toBeGreaterThanOrEqual(3);
    expect((await asUser(s1)).body.code).toBe(413);
    expect((await grant({ grant_type: 'authorization_code', code: s2.authorization_code, redirect_uri: BACK })).body.stat).toBe('error');
    expect((await signIn(a.email)).body.stat).toBe('ok');
    const mails = await mailsTo(t.runtime, a.email);
    expect(mails.map((m) => m.subject)).toContain('You were signed out of your Gatehouse account everywhere');
    expect((await activityTypes(a.uuid)).find((e) => e.type === 'account.signed_out')).toMatchObject({ actor: 'client', client_id: t.local.clients.owner.client_id });
  });

  it('reset the second factor: the authenticator and recovery codes go, the password alone signs in, the person is told', async () => {
    const a = await account();
    const first = (await signIn(a.email)).body.access_token as string;
    const enrolled = await post('/oauth/totp_enroll_native', { access_token: first });
    const confirmed = await post('/oauth/totp_confirm_native', { access_token: first, code: oathtool(enrolled.body.secret, clock.now()) });
    expect(confirmed.body.stat).toBe('ok');
    const recovery = confirmed.body.recovery_codes[0] as string;
    const paused = await signIn(a.email);
    expect(paused.body.code).toBe(214);

    expect((await asOwner('/entity.resetSecondFactor', { uuid: a.uuid })).body).toEqual({ stat: 'ok', removed: true });
    // the paused sign-in cannot finish with a recovery code: they are gone with the sign-ins waiting for one
    const finish = await post('/oauth/mfa_verify_native', { client_id: login.client_id, locale: 'en-US', mfa_token: paused.body.mfa_token, recoveryCode: recovery });
    expect(finish.body.stat).toBe('error');
    expect((await signIn(a.email)).body).toMatchObject({ stat: 'ok', access_token: expect.any(String) });
    expect((await mailsTo(t.runtime, a.email)).map((m) => m.subject)).toContain('Two-step sign-in was reset for your Gatehouse account');
    // nothing left to reset: nothing changes, no email
    expect((await asOwner('/entity.resetSecondFactor', { uuid: a.uuid })).body).toEqual({ stat: 'ok', removed: false });
    expect((await mailsTo(t.runtime, a.email)).filter((m) => m.subject?.startsWith('Two-step sign-in was reset'))).toHaveLength(1);
  });
});
