import { createConfig, lintFromString } from '@redocly/openapi-core';
import request from 'supertest';
import { ENDPOINT_DOCS } from '../../src/http/openapi';
import { ROUTES } from '../../src/http/routes';
import { startTestApp, type TestApp } from '../helpers/backend';

let t: TestApp;
beforeAll(async () => {
  t = await startTestApp();
});
afterAll(() => t.close());

describe('/openapi.json', () => {
  it('describes exactly the routes of the table, with their methods, parameters and schemes', async () => {
    const res = await request(t.app).get('/openapi.json');
    expect(res.status).toBe(200);
    const doc = res.body as { openapi: string; paths: Record<string, Record<string, any>> };
    expect(doc.openapi).toBe('3.1.0');
    // the route table's endpoints, the two API endpoints outside it, and the OpenID provider's
    const openId = ['/.well-known/openid-configuration', '/oidc/auth', '/oidc/token', '/oidc/me', '/oidc/jwks', '/oidc/session/end', '/oidc/token/introspection', '/oidc/token/revocation', '/oidc/device/auth', '/oidc/device'];
    expect(Object.keys(doc.paths).sort()).toEqual([...ROUTES.map((r) => r.path), '/api/v2/auth_info', '/widget_data/flows/{app}/{flow}/{version}/{locale}.json', ...openId].sort());
    // the provider's own discovery document names the same endpoints
    const discovery = (await request(t.app).get('/.well-known/openid-configuration')).body as Record<string, string>;
    for (const key of ['authorization_endpoint', 'token_endpoint', 'userinfo_endpoint', 'jwks_uri', 'end_session_endpoint', 'introspection_endpoint', 'revocation_endpoint', 'device_authorization_endpoint']) {
      expect(openId).toContain(new URL(discovery[key]).pathname);
    }
    expect(doc.paths['/oidc/token'].post.security).toEqual(expect.arrayContaining([{ basic: [] }, { privateKeyJwt: [] }]));
    expect(Object.keys(ENDPOINT_DOCS).sort()).toEqual(ROUTES.map((r) => r.path).sort());
    for (const route of ROUTES) {
      expect(Object.keys(doc.paths[route.path]).sort()).toEqual(route.methods.map((m) => m.toLowerCase()).sort());
    }
    const token = doc.paths['/oauth/token'].post;
    expect(token.requestBody.content['application/x-www-form-urlencoded'].schema.required).toEqual(['grant_type']);
    expect(token.security).toEqual(expect.arrayContaining([{ basic: [] }, { signature: [] }, {}]));
    expect(token.responses['401'].content['application/json'].schema).toEqual({ $ref: '#/components/schemas/ErrorBody' });
    expect(doc.paths['/entity.find'].get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['filter', 'sort_on', 'client_id', 'client_secret']));
    // a login client named by client_id alone, or an app's backend with its secret
    expect(doc.paths['/oauth/auth_native_traditional'].post.security).toEqual([{ basic: [] }, { signature: [] }, {}]);
  });

  it('is a valid OpenAPI 3.1 document (Redocly\'s validator, recommended rules)', async () => {
    const source = (await request(t.app).get('/openapi.json')).text;
    const config = await createConfig({ extends: ['recommended'], rules: { 'info-contact': 'off', 'no-server-example.com': 'off', 'operation-4xx-response': 'off' } });
    const problems = await lintFromString({ source, absoluteRef: 'openapi.json', config });
    const errors = problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => `${p.ruleId}: ${p.message} at ${p.location[0]?.pointer}`)).toEqual([]);
    // and the validator does find a broken document
    const broken = JSON.parse(source);
    broken.paths['/entity'].get.responses = 'none';
    delete broken.info;
    const found = await lintFromString({ source: JSON.stringify(broken), absoluteRef: 'broken.json', config });
    expect(found.filter((p) => p.severity === 'error').length).toBeGreaterThanOrEqual(2);
  });
});
