import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import request from 'supertest';
import type { CreatedApplication } from '../../src/domain/applications';
import { buildApp } from '../../src/app';
import { formatSignatureDate } from '../../src/domain/signature';
import { sha256Hex } from '../../src/domain/secrets';
import { ROUTES, type Route } from '../../src/http/routes';
import { basic, FLOWS, startTestApp, type TestApp, createApp } from '../helpers/backend';

let t: TestApp;
let app: ReturnType<typeof buildApp>;
let ownerId: string;
let ownerSecret: string;
let demo: CreatedApplication;

// A route that admits access tokens and tells who called, to exercise the OAuth scheme.
const whoami: Route = {
  path: '/test/whoami', methods: ['GET', 'POST'], params: 'query+body', auth: ['access_token', 'basic'], kinds: [], errors: 'capture',
  handler: async (ctx) => ({
    principal: ctx.principal.kind,
    entity: ctx.principal.kind === 'entity' ? ctx.principal.token.entityId : null,
    app: ctx.app.name,
  }),
};

/** HMAC-SHA1 computed by openssl, outside the project's code. */
function opensslSignature(secret: string, text: string): string {
  return execFileSync('openssl', ['dgst', '-sha1', '-hmac', secret, '-binary'], { input: text }).toString('base64');
}

beforeAll(async () => {
  t = await startTestApp();
  ownerId = t.local.clients.owner.client_id;
  ownerSecret = t.local.clients.owner.client_secret;
  demo = await createApp(t.runtime, 'demo', FLOWS);
  app = buildApp({ services: t.runtime.services, defaultApp: 'local', routes: [...ROUTES, whoami] });
});
afterAll(() => t.close());

describe('Basic and client_id/client_secret parameters', () => {
  it('accepts Basic', async () => {
    const res = await request(app).get('/clients/list').set('Authorization', basic(ownerId, ownerSecret));
    expect(res.body.stat).toBe('ok');
  });

  it('accepts client_id and client_secret in the query or the body', async () => {
    expect((await request(app).get('/clients/list').query({ client_id: ownerId, client_secret: ownerSecret })).body.stat).toBe('ok');
    expect((await request(app).post('/clients/list').type('form').send({ client_id: ownerId, client_secret: ownerSecret })).body.stat).toBe('ok');
  });

  it('missing credentials: 402 saying what to send', async () => {
    const res = await request(app).get('/clients/list');
    expect(res.body).toMatchObject({ stat: 'error', code: 402, error: 'invalid_client_credentials' });
    expect(res.body.error_description).toContain('Basic');
  });

  it('wrong credentials: 402, the same for an unknown client and a wrong secret', async () => {
    const wrongSecret = await request(app).get('/clients/list').set('Authorization', basic(ownerId, 'f'.repeat(32)));
    const unknown = await request(app).get('/clients/list').set('Authorization', basic('0'.repeat(32), ownerSecret));
    for (const res of [wrongSecret, unknown]) expect(res.body).toMatchObject({ code: 402, error: 'invalid_client_credentials' });
    expect(wrongSecret.body.error_description).toBe(unknown.body.error_description);
    const malformed = await request(app).get('/clients/list').set('Authorization', 'Basic !!!notbase64');
    expect(malformed.body).toMatchObject({ code: 402 });
    const scheme = await request(app).get('/clients/list').set('Authorization', 'Bearer abc');
    expect(scheme.body).toMatchObject({ code: 402 });
    expect(scheme.body.error_description).toContain('Bearer');
    const noSecret = await request(app).get('/clients/list').query({ client_id: ownerId });
    expect(noSecret.body).toMatchObject({ code: 402 });
  });
});

