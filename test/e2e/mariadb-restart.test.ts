import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import { buildApp } from '../../src/app';
import { loadConfig } from '../../src/config';
import { migrate } from '../../src/db/migrate';
import { createLogger } from '../../src/logger';
import { createRuntime, type Runtime } from '../../src/runtime';
import { basic, FLOWS, onMysql, skipUnless, createApp } from '../helpers/backend';
import { freePort, ownMariadb } from '../helpers/processes';

const mariadb = spawnSync('mariadbd', ['--version']).status === 0 && spawnSync('which', ['mariadb-install-db']).status === 0;


// a MariaDB of its own whatever the suite's database: run with the suite on MariaDB
skipUnless(mariadb && onMysql, 'the MariaDB restart test runs with the suite on MariaDB (DATABASE_URL) and needs the mariadbd and mariadb-install-db programs')('the database restarts under a running api', () => {
  let dir: string;
  let db: ReturnType<typeof ownMariadb>;
  let runtime: Runtime | undefined;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gatehouse-mariadb-'));
    const port = await freePort();
    db = ownMariadb(path.join(dir, 'data'), port);
    await db.start();
    spawnSync('mariadb', ['--no-defaults', '-h', '127.0.0.1', '-P', String(port), '-uroot', '-e', 'CREATE DATABASE gh CHARACTER SET utf8mb4 COLLATE utf8mb4_bin']);
    const config = loadConfig({ DATABASE_URL: `mysql://root@127.0.0.1:${port}/gh`, SECRET_KEY: 'b'.repeat(64), MAIL_TRANSPORT: 'file', LOG_LEVEL: 'silent' }, dir);
    runtime = createRuntime(config, createLogger('silent'));
    await migrate(runtime.db);
  }, 60_000);
  afterAll(async () => {
    await runtime?.close();
    await db.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers 503 with Retry-After while it is down, and serves again once it is back, without a restart', async () => {
    const local = await createApp(runtime!, 'local', FLOWS);
    const app = buildApp({ services: runtime!.services, defaultApp: 'local', readiness: () => runtime!.readiness() });
    const owner = basic(local.clients.owner.client_id, local.clients.owner.client_secret);
    const create = (n: number) => request(app).post('/entity.create').set('Authorization', owner).type('form')
      .send({ type_name: 'user', attributes: JSON.stringify({ email: `restart${n}@example.com` }) });
    expect((await create(1)).body.stat).toBe('ok');

    await db.kill();
    const down = await Promise.all([create(2), request(app).get('/clients/list').set('Authorization', owner), request(app).get('/readyz')]);
    for (const res of down) {
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBeDefined();
      expect(res.body).toMatchObject({ stat: 'error', code: 500, sub_error: 'service_unavailable' });
    }
    expect(down[0].body.error_description).toMatch(/database is unavailable/);

    await db.start();
    let back = await create(3);
    for (let i = 0; i < 50 && back.status === 503; i++) {
      await new Promise((r) => setTimeout(r, 200));
      back = await create(3);
    }
    expect(back.body.stat).toBe('ok');
    expect((await request(app).get('/readyz')).status).toBe(200);
  });
});
