import http from 'node:http';
import net from 'node:net';
import zlib from 'node:zlib';
import request from 'supertest';
import { buildApp } from '../../src/app';
import { ROUTES, type Route } from '../../src/http/routes';
import { createHttpServer } from '../../src/http-server';
import { createLogger } from '../../src/logger';
import { basic, startTestApp, type TestApp } from '../helpers/backend';

let t: TestApp;
let owner: string;
let app: ReturnType<typeof buildApp>;

// A route that fails the way a bug would, to prove nothing of it leaks.
const exploding: Route = {
  path: '/test/explode', methods: ['GET'], params: 'query+body', auth: ['none'], kinds: [], errors: 'capture',
  handler: async () => {
    throw new Error('db password hunter2 at /srv/secret.ts:12');
  },
};

beforeAll(async () => {
  t = await startTestApp();
  owner = basic(t.local.clients.owner.client_id, t.local.clients.owner.client_secret);
  app = buildApp({ services: t.runtime.services, defaultApp: 'local', routes: [...ROUTES, exploding] });
});
afterAll(() => t.close());

/** Every error body: JSON, never HTML, with the spec's fields. */
function expectErrorBody(res: request.Response, code: number, error: string): void {
  expect(res.headers['content-type']).toMatch(/^application\/json/);
  expect(res.text).not.toMatch(/<html|<pre|at .*\.(js|ts):\d+/i);
  expect(res.body).toMatchObject({ stat: 'error', code, error });
  expect(typeof res.body.error_description).toBe('string');
  expect(res.body.error_description.length).toBeGreaterThan(10);
  expect(res.body.request_id).toMatch(/^[0-9a-f]{16}$/);
  expect(res.headers['x-request-id']).toBe(res.body.request_id);
}

describe('malformed requests get the spec error body', () => {
  it('unknown route: 404 JSON', async () => {
    const res = await request(app).get('/no/such/endpoint');
    expect(res.status).toBe(404);
    expectErrorBody(res, 404, 'unknown_endpoint');
    expect(res.body.error_description).toContain('/no/such/endpoint');
  });

  it('GET / is a landing page for operators (links to the API description and health); POST / is still a JSON 404', async () => {
    const res = await request(app).get('/');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/html/);
    expect(res.headers['content-security-policy']).toContain("default-src 'none'");
    for (const href of ['/openapi.json', '/healthz', '/readyz']) expect(res.text).toContain(`href="${href}"`);
    expect(res.text).not.toContain(t.local.clients.owner.client_id);
    const post = await request(app).post('/').type('form').send({});
    expect(post.status).toBe(404);
    expectErrorBody(post, 404, 'unknown_endpoint');
  });

  it('a lone % in a page path: 400 naming the path, not 500', async () => {
    for (const path of ['/social/%/callback', '/social/%zz/start', '/widget_data/flows/%/1/en-US/flow.json']) {
      const res = await request(app).get(path);
      expect(res.status).toBe(400);
      expectErrorBody(res, 200, 'invalid_argument');
      expect(res.body).toMatchObject({ argument_name: 'path' });
    }
  });

  it('a method the endpoint does not accept: 405 with Allow', async () => {
    const res = await request(app).delete('/clients/list').set('Authorization', owner);
    expect(res.status).toBe(405);
    expect(res.headers.allow).toBe('GET, POST');
    expectErrorBody(res, 200, 'invalid_argument');
  });

  it('malformed body (declared gzip, is not): 400', async () => {
    const res = await request(app).post('/clients/list').set('Authorization', owner)
      .set('Content-Type', 'application/x-www-form-urlencoded').set('Content-Encoding', 'gzip').send('not gzip at all');
    expect(res.status).toBe(400);
    expectErrorBody(res, 200, 'invalid_argument');
  });

  it('a gzip-compressed form body is read, and responses are gzip when asked', async () => {
    const res = await request(app).post('/settings/set').set('Authorization', owner)
      .set('Content-Type', 'application/x-www-form-urlencoded').set('Content-Encoding', 'gzip')
      .serialize((body: Buffer) => body as unknown as string) // superagent would re-encode a Buffer as a form
      .send(zlib.gzipSync('key=zipped&value=yes'));
    expect(res.body).toEqual({ stat: 'ok', result: false });
    const items = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`key${i}`, `value number ${i}`]));
    await request(app).post('/settings/set_multi').set('Authorization', owner).type('form').send({ items: JSON.stringify(items) });
    const listed = await request(app).get('/settings/items').set('Authorization', owner).set('Accept-Encoding', 'gzip');
    expect(listed.headers['content-encoding']).toBe('gzip');
    expect(listed.body.result).toMatchObject({ zipped: 'yes', key59: 'value number 59' });
  });

  it('oversized body: 413', async () => {
    const res = await request(app).post('/clients/add').set('Authorization', owner).type('form')
      .send({ description: 'x'.repeat(200_000) });
    expect(res.status).toBe(413);
    expectErrorBody(res, 200, 'invalid_argument');
  });

  it('too many parameters: 413', async () => {
    const body = Array.from({ length: 500 }, (_, i) => `p${i}=1`).join('&');
    const res = await request(app).post('/clients/list').set('Authorization', owner).type('form').send(body);
    expect(res.status).toBe(413);
    expectErrorBody(res, 200, 'invalid_argument');
  });

  it('wrong content type: 415', async () => {
    const res = await request(app).post('/clients/add').set('Authorization', owner).send({ description: 'json' });
    expect(res.status).toBe(415);
    expectErrorBody(res, 200, 'invalid_argument');
    expect(res.body.error_description).toContain('application/x-www-form-urlencoded');
  });

  it('unsupported charset: 415', async () => {
    const res = await request(app).post('/clients/list').set('Authorization', owner)
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=latin2').send('a=1');
    expect(res.status).toBe(415);
  });

  it('a parameter sent twice, or in both query and body: 200 invalid_argument naming it', async () => {
    const twice = await request(app).post('/settings/get').set('Authorization', owner).type('form').send('key=a&key=b');
    expectErrorBody(twice, 200, 'invalid_argument');
    expect(twice.body.argument_name).toBe('key');
    const both = await request(app).post('/settings/get?key=a').set('Authorization', owner).type('form').send('key=b');
    expect(both.body).toMatchObject({ code: 200, argument_name: 'key' });
  });

  it('an absurdly long parameter: 200 invalid_argument', async () => {
    const res = await request(app).post('/settings/get').set('Authorization', owner).type('form').send({ key: 'k'.repeat(20_000) });
    expectErrorBody(res, 200, 'invalid_argument');
    expect(res.body.argument_name).toBe('key');
  });

  it('invalid JSON in a JSON-valued parameter: 200 invalid_argument naming it', async () => {
    const res = await request(app).post('/clients/add').set('Authorization', owner).type('form').send({ features: '["owner"' });
    expectErrorBody(res, 200, 'invalid_argument');
    expect(res.body.argument_name).toBe('features');
  });

  it('an unexpected exception: 500 JSON, no stack, no detail; logged with the request_id', async () => {
    const res = await request(app).get('/test/explode');
    expect(res.status).toBe(500);
    expectErrorBody(res, 500, 'unexpected_error');
    expect(res.text).not.toContain('hunter2');
    expect(res.text).not.toContain('secret.ts');
  });

  it('the process keeps serving after all of the above', async () => {
    const res = await request(app).get('/clients/list').set('Authorization', owner);
    expect(res.body.stat).toBe('ok');
    expect((await request(app).get('/health')).body).toMatchObject({ stat: 'ok' });
    expect((await request(app).get('/readyz')).body).toEqual({ stat: 'ok', checks: { database: true } });
    expect((await request(app).get('/healthz')).body).toEqual({ stat: 'ok' });
  });
});

