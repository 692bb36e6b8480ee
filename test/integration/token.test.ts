import request from 'supertest';
import { SqlError } from '../../src/db/sql';
import { basic, manualClock, onMysql, startTestApp, type TestApp, skipUnless } from '../helpers/backend';
import { stored } from '../helpers/stored';
import { sha256Hex } from '../../src/domain/secrets';

let t: TestApp;
const clock = manualClock();
let owner: string;
let login: { id: string; secret: string; auth: string };
let reader: { id: string; secret: string; auth: string };
let userUuid: string;
const REDIRECT = 'https://app.example.com/callback';

async function addClient(features: string[]) {
  const res = await request(t.app).post('/clients/add').set('Authorization', owner).type('form')
    .send({ description: features.join('+'), features: JSON.stringify(features) });
  return { id: res.body.client_id as string, secret: res.body.client_secret as string, auth: basic(res.body.client_id, res.body.client_secret) };
}

/** An authorization code issued by the owner for `forClient`. */
async function code(forClient = login.id, extra: Record<string, string> = {}): Promise<string> {
  const res = await request(t.app).get('/access/getAuthorizationCode').set('Authorization', owner)
    .query({ type_name: 'user', uuid: userUuid, redirect_uri: REDIRECT, for_client_id: forClient, ...extra });
  expect(res.body.stat).toBe('ok');
  return res.body.authorizationCode;
}

const exchange = (c: string, auth = login.auth, redirect = REDIRECT) =>
  request(t.app).post('/oauth/token').set('Authorization', auth).type('form').send({ grant_type: 'authorization_code', code: c, redirect_uri: redirect });
const refresh = (token: string, auth = login.auth) =>
  request(t.app).post('/oauth/token').set('Authorization', auth).type('form').send({ grant_type: 'refresh_token', refresh_token: token });
const readWith = (accessToken: string) => request(t.app).get('/entity').set('Authorization', `OAuth ${accessToken}`);

beforeAll(async () => {
  t = await startTestApp({ clock });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  login = { id: t.local.clients.login.client_id, secret: t.local.clients.login.client_secret, auth: basic(t.local.clients.login.client_id, t.local.clients.login.client_secret) };
  reader = await addClient(['direct_read_access']);
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: '{"email":"grace@example.com"}' });
  userUuid = created.body.uuid;
});
afterAll(() => t.close());

describe('grant_type=authorization_code', () => {
  it('exchanges a code for a token pair with transaction_state, once', async () => {
    const c = await code(login.id, { transaction_state: '{"return_to":"/cart","n":[1,2]}' });
    const res = await exchange(c);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      stat: 'ok', access_token: expect.stringMatching(/^[0-9a-f]{40}$/), refresh_token: expect.stringMatching(/^[0-9a-f]{40}$/),
      expires_in: 3600, transaction_state: { return_to: '/cart', n: [1, 2] },
    });
    expect((await readWith(res.body.access_token)).body.result.uuid).toBe(userUuid);
    const again = await exchange(c);
    expect(again.status).toBe(400);
    expect(again.body).toMatchObject({ stat: 'error', code: 413, error: 'invalid_request', sub_error: 'no_access_grant' });
    // the replay revoked what the code was exchanged for (RFC 6749 4.1.2)
    expect((await readWith(res.body.access_token)).body).toMatchObject({ code: 413 });
    expect((await refresh(res.body.refresh_token)).body).toMatchObject({ code: 200 });
  });

  it('accepts client_id and client_secret parameters instead of Basic; answers no transaction_state when none was given', async () => {
    const res = await request(t.app).get('/oauth/token')
      .query({ grant_type: 'authorization_code', code: await code(), redirect_uri: REDIRECT, client_id: login.id, client_secret: login.secret });
    expect(res.body.stat).toBe('ok');
    expect(res.body).not.toHaveProperty('transaction_state');
  });

  it('a code issued for another client: 413, and the code still works for its client', async () => {
    const c = await code(login.id);
    const res = await exchange(c, reader.auth);
    expect(res.body).toMatchObject({ code: 413, sub_error: 'no_access_grant' });
    expect((await exchange(c)).body.stat).toBe('ok');
  });

  it('a redirect_uri that differs: 420 with received and expected values', async () => {
    const c = await code();
    const res = await exchange(c, login.auth, 'https://evil.example.com/');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      stat: 'error', code: 420, error: 'invalid_request', sub_error: 'redirect_uri_mismatch',
      received_value: 'https://evil.example.com/', expected_value: REDIRECT,
    });
  });

  it('an expired code and an unknown code: 413', async () => {
    const c = await code(login.id, { lifetime: '1' });
    clock.advance(1_100);
    expect((await exchange(c)).body).toMatchObject({ code: 413, sub_error: 'no_access_grant' });
    expect((await exchange('f'.repeat(40))).body).toMatchObject({ code: 413 });
  });

  it('missing parameters: 100 naming them; an unknown grant_type: 200 invalid_request', async () => {
    for (const [params, argument] of [[{ code: 'x', redirect_uri: REDIRECT }, 'grant_type'], [{ grant_type: 'authorization_code', redirect_uri: REDIRECT }, 'code'],
      [{ grant_type: 'authorization_code', code: 'x' }, 'redirect_uri'], [{ grant_type: 'refresh_token' }, 'refresh_token']] as const) {
      const res = await request(t.app).post('/oauth/token').set('Authorization', login.auth).type('form').send(params);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({ stat: 'error', code: 100, error: 'missing_argument', argument_name: argument });
    }
    const bad = await request(t.app).post('/oauth/token').set('Authorization', login.auth).type('form').send({ grant_type: 'password' });
    expect(bad.body).toMatchObject({ code: 200, error: 'invalid_request', sub_error: 'invalid_argument', argument_name: 'grant_type' });
  });

  it('a DPoP proof: refused with what to do (this endpoint issues bearer tokens only), the code not spent', async () => {
    const c = await code();
    const proof = 'eyJ0eXAiOiJkcG9wK2p3dCIsImFsZyI6IkVTMjU2In0.eyJqdGkiOiJ4In0.c2ln';
    const res = await request(t.app).post('/oauth/token').set('Authorization', login.auth).set('DPoP', proof).type('form')
      .send({ grant_type: 'authorization_code', code: c, redirect_uri: REDIRECT });
    expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_request', argument_name: 'DPoP', error_description: expect.stringContaining('/oidc/token'), request_id: expect.any(String) });
    expect((await exchange(c)).body.stat).toBe('ok');
  });

  it('bad client credentials: 402 invalid_client with HTTP 401; a client of no allowed kind: 403', async () => {
    const res = await exchange(await code(), basic(login.id, '0'.repeat(32)));
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ stat: 'error', code: 402, error: 'invalid_client', sub_error: 'invalid_client_credentials' });
    const none = await request(t.app).post('/oauth/token').type('form').send({ grant_type: 'refresh_token', refresh_token: 'x' });
    expect(none.body).toMatchObject({ code: 402, error: 'invalid_client' });
    const nobody = await addClient([]);
    expect((await exchange(await code(nobody.id), nobody.auth)).body).toMatchObject({ code: 403 });
  });
});

