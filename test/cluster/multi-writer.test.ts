import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import mysql from 'mysql2/promise';
import { createTestBackend, skipUnless, type TestBackend } from '../helpers/backend';
import { startSmtp } from '../helpers/smtp';
import { cli, freePort, until, SERVER, startNode, type Started, WORKER } from '../helpers/processes';

// Gatehouse on more than one machine's worth of servers, as .ci/cluster.sh starts them: a Galera
// cluster of three MariaDB nodes, every one a writer, and a Redis Cluster of three masters. Two
// api pods on different nodes and a worker on the third, driven through HTTP as apps drive them.

const galera = process.env.GALERA_URLS?.split(',').filter(Boolean) ?? [];
const redisCluster = process.env.REDIS_CLUSTER_URL;
const clusterDir = process.env.CLUSTER_DIR;

/** The URL of `node` for the test's own database. */
const onNode = (node: string, database: string) => {
  const url = new URL(node);
  url.pathname = `/${database}`;
  return url.toString();
};

/** Kills a node of the cluster (SIGKILL: a crash, not a shutdown) and starts it again with the command .ci/cluster.sh kept. */
const galeraNode = (n: number) => {
  const dir = path.join(clusterDir!, `galera${n}`);
  return {
    kill() {
      const pid = Number(fs.readFileSync(path.join(dir, 'db.pid'), 'utf8'));
      process.kill(pid, 'SIGKILL');
      return until(`Galera node ${n} is gone`, () => {
        try {
          process.kill(pid, 0);
          return false;
        } catch {
          return true;
        }
      });
    },
    start() {
      spawn('bash', [path.join(dir, 'start.sh')], { detached: true, stdio: 'ignore' }).unref();
    },
  };
};

type Answer = { status: number; body: Record<string, any> };