describe('what Node\'s HTTP parser refuses, and slow clients', () => {
  let server: http.Server;
  let port: number;
  beforeAll(async () => {
    server = createHttpServer(app, { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 }, createLogger('silent'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as net.AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Writes raw bytes, then answers what the server sent before closing, and after how long. */
  const raw = (bytes: string) => new Promise<{ status: number; head: string; body: Record<string, unknown>; ms: number }>((resolve, reject) => {
    const started = Date.now();
    const socket = net.connect(port, '127.0.0.1', () => socket.write(bytes));
    let out = '';
    socket.on('data', (d) => (out += d));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head, body] = out.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), head, body: JSON.parse(body || '{}'), ms: Date.now() - started });
    });
  });

  it.each([
    ['bad header bytes', 'GET /healthz HTTP/1.1\r\nHo\u0001st: x\r\n\r\n', 400],
    ['conflicting Content-Length and Transfer-Encoding', 'POST /clients/list HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400],
    ['oversized headers', `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 431],
  ])('%s: the spec\'s JSON error body, not an empty answer', async (_what, bytes, status) => {
    const res = await raw(bytes);
    expect(res.status).toBe(status);
    expect(res.body).toMatchObject({ stat: 'error', code: 200, error: 'invalid_argument', request_id: expect.any(String) });
    expect(res.head).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
  });

  it('incomplete headers and an incomplete body are cut off within seconds with 408', async () => {
    const [headers, body] = await Promise.all([
      raw('GET /healthz HTTP/1.1\r\nHost: x\r\n'),
      raw('POST /clients/list HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\n\r\na=1'),
    ]);
    for (const res of [headers, body]) {
      expect(res.status).toBe(408);
      expect(res.head).toMatch(/\r\nX-Content-Type-Options: nosniff\r\n/i);
      expect(res.body).toMatchObject({ stat: 'error', error: 'invalid_argument' });
      expect(res.ms).toBeLessThan(10_000); // Node's defaults keep them 60 s and 300 s
    }
  });
});
