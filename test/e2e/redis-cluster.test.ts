import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestBackend, redisUrl, skipUnless, type TestBackend } from '../helpers/backend';
import { startSmtp } from '../helpers/smtp';
import { startPodsAndWorker } from '../helpers/deployment';
import { freePort, until, ownServer } from '../helpers/processes';

const redisServer = spawnSync('redis-server', ['--version']).status === 0;

const redisCli = (port: number, ...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();

/** One master of a Redis Cluster of this test's own: its data port, its bus port, its node file in `dir`. */
const clusterNode = (dir: string, port: number, busPort: number) => ownServer('redis-server', [
  '--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1', '--cluster-enabled', 'yes',
  '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000', '--save', '', '--appendonly', 'no',
  '--dir', dir,
], () => redisCli(port, 'ping') === 'PONG');

skipUnless(redisServer && !!redisUrl, 'the Redis Cluster test runs with the MariaDB + Redis suite (REDIS_URL) and needs the redis-server program')('a Redis Cluster of three masters under two api pods and a worker', () => {
  let dir: string;
  let backend: TestBackend;
  let nodes: { port: number; server: ReturnType<typeof clusterNode> }[];
  let smtp: Awaited<ReturnType<typeof startSmtp>>;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-redis-cluster-'));
    nodes = [];
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const server = clusterNode(dir, port, await freePort());
      await server.start();
      nodes.push({ port, server });
    }
    const created = spawnSync('redis-cli', ['--cluster', 'create', ...nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-replicas', '0', '--cluster-yes'], { encoding: 'utf8' });
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}${created.stderr}`);
    await until('the cluster is up', () => nodes.every((n) => /cluster_state:ok/.test(redisCli(n.port, 'cluster', 'info'))));
    smtp = await startSmtp();
    backend = await createTestBackend({
      env: {
        // two of the three nodes: the third is found through them
        REDIS_URL: `redis+cluster://127.0.0.1:${nodes[0].port},127.0.0.1:${nodes[1].port}`, REDIS_PREFIX: 'ghcluster',
        MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, OUTBOX_RELAY_AFTER_SECONDS: '2',
        LOGIN_LIMIT_ACCOUNT: '3/900', REGISTER_LIMIT_ADDRESS: '1000/3600', LOG_LEVEL: 'info',
      },
    });
  }, 60_000);
  afterAll(async () => {
    for (const n of nodes ?? []) await n.server.kill();
    await smtp?.close();
    await backend.cleanup();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('delivers every job, shares the limits across pods, and reports not ready while a master is down', async () => {
    const { pods, worker, call, ready, shared, register, started, bothReady, withWorkerLog, stop } = await startPodsAndWorker(backend);
    try {
      await started();
      for (const pod of [0, 1]) expect(await ready(pod)).toMatchObject({ status: 200, body: { checks: { redis: true } } });

      // every registration's welcome email goes through the mail queue's slot and is delivered
      const users = Array.from({ length: 10 }, (_, i) => `user${i}@example.com`);
      for (const [i, email] of users.entries()) expect((await register(i, email)).body.stat).toBe('ok');
      await until('every welcome email is delivered', () => smtp.mails.length >= users.length);
      expect(new Set(smtp.mails.map((m) => (m.to as { text: string }).text))).toEqual(new Set(users));

      // 12 wrong passwords over both pods, with a limit of 3 per account: 3 checks, then refusals
      const wrong = await Promise.all(Array.from({ length: 12 }, (_, i) => call(i, '/oauth/auth_native_traditional', {
        ...shared, signInEmailAddress: users[0], currentPassword: `wrong ${i}`,
      })));
      expect(wrong.filter((r) => r.body.code === 210)).toHaveLength(3);
      expect(wrong.filter((r) => r.body.code === 510)).toHaveLength(9);

      // the master holding this application's limits (their keys share its hash tag) goes down:
      // both pods say they are not ready
      const owner = nodes.find((n) => redisCli(n.port, '--scan', '--pattern', 'ghcluster:rl:{a*}:login:account:*') !== '')!;
      expect(owner).toBeDefined();
      await owner.server.kill();
      await until('both pods report not ready', async () => (await ready(0)).status === 503 && (await ready(1)).status === 503);
      expect((await ready(0)).body.checks.redis).toMatch(/cannot run scripts/);

      // it comes back (its node file keeps its slots): ready again, and jobs flow again
      await owner.server.start();
      await until('the cluster is up again', () => nodes.every((n) => /cluster_state:ok/.test(redisCli(n.port, 'cluster', 'info'))));
      await until('both pods are ready again', bothReady);
      expect((await register(0, 'after@example.com')).body.stat).toBe('ok');
      await until('the email committed after the failover is delivered', () => smtp.mails.some((m) => (m.to as { text: string }).text === 'after@example.com'))
        .catch(withWorkerLog);
      expect(worker.output()).not.toMatch(/CROSSSLOT/);
      for (const pod of pods) expect(pod.output()).not.toMatch(/CROSSSLOT/);
    } finally {
      await stop();
    }
  }, 120_000);
});
