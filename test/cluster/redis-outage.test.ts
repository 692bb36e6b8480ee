import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { basic, createTestBackend, onMysql, skipUnless, type TestBackend } from '../helpers/backend';
import { startSmtp } from '../helpers/smtp';
import { alive, cli, freePort, redisCli, SERVER, startNode, until, WORKER } from '../helpers/processes';
import { figures, sampleFor, type Sample, SOAK_NODE_OPTIONS, terminate } from '../helpers/soak';

// An outage of the whole Redis Cluster (every master stopped) under api pods and workers, as
// .ci/cluster.sh starts it: the processes must live through it at flat memory and little CPU,
// with no traffic and with some, stop on SIGTERM within their drain, and serve again (ready, the
// client-changes subscription live, jobs delivered) once the cluster is back. One outage window
// of three and a half minutes holds all of it: memory is sampled for three minutes of it (90 s
// without traffic, 90 s under load).

/** How long memory and CPU are sampled in the outage: with no traffic, then under a light load. */
const IDLE_MS = 90_000;
const LOAD_MS = 90_000;

const redisCluster = process.env.REDIS_CLUSTER_URL;
const clusterDir = process.env.CLUSTER_DIR;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The masters .ci/cluster.sh started: each is stopped (SIGTERM) and started again with the command it kept. */
const masters = () => [1, 2, 3].map((n) => {
  const dir = path.join(clusterDir!, `redis${n}`);
  const port = Number(fs.readFileSync(path.join(dir, 'port'), 'utf8'));
  return {
    port,
    up: () => redisCli(port, 'ping') === 'PONG',
    async stop() {
      const pid = Number(/process_id:(\d+)/.exec(redisCli(port, 'info', 'server'))?.[1]);
      if (!pid) return;
      process.kill(pid, 'SIGTERM');
      await until(`Redis master ${n} is gone`, () => !alive(pid), 20_000);
    },
    start() {
      spawn('bash', [path.join(dir, 'start.sh')], { detached: true, stdio: 'ignore' }).unref();
    },
  };
});

