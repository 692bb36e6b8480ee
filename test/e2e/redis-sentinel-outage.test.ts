import { spawnSync } from 'node:child_process';
import { onMysql, skipUnless } from '../helpers/backend';
import { redisCli, type SentinelBackend, startSentinelBackend } from '../helpers/sentinel';
import { expectSoakWithinBounds, runOutageSoak } from '../helpers/outage-soak';
import { SOAK_NODE_OPTIONS } from '../helpers/soak';

// REDIS_URL=redis+sentinel://… with every data node down (the master and its replica; the
// Sentinel stays up and has no server to name) for a minute and a half under api pods and
// workers: flat memory and little CPU, idle and under a light load that answers as with one Redis
// server down (registrations ok, their emails in the outbox); /readyz 503 meanwhile and 200 again
// once they are back, without a restart; a SIGTERM in the outage stops a pod within 15 s and a
// worker within 30 s, with code 0. test/e2e/redis-sentinel.test.ts starts the same topology.

const redisServer = spawnSync('redis-server', ['--version']).status === 0;


// on the MariaDB run only (the one with Redis): the soak takes two minutes
skipUnless(redisServer && onMysql, 'the Redis Sentinel outage soak needs the redis-server program and the MariaDB run (DATABASE_URL)')(
  'a Redis master and its replica down for a minute and a half behind a Sentinel', () => {
    let deployment: SentinelBackend | undefined;
    let { ports, servers, smtp, backend } = {} as SentinelBackend;

    beforeAll(async () => {
      deployment = await startSentinelBackend('sentinel-outage', {
        REDIS_PREFIX: 'ghsentout', NODE_OPTIONS: SOAK_NODE_OPTIONS,
        LOGIN_LIMIT_ACCOUNT: '100000/900', LOGIN_LIMIT_ADDRESS: '100000/900', MAIL_LIMIT_ADDRESS: '100000/3600',
      });
      ({ ports, servers, smtp, backend } = deployment);
    }, 60_000);
    afterAll(() => deployment?.stop());

    it('flat memory and little CPU, requests answered as with Redis down; ready again once they are back; SIGTERM stops a pod and a worker with code 0', async () => {
      const f = await runOutageSoak({
        what: 'the Redis master and replica', backend, smtp,
        down: async () => {
          await servers[1].kill();
          await servers[0].kill();
        },
        // the master first, as it was: the Sentinel had no replica to promote, and still names it
        up: async () => {
          await servers[0].start();
          await servers[1].start();
        },
        outageMs: 92_000, idleMs: 40_000, loadMs: 40_000,
      });
      expectSoakWithinBounds(f, 90_000);
      expect(redisCli(ports.sentinel, 'sentinel', 'get-master-addr-by-name', 'gh')).toContain(String(ports.master));
      // the requests are answered as with one Redis server down: no 5xx, registrations ok (their emails
      // were in the outbox and are delivered once, checked above), wrong passwords 210
      expect(f.answers.length).toBeGreaterThan(20);
      expect(f.answers.filter((a) => a.status >= 500)).toEqual([]);
      expect(f.answers.filter((a) => a.body.stat !== 'ok' && a.body.code !== 210)).toEqual([]);
      expect(f.registered.filter((r) => r.startsWith('during')).length).toBeGreaterThan(5);
      expect(f.readyAfterMs).toBeLessThan(30_000);
    }, 300_000);
  });