describe('applications are isolated', () => {
  it('routes by the first label of the Host header, unknown hosts to the default application', async () => {
    const demoOwner = basic(demo.clients.owner.client_id, demo.clients.owner.client_secret);
    const res = await request(app).get('/clients/list').set('Host', 'demo.localhost:3000').set('Authorization', demoOwner);
    expect(res.body.stat).toBe('ok');
    const ids = res.body.results.map((c: { client_id: string }) => c.client_id);
    expect(ids).toEqual(expect.arrayContaining([demo.clients.owner.client_id, demo.clients.login.client_id]));
    expect(ids).not.toContain(ownerId);
    const fallback = await request(app).get('/test/whoami').set('Host', 'nosuchapp.example.com').set('Authorization', basic(ownerId, ownerSecret));
    expect(fallback.body.app).toBe('local');
  });

  it("a client of another application is refused (402) and cannot touch the other's clients", async () => {
    const demoOwner = basic(demo.clients.owner.client_id, demo.clients.owner.client_secret);
    const res = await request(app).get('/clients/list').set('Host', 'localhost').set('Authorization', demoOwner);
    expect(res.body).toMatchObject({ stat: 'error', code: 402 });
    const reach = await request(app).post('/clients/delete').set('Host', 'demo.localhost').type('form')
      .set('Authorization', demoOwner).send({ client_id_for_deletion: ownerId });
    expect(reach.body).toMatchObject({ code: 200, argument_name: 'client_id_for_deletion' });
    expect((await request(app).get('/clients/list').set('Authorization', basic(ownerId, ownerSecret))).body.stat).toBe('ok');
  });
});

describe('Signature (keyed HMAC)', () => {
  const signed = (path: string, params: Record<string, string>, when = new Date(), secret = ownerSecret) => {
    const date = formatSignatureDate(when);
    const lines = Object.entries(params).map(([k, v]) => `${k}=${v}\n`).sort().join('');
    return { date, authorization: `Signature ${ownerId}:${opensslSignature(secret, `${path}\n${date}\n${lines}`)}` };
  };

  it('accepts a signed call with no parameters (curl-able: GET /clients/list)', async () => {
    const { date, authorization } = signed('/clients/list', {});
    const res = await request(app).get('/clients/list').set('Date', date).set('Authorization', authorization);
    expect(res.body.stat).toBe('ok');
  });

  it('accepts a signed POST whose raw values need URL-encoding; client_id is not signed', async () => {
    const params = { description: 'signed & sealed = yes', features: '["direct_access"]' };
    const { date, authorization } = signed('/clients/add', params);
    const res = await request(app).post('/clients/add').type('form').set('Date', date).set('Authorization', authorization)
      .send({ ...params, client_id: ownerId });
    expect(res.body).toMatchObject({ stat: 'ok', description: 'signed & sealed = yes', features: ['direct_access'] });
  });

  it('refuses a bad signature and a stale Date with the same error', async () => {
    const bad = signed('/clients/list', {}, new Date(), 'not-the-secret');
    const stale = signed('/clients/list', {}, new Date(Date.now() - 6 * 60_000));
    const future = signed('/clients/list', {}, new Date(Date.now() + 6 * 60_000));
    const tampered = signed('/clients/add', { description: 'a' });
    const bodies = await Promise.all([
      request(app).get('/clients/list').set('Date', bad.date).set('Authorization', bad.authorization),
      request(app).get('/clients/list').set('Date', stale.date).set('Authorization', stale.authorization),
      request(app).get('/clients/list').set('Date', future.date).set('Authorization', future.authorization),
      request(app).post('/clients/add').type('form').set('Date', tampered.date).set('Authorization', tampered.authorization).send({ description: 'b' }),
      request(app).get('/clients/list').set('Authorization', signed('/clients/list', {}).authorization),
    ]);
    for (const res of bodies) {
      expect(res.body).toMatchObject({ stat: 'error', code: 402, error: 'invalid_client_credentials' });
      expect(res.body.error_description).toBe(bodies[0].body.error_description);
    }
  });

  it('every route that takes client credentials takes a Signature too (the original server library signs every call)', async () => {
    const withCredentials = ROUTES.filter((r) => r.auth.includes('basic'));
    expect(withCredentials.map((r) => r.path)).toEqual(expect.arrayContaining(['/oauth/token', '/versions/entity', '/entity.find', '/clients/list']));
    for (const route of withCredentials) {
      expect(route.auth).toContain('signature');
      const params = { type_name: 'user' };
      const { date, authorization } = signed(route.path, params);
      const res = await request(app).post(route.path).type('form').set('Date', date).set('Authorization', authorization).send(params);
      // authenticated: whatever the call then says about its parameters, never a refusal of the credentials
      expect([res.body.code, route.path]).not.toEqual([402, route.path]);
      expect(res.status).toBeLessThan(500);
    }
  });

  it('exchanges a code with a signed /oauth/token, once', async () => {
    const entity = await request(app).post('/entity.create').set('Authorization', basic(ownerId, ownerSecret)).type('form')
      .send({ type_name: 'user', attributes: '{"email":"signed-token@example.com"}' });
    const redirect = 'https://app.example.com/done';
    const issued = await request(app).post('/access/getAuthorizationCode').set('Authorization', basic(ownerId, ownerSecret)).type('form')
      .send({ type_name: 'user', uuid: entity.body.uuid, redirect_uri: redirect });
    const params = { grant_type: 'authorization_code', code: issued.body.authorizationCode, redirect_uri: redirect };
    const { date, authorization } = signed('/oauth/token', params);
    const send = () => request(app).post('/oauth/token').type('form').set('Date', date).set('Authorization', authorization).send(params);
    const res = await send();
    expect(res.body).toMatchObject({ stat: 'ok', access_token: expect.any(String), refresh_token: expect.any(String) });
    const replay = await send();
    expect(replay.status).toBe(401);
    expect(replay.body).toMatchObject({ code: 402, error_description: expect.stringContaining('already accepted once') });
  });

  it('accepts a signature within the 5-minute window', async () => {
    const { date, authorization } = signed('/clients/list', {}, new Date(Date.now() - 4 * 60_000));
    expect((await request(app).get('/clients/list').set('Date', date).set('Authorization', authorization)).body.stat).toBe('ok');
  });
});

