import path from 'node:path';
import { createTestBackend, onMysql, redisUrl, skipUnless, type TestBackend } from '../helpers/backend';
import { cli, freePort, ROOT, SERVER, startNode, WORKER, type Started } from '../helpers/processes';
import { startSmtp } from '../helpers/smtp';

/**
 * What docker-compose.yml wires together, started as real processes on 127.0.0.1 (CI has no
 * Docker engine): MariaDB and Redis, an SMTP sink, `migrate` and `init`, two api processes, a
 * worker and the dashboard.
 */
const DASHBOARD = path.join(ROOT, 'dist/src/dashboard.js');
const PASSWORD = 'correct horse battery';

async function until(what: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await what())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}

skipUnless(onMysql && redisUrl !== undefined, 'the compose topology test needs a mysql: DATABASE_URL and REDIS_URL')('the compose topology, as processes', () => {
  let backend: TestBackend;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  const started: Started[] = [];
  let env: NodeJS.ProcessEnv;
  let loginId: string;
  const apis: { base: string; metrics: string; process: Started }[] = [];
  let dashboard: string;

  const form = async (base: string, route: string, body: Record<string, string>) => {
    const res = await fetch(base + route, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body) });
    return (await res.json()) as Record<string, any>;
  };
  const startApi = async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const api = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port), METRICS_PORT: String(metricsPort) } });
    started.push(api);
    await api.waitFor(/api listening/);
    return { base: `http://127.0.0.1:${port}`, metrics: `http://127.0.0.1:${metricsPort}/metrics`, process: api };
  };
  const startWorker = async () => {
    const worker = startNode(WORKER, { cwd: backend.dir, env });
    started.push(worker);
    await worker.waitFor(/worker ready/);
    return worker;
  };

  beforeAll(async () => {
    backend = await createTestBackend({ redis: true });
    smtp = await startSmtp();
    env = {
      ...backend.env, LOG_LEVEL: 'info', MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, DEFAULT_APP: 'local',
      LOGIN_LIMIT_ACCOUNT: '3/600', PUBLIC_BASE_URL: 'http://localhost:3000', OUTBOX_RELAY_AFTER_SECONDS: '2',
    };
    // the compose steps: migrate, then init
    expect(cli(['migrate'], { cwd: backend.dir, env }).status).toBe(0);
    expect(cli(['init'], { cwd: backend.dir, env }).stdout).toContain('created the application "local"');
    loginId = (JSON.parse(cli(['clients:list', '--app', 'local'], { cwd: backend.dir, env }).stdout) as { client_id: string; features: string[] }[])
      .find((c) => c.features.includes('login_client'))!.client_id;
    apis.push(await startApi(), await startApi());
    await startWorker();
    const dashboardPort = await freePort();
    const board = startNode(DASHBOARD, { cwd: backend.dir, env: { ...env, DASHBOARD_PORT: String(dashboardPort), DASHBOARD_PASSWORD: 'operator-password' } });
    started.push(board);
    await board.waitFor(/dashboard listening/);
    dashboard = `http://127.0.0.1:${dashboardPort}`;
    expect((await form(apis[0].base, '/oauth/register_native_traditional', {
      client_id: loginId, locale: 'en-US', emailAddress: 'ada@example.com', newPassword: PASSWORD, newPasswordConfirm: PASSWORD, firstName: 'Ada', lastName: 'L', displayName: 'ada',
    })).stat).toBe('ok');
  }, 120_000);
  afterAll(async () => {
    await Promise.all(started.map((p) => p.stop()));
    await smtp.close();
    await backend.cleanup();
  });

  it('a sign-in limit counts across both api processes', async () => {
    const signIn = (base: string, email: string, password: string) =>
      form(base, '/oauth/auth_native_traditional', { client_id: loginId, locale: 'en-US', signInEmailAddress: email, currentPassword: password });
    expect((await signIn(apis[0].base, 'ada@example.com', 'wrong 1')).code).toBe(210);
    expect((await signIn(apis[1].base, 'ada@example.com', 'wrong 2')).code).toBe(210);
    expect((await signIn(apis[0].base, 'ada@example.com', 'wrong 3')).code).toBe(210);
    const refused = await signIn(apis[1].base, 'ada@example.com', PASSWORD);
    expect(refused).toMatchObject({ stat: 'error', code: 510 });
  });

  it('a password reset requested on api 1 is delivered exactly once; the dashboard lists its job; metrics count per process', async () => {
    const before = smtp.mails.length;
    expect(await form(apis[0].base, '/oauth/forgot_password_native', {
      client_id: loginId, locale: 'en-US', redirect_uri: 'http://localhost:3000/reset-password', signInEmailAddress: 'ada@example.com',
    })).toEqual({ stat: 'ok' });
    await until(() => smtp.mails.some((m) => /password/i.test(m.subject ?? '') && m.to && JSON.stringify(m.to).includes('ada@example.com')));
    await new Promise((r) => setTimeout(r, 3000)); // longer than the relay's grace: a second copy would have come by now
    expect(smtp.mails.slice(before).filter((m) => /password/i.test(m.subject ?? ''))).toHaveLength(1);

    const auth = { Authorization: `Basic ${Buffer.from('operator:operator-password').toString('base64')}` };
    const queues = (await (await fetch(`${dashboard}/api/queues?activeQueue=mail&status=completed&page=1`, { headers: auth })).json()) as {
      queues: { name: string; counts: Record<string, number> }[];
    };
    expect(queues.queues.find((q) => q.name === 'mail')!.counts.completed).toBeGreaterThanOrEqual(2); // welcome + reset

    const [first, second] = await Promise.all(apis.map(async (a) => (await fetch(a.metrics)).text()));
    const forgot = (text: string) => Number(/gatehouse_http_requests_total\{[^}]*route="\/oauth\/forgot_password_native"[^}]*\} (\d+)/.exec(text)?.[1] ?? 0);
    expect(forgot(first)).toBe(1);
    expect(forgot(second)).toBe(0);
  });

  it('SIGTERM on an api while requests are in flight: every started request gets its answer', async () => {
    const victim = await startApi();
    const inFlight = Array.from({ length: 12 }, (_, i) => form(victim.base, '/oauth/register_native_traditional', {
      client_id: loginId, locale: 'en-US', emailAddress: `inflight${i}@example.com`, newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
      firstName: 'In', lastName: 'Flight', displayName: `f${i}`,
    }));
    await new Promise((r) => setTimeout(r, 100)); // the requests are in; argon2 takes them one by one
    victim.process.child.kill('SIGTERM');
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.stat)).toEqual(Array(12).fill('ok'));
    expect(await victim.process.exited).toBe(0);
  });

  it('a worker killed mid-way and another started: every email is delivered, each with its own Message-ID once', async () => {
    // stop the running worker; queue 40 emails (verification mails) while none runs
    await Promise.all(started.filter((p) => p.output().includes('worker ready')).map((w) => w.stop()));
    const before = smtp.mails.length;
    for (let i = 0; i < 40; i++) {
      expect((await form(apis[i % 2].base, '/oauth/register_native_traditional', {
        client_id: loginId, locale: 'en-US', emailAddress: `batch${i}@example.com`, newPassword: PASSWORD, newPasswordConfirm: PASSWORD,
        firstName: 'B', lastName: 'Atch', displayName: `b${i}`,
      })).stat).toBe('ok');
    }
    const first = await startWorker();
    // (a loaded CI machine may take a while; the worker's own words say why if it never sends)
    await until(() => smtp.mails.length > before, 120_000).catch((e: Error) => {
      throw new Error(`${e.message}: no email from the new worker; it printed:\n${first.output().slice(-3000)}`);
    });
    first.child.kill('SIGKILL');
    await first.exited;
    const second = await startWorker();
    const batch = () => smtp.mails.slice(before).filter((m) => /batch\d+@example\.com/.test(JSON.stringify(m.to)));
    // the killed worker's active jobs come back once their locks expire (BullMQ: 30 s) and the next
    // stalled-job check runs (every 30 s): about 60 s on a quiet machine, more on a loaded one
    await until(() => new Set(batch().map((m) => JSON.stringify(m.to))).size === 40, 180_000).catch((e: Error) => {
      throw new Error(`${e.message}: ${new Set(batch().map((m) => JSON.stringify(m.to))).size} of 40 delivered; the new worker printed:\n${second.output().slice(-3000)}`);
    });
    await new Promise((r) => setTimeout(r, 3000));
    // one distinct message per recipient. A copy can only be a message the killed worker had
    // handed to the SMTP server before it could mark it sent (at most one per job it was running),
    // and then it carries the same Message-ID, by which receiving systems drop it.
    const sent = batch().map((m) => `${JSON.stringify(m.to)} ${m.messageId}`);
    expect(new Set(batch().map((m) => m.messageId)).size).toBe(40);
    expect(new Set(sent).size).toBe(40);
    expect(sent.length - 40).toBeLessThanOrEqual(32); // the mail worker's concurrency
  }, 360_000);
});
