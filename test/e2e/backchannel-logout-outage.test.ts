import http from 'node:http';
import { createRemoteJWKSet, jwtVerify } from 'jose';
import { basic, createTestBackend, onMysql, skipUnless, type TestBackend } from '../helpers/backend';
import { openidClient } from '../helpers/openid-client';
import { cli, freePort, SERVER, startNode, until, WORKER, type Started, ownRedis, redisServerInstalled as redisServer } from '../helpers/processes';
import { cookieBrowser, firstForm } from '../helpers/social';

/**
 * Back-channel logout across real processes (docs/openid-connect.md#back-channel-logout): an api
 * and a worker on MariaDB and a Redis of the test's own. People sign in to an app through the
 * provider; their sessions are ended while the app is down, then while Redis is down (and started
 * again empty), and the worker is killed (SIGKILL) and started again. Afterwards every logout token
 * owed has arrived, verified with jose against the JWKS, naming each session the app was given.
 */

const PASSWORD = 'correct horse battery';
const APP = 'https://app.example.com/cb';

skipUnless(onMysql && redisServer, 'the back-channel logout outage test needs DATABASE_URL (MariaDB) and the redis-server program')('back-channel logout through an app outage, Redis restarted empty and a killed worker', () => {
  let backend: TestBackend;
  let redis: ReturnType<typeof ownRedis>;
  let api: Started;
  let worker: Started | undefined;
  let base: string;
  let owner: string;
  let login: { client_id: string; client_secret: string };
  let receiver: http.Server;
  let receiverPort = 0;
  let up = true;
  const got: Array<{ sub: string; sid: string; jti: string }> = [];
  const post = async (route: string, params: Record<string, string>) => {
    const res = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', Authorization: owner }, body: new URLSearchParams(params) });
    return (await res.json()) as Record<string, any>;
  };
  const startWorker = async () => {
    worker = startNode(WORKER, { cwd: backend.dir, env: { ...backend.env, PUBLIC_BASE_URL: base } });
    await worker.waitFor(/worker ready/);
  };

  beforeAll(async () => {
    const redisPort = await freePort();
    redis = ownRedis(redisPort);
    await redis.start();
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    backend = await createTestBackend({
      env: { REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: 'ghlogout', WEBHOOKS_ALLOW_PRIVATE: 'true', OUTBOX_RELAY_AFTER_SECONDS: '2', LOG_LEVEL: 'info' },
    });
    const jwks = createRemoteJWKSet(new URL(`${base}/oidc/jwks`));
    receiver = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        if (!up) return void res.writeHead(503).end('down for maintenance');
        jwtVerify(new URLSearchParams(body).get('logout_token') ?? '', jwks, { issuer: base, audience: login.client_id, typ: 'logout+jwt' }).then(({ payload }) => {
          got.push({ sub: String(payload.sub), sid: String(payload.sid), jti: String(payload.jti) });
          res.writeHead(200).end();
        }, (err: Error) => res.writeHead(400).end(`not verified: ${err.message}`));
      });
    });
    receiverPort = await new Promise<number>((resolve) => receiver.listen(0, '127.0.0.1', () => resolve((receiver.address() as { port: number }).port)));
    expect(cli(['migrate'], { cwd: backend.dir, env: backend.env }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env: backend.env }).stdout);
    owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
    login = local.clients.login;
    api = startNode(SERVER, { cwd: backend.dir, env: { ...backend.env, PORT: String(port), PUBLIC_BASE_URL: base } });
    await api.waitFor(/api listening/);
    await startWorker();
    for (const [key, value] of [['redirect_uris', APP], ['grant_types', 'authorization_code refresh_token'],
      ['backchannel_logout_uri', `http://127.0.0.1:${receiverPort}/backchannel-logout`], ['backchannel_logout_session_required', 'true']]) {
      expect((await post('/settings/set', { for_client_id: login.client_id, key, value })).stat).toBe('ok');
    }
    // the settings reach the provider within 5 seconds
    await new Promise((r) => setTimeout(r, 5_100));
  }, 120_000);
  afterAll(async () => {
    await worker?.stop();
    await api?.stop();
    await redis?.kill();
    receiver?.closeAllConnections();
    await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
    await backend?.cleanup();
  });

  /** A new account signed in to the app in a browser of its own: its uuid and the session id its ID token names. */
  async function signedIn(): Promise<{ uuid: string; sid: string }> {
    const oidc = openidClient();
    const email = `logout-${Math.random().toString(36).slice(2)}@example.com`;
    const made = await post('/entity.create', { type_name: 'user', attributes: JSON.stringify({ email, password: PASSWORD }) });
    expect(made.stat).toBe('ok');
    const config = await oidc.discovery(new URL(base), login.client_id, login.client_secret, undefined, { execute: [oidc.allowInsecureRequests] });
    const verifier = oidc.randomPKCECodeVerifier();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, { redirect_uri: APP, scope: 'openid', state, code_challenge: await oidc.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const browser = cookieBrowser();
    const stopAt = (next: URL) => next.origin !== base;
    const page = await browser.go(url.toString(), { stopAt });
    const form = firstForm(page.body, page.url);
    const back = await browser.go(form.action, { method: 'POST', form: { ...form.fields, signInEmailAddress: email, currentPassword: PASSWORD }, stopAt });
    const tokens = await oidc.authorizationCodeGrant(config, new URL(back.url), { pkceCodeVerifier: verifier, expectedState: state });
    return { uuid: made.uuid as string, sid: tokens.claims()!.sid as string };
  }

  it('every logout token owed arrives, verified, after the app\'s outage, Redis\'s restart and a killed worker', async () => {
    const people = [];
    for (let i = 0; i < 6; i++) people.push(await signedIn());
    // the app down: two sessions ended
    up = false;
    for (const p of people.slice(0, 2)) expect((await post('/entity.signOut', { type_name: 'user', uuid: p.uuid })).stat).toBe('ok');
    // Redis killed: two more ended (the api answers from the database), then Redis started again empty
    await redis.kill();
    for (const p of people.slice(2, 4)) expect((await post('/entity.disable', { type_name: 'user', uuid: p.uuid })).stat).toBe('ok');
    await redis.start();
    // the worker killed, two more ended meanwhile, the app back, the worker started again
    worker!.child.kill('SIGKILL');
    await new Promise((r) => worker!.child.once('exit', r));
    for (const p of people.slice(4)) expect((await post('/entity.signOut', { type_name: 'user', uuid: p.uuid })).stat).toBe('ok');
    up = true;
    await startWorker();
    await until(`all ${people.length} logout tokens arrive`, () => new Set(got.map((g) => g.sub)).size === people.length, 240_000)
      .catch((e: Error) => { throw new Error(`${e.message}: ${new Set(got.map((g) => g.sub)).size} arrived; worker said:\n${worker!.output().slice(-4000)}`); });
    for (const p of people) expect(got.filter((g) => g.sub === p.uuid).map((g) => g.sid)).toContain(p.sid);
    // a token repeated only with its own jti
    const listed = await post('/clients/logouts', { for_client_id: login.client_id, limit: '100' });
    expect(listed.results).toHaveLength(people.length);
    expect(listed.results.every((l: { state: string }) => l.state === 'delivered')).toBe(true);
    expect(new Set(got.map((g) => g.jti))).toEqual(new Set(listed.results.map((l: { id: string }) => l.id)));
  }, 400_000);
});