describe('OAuth access tokens', () => {
  async function issueToken(appName: string, expiresInMs: number): Promise<{ token: string; entityId: number }> {
    const { models, applications } = t.runtime.db;
    const application = (await applications.findByName(appName))!;
    const now = new Date();
    const entity = await models.Entity.create({
      application_id: application.id, type_name: 'user', uuid: randomUUID(), attributes: '{}', created: now, last_updated: now, version: 1,
    });
    const token = `tok${randomUUID().replace(/-/g, '')}`;
    await models.Credential.create({
      application_id: application.id, kind: 'access_token', value_hash: sha256Hex(token), entity_id: entity.id,
      expires_at: new Date(now.getTime() + expiresInMs), created_at: now,
    });
    return { token, entityId: Number(entity.id) };
  }

  it('authorizes with the OAuth header and with the access_token parameter', async () => {
    const { token, entityId } = await issueToken('local', 3600_000);
    const header = await request(app).get('/test/whoami').set('Authorization', `OAuth ${token}`);
    expect(header.body).toEqual({ stat: 'ok', principal: 'entity', entity: entityId, app: 'local' });
    const param = await request(app).post('/test/whoami').type('form').send({ access_token: token });
    expect(param.body).toMatchObject({ principal: 'entity', entity: entityId });
  });

  it('refuses an expired token, an unknown one, and one of another application (413)', async () => {
    const expired = await issueToken('local', -1000);
    const foreign = await issueToken('demo', 3600_000);
    for (const token of [expired.token, 'unknown-token', foreign.token]) {
      const res = await request(app).get('/test/whoami').set('Authorization', `OAuth ${token}`);
      expect(res.body).toMatchObject({ stat: 'error', code: 413, error: 'invalid_access_token' });
    }
    const inDemo = await request(app).get('/test/whoami').set('Host', 'demo.localhost').set('Authorization', `OAuth ${foreign.token}`);
    expect(inDemo.body).toMatchObject({ principal: 'entity', app: 'demo' });
  });

  it('is refused where the endpoint does not take access tokens', async () => {
    const { token } = await issueToken('local', 3600_000);
    const res = await request(app).get('/clients/list').set('Authorization', `OAuth ${token}`);
    expect(res.body).toMatchObject({ code: 402 });
  });
});
