import http from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import request from 'supertest';
import { createHttpServer } from '../../src/http-server';
import { ROUTES } from '../../src/http/routes';
import { createLogger } from '../../src/logger';
import { basic, onMysql, startTestApp, type TestApp } from '../helpers/backend';

/*
 * A bounded fuzz run through the front door: every route of the route table (and a few paths that
 * are none), then the pages, the account page and the OpenID provider's endpoints, both methods, parameters drawn from the names the API reads and from arbitrary
 * strings, values with control characters, NULs, JSON fragments, huge and odd Unicode, and every
 * way of presenting credentials. Whatever comes in, the answer is the spec's JSON body and never a
 * server error. The seed is printed, so a failure can be replayed with FUZZ_SEED.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 2500);
const SEED = Number(process.env.FUZZ_SEED ?? Date.now() % 2 ** 31);

const NAMES = [
  'client_id', 'client_secret', 'type_name', 'uuid', 'id', 'key_attribute', 'key_value', 'attributes', 'attribute_name',
  'for_client_id', 'redirect_uri', 'lifetime', 'transaction_state', 'creation_token', 'verification_code', 'grant_type', 'code',
  'refresh_token', 'access_token', 'flow', 'flow_version', 'locale', 'form', 'response_type', 'merge_token', 'signInEmailAddress',
  'currentPassword', 'emailAddress', 'newPassword', 'newPasswordConfirm', 'firstName', 'lastName', 'displayName', 'mobile',
  'birthdate[dateselect_year]', 'features', 'description', 'key', 'value', 'items', 'has_features', 'client_id_for_deletion',
  'toString', 'constructor', '__proto__', 'valueOf', 'hasOwnProperty',
];

const VALUES = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.constantFrom('', '\u0000', 'a\u0000b', '\u001b[31m', 'user', 'email', '"ada@example.com"', '42', '-1', '1e999', 'null', '[]', '{}',
    '{"email":"fuzz@example.com","password":"x"}', '["owner"]', 'HEAD', 'en-US', 'zz-ZZ', 'standard', '1', 'code_and_token',
    'https://app.example.com/cb', 'javascript:alert(1)', 'authorization_code', 'refresh_token', 'emailVerified', 'signInForm',
    "' OR 1=1 --", 'jose\u0301@example.com', '\ud800', 'a'.repeat(17_000)),
  fc.json({ maxDepth: 2 }),
);

const PARAMS = fc.dictionary(fc.oneof(fc.constantFrom(...NAMES), fc.string({ maxLength: 12 })), VALUES, { maxKeys: 8 });

const PATHS = [...ROUTES.map((r) => r.path), '/', '/nope', '/oauth/../clients/list', '/entity%00', '/health'];

/** The pages (an error page when refused) and the OpenID provider's endpoints (its JSON when refused). */
const PAGE_PATHS = [
  '/signin', '/signin/code', '/signin/passkey', '/signin/enroll', '/signin/forgot', '/register', '/register/passkey', '/register/continue',
  '/account', '/account/reauth', '/account/identities/link', '/account/password', '/account/profile', '/reset-password', '/verify-email',
  '/undo-email-change', '/oidc/auth', `/oidc/auth/${'u'.repeat(30)}`, '/oidc/session/end', '/oidc/session/end/confirm', `/oidc/interaction/${'i'.repeat(30)}`,
];
const PROVIDER_JSON = ['/oidc/token', '/oidc/token/introspection', '/oidc/token/revocation', '/oidc/me', '/oidc/jwks', '/.well-known/openid-configuration'];
/** What a hostile request brings to the pages: NULs, other control characters, lone surrogates, values longer than any field. */
const HOSTILE = fc.oneof(
  VALUES,
  fc.constantFrom('\u0000', 'a\u0000', '\u0007', '\u001f', '\u007f', '\ud800', 'a\udfffb', '\u202e', 'x'.repeat(16_385), 'y'.repeat(60_000)),
);
const PAGE_NAMES = [...NAMES, 'redirect_uri', 'response_type', 'scope', 'state', 'nonce', 'prompt', 'claims', 'acr_values', 'id_token_hint',
  'post_logout_redirect_uri', 'xsrf', 'logout', 'csrf', 'identifier', 'credential', 'mfa_token', 'login_hint', 'ui_locales', 'token', 'client_secret'];

let t: TestApp;
let owner: string;
let login: string;
/** The api's own HTTP server (its timeouts and parser error bodies), as production runs it. */
let server: http.Server;
let base: string;

beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ACCOUNT: '1000000/60', LOGIN_LIMIT_ADDRESS: '1000000/60', MAIL_LIMIT_ADDRESS: '1000000/3600' } });
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  login = t.local.clients.login.client_id;
  server = createHttpServer(t.app, t.runtime.config.http, createLogger('silent'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
  await t.close();
});

it(`answers ${RUNS} arbitrary requests with the spec's JSON, never a 5xx (${onMysql ? 'MariaDB' : 'SQLite'})`, async () => {
  const AUTH = fc.constantFrom<(() => string | undefined)>(
    () => undefined, () => owner, () => basic('nobody', 'nothing'), () => 'Basic %%%', () => 'Signature x:y', () => 'OAuth abc',
    () => 'Bearer x', () => `Basic ${Buffer.from('a\u0000:b').toString('base64')}`,
  );
  let tried = 0;
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...PATHS), fc.constantFrom('GET', 'POST'), PARAMS, AUTH, fc.boolean(), async (path, method, params, auth, withLogin) => {
      const body = new URLSearchParams({ ...(withLogin ? { client_id: login, locale: 'en-US' } : {}), ...params }).toString();
      let req = method === 'GET' ? request(base).get(`${path}?${body}`) : request(base).post(path).type('form').send(body);
      const authorization = auth();
      if (authorization !== undefined) req = req.set('Authorization', authorization);
      const res = await req;
      tried++;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      expect(res.status).toBeLessThan(500);
      // the landing page is the one page among these paths, answered or refused as a page (a request the HTTP parser refuses still gets JSON)
      if (method === 'GET' && path === '/' && res.headers['content-type'].startsWith('text/html')) return void expect([200, 400]).toContain(res.status);
      expect(res.headers['content-type']).toMatch(/^application\/json/);
      expect(['ok', 'error']).toContain(res.body.stat);
      if (res.body.stat === 'error') {
        expect(res.body).toMatchObject({ code: expect.any(Number), error: expect.any(String), error_description: expect.any(String), request_id: expect.any(String) });
      }
    }),
    { numRuns: RUNS, seed: SEED, endOnFailure: true },
  );
  process.stdout.write(`fuzz (${onMysql ? 'MariaDB' : 'SQLite'}, seed ${SEED}): ${tried} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`);
  expect(tried).toBe(RUNS);
});

it(`answers ${Math.round(RUNS / 2)} arbitrary requests to the pages and the OpenID provider with a page or JSON, never a 5xx (${onMysql ? 'MariaDB' : 'SQLite'})`, async () => {
  let tried = 0;
  const statuses = new Map<number, number>();
  const params = fc.dictionary(fc.oneof(fc.constantFrom(...PAGE_NAMES), fc.string({ maxLength: 12 })), HOSTILE, { maxKeys: 6 });
  await fc.assert(
    fc.asyncProperty(fc.constantFrom(...PAGE_PATHS, ...PROVIDER_JSON), fc.constantFrom('GET', 'POST'), params, fc.boolean(), async (path, method, sent, withLogin) => {
      const body = new URLSearchParams({ ...(withLogin ? { client_id: login, locale: 'en-US' } : {}), ...sent }).toString();
      // an address past Node's header limit is refused before any route (431): sent as a form instead
      const asQuery = method === 'GET' && body.length < 12_000;
      const res = await (asQuery ? request(base).get(`${path}?${body}`) : request(base).post(path).type('form').send(body));
      tried++;
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      expect([path, res.status]).toEqual([path, res.status < 500 ? res.status : 'a server error']);
      expect(res.headers['x-request-id']).toEqual(expect.any(String));
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      if (res.status >= 400) {
        expect(res.headers['content-type']).toMatch(/^(text\/html|application\/json)/);
        expect(res.text).not.toMatch(/ at [^ ]+\.(js|ts):\d+/);
      }
      if (res.status >= 400 && res.headers['content-type'].startsWith('text/html')) expect(res.headers['content-security-policy']).toMatch(/default-src 'none'/);
    }),
    { numRuns: Math.round(RUNS / 2), seed: SEED, endOnFailure: true },
  );
  process.stdout.write(`fuzz of the pages (${onMysql ? 'MariaDB' : 'SQLite'}, seed ${SEED}): ${tried} requests, statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`);
  expect(tried).toBe(Math.round(RUNS / 2));
});