describe('grant_type=refresh_token', () => {
  it('rotates: each exchange returns a new pair; the spent token revokes the whole family', async () => {
    const first = (await exchange(await code())).body;
    const second = (await refresh(first.refresh_token)).body;
    expect(second).toEqual({ stat: 'ok', access_token: expect.any(String), refresh_token: expect.any(String), expires_in: 3600 });
    expect(second.refresh_token).not.toBe(first.refresh_token);
    const third = (await refresh(second.refresh_token)).body;
    expect(third.stat).toBe('ok');
    expect((await readWith(third.access_token)).body.stat).toBe('ok');

    const reuse = await refresh(first.refresh_token);
    expect(reuse.status).toBe(400);
    expect(reuse.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_request', sub_error: 'invalid_argument', argument_name: 'refresh_token' });
    // every token of the family is now dead
    expect((await readWith(third.access_token)).body).toMatchObject({ code: 413 });
    expect((await refresh(third.refresh_token)).body).toMatchObject({ code: 200, sub_error: 'invalid_argument' });
  });

  it('refuses an unknown token, an expired one, and one of another client (without spending it)', async () => {
    expect((await refresh('0'.repeat(40))).body).toMatchObject({ code: 200, error: 'invalid_request' });
    const pair = (await exchange(await code())).body;
    expect((await refresh(pair.refresh_token, reader.auth)).body).toMatchObject({ code: 200, error: 'invalid_request' });
    expect((await refresh(pair.refresh_token)).body.stat).toBe('ok');

    await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'refresh_token_lifetime', value: '1' });
    clock.advance(5_100); // the application cache lives 5 s
    const short = (await exchange(await code())).body;
    clock.advance(1_100);
    expect((await refresh(short.refresh_token)).body).toMatchObject({ code: 200, error: 'invalid_request' });
    await request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send({ key: 'refresh_token_lifetime', value: '7776000' });
  });
});

