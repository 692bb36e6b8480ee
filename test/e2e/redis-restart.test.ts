import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer } from 'smtp-server';
import { createTestBackend, redisUrl, skipUnless, type TestBackend } from '../helpers/backend';
import { cli, freePort, SERVER, startNode, WORKER, ownRedis, redisServerInstalled as redisServer } from '../helpers/processes';


/** A Redis of this test's own (never the shared one): it is killed and started again empty. */

skipUnless(redisServer && !!redisUrl, 'the Redis restart test runs with the MariaDB + Redis suite (REDIS_URL) and needs the redis-server program')('no lost email: Redis restarts empty under running processes', () => {
  let backend: TestBackend;
  let redis: ReturnType<typeof ownRedis>;
  const mails: ParsedMail[] = [];
  let smtp: SMTPServer;
  let smtpPort: number;

  beforeAll(async () => {
    const redisPort = await freePort();
    redis = ownRedis(redisPort);
    await redis.start();
    smtp = new SMTPServer({
      authOptional: true, disabledCommands: ['STARTTLS', 'AUTH'], logger: false,
      onData(stream, _session, callback) {
        simpleParser(stream).then((m) => { mails.push(m); callback(); }, callback);
      },
    });
    smtpPort = await freePort();
    await new Promise<void>((resolve) => smtp.listen(smtpPort, '127.0.0.1', resolve));
    backend = await createTestBackend({
      env: {
        REDIS_URL: `redis://127.0.0.1:${redisPort}`, REDIS_PREFIX: 'ghrestart', MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtpPort}`,
        OUTBOX_RELAY_AFTER_SECONDS: '2', REGISTER_LIMIT_ADDRESS: '1000/3600', MAIL_LIMIT_ADDRESS: '1000/3600', LOG_LEVEL: 'info',
      },
    });
  });
  afterAll(async () => {
    await redis.kill();
    await new Promise<void>((resolve) => smtp.close(() => resolve()));
    await backend.cleanup();
  });

  it('every email committed before, during and after the outage is delivered, without restarting anything', async () => {
    const env = backend.env;
    expect(cli(['migrate'], { cwd: backend.dir, env }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env }).stdout);
    const port = await freePort();
    const api = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port) } });
    const worker = startNode(WORKER, { cwd: backend.dir, env });
    const post = (p: string, body: Record<string, string>) => fetch(`http://127.0.0.1:${port}${p}`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(body),
    }).then(async (r) => (await r.json()) as Record<string, unknown>);
    const shared = { client_id: local.clients.login.client_id, locale: 'en-US' };
    const users = Array.from({ length: 30 }, (_, i) => `user${i}@example.com`);
    const reset = (email: string) => post('/oauth/forgot_password_native', { ...shared, redirect_uri: 'http://localhost:3000/reset-password', signInEmailAddress: email });
    try {
      await Promise.all([api.waitFor(/api listening/), worker.waitFor(/worker ready/)]);
      for (const email of users) {
        const registered = await post('/oauth/register_native_traditional', {
          ...shared, emailAddress: email, newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
        });
        if (registered.stat !== 'ok') throw new Error(JSON.stringify(registered));
      }
      // before: 10 resets; during the outage: 10; right after Redis came back empty: 10
      for (const email of users.slice(0, 10)) expect(await reset(email)).toEqual({ stat: 'ok' });
      await redis.kill();
      for (const email of users.slice(10, 20)) expect(await reset(email)).toEqual({ stat: 'ok' });
      await redis.start();
      for (const email of users.slice(20)) expect(await reset(email)).toEqual({ stat: 'ok' });

      const expected = users.length * 2; // a welcome email and a reset email each
      const end = Date.now() + 60_000;
      while (mails.length < expected && Date.now() < end) await new Promise((r) => setTimeout(r, 200));
      const resets = mails.filter((m) => /reset/i.test(m.subject ?? '')).map((m) => (m.to as { text: string }).text);
      expect(new Set(resets)).toEqual(new Set(users));
      expect(mails).toHaveLength(expected); // none twice
      expect(api.child.exitCode).toBeNull();
      expect(worker.child.exitCode).toBeNull();
    } finally {
      await Promise.all([api.stop(), worker.stop()]);
    }
  });
});
