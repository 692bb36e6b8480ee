import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTestBackend, onMysql, skipUnless, type TestBackend } from '../helpers/backend';
import { startSmtp } from '../helpers/smtp';
import { freePort, ownMariadb, ownRedis } from '../helpers/processes';
import { expectSoakWithinBounds, runOutageSoak } from '../helpers/outage-soak';
import { SOAK_NODE_OPTIONS } from '../helpers/soak';

// The database (a MariaDB of this test's own) down for a minute and a half under api pods and
// workers on Redis: flat memory and little CPU, idle and under a light load whose requests all
// answer 503 at once; /readyz 503 meanwhile and 200 again once it is back, without a restart; a
// SIGTERM in the outage stops a pod within 15 s and a worker within 30 s, with code 0.

const programs = ['mariadbd', 'mariadb-install-db', 'redis-server'].every((p) => spawnSync('which', [p]).status === 0);

const ownMariadbSmall = (dir: string, port: number) => ownMariadb(dir, port, ['--innodb-buffer-pool-size=32M']);

/** A Redis of this test's own. */

// on the MariaDB run only (the one with Redis): the soak takes two minutes
skipUnless(programs && onMysql, 'the database outage soak needs mariadbd, mariadb-install-db, redis-server and the MariaDB run (DATABASE_URL)')(
  'the database down for a minute and a half under api pods and workers', () => {
    let dir: string;
    let db: ReturnType<typeof ownMariadb>;
    let redis: ReturnType<typeof ownRedis>;
    let smtp: Awaited<ReturnType<typeof startSmtp>>;
    let backend: TestBackend;

    beforeAll(async () => {
      dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-db-outage-'));
      const dbPort = await freePort();
      db = ownMariadbSmall(path.join(dir, 'data'), dbPort);
      await db.start();
      const created = spawnSync('mariadb', ['--no-defaults', '-h', '127.0.0.1', '-P', String(dbPort), '-uroot', '-e', 'CREATE DATABASE gh CHARACTER SET utf8mb4 COLLATE utf8mb4_bin']);
      if (created.status !== 0) throw new Error(String(created.stderr));
      const redisPort = await freePort();
      redis = ownRedis(redisPort);
      await redis.start();
      smtp = await startSmtp();
      backend = await createTestBackend({
        env: {
          DATABASE_URL: `mysql://root@127.0.0.1:${dbPort}/gh`,
          REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: 'ghdbout', MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
          NODE_OPTIONS: SOAK_NODE_OPTIONS, OUTBOX_RELAY_AFTER_SECONDS: '2', LOGIN_LIMIT_ACCOUNT: '100000/900', LOGIN_LIMIT_ADDRESS: '100000/900',
          MAIL_LIMIT_ADDRESS: '100000/3600', LOG_LEVEL: 'info',
        },
      });
    }, 90_000);
    afterAll(async () => {
      await db?.kill();
      await redis?.kill();
      await smtp?.close();
      await backend?.cleanup();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    });

    it('flat memory and little CPU, every request 503 at once; ready again once it is back; SIGTERM stops a pod and a worker with code 0', async () => {
      const f = await runOutageSoak({
        what: 'MariaDB', backend, smtp, down: () => db.kill(), up: () => db.start(),
        outageMs: 92_000, idleMs: 40_000, loadMs: 40_000,
      });
      expectSoakWithinBounds(f, 90_000);
      // every request that needs the database: 503 with Retry-After, the spec's body, within a second
      expect(f.answers.length).toBeGreaterThan(20);
      expect(f.answers.filter((a) => a.status !== 503 || !a.retryAfter || a.body.sub_error !== 'service_unavailable')).toEqual([]);
      expect(Math.max(...f.answers.map((a) => a.ms))).toBeLessThan(1_000);
      expect(f.readyAfterMs).toBeLessThan(30_000);
      // only the emails committed before and after it
      expect([...f.registered].sort()).toEqual(['after@example.com', 'before1@example.com', 'before2@example.com', 'before3@example.com']);
    }, 300_000);
  });
