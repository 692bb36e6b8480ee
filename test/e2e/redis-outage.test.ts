import { basic, createTestBackend, onMysql, skipUnless, type TestBackend } from '../helpers/backend';
import { startSmtp } from '../helpers/smtp';
import { cli, freePort, SERVER, startNode, until, WORKER, ownRedis, redisServerInstalled as redisServer } from '../helpers/processes';
import { figures, sampleFor, type Sample, SOAK_NODE_OPTIONS, terminate } from '../helpers/soak';

// One Redis server (redis://) down for a minute under an api pod and a worker: flat memory and
// little CPU, idle and under load, ready again once it is back, and a SIGTERM while it is down
// stops each within its drain with code 0. test/cluster/redis-outage.test.ts does the same, for
// longer, with a Redis Cluster.


/** A Redis of this test's own (never the shared one), killed and started again. */

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

// on MariaDB only: the run on it is the one with Redis, and the soak takes a minute and a half
skipUnless(redisServer && onMysql, 'the Redis outage soak needs the redis-server program and MariaDB (DATABASE_URL)')('one Redis server down under an api pod and a worker', () => {
  let backend: TestBackend;
  let redis: ReturnType<typeof ownRedis>;
  let redisPort: number;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  beforeAll(async () => {
    redisPort = await freePort();
    redis = ownRedis(redisPort);
    await redis.start();
    smtp = await startSmtp();
    backend = await createTestBackend({
      env: {
        REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: 'ghoutage', MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
        NODE_OPTIONS: SOAK_NODE_OPTIONS, OUTBOX_RELAY_AFTER_SECONDS: '2', LOGIN_LIMIT_ACCOUNT: '100000/900', LOGIN_LIMIT_ADDRESS: '100000/900',
        MAIL_LIMIT_ADDRESS: '100000/3600', LOG_LEVEL: 'info',
      },
    });
  });
  afterAll(async () => {
    await redis.kill();
    await smtp.close();
    await backend.cleanup();
  });

  it('flat memory and little CPU for a minute, idle and under load; ready again once it is back; SIGTERM while it is down stops both with code 0', async () => {
    const env = backend.env;
    expect(cli(['migrate'], { cwd: backend.dir, env }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env }).stdout);
    const owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
    const port = await freePort();
    const metricsPort = await freePort();
    const api = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port) } });
    const worker = startNode(WORKER, { cwd: backend.dir, env: { ...env, METRICS_PORT: String(metricsPort) } });
    const post = (route: string, body: Record<string, string>, authorization?: string) => fetch(`http://127.0.0.1:${port}${route}`, {
      method: 'POST', body: new URLSearchParams(body),
      headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization && { authorization }) },
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
    const ready = async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200 && (await fetch(`http://127.0.0.1:${metricsPort}/readyz`)).status === 200;
    const flow = { client_id: local.clients.login.client_id as string, locale: 'en-US' };
    const registered: string[] = [];
    const register = (email: string) => {
      registered.push(email);
      return post('/oauth/register_native_traditional', {
        ...flow, emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
      });
    };
    try {
      await Promise.all([api.waitFor(/api listening/), worker.waitFor(/worker ready/)]);
      await until('the api and the worker are ready', ready);
      expect((await register('before@example.com')).body.stat).toBe('ok');
      await until('the first email is delivered', () => smtp.mails.length === 1, 30_000);

      const pids = { api: api.child.pid!, worker: worker.child.pid! };
      const idle = { api: [] as Sample[], worker: [] as Sample[] };
      const loaded = { api: [] as Sample[], worker: [] as Sample[] };
      await redis.kill();
      const outage = Date.now();
      await until('the api is not ready', async () => !(await ready()), 10_000);
      await sleep(Math.max(0, outage + 10_000 - Date.now()));
      await sampleFor(25_000, pids, idle);
      let loading = true;
      const answers: { status: number; body: Record<string, any> }[] = [];
      const load = (async () => {
        for (let i = 0; loading; i++) {
          if (i % 3 === 0) answers.push(await register(`during${i}@example.com`));
          if (i % 3 === 1) answers.push(await post('/oauth/auth_native_traditional', { ...flow, signInEmailAddress: 'before@example.com', currentPassword: `wrong ${i}` }));
          answers.push(await post('/clients/list', {}, owner));
          await sleep(1_000);
        }
      })();
      await sampleFor(25_000, pids, loaded);
      loading = false;
      await load;
      const outageMs = Date.now() - outage;

      const quiet = { api: figures(idle.api), worker: figures(idle.worker) };
      const busy = { api: figures(loaded.api, idle.api), worker: figures(loaded.worker, idle.worker) };
      process.stdout.write(`Redis outage of ${Math.round(outageMs / 1000)} s: no traffic api ${JSON.stringify(quiet.api)}, worker ${JSON.stringify(quiet.worker)}; `
        + `under load (growth from the idle start) api ${JSON.stringify(busy.api)}, worker ${JSON.stringify(busy.worker)}\n`);
      for (const f of [quiet.api, quiet.worker, busy.api, busy.worker]) {
        expect(f.growthMb).toBeLessThan(20);
        expect(f.cpuPercent).toBeLessThan(10);
      }
      expect(answers.filter((a) => a.status >= 500)).toEqual([]);
      expect(answers.filter((a) => a.body.stat !== 'ok' && a.body.code !== 210)).toEqual([]);

      // back: ready again, and every email committed before and during the outage goes out once
      await redis.start();
      await until('the api and the worker are ready again', ready, 30_000);
      await until('every welcome email is delivered', () => smtp.mails.length >= registered.length, 60_000);
      await sleep(1_000);
      expect(smtp.mails.map((m) => (m.to as { text: string }).text).sort()).toEqual([...registered].sort());

      // down again: SIGTERM stops each within its drain (an api pod 15 s, a worker 25 s) with code 0
      await redis.kill();
      await until('the api is not ready', async () => !(await ready()), 10_000);
      const [apiStop, workerStop] = await Promise.all([terminate(api), terminate(worker)]);
      process.stdout.write(`SIGTERM with Redis down: api ${JSON.stringify(apiStop)}, worker ${JSON.stringify(workerStop)}\n`);
      expect(apiStop.code).toBe(0);
      expect(apiStop.ms).toBeLessThan(15_000);
      expect(workerStop.code).toBe(0);
      expect(workerStop.ms).toBeLessThan(25_000);
    } finally {
      await Promise.all([api.stop(), worker.stop()]);
    }
  }, 240_000);
});