skipUnless(galera.length === 3 && !!redisCluster && !!clusterDir, 'the cluster tests need .ci/cluster.sh (GALERA_URLS, REDIS_CLUSTER_URL, CLUSTER_DIR)')(
  'Galera multi-writer and a Redis Cluster: two api pods on two nodes, a worker on the third', () => {
    let backend: TestBackend;
    let database: string;
    let pods: Started[];
    let worker: Started;
    let ports: number[];
    let smtp: Awaited<ReturnType<typeof startSmtp>>;
    const mails = () => smtp.mails;
    let login: string;

    const call = (pod: number, route: string, params: Record<string, string>): Promise<Answer> =>
      fetch(`http://127.0.0.1:${ports[pod % 2]}${route}`, {
        method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(params),
      }).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
    const ready = (pod: number) => fetch(`http://127.0.0.1:${ports[pod]}/readyz`).then(async (r) => ({ status: r.status, body: (await r.json()) as Record<string, any> }));
    const flow = () => ({ client_id: login, locale: 'en-US' });
    const register = (pod: number, email: string) => call(pod, '/oauth/register_native_traditional', {
      ...flow(), emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
    });
    const signIn = (pod: number, email: string, password = 'correct horse battery') => call(pod, '/oauth/auth_native_traditional', {
      ...flow(), signInEmailAddress: email, currentPassword: password,
    });
    const serverErrors = (answers: Answer[]) => answers.filter((a) => a.status >= 500);

    beforeAll(async () => {
      smtp = await startSmtp();
      backend = await createTestBackend({
        env: {
          REDIS_URL: redisCluster, REDIS_PREFIX: `ghc${Date.now().toString(36)}`, MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`,
          OUTBOX_RELAY_AFTER_SECONDS: '2', LOGIN_LIMIT_ACCOUNT: '12/900', LOGIN_LIMIT_ADDRESS: '100000/900', REGISTER_LIMIT_ADDRESS: '100000/3600', LOG_LEVEL: 'info',
        },
      });
      database = new URL(backend.env.DATABASE_URL!).pathname.slice(1);
      expect(cli(['migrate'], { cwd: backend.dir, env: backend.env }).status).toBe(0);
      login = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env: backend.env }).stdout).clients.login.client_id;
      ports = [await freePort(), await freePort()];
      pods = [0, 1].map((n) => startNode(SERVER, { cwd: backend.dir, env: { ...backend.env, DATABASE_URL: onNode(galera[n], database), PORT: String(ports[n]) } }));
      worker = startNode(WORKER, { cwd: backend.dir, env: { ...backend.env, DATABASE_URL: onNode(galera[2], database) } });
      await Promise.all([...pods.map((p) => p.waitFor(/api listening/)), worker.waitFor(/worker ready/)]);
    }, 120_000);
    afterAll(async () => {
      await Promise.all([...(pods ?? []).map((p) => p.stop()), worker?.stop()]);
      await smtp?.close();
      await backend?.cleanup();
    });

    it('both pods are ready: every database node and every queue slot answers', async () => {
      for (const pod of [0, 1]) expect(await ready(pod)).toMatchObject({ status: 200, body: { checks: { database: true, redis: true } } });
    });

    it('12 parallel sign-ins of one account over both nodes: no 5xx, every one signed in', async () => {
      expect((await register(0, 'hot@example.com')).body.stat).toBe('ok');
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => signIn(i, 'hot@example.com')));
      expect(serverErrors(answers)).toEqual([]);
      expect(answers.filter((a) => a.body.stat === 'ok')).toHaveLength(12);
    });

    it('12 parallel updates of one record over both nodes: no 5xx, every one written', async () => {
      const token = (await signIn(0, 'hot@example.com')).body.access_token as string;
      const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => call(i, '/oauth/update_profile_native', {
        ...flow(), access_token: token, form: 'editProfileForm', displayName: `hot ${i}`,
      })));
      expect(serverErrors(answers)).toEqual([]);
      expect(answers.filter((a) => a.body.stat === 'ok')).toHaveLength(12);
    });

    it('a token issued through one node is accepted at once through the other; a change made there is read at once', async () => {
      let stale = 0;
      for (let i = 0; i < 40; i++) {
        const token = (await signIn(i, 'hot@example.com')).body.access_token as string;
        // the other pod, on the other node, right away
        const changed = await call(i + 1, '/oauth/update_profile_native', { ...flow(), access_token: token, form: 'editProfileForm', displayName: `round ${i}` });
        if (changed.body.stat !== 'ok') stale++;
        const read = await call(i, '/entity', { access_token: token, type_name: 'user', attributes: '["displayName"]' });
        if (read.body.result?.displayName !== `round ${i}`) stale++;
      }
      expect(stale).toBe(0);
    });

    it('the limits are shared by the pods: 30 wrong passwords over both, with a limit of 12, get 12 checks', async () => {
      expect((await register(1, 'guessed@example.com')).body.stat).toBe('ok');
      const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => signIn(i, 'guessed@example.com', `wrong ${i}`)));
      expect(answers.filter((a) => a.body.code === 210)).toHaveLength(12);
      expect(answers.filter((a) => a.body.code === 510)).toHaveLength(18);
    });

    it('a node killed under load: the other pod serves on, its own pod reports not ready, and both serve again once it is back; every email goes out', async () => {
      const node2 = galeraNode(2);
      const emails = Array.from({ length: 30 }, (_, i) => `load${i}@example.com`);
      let i = 0;
      const answered: Answer[] = [];
      // registrations through pod 0 (node 1) all along, while pod 1's node goes down and comes back
      const load = (async () => {
        for (; i < emails.length; i++) answered.push(await register(0, emails[i]));
      })();
      await until('a third of the load is in', () => i >= 10);
      await node2.kill();
      await until('pod 1 reports not ready', async () => (await ready(1)).status === 503);
      node2.start();
      await until('node 2 is back and pod 1 is ready', async () => (await ready(1)).status === 200, 120_000);
      await load;
      expect(serverErrors(answered)).toEqual([]);
      expect(answered.filter((a) => a.body.stat === 'ok')).toHaveLength(emails.length);
      expect((await register(1, 'after@example.com')).body.stat).toBe('ok');
      // every welcome email of the test, the load's and the others', exactly once
      await until('every email is delivered', () => emails.every((e) => mails().some((m) => (m.to as { text: string }).text === e)));
      const pending = async () => {
        const c = await mysql.createConnection(onNode(galera[0], database));
        try {
          const [rows] = await c.query("SELECT COUNT(*) AS n FROM outbox WHERE status = 'pending'");
          return Number((rows as { n: number }[])[0].n);
        } finally {
          await c.end();
        }
      };
      await until('no outbox row is pending', async () => (await pending()) === 0).catch(async (e: Error) => {
        // which rows, and what became of them: the finding, when it happens
        const c = await mysql.createConnection(onNode(galera[0], database));
        try {
          const [rows] = await c.query("SELECT id, queue, name, attempts, last_error, created_at, updated_at FROM outbox WHERE status = 'pending' LIMIT 10");
          const ids = (rows as { id: string }[]).map((r) => r.id);
          const about = (out: string) => out.split('\n').filter((l) => ids.some((id) => l.includes(id)) || /job failed|"level":[456]0/.test(l)).slice(-40).join('\n');
          throw new Error(`${e.message}: ${JSON.stringify(rows)}; the worker printed of them:\n${about(worker.output())}\npod 1:\n${about(pods[1].output())}`);
        } finally {
          await c.end();
        }
      });
      const sent = mails().map((m) => (m.to as { text: string }).text);
      expect(sent.length).toBe(new Set(sent).size);
    }, 180_000);
  },
);

