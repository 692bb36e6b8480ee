import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestBackend, onMysql, skipUnless, type TestBackend } from '../helpers/backend';
import { startSmtp } from '../helpers/smtp';
import { freePort, ownServer, until } from '../helpers/processes';
import { expectSoakWithinBounds, runOutageSoak } from '../helpers/outage-soak';
import { SOAK_NODE_OPTIONS } from '../helpers/soak';

// REDIS_URL=redis+sentinel://… with every data node down (the master and its replica; the
// Sentinel stays up and has no server to name) for a minute and a half under api pods and
// workers: flat memory and little CPU, idle and under a light load that answers as with one Redis
// server down (registrations ok, their emails in the outbox); /readyz 503 meanwhile and 200 again
// once they are back, without a restart; a SIGTERM in the outage stops a pod within 15 s and a
// worker within 30 s, with code 0. test/e2e/redis-sentinel.test.ts starts the same topology.

const redisServer = spawnSync('redis-server', ['--version']).status === 0;

const redisCli = (port: number, ...args: string[]) => spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();
const redis = (port: number, dir: string, ...extra: string[]) => ownServer('redis-server', [
  '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, ...extra,
], () => redisCli(port, 'ping') === 'PONG', () => fs.mkdirSync(dir, { recursive: true }));

// on the MariaDB run only (the one with Redis): the soak takes two minutes
skipUnless(redisServer && onMysql, 'the Redis Sentinel outage soak needs the redis-server program and the MariaDB run (DATABASE_URL)')(
  'a Redis master and its replica down for a minute and a half behind a Sentinel', () => {
    let dir: string;
    let backend: TestBackend;
    let smtp: Awaited<ReturnType<typeof startSmtp>>;
    let ports: { master: number; replica: number; sentinel: number };
    let servers: ReturnType<typeof redis>[];

    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-sentinel-outage-'));
      ports = { master: await freePort(), replica: await freePort(), sentinel: await freePort() };
      const conf = path.join(dir, 'sentinel.conf');
      servers = [
        redis(ports.master, path.join(dir, 'master')),
        redis(ports.replica, path.join(dir, 'replica'), '--replicaof', '127.0.0.1', String(ports.master)),
        ownServer('redis-server', [conf, '--sentinel'], () => redisCli(ports.sentinel, 'ping') === 'PONG', () => fs.writeFileSync(conf, [
          `port ${ports.sentinel}`, 'bind 127.0.0.1', `dir ${dir}`,
          `sentinel monitor gh 127.0.0.1 ${ports.master} 1`, 'sentinel down-after-milliseconds gh 1000', 'sentinel failover-timeout gh 10000',
        ].join('\n'))),
      ];
      for (const s of servers) await s.start();
      await until('the replica is in sync', () => /master_link_status:up/.test(redisCli(ports.replica, 'info', 'replication')));
      await until('the Sentinel knows the replica', () => redisCli(ports.sentinel, 'sentinel', 'replicas', 'gh').includes(String(ports.replica)));
      smtp = await startSmtp();
      backend = await createTestBackend({
        env: {
          REDIS_URL: `redis+sentinel://127.0.0.1:${ports.sentinel}/gh`, REDIS_PREFIX: 'ghsentout',
          MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, NODE_OPTIONS: SOAK_NODE_OPTIONS,
          OUTBOX_RELAY_AFTER_SECONDS: '2', LOGIN_LIMIT_ACCOUNT: '100000/900', LOGIN_LIMIT_ADDRESS: '100000/900', MAIL_LIMIT_ADDRESS: '100000/3600', LOG_LEVEL: 'info',
        },
      });
    }, 60_000);
    afterAll(async () => {
      for (const s of servers ?? []) await s.kill();
      await smtp?.close();
      await backend?.cleanup();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

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
