import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, type Database } from '../../src/db';
import { formatTimestamp } from '../../src/domain/timestamps';
import { createTestBackend, onMysql, redisUrl, skipUnless, basic, type TestBackend } from '../helpers/backend';
import { cli, freePort, SERVER, startNode, WORKER, type Started } from '../helpers/processes';
import { stored } from '../helpers/stored';

/**
 * Version snapshots across real processes: api and worker on MariaDB + Redis, the worker killed
 * (SIGKILL) while it records a backlog, then started again: nothing lost, nothing twice.
 */
skipUnless(onMysql && !!redisUrl, 'the versions e2e needs DATABASE_URL (MariaDB) and REDIS_URL')('versions across api and worker processes', () => {
  let backend: TestBackend;
  let db: Database;
  let api: Started;
  let base: string;
  let apiMetrics: string;
  let owner: string;
  const workerDir = () => fs.mkdtempSync(path.join(backend.dir, 'worker-'));
  const env = () => ({ ...backend.env, LOG_LEVEL: 'info' });
  const post = async (route: string, params: Record<string, string>) => {
    const res = await fetch(`${base}${route}`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', Authorization: owner }, body: new URLSearchParams(params) });
    return (await res.json()) as Record<string, any>;
  };
  const pending = () => stored(db).count('outbox', "queue = 'versions' AND status <> 'done'");
  const recorded = () => stored(db).count('entity_versions');
  async function until(what: () => Promise<boolean>, timeoutMs = 60_000) {
    const end = Date.now() + timeoutMs;
    while (!(await what())) {
      if (Date.now() > end) throw new Error('timed out');
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  beforeAll(async () => {
    backend = await createTestBackend({ redis: true });
    expect(cli(['migrate'], { cwd: backend.dir, env: env() }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env: env() }).stdout);
    owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
    const port = await freePort();
    const metricsPort = await freePort();
    base = `http://127.0.0.1:${port}`;
    apiMetrics = `http://127.0.0.1:${metricsPort}/metrics`;
    api = startNode(SERVER, { cwd: backend.dir, env: { ...env(), PORT: String(port), METRICS_PORT: String(metricsPort) } });
    await api.waitFor(/api listening/);
    db = openDatabase(backend.config.database);
  });
  afterAll(async () => {
    expect(await api.stop()).toBe(0);
    await db.close();
    await backend.cleanup();
  });

  it('changes made while no worker runs are answered at once, then recorded once by a worker killed mid-way and restarted', async () => {
    const { id } = await post('/entity.create', { type_name: 'user', attributes: '{"displayName":"first"}' });
    const firstAt = new Date();
    await new Promise((r) => setTimeout(r, 5));
    await post('/entity.update', { type_name: 'user', id: String(id), attributes: '{"displayName":"second"}' });

    // no worker yet: the snapshots are pending, and lookups answer from them
    const lookup = async (time: Date) => (await post('/versions/entity', { type_name: 'user', id: String(id), timestamp: formatTimestamp(time) })).result?.displayName;
    expect(await lookup(firstAt)).toBe('first');
    expect(await lookup(new Date())).toBe('second');

    // a backlog: 8 bulkCreate calls of 1,000 records, one snapshot each
    const batches = 8;
    for (let b = 0; b < batches; b++) {
      const created = await post('/entity.bulkCreate', {
        type_name: 'user', all_attributes: JSON.stringify(Array.from({ length: 1000 }, (_, n) => ({ email: `u${b}-${n}@example.com`, n }))),
      });
      expect(JSON.stringify(created)).toContain('"stat":"ok"');
    }
    const expected = 2 + batches * 1000;
    expect(await pending()).toBe(expected);
    expect(await recorded()).toBe(0);

    const first = startNode(WORKER, { cwd: workerDir(), env: env() });
    await until(async () => (await recorded()) > 0);
    first.child.kill('SIGKILL');
    await first.exited;
    const whenKilled = await recorded();
    expect(whenKilled).toBeLessThan(expected); // killed mid-way

    const workerPort = await freePort();
    const second = startNode(WORKER, { cwd: workerDir(), env: { ...env(), METRICS_PORT: String(workerPort) } });
    try {
      await second.waitFor(/worker ready/);
      // the worker's health and metrics port
      expect(await (await fetch(`http://127.0.0.1:${workerPort}/healthz`)).json()).toEqual({ stat: 'ok' });
      expect(await (await fetch(`http://127.0.0.1:${workerPort}/readyz`)).json()).toEqual({ stat: 'ok', checks: { database: true, redis: true, secret_key: true } });
      await until(async () => (await pending()) === 0, 120_000);
      expect(await recorded()).toBe(expected);
      expect(await stored(db).rows('SELECT entity_id FROM entity_versions GROUP BY entity_id, version HAVING COUNT(*) > 1')).toEqual([]);
      expect(await stored(db).rows('SELECT DISTINCT entity_id FROM entity_versions')).toHaveLength(expected - 1);
      expect(await lookup(firstAt)).toBe('first');
      expect(await lookup(new Date())).toBe('second');
      const workerText = await (await fetch(`http://127.0.0.1:${workerPort}/metrics`)).text();
      expect(workerText).toMatch(/^gatehouse_jobs_total\{[^}]*queue="versions"[^}]*outcome="completed"[^}]*\} [1-9]/m);
      expect(workerText).toMatch(/^gatehouse_outbox_pending\{[^}]*queue="versions"[^}]*\} 0$/m);
      const apiText = await (await fetch(apiMetrics)).text();
      expect(apiText).toMatch(/^gatehouse_http_requests_total\{[^}]*route="\/versions\/entity"[^}]*\} [1-9]/m);
      expect(apiText).toMatch(/^gatehouse_http_requests_total\{[^}]*route="\/entity.bulkCreate"[^}]*\} 8$/m);
    } finally {
      expect(await second.stop()).toBe(0);
    }
  }, 240_000);
});
