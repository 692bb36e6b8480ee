import { spawnSync } from 'node:child_process';
import { openDatabase } from '../../src/db';
import { redisUrl, skipUnless } from '../helpers/backend';
import { redisCli, type SentinelBackend, startSentinelBackend } from '../helpers/sentinel';
import { startPodsAndWorker } from '../helpers/deployment';
import { until } from '../helpers/processes';

const redisServer = spawnSync('redis-server', ['--version']).status === 0;


/**
 * REDIS_URL=redis+sentinel://… (docs/scaling.md): a master, its replica and a Sentinel of this
 * test's own, two api pods and a worker; the master is killed under a stream of registrations
 * and the Sentinel promotes the replica, with nobody restarting anything.
 */
skipUnless(redisServer && !!redisUrl, 'the Redis Sentinel test runs with the MariaDB + Redis suite (REDIS_URL) and needs the redis-server program')('a Redis master and replica behind a Sentinel, failing over under load', () => {
  let deployment: SentinelBackend | undefined;
  let { ports, servers, smtp, backend } = {} as SentinelBackend;

  beforeAll(async () => {
    deployment = await startSentinelBackend('redis-sentinel', { REDIS_PREFIX: 'ghsentinel', LOGIN_LIMIT_ACCOUNT: '3/900', REGISTER_LIMIT_ADDRESS: '1000/3600' });
    ({ ports, servers, smtp, backend } = deployment);
  }, 60_000);
  afterAll(() => deployment?.stop());

  it('delivers every job, shares the limits, and serves on through a failover with nothing lost', async () => {
    const { call, ready, shared, register, started, bothReady, withWorkerLog, stop } = await startPodsAndWorker(backend);
    const delivered = () => smtp.mails.map((m) => (m.to as { text: string }).text);
    try {
      await started();
      for (const pod of [0, 1]) expect(await ready(pod)).toMatchObject({ status: 200, body: { checks: { redis: true } } });

      // the limits are shared through the master: 12 wrong passwords over both pods, 3 checked
      expect((await register(0, 'ada@example.com')).body.stat).toBe('ok');
      const wrong = await Promise.all(Array.from({ length: 12 }, (_, i) => call(i, '/oauth/auth_native_traditional', {
        ...shared, signInEmailAddress: 'ada@example.com', currentPassword: `wrong ${i}`,
      })));
      expect(wrong.filter((r) => r.body.code === 210)).toHaveLength(3);

      // registrations keep coming while the master dies and the Sentinel promotes the replica
      const users: string[] = [];
      const statuses: number[] = [];
      let killed = false;
      /** From the SIGKILL to both pods ready again: watched beside the registrations, every 50 ms. */
      let readyAgain: Promise<number> | undefined;
      const stream = (async () => {
        for (let i = 0; i < 40; i++) {
          const email = `user${i}@example.com`;
          const answer = await register(i, email);
          statuses.push(answer.status);
          if (answer.body.stat === 'ok') users.push(email);
          if (i === 8) {
            await servers[0].kill();
            killed = true;
            const killedAt = Date.now();
            readyAgain = (async () => {
              await until('both pods report not ready', async () => (await ready(0)).status === 503 && (await ready(1)).status === 503, 10_000);
              while (Date.now() - killedAt < 60_000) {
                if (await bothReady().catch(() => false)) return Date.now() - killedAt;
                await new Promise((r) => setTimeout(r, 50));
              }
              return Infinity;
            })().catch(() => NaN); // (never reported not ready: the expectation below fails)
          }
          await new Promise((r) => setTimeout(r, 100));
        }
      })();
      await stream;
      expect(killed).toBe(true);
      expect(statuses.filter((s) => s >= 500)).toEqual([]);
      expect(users).toHaveLength(40);
      await until('the Sentinel names the replica as master', () => redisCli(ports.sentinel, 'sentinel', 'get-master-addr-by-name', 'gh').includes(String(ports.replica)));
      await until('both pods are ready on the new master', bothReady, 30_000);
      const readyAfterMs = await readyAgain!;
      expect(readyAfterMs).toBeLessThan(30_000);
      process.stdout.write(`Redis Sentinel: both pods ready again ${(readyAfterMs / 1000).toFixed(2)} s after the master was killed (down-after-milliseconds 1000)\n`);

      // every email committed before, during and after the failover is delivered, each once
      await until('every welcome email is delivered', () => users.every((u) => delivered().includes(u)), 60_000)
        .catch(withWorkerLog);
      expect(delivered().filter((to) => to !== 'ada@example.com').sort()).toEqual([...users].sort());
      const db = openDatabase(backend.config.database);
      try {
        await until('no outbox row is pending', async () => (await db.outbox.backlog()).length === 0, 30_000);
      } finally {
        await db.close();
      }
      expect((await register(1, 'after@example.com')).body.stat).toBe('ok');
      await until('the email committed after the failover is delivered', () => delivered().includes('after@example.com'));

      // A planned failover with both servers up: the old master is back (the Sentinel makes it a
      // replica of the new one), and SENTINEL FAILOVER promotes it again while registrations go on.
      // The Sentinel demotes the other server only once it has seen it still claim to be master
      // (about 11 s later): until then the pods and the worker keep using it, and what they wrote
      // there is dropped when it turns replica (jobs are relayed again from the outbox). Demoting
      // it closes their connections, and they reconnect to the master the Sentinels name.
      await servers[0].start();
      await until('the old master is a replica in sync', () => /role:slave[\s\S]*master_link_status:up/.test(redisCli(ports.master, 'info', 'replication')), 30_000);
      // (refused while the Sentinel still counts it as a new replica: asked again until it starts)
      await until('the Sentinel starts the failover', () => redisCli(ports.sentinel, 'sentinel', 'failover', 'gh') === 'OK', 30_000);
      const failoverAt = Date.now();
      let demotedAfterMs = NaN;
      const demoted = () => /role:slave/.test(redisCli(ports.replica, 'info', 'replication'));
      const planned: string[] = [];
      const plannedStatuses: number[] = [];
      // registrations until the other server is demoted, and 10 more after it
      for (let i = 0, after = 0; after < 10; i++) {
        if (i === 300) throw new Error('the Sentinel did not demote the former master within 300 registrations');
        if (demoted()) {
          if (after++ === 0) demotedAfterMs = Date.now() - failoverAt;
        }
        const email = `planned${i}@example.com`;
        const answer = await register(i, email);
        plannedStatuses.push(answer.status);
        if (answer.body.stat === 'ok') planned.push(email);
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(plannedStatuses.filter((s) => s >= 500)).toEqual([]);
      expect(planned).toHaveLength(plannedStatuses.length);
      expect(redisCli(ports.sentinel, 'sentinel', 'get-master-addr-by-name', 'gh')).toContain(String(ports.master));
      process.stdout.write(`Redis Sentinel: the former master demoted ${(demotedAfterMs / 1000).toFixed(1)} s after SENTINEL FAILOVER, ${plannedStatuses.length} registrations in all\n`);
      // the readiness script writes: on the demoted server it would answer READONLY, so ready is on the new master
      await until('both pods are ready on the new master', bothReady, 30_000);
      await until('every welcome email of the planned failover is delivered', () => planned.every((u) => delivered().includes(u)), 60_000)
        .catch(withWorkerLog);
      expect((await register(0, 'last@example.com')).body.stat).toBe('ok');
      await until('an email committed after it is delivered', () => delivered().includes('last@example.com'));
      // every email of the whole test delivered exactly once
      expect(delivered().sort()).toEqual(['ada@example.com', ...users, 'after@example.com', ...planned, 'last@example.com'].sort());
    } finally {
      await stop();
    }
  }, 300_000);
});