skipUnless(!!redisCluster && !!clusterDir && onMysql, 'the Redis Cluster outage test needs .ci/cluster.sh (REDIS_CLUSTER_URL, CLUSTER_DIR) and MariaDB (DATABASE_URL)')(
  'the whole Redis Cluster down for more than five minutes under api pods and workers', () => {
    let backend: TestBackend;
    let smtp: Awaited<ReturnType<typeof startSmtp>>;
    const prefix = `gho${Date.now().toString(36)}`;

    beforeAll(async () => {
      smtp = await startSmtp();
      backend = await createTestBackend({
        env: {
          REDIS_URL: redisCluster, REDIS_PREFIX: prefix, MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
          NODE_OPTIONS: SOAK_NODE_OPTIONS,
          OUTBOX_RELAY_AFTER_SECONDS: '2', LOGIN_LIMIT_ACCOUNT: '100000/900', LOGIN_LIMIT_ADDRESS: '100000/900', MAIL_LIMIT_ADDRESS: '100000/3600', LOG_LEVEL: 'info',
        },
      });
    }, 60_000);
    afterAll(async () => {
      await smtp?.close();
      await backend?.cleanup();
    });

    it('flat memory and little CPU through it, idle and under load; SIGTERM stops within the drain with code 0; all serve again once it is back', async () => {
      const env = backend.env;
      expect(cli(['migrate'], { cwd: backend.dir, env }).status).toBe(0);
      const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env }).stdout);
      const owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
      const ports = [await freePort(), await freePort(), await freePort()];
      const metricsPort = await freePort();
      // pods 0 and 1 and worker 0 live through the outage; pod 2 and worker 1 get SIGTERM in it
      const pods = ports.map((port) => startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port) } }));
      const workers = [startNode(WORKER, { cwd: backend.dir, env: { ...env, METRICS_PORT: String(metricsPort) } }), startNode(WORKER, { cwd: backend.dir, env })];
      const nodes = masters();

      const post = (pod: number, route: string, body: Record<string, string>, authorization?: string) => fetch(`http://127.0.0.1:${ports[pod]}${route}`, {
        method: 'POST', body: new URLSearchParams(body),
        headers: { 'content-type': 'application/x-www-form-urlencoded', ...(authorization && { authorization }) },
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
      const ready = (pod: number) => fetch(`http://127.0.0.1:${ports[pod]}/readyz`).then((r) => r.status);
      const workerReady = () => fetch(`http://127.0.0.1:${metricsPort}/readyz`).then((r) => r.status);
      const flow = { client_id: local.clients.login.client_id as string, locale: 'en-US' };
      const register = (pod: number, email: string) => post(pod, '/oauth/register_native_traditional', {
        ...flow, emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
      });
      /** How many connections are subscribed to client changes, over every node of the cluster. */
      const subscribers = () => nodes.reduce((n, node) => n + Number(redisCli(node.port, 'pubsub', 'numsub', `${prefix}:client-changes`).split('\n')[1] ?? 0), 0);
      const registered: string[] = [];
      const answers: { status: number; body: Record<string, any> }[] = [];

      try {
        await Promise.all([...pods.map((p) => p.waitFor(/api listening/)), ...workers.map((w) => w.waitFor(/worker ready/))]);
        await until('every pod and the worker are ready', async () => (await Promise.all([0, 1, 2].map(ready))).every((s) => s === 200) && (await workerReady()) === 200);
        await until('the three pods are subscribed to client changes', () => subscribers() === 3, 10_000);
        registered.push('before@example.com');
        expect((await register(0, 'before@example.com')).body.stat).toBe('ok');
        await until('the first welcome email is delivered', () => smtp.mails.length === 1, 30_000).catch((e) => {
          throw new Error(`${(e as Error).message}; the worker printed:\n${workers[0].output().slice(-4000)}`);
        });

        const watched = { api: pods[0].child.pid!, worker: workers[0].child.pid! };

        // every master stops
        const outage = Date.now();
        for (const node of nodes) await node.stop();
        await until('the pods report not ready', async () => (await ready(0)) === 503 && (await ready(1)) === 503, 30_000);
        await sleep(Math.max(0, outage + 20_000 - Date.now())); // the connections' first retries settle

        const samples = { idle: { api: [] as Sample[], worker: [] as Sample[] }, load: { api: [] as Sample[], worker: [] as Sample[] } };

        // no traffic
        await sampleFor(IDLE_MS, watched, samples.idle);

        // some load: registrations (their emails wait in the outbox), wrong passwords (counted in
        // each pod's memory), client-authenticated calls (clients not cached: no subscription) and
        // readiness checks, over both pods
        let loading = true;
        const load = (async () => {
          for (let i = 0; loading; i++) {
            const pod = i % 2;
            if (i % 3 === 0) {
              const email = `during${i}@example.com`;
              registered.push(email);
              answers.push(await register(pod, email));
            } else if (i % 3 === 1) {
              answers.push(await post(pod, '/oauth/auth_native_traditional', { ...flow, signInEmailAddress: 'before@example.com', currentPassword: `wrong ${i}` }));
            }
            answers.push(await post(pod, '/clients/list', {}, owner));
            await ready(pod);
            await sleep(1_000);
          }
        })();
        await sampleFor(LOAD_MS, watched, samples.load);
        loading = false;
        await load;

        // SIGTERM in the outage: pod 2 and worker 1
        const stopped = await Promise.all([terminate(pods[2]), terminate(workers[1])]);
        const outageMs = Date.now() - outage;

        const idle = { api: figures(samples.idle.api), worker: figures(samples.idle.worker) };
        const loaded = { api: figures(samples.load.api, samples.idle.api), worker: figures(samples.load.worker, samples.idle.worker) };
        process.stdout.write(`Redis Cluster outage of ${Math.round(outageMs / 1000)} s: `
          + `no traffic (${IDLE_MS / 1000} s) api ${JSON.stringify(idle.api)}, worker ${JSON.stringify(idle.worker)}; `
          + `under load (${LOAD_MS / 1000} s, growth from the idle start) api ${JSON.stringify(loaded.api)}, worker ${JSON.stringify(loaded.worker)}; `
          + `SIGTERM: api ${JSON.stringify(stopped[0])}, worker ${JSON.stringify(stopped[1])}\n`);

        expect(outageMs).toBeGreaterThanOrEqual(IDLE_MS + LOAD_MS + 20_000);
        // memory sampled for the whole of both, idle and under load
        const sampledMs = (s: Sample[]) => s[s.length - 1].at - s[0].at;
        expect(sampledMs(samples.idle.api) + sampledMs(samples.load.api)).toBeGreaterThanOrEqual(IDLE_MS + LOAD_MS - 10_000);
        expect(sampledMs(samples.idle.worker) + sampledMs(samples.load.worker)).toBeGreaterThanOrEqual(IDLE_MS + LOAD_MS - 10_000);
        for (const f of [idle.api, idle.worker, loaded.api, loaded.worker]) {
          expect(f.growthMb).toBeLessThan(20);
          expect(f.cpuPercent).toBeLessThan(10);
        }
        // an api pod stops within 15 s, a worker within its 25 s drain (and 30 s in all), each with code 0
        expect(stopped[0]).toEqual({ code: 0, ms: expect.any(Number) });
        expect(stopped[0].ms).toBeLessThan(15_000);
        expect(stopped[1]).toEqual({ code: 0, ms: expect.any(Number) });
        expect(stopped[1].ms).toBeLessThan(25_000);
        // every request answered: no 5xx, every registration ok
        expect(answers.filter((a) => a.status >= 500)).toEqual([]);
        expect(answers.filter((a) => a.body.stat !== 'ok' && a.body.code !== 210)).toEqual([]);

        // the cluster comes back
        for (const node of nodes) node.start();
        await until('the cluster is up again', () => nodes.every((n) => /cluster_state:ok/.test(redisCli(n.port, 'cluster', 'info'))), 60_000);
        const back = Date.now();
        await until('both pods and the worker are ready again', async () => (await ready(0)) === 200 && (await ready(1)) === 200 && (await workerReady()) === 200, 60_000);
        const readyAfterMs = Date.now() - back;
        // the subscription is live again on both pods (pod 2 has stopped), and client changes reach them
        await until('both pods are subscribed to client changes again', () => subscribers() === 2, 30_000);
        const subscribedAfterMs = Date.now() - back;
        process.stdout.write(`after the cluster was back: ready in ${readyAfterMs} ms, subscribed in ${subscribedAfterMs} ms\n`);
        const added = await post(0, '/clients/add', { description: 'after the outage', features: '["owner"]' }, owner);
        const credentials = basic(added.body.client_id, added.body.client_secret);
        expect((await post(1, '/clients/list', {}, credentials)).body.stat).toBe('ok'); // cached on pod 1
        const reset = await post(0, '/clients/reset_secret', { for_client_id: added.body.client_id }, owner);
        expect(reset.body.stat).toBe('ok');
        const resetAt = Date.now();
        await until('pod 1 refuses the old secret', async () => (await post(1, '/clients/list', {}, credentials)).body.code === 402, 5_000);
        expect(Date.now() - resetAt).toBeLessThan(2_000); // the change message, not the cache's 5 s
        expect((await post(1, '/clients/list', {}, basic(added.body.client_id, reset.body.new_secret))).body.stat).toBe('ok');

        // every email committed before, during and after the outage goes out once
        registered.push('after@example.com');
        expect((await register(1, 'after@example.com')).body.stat).toBe('ok');
        await until('every welcome email is delivered', () => smtp.mails.length >= registered.length, 90_000).catch((e) => {
          throw new Error(`${(e as Error).message} (${smtp.mails.length} of ${registered.length}); the worker printed:\n${workers[0].output().slice(-4000)}`);
        });
        await sleep(1_000);
        expect(smtp.mails.map((m) => (m.to as { text: string }).text).sort()).toEqual([...registered].sort());

        // and they stop as usual
        for (const p of [pods[0], pods[1], workers[0]]) expect(await terminate(p)).toEqual({ code: 0, ms: expect.any(Number) });
        expect(pods[0].output()).not.toMatch(/MaxListenersExceededWarning/);
        expect(workers[0].output()).not.toMatch(/MaxListenersExceededWarning/);
      } finally {
        await Promise.all([...pods, ...workers].map((p) => p.stop()));
        // whatever happened, the cluster is left up for the tests after this one
        for (const node of nodes) if (!node.up()) node.start();
        await until('the cluster is up after the test', () => nodes.every((n) => /cluster_state:ok/.test(redisCli(n.port, 'cluster', 'info'))), 60_000);
      }
    }, 12 * 60_000);
  });
