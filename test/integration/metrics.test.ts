import type { Server } from 'node:http';
import request from 'supertest';
import { buildApp } from '../../src/app';
import { createMetrics, serveMetrics } from '../../src/metrics';
import { counted } from '../../src/jobs';
import { createLogger } from '../../src/logger';
import { startTestApp, type TestApp } from '../helpers/backend';
import { freePort } from '../helpers/processes';

let t: TestApp;
let app: ReturnType<typeof buildApp>;
let metricsServer: Server;
let metricsUrl: string;
const scrape = async () => (await fetch(`${metricsUrl}/metrics`)).text();
/** The value of one sample line, matched by name and labels in any order. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^(\w+)\{([^}]*)\} (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    if (Object.entries(labels).every(([k, v]) => has[k] === v)) return Number(m[3]);
  }
  return undefined;
}

beforeAll(async () => {
  t = await startTestApp({ env: { LOGIN_LIMIT_ACCOUNT: '2/60' } });
  app = buildApp({ services: t.runtime.services, defaultApp: 'local', metrics: t.runtime.metrics });
  const port = await freePort();
  metricsServer = await serveMetrics(t.runtime.metrics, port, '127.0.0.1', createLogger('silent'));
  metricsUrl = `http://127.0.0.1:${port}`;
});
afterAll(async () => {
  metricsServer.close();
  await t.close();
});

describe('Prometheus metrics (METRICS_PORT)', () => {
  it('count requests by route template and spec error code, time them, and count limits, jobs and emails', async () => {
    const loginId = t.local.clients.login.client_id;
    const form = (path: string, body: Record<string, string>) => request(app).post(path).type('form').send({ client_id: loginId, locale: 'en-US', ...body });
    await form('/oauth/register_native_traditional', {
      emailAddress: 'metrics@example.com', newPassword: 'correct horse battery', newPasswordConfirm: 'correct horse battery', firstName: 'M', lastName: 'Etrics', displayName: 'm',
    });
    for (let i = 0; i < 3; i++) await form('/oauth/auth_native_traditional', { signInEmailAddress: 'metrics@example.com', currentPassword: 'wrong horse' });
    await request(app).get('/no/such/thing/42');
    await request(app).get('/widget_data/flows/local/standard/1/en-US.json');
    await t.runtime.queue.idle?.();

    const text = await scrape();
    const route = '/oauth/auth_native_traditional';
    expect(sample(text, 'gatehouse_http_requests_total', { route, method: 'POST', status: '200', error_code: '210', process: 'api' })).toBe(2);
    expect(sample(text, 'gatehouse_http_requests_total', { route, error_code: '510' })).toBe(1);
    expect(sample(text, 'gatehouse_http_requests_total', { route: '/oauth/register_native_traditional', error_code: '' })).toBe(1);
    expect(sample(text, 'gatehouse_http_requests_total', { route: 'unmatched', status: '404' })).toBe(1);
    expect(sample(text, 'gatehouse_http_requests_total', { route: '/widget_data/flows/:app/:flow/:version/:file', status: '200' })).toBe(1);
    expect(text).not.toContain('/no/such/thing'); // raw paths never become labels
    expect(sample(text, 'gatehouse_http_request_duration_seconds_count', { route, method: 'POST' })).toBe(3);
    expect(sample(text, 'gatehouse_rate_limit_refusals_total', { limit: 'login:account' })).toBe(1);
    expect(text).toMatch(/^gatehouse_argon2_wait_seconds_count\{process="api"\} [1-9]/m);
    expect(text).toMatch(/^gatehouse_argon2_waiting\{process="api"\} 0$/m);
    // the welcome email ran in this process (embedded default): the job and the email are counted
    expect(sample(text, 'gatehouse_jobs_total', { queue: 'mail', job: 'send', outcome: 'completed' })).toBe(1);
    expect(sample(text, 'gatehouse_emails_total', { outcome: 'sent' })).toBe(1);
    expect(sample(text, 'gatehouse_jobs_total', { queue: 'versions', outcome: 'completed' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'gatehouse_outbox_pending', { queue: 'mail' })).toBe(0);
    expect(sample(text, 'gatehouse_outbox_oldest_pending_seconds', { queue: 'mail' })).toBe(0);
    expect(text).toMatch(/^gatehouse_process_cpu_user_seconds_total\{process="api"\} /m);
    // no secret reaches a label
    expect(text).not.toMatch(/metrics@example\.com|correct horse|wrong horse/);
  });

  it('the outbox backlog is this scrape\'s, both gauges from one read', async () => {
    const metrics = createMetrics('worker');
    const created = new Date(Math.floor(Date.now() / 1000) * 1000);
    metrics.watchOutbox(t.runtime.db, () => new Date(created.getTime() + 37_000));
    const port = await freePort();
    const server = await serveMetrics(metrics, port, '127.0.0.1', createLogger('silent'));
    const { Outbox } = t.runtime.db.models;
    const local = (await t.runtime.db.applications.findByName('local'))!;
    const rows = ['a', 'b'].map((n) => ({
      id: `00000000-0000-4000-8000-00000000000${n === 'a' ? 1 : 2}`, application_id: local.id, queue: 'maintenance', name: `metrics-test-${n}`,
      payload: '{}', status: 'pending', attempts: 0, last_error: null, created_at: created, updated_at: created, entity_id: null,
    }));
    try {
      const text = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(sample(await text(), 'gatehouse_outbox_oldest_pending_seconds', { queue: 'maintenance' })).toBe(0);
      await Outbox.bulkCreate(rows);
      // the first scrape after the rows were committed sees them, in both gauges
      const first = await text();
      expect(sample(first, 'gatehouse_outbox_pending', { queue: 'maintenance' })).toBe(2);
      expect(sample(first, 'gatehouse_outbox_oldest_pending_seconds', { queue: 'maintenance' })).toBe(37);
    } finally {
      await Outbox.destroy({ where: { id: rows.map((r) => r.id) } });
      server.close();
    }
  });

  it('a job given up counts once as failed; its earlier attempts count as retried', async () => {
    const metrics = createMetrics('worker');
    const failing = async () => {
      throw new Error('the SMTP server is down');
    };
    const processors = counted({ mail: failing, versions: failing, maintenance: failing, webhooks: failing }, metrics);
    const job = { id: 'j1', name: 'send', queue: 'mail' as const, data: {} };
    for (let attempt = 1; attempt <= 3; attempt++) {
      await expect(processors.mail(job, { attempt, finalAttempt: attempt === 3 })).rejects.toThrow('SMTP');
    }
    const text = await metrics.registry.metrics();
    expect(sample(text, 'gatehouse_jobs_total', { queue: 'mail', outcome: 'retried' })).toBe(2);
    expect(sample(text, 'gatehouse_jobs_total', { queue: 'mail', outcome: 'failed' })).toBe(1);
  });

  it('serves /metrics only, by GET, on its own port; the API port has no /metrics', async () => {
    expect((await fetch(`${metricsUrl}/metrics`, { method: 'POST' })).status).toBe(405);
    expect((await fetch(`${metricsUrl}/other`)).status).toBe(404);
    expect((await request(app).get('/metrics')).status).toBe(404);
  });
});
