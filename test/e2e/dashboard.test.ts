import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { Queue, Worker } from 'bullmq';
import { createTestBackend, redisUrl, skipUnless, type TestBackend } from '../helpers/backend';
import { freePort, ownServer, ROOT, startNode, type Started } from '../helpers/processes';
import { CHROMIUM, launchChromium } from '../helpers/browser';

const DASHBOARD = path.join(ROOT, 'dist/src/dashboard.js');
const PASSWORD = 'correct-horse-battery';

skipUnless(redisUrl !== undefined, 'the dashboard shows BullMQ queues: it needs REDIS_URL')('the queue dashboard process (npm run dashboard)', () => {
  let backend: TestBackend;
  let dashboard: Started;
  let base: string;
  const auth = (user = 'operator', password = PASSWORD) => ({ Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

  beforeAll(async () => {
    backend = await createTestBackend({ redis: true });
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    dashboard = startNode(DASHBOARD, { cwd: backend.dir, env: {
      ...backend.env, LOG_LEVEL: 'info', DASHBOARD_PORT: String(port), DASHBOARD_PASSWORD: PASSWORD, HTTP_HEADERS_TIMEOUT_SECONDS: '2', HTTP_REQUEST_TIMEOUT_SECONDS: '3',
    } });
    await dashboard.waitFor(/dashboard listening/);
  });
  afterAll(async () => {
    expect(await dashboard.stop()).toBe(0);
    await backend.cleanup();
  });

  it('refuses to start without an operator password, or without Redis', async () => {
    const noPassword = startNode(DASHBOARD, { cwd: backend.dir, env: { ...backend.env, DASHBOARD_PORT: String(await freePort()) } });
    expect(await noPassword.exited).toBe(78);
    expect(noPassword.output()).toContain('DASHBOARD_PASSWORD');
    const noRedis = startNode(DASHBOARD, { cwd: backend.dir, env: { ...backend.env, REDIS_URL: '', DASHBOARD_PASSWORD: PASSWORD } });
    expect(await noRedis.exited).toBe(78);
    const weak = startNode(DASHBOARD, { cwd: backend.dir, env: { ...backend.env, DASHBOARD_PASSWORD: 'short' } });
    expect(await weak.exited).toBe(78);
    expect(weak.output()).toContain('DASHBOARD_PASSWORD must be at least 12 characters');
  });

  it('answers nothing without the credential; too many failures wait', async () => {
    expect((await fetch(`${base}/healthz`)).status).toBe(200);
    const none = await fetch(`${base}/`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toContain('Basic');
    expect((await fetch(`${base}/api/queues`, { headers: auth('operator', 'wrong-password!') })).status).toBe(401);
    expect((await fetch(`${base}/api/queues`, { headers: auth('root', PASSWORD) })).status).toBe(401);
  });

  it('lists every queue; a failed job is shown without secrets, retried and removed', async () => {
    const prefix = backend.env.REDIS_PREFIX!;
    const mail = new Queue('mail', { connection: { url: redisUrl }, prefix });
    // a job as the api enqueues it (its outbox id only), failed by a worker that cannot send
    const failing = new Worker('mail', async () => { throw new Error('SMTP server refused the connection'); }, { connection: { url: redisUrl }, prefix });
    await mail.add('send', { outboxId: 'f7c1b0de-0000-4000-8000-000000000001' }, { jobId: 'f7c1b0de-0000-4000-8000-000000000001' });
    for (let i = 0; i < 100 && (await mail.getJobCounts('failed')).failed === 0; i++) await new Promise((r) => setTimeout(r, 50));
    await failing.close();

    const listed = (await (await fetch(`${base}/api/queues?activeQueue=mail&status=failed&page=1`, { headers: auth() })).json()) as {
      queues: { name: string; counts: Record<string, number>; jobs: { id: string; data: unknown; failedReason: string }[] }[];
    };
    expect(listed.queues.map((q) => q.name).sort()).toEqual(['mail', 'maintenance', 'versions', 'webhooks']);
    const mailQueue = listed.queues.find((q) => q.name === 'mail')!;
    expect(mailQueue.counts.failed).toBe(1);
    expect(mailQueue.jobs[0]).toMatchObject({ id: 'f7c1b0de-0000-4000-8000-000000000001', data: { outboxId: 'f7c1b0de-0000-4000-8000-000000000001' } });
    expect(mailQueue.jobs[0].failedReason).toContain('SMTP server refused');

    if (fs.existsSync(CHROMIUM)) {
      const browser = await launchChromium();
      try {
        const page = await browser.newPage({ viewport: { width: 1280, height: 720 }, httpCredentials: { username: 'operator', password: PASSWORD } });
        await page.goto(`${base}/queue/mail?status=failed`);
        await page.getByText('f7c1b0de-0000-4000-8000-000000000001').first().waitFor({ timeout: 15_000 });
        // the job's data is its outbox id, nothing else; its error says why it failed
        await page.getByRole('button', { name: 'Error' }).first().click();
        await page.getByText('SMTP server refused', { exact: false }).first().waitFor({ timeout: 15_000 });
        await page.getByRole('button', { name: 'Data' }).first().click();
        await page.getByText('outboxId').first().waitFor();
        if (process.env.SCREENSHOTS === '1') await page.screenshot({ path: path.join(ROOT, 'docs/operations/dashboard.png') });
      } finally {
        await browser.close();
      }
    }

    const retried = await fetch(`${base}/api/queues/mail/f7c1b0de-0000-4000-8000-000000000001/retry`, { method: 'PUT', headers: auth() });
    expect(retried.status).toBe(204);
    expect((await mail.getJobCounts('failed', 'waiting')).waiting).toBe(1);
    const removed = await fetch(`${base}/api/queues/mail/f7c1b0de-0000-4000-8000-000000000001/clean`, { method: 'PUT', headers: auth() });
    expect(removed.status).toBeLessThan(300);
    expect(await mail.getJob('f7c1b0de-0000-4000-8000-000000000001')).toBeUndefined();
    await mail.close();
  });

  it('a client that never finishes its request is cut off with 408 (the api\'s limits, not Node\'s 300 s)', async () => {
    const started = Date.now();
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = net.connect(Number(new URL(base).port), '127.0.0.1', () => socket.write('GET /api/queues HTTP/1.1\r\nHost: x\r\n'));
      let got = '';
      socket.on('data', (d) => (got += d));
      socket.on('close', () => resolve(got));
      socket.on('error', reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('with Redis down: JSON logs, says so once, not ready; ready again when Redis is back', async () => {
    const redisPort = await freePort();
    const port = await freePort();
    const own = ownServer('redis-server', ['--port', String(redisPort), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      () => spawnSync('redis-cli', ['-p', String(redisPort), 'ping']).stdout?.toString().trim() === 'PONG');
    const alone = startNode(DASHBOARD, {
      cwd: backend.dir, env: { ...backend.env, REDIS_URL: `redis://127.0.0.1:${redisPort}`, LOG_LEVEL: 'info', DASHBOARD_PORT: String(port), DASHBOARD_PASSWORD: PASSWORD },
    });
    try {
      await alone.waitFor(/dashboard listening/);
      await new Promise((r) => setTimeout(r, 3000));
      const ready = await fetch(`http://127.0.0.1:${port}/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ stat: 'error', checks: { redis: 'is unreachable' } });
      const lines = alone.output().trim().split('\n');
      for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
      expect(lines.filter((l) => l.includes('Redis is unreachable'))).toHaveLength(1);
      await own.start();
      await alone.waitFor(/Redis is reachable again/, 30_000);
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${port}/api/queues`, { headers: auth() })).status).toBe(200);
    } finally {
      expect(await alone.stop()).toBe(0);
      await own.kill();
    }
  });

  // last: it spends this address's budget
  it('past 10 failed sign-ins a minute, even the right password waits (parallel guesses included)', async () => {
    const guesses = await Promise.all(Array.from({ length: 14 }, (_, i) => fetch(`${base}/api/queues`, { headers: auth('operator', `wrong-${i}-password`) })));
    const statuses = guesses.map((r) => r.status);
    // one failure was spent by the test above; at most 10 in all are compared
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(9);
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThanOrEqual(5);
    const right = await fetch(`${base}/api/queues`, { headers: auth() });
    expect(right.status).toBe(429);
    expect(Number(right.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