describe('single use under concurrency', () => {
  it('20 parallel redemptions of one authorization code: exactly one succeeds', async () => {
    const c = await code();
    const results = await Promise.all(Array.from({ length: 20 }, () => exchange(c)));
    expect(results.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
    for (const r of results.filter((x) => x.body.stat !== 'ok')) expect(r.body).toMatchObject({ code: 413, sub_error: 'no_access_grant' });
  });

  it('20 parallel redemptions of one refresh token: exactly one succeeds', async () => {
    clock.advance(5_100); // let the restored refresh lifetime reach the cache
    const pair = (await exchange(await code())).body;
    const results = await Promise.all(Array.from({ length: 20 }, () => refresh(pair.refresh_token)));
    expect(results.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
    for (const r of results.filter((x) => x.body.stat !== 'ok')) expect(r.body).toMatchObject({ code: 200, error: 'invalid_request' });
  });

  it('50 spent refresh tokens of 50 families presented at once: every one refused with 400 invalid_request, each family revoked', async () => {
    const pairs = await Promise.all(Array.from({ length: 50 }, async () => (await exchange(await code())).body));
    const successors = await Promise.all(pairs.map(async (p) => (await refresh(p.refresh_token)).body));
    expect(successors.every((s) => s.stat === 'ok')).toBe(true);
    const reused = await Promise.all(pairs.map((p) => refresh(p.refresh_token)));
    for (const r of reused) {
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_request' });
    }
    const revoked = await Promise.all(successors.map((s) => refresh(s.refresh_token)));
    expect(revoked.every((r) => r.body.code === 200)).toBe(true);
  });

  it('20 parallel uses of one verification code: exactly one succeeds', async () => {
    const issued = await request(t.app).get('/access/getVerificationCode').set('Authorization', owner)
      .query({ type_name: 'user', uuid: userUuid, attribute_name: 'emailVerified' });
    const results = await Promise.all(Array.from({ length: 20 }, () =>
      request(t.app).get('/access/useVerificationCode').query({ verification_code: issued.body.verification_code })));
    expect(results.filter((r) => r.body.stat === 'ok')).toHaveLength(1);
  });
});

skipUnless(onMysql, 'transactions on MySQL/MariaDB need a mysql: DATABASE_URL')('transactions on MySQL/MariaDB', () => {
  let applicationId: number;
  beforeAll(async () => {
    applicationId = (await t.runtime.db.applications.findByName(t.local.app))!.id;
  });
  const row = (valueHash: string) => ({
    applicationId, kind: 'access_token' as const, valueHash, entityId: null, clientId: null, forClientId: null,
    redirectUri: null, extra: null, family: null, expiresAt: new Date(Date.now() + 60_000),
  });
  const isStored = async (valueHash: string) => (await stored(t.runtime.db).count('credentials', 'value_hash = ?', [valueHash])) > 0;

  it.each([
    ['transaction', 1213, 'ER_LOCK_DEADLOCK'],
    ['transaction', 1467, 'ER_AUTOINC_READ_FAILED'],
  ] as const)('%s: run again from the start after errno %i (%s), the failed attempt rolled back', async (kind, errno, code) => {
    const { db } = t.runtime;
    const first = `first-${kind}-${errno}`.padEnd(64, '0');
    const second = `second-${kind}-${errno}`.padEnd(64, '0');
    let attempts = 0;
    const outcome = await db[kind](async (tx) => {
      attempts++;
      await db.credentials.insert([row(attempts === 1 ? first : second)], new Date(), tx);
      if (attempts === 1) throw new SqlError('deadlock found', errno, code);
      return 'committed';
    });
    expect({ outcome, attempts }).toEqual({ outcome: 'committed', attempts: 2 });
    expect([await isStored(first), await isStored(second)]).toEqual([false, true]);
  });

  it.each(['transaction'] as const)('%s: do not run again after any other error', async (kind) => {
    let attempts = 0;
    await expect(t.runtime.db[kind](async () => {
      attempts++;
      throw new SqlError('Data too long', 1406, 'ER_DATA_TOO_LONG');
    })).rejects.toThrow('Data too long');
    expect(attempts).toBe(1);
  });
});

describe('access_token_lifetime', () => {
  const setDefault = (body: Record<string, string>) => request(t.app).post('/settings/set_default').set('Authorization', owner).type('form').send(body);

  it('an application shortens its access tokens: expires_in says so and the token ends then; out of range, the setting is refused with what it takes', async () => {
    for (const value of ['59', '86401', '0300', 'an hour']) {
      const res = await setDefault({ key: 'access_token_lifetime', value });
      expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', error_description: expect.stringContaining('from 60 to 86400') });
      expect(res.body.request_id).toEqual(expect.any(String));
    }
    expect((await setDefault({ key: 'access_token_lifetime', value: '300' })).body.stat).toBe('ok');
    clock.advance(5_100); // the application cache lives 5 s
    try {
      const pair = (await exchange(await code())).body;
      expect(pair).toMatchObject({ stat: 'ok', expires_in: 300 });
      const next = (await refresh(pair.refresh_token)).body;
      expect(next).toMatchObject({ stat: 'ok', expires_in: 300 });
      const [row] = await stored(t.runtime.db).rows<{ expires_at: string; created_at: string }>('SELECT expires_at, created_at FROM credentials WHERE value_hash = ?', [sha256Hex(next.access_token)]);
      expect(Math.round((new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()) / 1000)).toBe(300);
      clock.advance(299_000);
      expect((await readWith(next.access_token)).body.stat).toBe('ok');
      clock.advance(2_000);
      expect((await readWith(next.access_token)).body).toMatchObject({ stat: 'error', code: 413 });
      // the refresh token lives on: its own lifetime
      expect((await refresh(next.refresh_token)).body).toMatchObject({ stat: 'ok', expires_in: 300 });
    } finally {
      await setDefault({ key: 'access_token_lifetime', value: '3600' });
    }
    clock.advance(5_100);
    expect((await exchange(await code())).body.expires_in).toBe(3600);
  });
});
