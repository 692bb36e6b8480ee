import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { simpleParser, type ParsedMail } from 'mailparser';
import request from 'supertest';
import { createLogger } from '../../src/logger';
import { createBullWorkers } from '../../src/queue/bullmq';
import { createRuntime } from '../../src/runtime';
import { createProcessors } from '../../src/jobs';
import { createTestBackend, onMysql, redisUrl, startTestApp, type TestBackend, skipUnless } from '../helpers/backend';
import { cli, freePort, SERVER, startNode, WORKER } from '../helpers/processes';
import { startSmtp, waitFor } from '../helpers/smtp';
import { stored } from '../helpers/stored';

// (these jobs are not webhooks: no endpoint is removed or disabled here)

const linkParam = (mail: ParsedMail, name: string) => new URL(mail.text!.match(/https?:\/\/\S+/)![0]).searchParams.get(name)!;
const form = (base: string, p: string, body: Record<string, string>, headers: Record<string, string> = {}) =>
  fetch(base + p, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) })
    .then(async (r) => (await r.json()) as Record<string, any>);

skipUnless(onMysql && redisUrl !== undefined, 'the production-shape tests need a mysql: DATABASE_URL and REDIS_URL')('email end to end: api process, worker process, MariaDB, Redis, a real SMTP server', () => {
  let backend: TestBackend;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  beforeAll(async () => {
    backend = await createTestBackend({ redis: true });
    smtp = await startSmtp();
  });
  afterAll(async () => {
    await smtp.close();
    await backend.cleanup();
  });

  it('forgot password → email → /oauth/token → new password → sign-in; verify email → email → useVerificationCode', async () => {
    const env = { ...backend.env, LOG_LEVEL: 'info', MAIL_TRANSPORT: 'smtp', SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, MAIL_FROM: 'Gatehouse <no-reply@gatehouse.test>' };
    expect(cli(['migrate'], { cwd: backend.dir, env }).status).toBe(0);
    const local = JSON.parse(cli(['apps:create', 'local', '--json'], { cwd: backend.dir, env }).stdout);
    const port = await freePort();
    const api = startNode(SERVER, { cwd: backend.dir, env: { ...env, PORT: String(port), PUBLIC_BASE_URL: 'http://localhost:3000' } });
    const worker = startNode(WORKER, { cwd: backend.dir, env });
    const base = `http://127.0.0.1:${port}`;
    const loginId = local.clients.login.client_id;
    const loginAuth = `Basic ${Buffer.from(`${loginId}:${local.clients.login.client_secret}`).toString('base64')}`;
    try {
      await Promise.all([api.waitFor(/api listening/), worker.waitFor(/worker ready/)]);
      const registered = await form(base, '/oauth/register_native_traditional', {
        client_id: loginId, locale: 'en-US', emailAddress: 'ada@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
        firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
      });
      expect(registered.stat).toBe('ok');
      const welcome = await waitFor(() => smtp.mails.find((m) => m.subject === 'Welcome to Gatehouse'));
      expect(welcome.from?.text).toBe('"Gatehouse" <no-reply@gatehouse.test>');

      // forgot password
      const recoverUrl = 'http://localhost:3000/reset-password';
      expect(await form(base, '/oauth/forgot_password_native', { client_id: loginId, locale: 'fr-FR', redirect_uri: recoverUrl, signInEmailAddress: 'ada@example.com' }))
        .toEqual({ stat: 'ok' });
      const reset = await waitFor(() => smtp.mails.find((m) => m.subject === 'Réinitialisez votre mot de passe Gatehouse'));
      expect(reset.html).toContain('Choisir un nouveau mot de passe');
      const pair = await form(base, '/oauth/token', { grant_type: 'authorization_code', code: linkParam(reset, 'code'), redirect_uri: recoverUrl }, { authorization: loginAuth });
      expect(pair.stat).toBe('ok');
      expect(await form(base, '/oauth/update_profile_native', {
        client_id: loginId, locale: 'en-US', access_token: pair.access_token, form: 'newPasswordFormNoAuth',
        newPassword: 'analytical engine', newPasswordConfirm: 'analytical engine',
      })).toEqual({ stat: 'ok' });
      const signIn = (password: string) => form(base, '/oauth/auth_native_traditional', { client_id: loginId, locale: 'en-US', signInEmailAddress: 'ada@example.com', currentPassword: password });
      expect((await signIn('analytical engine')).stat).toBe('ok');
      expect((await signIn('correct horse battery')).code).toBe(210);

      // verify email
      expect(await form(base, '/oauth/verify_email_native', { client_id: loginId, locale: 'de-DE', redirect_uri: 'http://localhost:3000/', signInEmailAddress: 'ada@example.com' }))
        .toEqual({ stat: 'ok' });
      const verify = await waitFor(() => smtp.mails.find((m) => m.subject === 'Bestätige deine E-Mail-Adresse für Gatehouse'));
      const used = await fetch(`${base}/access/useVerificationCode?verification_code=${linkParam(verify, 'verification_code')}`).then((r) => r.json());
      expect(used).toEqual({ stat: 'ok', uuid: registered.capture_user.uuid });
      const me = (await fetch(`${base}/entity`, { headers: { authorization: `OAuth ${(await signIn('analytical engine')).access_token}` } }).then((r) => r.json())) as { result: Record<string, string> };
      expect(me.result.emailVerified).toMatch(/ \+0000$/);
      // each email was sent exactly once
      expect(smtp.mails.map((m) => m.subject).sort()).toEqual([
        'Bestätige deine E-Mail-Adresse für Gatehouse', 'Réinitialisez votre mot de passe Gatehouse', 'Welcome to Gatehouse',
      ]);
    } finally {
      expect(await Promise.all([api.stop(), worker.stop()])).toEqual([0, 0]);
    }
  });
});

