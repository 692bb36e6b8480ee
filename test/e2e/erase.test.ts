import fs from 'node:fs';
import path from 'node:path';
import Redis from 'ioredis';
import { QueryTypes } from 'sequelize';
import { openDatabase, type Database } from '../../src/db';
import { formatTimestamp } from '../../src/domain/timestamps';
import { createTestBackend, onMysql, redisUrl, skipUnless, basic, type TestBackend } from '../helpers/backend';
import { cli, freePort, SERVER, startNode, WORKER, type Started } from '../helpers/processes';
import { stored } from '../helpers/stored';

/**
 * An erasure across real processes (docs/lifecycle.md#erase): api and worker on MariaDB + Redis; a
 * record with 1,000 versions still being recorded, emails sent, a failed sign-in counted, is erased
 * while the worker is killed (SIGKILL) and started again. Afterwards not one byte of its addresses,
 * name or identifiers remains in any table, in Redis or in the mail folder, and /versions/entity
 * answers 310 at every time.
 */
skipUnless(onMysql && !!redisUrl, 'the erasure e2e needs DATABASE_URL (MariaDB) and REDIS_URL')('an erasure across api and worker processes', () => {
  let backend: TestBackend;
  let db: Database;
  let api: Started;
  let base: string;
  let owner: string;
  let login: string;
  let workDir: string;
  // a row a killed worker held is relayed soon
  const env = () => ({ ...backend.env, LOG_LEVEL: 'info', OUTBOX_RELAY_AFTER_SECONDS: '2' });
  const post = async (route: string, params: Record<string, string>, auth: string | null = owner) => {
    const res = await fetch(`${base}${route}`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...(auth && { Authorization: auth }) }, body: new URLSearchParams(params),
    });
    return (await res.json()) as Record<string, any>;
  };
  async function until(what: () => Promise<boolean>, timeoutMs = 60_000) {
    const end = Date.now() + timeoutMs;
    while (!(await what())) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Every table's rows and every Redis key and value of this run, as lower-case text, by place. */
  async function everywhere(): Promise<Map<string, string>> {
    const places = new Map<string, string>();
    const tables = await db.sequelize.query<{ name: string }>('SELECT TABLE_NAME AS name FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()', { type: QueryTypes.SELECT });
    for (const { name } of tables) places.set(`table ${name}`, JSON.stringify(await db.sequelize.query(`SELECT * FROM ${name}`, { type: QueryTypes.SELECT })).toLowerCase());
    const redis = new Redis(redisUrl!);
    try {
      for (const key of await redis.keys(`${backend.env.REDIS_PREFIX}*`)) {
        const type = await redis.type(key);
        const value = type === 'string' ? await redis.get(key) : type === 'hash' ? await redis.hgetall(key) : type === 'list' ? await redis.lrange(key, 0, -1)
          : type === 'set' ? await redis.smembers(key) : type === 'zset' ? await redis.zrange(key, '0', '-1') : type === 'stream' ? await redis.xrange(key, '-', '+') : null;
        places.set(`redis ${key}`, `${key} ${JSON.stringify(value)}`.toLowerCase());
      }
    } finally {
      redis.disconnect();
    }
    const mailDir = path.join(workDir, 'var', 'mail');
    for (const file of fs.existsSync(mailDir) ? fs.readdirSync(mailDir) : []) places.set(`mail ${file}`, fs.readFileSync(path.join(mailDir, file), 'utf8').toLowerCase());
    return places;
  }
  const holding = async (needles: string[]) => [...await everywhere()].flatMap(([place, text]) => needles.filter((n) => text.includes(n.toLowerCase())).map((n) => `${place}: ${n}`));

  beforeAll(async () => {
    backend = await createTestBackend({ redis: true });
    workDir = backend.dir;
    expect(cli(['migrate'], { cwd: backend.dir, env: env() }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env: env() }).stdout);
    owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
    login = local.clients.login.client_id;
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    api = startNode(SERVER, { cwd: backend.dir, env: { ...env(), PORT: String(port), METRICS_PORT: String(await freePort()) } });
    await api.waitFor(/api listening/);
    db = openDatabase(backend.config.database);
  });
  afterAll(async () => {
    expect(await api.stop()).toBe(0);
    await db.close();
    await backend.cleanup();
  });

  it('erases a record while the worker is killed midway: nothing of the person remains anywhere', async () => {
    const email = 'yolanda.erase-5519@example.com';
    const password = 'correct horse battery';
    const registered = await post('/oauth/register_native_traditional', {
      client_id: login, locale: 'en-US', emailAddress: email, newPassword: password, newPasswordConfirm: password,
      firstName: 'Yolanda', lastName: 'Xenakis', displayName: 'Yolanda Xenakis', redirect_uri: 'https://app.example.com/',
    }, null);
    expect(registered.stat).toBe('ok');
    const { uuid, id } = registered.capture_user as { uuid: string; id: number };
    const createdAt = new Date();
    for (let n = 1; n < 1000; n++) expect((await post('/entity.update', { type_name: 'user', uuid, attributes: JSON.stringify({ familyName: 'Xenakis', n }) })).stat).toBe('ok');
    // a wrong password counted (Redis budget, a failed sign-in row), and a sign-in's sessions
    expect((await post('/oauth/auth_native_traditional', { client_id: login, locale: 'en-US', signInEmailAddress: email, currentPassword: 'wrong one' }, null)).code).toBe(210);
    expect((await post('/oauth/auth_native_traditional', { client_id: login, locale: 'en-US', signInEmailAddress: email, currentPassword: password }, null)).stat).toBe('ok');
    const needles = [email, 'Xenakis', uuid];
    expect((await stored(db).count('outbox', "queue = 'versions' AND status = 'pending'"))).toBeGreaterThanOrEqual(1000);

    // the worker records the backlog and sends the welcome email; killed midway, the erasure lands meanwhile
    const first = startNode(WORKER, { cwd: workDir, env: env() });
    await until(async () => (await stored(db).count('entity_versions', 'entity_id = ?', [id])) > 0);
    const erased = await post('/entity.erase', { type_name: 'user', uuid });
    expect(erased).toMatchObject({ stat: 'ok', already_erased: false });
    first.child.kill('SIGKILL');
    await first.exited;

    const second = startNode(WORKER, { cwd: workDir, env: env() });
    try {
      await second.waitFor(/worker ready/);
      // the erasure's job finishes (relayed if the kill took it), and so does everything else
      await until(async () => (await stored(db).count('outbox', "status <> 'done'")) === 0, 120_000);
      expect(await holding(needles)).toEqual([]);
      for (const at of [createdAt, new Date()]) {
        expect((await post('/versions/entity', { type_name: 'user', uuid, timestamp: formatTimestamp(at) })).code).toBe(310);
        expect((await post('/versions/entity', { type_name: 'user', id: String(id), timestamp: formatTimestamp(at) })).code).toBe(310);
      }
    } finally {
      expect(await second.stop()).toBe(0);
    }
  }, 240_000);
});
