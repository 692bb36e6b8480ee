import request from 'supertest';
import { ENDPOINT_DOCS } from '../../src/http/openapi';
import { ROUTES } from '../../src/http/routes';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

/**
 * The OpenAPI document and the server agree: for every endpoint, a call that sends every parameter
 * the document marks required, but one, answers 100 missing_argument naming that one.
 */
let t: TestApp;
let uuid: string;
let accessToken: string;
beforeAll(async () => {
  t = await startTestApp();
  const owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  const created = await request(t.app).post('/entity.create').set('Authorization', owner).type('form')
    .send({ type_name: 'user', attributes: JSON.stringify({ email: 'doc@example.com', password: 'correct horse battery' }) });
  uuid = created.body.uuid;
  const token = await request(t.app).post('/access/getAccessToken').set('Authorization', owner).type('form').send({ type_name: 'user', uuid });
  accessToken = token.body.accessToken;
});
afterAll(() => t.close());

/** A value each parameter may take, plausible enough to pass the checks before the missing one. */
const sample = (name: string): string => ({
  type_name: 'user', locale: 'en-US', redirect_uri: 'http://localhost:3000/reset-password', token: 'a'.repeat(40), verification_code: 'nothing-here',
  grant_type: 'refresh_token', refresh_token: 'r'.repeat(40), code: 'c'.repeat(40), date: '2026-01-01 00:00:00', signature: 'x', identifier_to_remove: 'https://idp.example#x',
  attributes: '{"email":"new@example.com"}', all_attributes: '[{"email":"bulk@example.com"}]', timestamp: '2026-01-01 00:00:00.000000 +0000',
  attribute_name: 'emailVerified', features: '["login_client"]', client_id_for_deletion: 'nobody', name: 'idp', issuer: 'https://idp.example.test',
  provider_client_id: 'x', provider_client_secret: 'y', key: 'some_key', value: 'v', items: '{"a":"b"}',
} as Record<string, string>)[name] ?? 'x';

const cases = ROUTES.flatMap((route) => {
  const doc = ENDPOINT_DOCS[route.path];
  const required = doc.params.filter((p) => p.endsWith('!')).map((p) => p.slice(0, -1));
  return required.map((missing) => [route.path, missing, required] as const);
});

it.each(cases)('%s without %s: 100 naming it', async (path, missing, required) => {
  const route = ROUTES.find((r) => r.path === path)!;
  // the login endpoints name their client by client_id; the others authenticate it
  const login = route.errors === 'login';
  const params: Record<string, string> = Object.fromEntries(required.filter((p) => p !== missing).map((p) => [p, sample(p)]));
  if (params.client_id !== undefined) params.client_id = t.local.clients.login.client_id;
  if (params.access_token !== undefined) params.access_token = accessToken;
  // a record named as these endpoints name it (one of uuid, id, key_attribute + key_value)
  if (['/access/getVerificationCode', '/access/getAuthorizationCode', '/access/getAccessToken', '/versions/entity'].includes(path)) params.uuid = uuid;
  if (path === '/clients/set_features' || path === '/clients/reset_secret') params.for_client_id = params.for_client_id && t.local.clients.login.client_id;
  let call = request(t.app).post(path).type('form');
  // an endpoint only a person calls (with their access token)
  const personal = !login && !route.auth.includes('basic') && route.auth.includes('access_token');
  if (personal) params.access_token = accessToken;
  if (!login && !personal) {
    const who = route.kinds.includes('owner') || route.kinds.length === 0 ? t.local.clients.owner : t.local.clients.login;
    call = call.set('Authorization', basic(who.client_id, who.client_secret));
  }
  const res = await call.send(params);
  expect({ path, body: res.body }).toMatchObject({ path, body: { stat: 'error', code: 100, error: 'missing_argument', argument_name: missing } });
});