const redisServer = spawnSync('redis-server', ['--version']).status === 0;

skipUnless(redisServer, 'the Redis outage test needs the redis-server program')('no lost email: Redis stopped while a request commits', () => {
  let redis: ChildProcess | undefined;
  let port: number;
  const startRedis = async () => {
    redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    const end = Date.now() + 10_000;
    while (spawnSync('redis-cli', ['-p', String(port), 'ping']).stdout?.toString().trim() !== 'PONG') {
      if (Date.now() > end) throw new Error('redis did not start');
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const stopRedis = async () => {
    if (!redis || redis.exitCode !== null) return;
    const exited = new Promise((r) => redis!.on('exit', r));
    redis.kill('SIGTERM');
    await exited;
  };
  afterAll(stopRedis);

  it('answers ok with Redis down, and the email goes out once Redis is back', async () => {
    port = await freePort();
    await startRedis();
    const t = await startTestApp({ env: { REDIS_URL: `redis://127.0.0.1:${port}`, REDIS_PREFIX: 'ghlost' } });
    const logger = createLogger('silent');
    try {
      const login = t.local.clients.login.client_id;
      const registered = await request(t.app).post('/oauth/register_native_traditional').type('form').send({
        client_id: login, locale: 'en-US', emailAddress: 'lost@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery',
        firstName: 'Ada', lastName: 'Lovelace', displayName: 'Ada',
      });
      expect(registered.body.stat).toBe('ok');

      await stopRedis();
      const res = await request(t.app).post('/oauth/forgot_password_native').type('form').send({
        client_id: login, locale: 'en-US', redirect_uri: 'http://localhost:3000/reset-password', signInEmailAddress: 'lost@example.com',
      });
      expect(res.body).toEqual({ stat: 'ok' });
      const pending = await stored(t.runtime.db).rows<{ id: string; queue: string }>("SELECT * FROM outbox WHERE status = 'pending'");
      expect(pending.length).toBeGreaterThanOrEqual(1);

      await startRedis();
      const second = createRuntime(t.backend.config, logger);
      const made = createProcessors({ config: t.backend.config, services: second.services, outbox: second.outbox, logger });
      const workers = createBullWorkers({ redisUrl: `redis://127.0.0.1:${port}`, prefix: 'ghlost', processors: made.processors, logger });
      // what a worker's relay does on its own timer, every second here (every 15 s by default: docs/operations.md),
      // until nothing is pending; within 20 s of Redis's return
      const end = Date.now() + 20_000;
      while ((await stored(t.runtime.db).count('outbox', "status = 'pending'")) > 0 && Date.now() < end) {
        await second.outbox.relay(0);
        await new Promise((r) => setTimeout(r, 1_000));
      }
      const left = await stored(t.runtime.db).rows<{ queue: string; name: string; attempts: number; last_error: string | null }>("SELECT queue, name, attempts, last_error FROM outbox WHERE status = 'pending'");
      expect(left).toEqual([]);
      const mails = await Promise.all(fs.readdirSync(t.backend.config.mailDir).map((f) => simpleParser(fs.readFileSync(path.join(t.backend.config.mailDir, f)))));
      expect(mails.map((m) => m.subject)).toContain('Reset your Gatehouse password');
      await workers.close();
      made.close();
      await second.close();
    } finally {
      await t.close();
    }
  });
});

