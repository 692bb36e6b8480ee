import cluster from 'node:cluster';
import { createHash, randomBytes } from 'node:crypto';
import express from 'express';
import IORedis from 'ioredis';
import mysql from 'mysql2/promise';
import { buildApp, drained } from '../src/app';
import { loadConfigOrExit } from '../src/config';
import { createLogger } from '../src/logger';
import { createRuntime } from '../src/runtime';

/**
 * The api exactly as src/server.ts builds it, plus GET /bench/baseline: a static {"stat":"ok"}
 * behind the same middleware, the yardstick every scenario is measured against in the same run.
 * BENCH_API_PROCESSES=N runs N api processes behind one port (node's cluster: the primary accepts
 * connections and hands them round-robin to the workers), as N pods behind a load balancer.
 */
async function main(): Promise<void> {
  const config = loadConfigOrExit();
  const runtime = createRuntime(config, createLogger(config.logLevel));
  const stored = runtime.services.passwords.hash('correct horse battery');
  const durable = await durableFloors(config.database.dialect === 'mysql' ? config.database.url : undefined, config.redisUrl, config.defaultApp, runtime.services.passwords.verify);
  const app = buildApp({
    services: runtime.services,
    defaultApp: config.defaultApp,
    extend: (a) => {
      a.get('/bench/baseline', (_req, res) => void res.json({ stat: 'ok' }));
      // HTTP + form body + one argon2 verify and nothing else: the floor under a sign-in
      if (durable) {
        a.post('/bench/durable', express.urlencoded({ extended: false }), durable.signIn);
        a.post('/bench/durable-refresh', express.urlencoded({ extended: false }), durable.refresh);
      }
      a.post('/bench/verify', express.urlencoded({ extended: false }), async (req, res) => {
        const ok = await runtime.services.passwords.verify(await stored, String(req.body.currentPassword));
        res.json({ stat: ok ? 'ok' : 'error' });
      });
    },
  });
  const server = app.listen(config.port, '127.0.0.1', () => process.stdout.write(`bench server listening on ${config.port} pid=${process.pid}\n`));
  process.on('SIGTERM', () => {
    server.close(() => void drained(app).then(() => runtime.close()).then(() => process.exit(0)));
    server.closeIdleConnections();
  });
}

const processes = Number(process.env.BENCH_API_PROCESSES ?? 1);
if (processes > 1 && cluster.isPrimary) {
  const pids: number[] = [];
  for (let i = 0; i < processes; i++) {
    const worker = cluster.fork();
    worker.on('listening', () => {
      pids.push(worker.process.pid!);
      if (pids.length === processes) process.stdout.write(`bench server listening pid=${pids.join(',')}\n`);
    });
  }
  process.on('SIGTERM', () => {
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
    cluster.on('exit', () => Object.keys(cluster.workers ?? {}).length === 0 && process.exit(0));
  });
} else {
  void main();
}

/** One attempt taken from a budget (the least a rate limit costs): INCR, and PEXPIRE on the first. */
const TAKE = "local n = redis.call('INCR', KEYS[1]) if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end return n";

/**
 * The least any durable server does, written straight against mysql2 and ioredis with none of
 * Gatehouse's code: the floors Gatehouse's sign-in and refresh grant are measured against (only
 * on MySQL/MariaDB + Redis).
 *
 * - POST /bench/durable, a password sign-in: read the account by email (one SELECT), take one
 *   attempt from a Redis budget (one script), verify the password (the same argon2 threads),
 *   store the hash of a new token (one INSERT, committed before the answer).
 * - POST /bench/durable-refresh, a refresh-token rotation: one CALL of the same stored procedure
 *   Gatehouse uses (spend the token, insert the hashes of the new pair, commit), with the
 *   client named by the Basic header taken at its word (no secret checked, no rate limit, no
 *   routing beyond Express's).
 */
async function durableFloors(databaseUrl: string | undefined, redisUrl: string | undefined, appName: string, verify: (stored: string, password: string) => Promise<boolean>) {
  if (!databaseUrl || !redisUrl) return undefined;
  const pool = mysql.createPool({ uri: databaseUrl, connectionLimit: 10 });
  const redis = new IORedis(redisUrl);
  const [[ids]] = await pool.query<mysql.RowDataPacket[]>(
    'SELECT a.id AS app, MIN(c.id) AS client FROM applications a JOIN clients c ON c.application_id = a.id WHERE a.name = ? GROUP BY a.id', [appName]);
  const time = (d: Date) => d.toISOString().slice(0, 23).replace('T', ' ');
  const sha256 = (v: string) => createHash('sha256').update(v).digest('hex');
  const clients = new Map<string, number>();
  const clientOf = async (authorization: string | undefined) => {
    const name = Buffer.from(String(authorization).slice(6), 'base64').toString().split(':')[0];
    if (!clients.has(name)) clients.set(name, (await pool.query<mysql.RowDataPacket[]>('SELECT id FROM clients WHERE client_id = ?', [name]))[0][0]?.id);
    return clients.get(name);
  };
  return {
    async signIn(req: express.Request, res: express.Response) {
      const email = String(req.body.signInEmailAddress ?? '').toLowerCase();
      const [rows] = await pool.query<mysql.RowDataPacket[]>('SELECT id, password_hash FROM entities WHERE email_key = ? AND application_id = ? LIMIT 1', [email, ids.app]);
      await redis.eval(TAKE, 1, `bench:durable:${email}`, 900_000);
      const account = rows[0];
      if (!account || !(await verify(account.password_hash, String(req.body.currentPassword)))) return void res.json({ stat: 'error' });
      const token = randomBytes(20).toString('hex');
      const now = new Date();
      await pool.query(
        `INSERT INTO credentials (application_id, kind, value_hash, entity_id, client_id, family, expires_at, created_at) VALUES (?, 'access_token', ?, ?, ?, ?, ?, ?)`,
        [ids.app, sha256(token), account.id, ids.client, randomBytes(16).toString('hex'), time(new Date(now.getTime() + 3_600_000)), time(now)]);
      res.json({ stat: 'ok', access_token: token });
    },
    async refresh(req: express.Request, res: express.Response) {
      const access = randomBytes(20).toString('hex');
      const refresh = randomBytes(20).toString('hex');
      const now = new Date();
      const [[rows]] = await pool.query<mysql.RowDataPacket[][]>('CALL gh_rotate_refresh(?, ?, ?, ?, ?, ?, ?, ?)', [
        ids.app, sha256(String(req.body.refresh_token)), await clientOf(req.headers.authorization), time(now),
        sha256(access), time(new Date(now.getTime() + 3_600_000)), sha256(refresh), time(new Date(now.getTime() + 90 * 86_400_000)),
      ]);
      if (Number(rows[0]?.rotated) !== 1) return void res.status(400).json({ stat: 'error' });
      res.json({ stat: 'ok', access_token: access, expires_in: 3600, refresh_token: refresh });
    },
  };
}
