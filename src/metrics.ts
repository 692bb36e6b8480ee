import { QUEUE_NAMES } from './domain/ports';
import http from 'node:http';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Storage } from './domain/storage';
import type { Logger } from './logger';

/**
 * Prometheus metrics of one process (api or worker), served on a port of their own
 * (METRICS_PORT), never on the API port: API clients cannot read them. Every label value is
 * bounded: route templates (never raw paths), spec error codes, queue and limit names.
 */
export function createMetrics(processName: 'api' | 'worker') {
  const registry = new Registry();
  registry.setDefaultLabels({ process: processName });
  collectDefaultMetrics({ register: registry, prefix: 'gatehouse_' });
  const registers = [registry];

  const requests = new Counter({
    name: 'gatehouse_http_requests_total', help: 'HTTP requests answered, by route template, method, HTTP status and spec error code ("" when ok)',
    labelNames: ['route', 'method', 'status', 'error_code'], registers,
  });
  const latency = new Histogram({
    name: 'gatehouse_http_request_duration_seconds', help: 'time from a request\'s arrival to its answer, by route template and method',
    labelNames: ['route', 'method'], buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers,
  });
  const argon2Wait = new Histogram({
    name: 'gatehouse_argon2_wait_seconds', help: 'time a password hash or verify waited for an argon2 thread',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5], registers,
  });
  let argon2Queue = () => 0;
  new Gauge({
    name: 'gatehouse_argon2_waiting', help: 'password hashes waiting for an argon2 thread now', registers,
    collect() { this.set(argon2Queue()); },
  });
  const refusals = new Counter({
    name: 'gatehouse_rate_limit_refusals_total', help: 'requests refused by a rate limit (code 510), by limit', labelNames: ['limit'], registers,
  });
  const jobs = new Counter({
    name: 'gatehouse_jobs_total', help: 'job attempts, by queue, job name and outcome: completed, retried (failed, another attempt comes) or failed (the last attempt failed)', labelNames: ['queue', 'job', 'outcome'], registers,
  });
  const jobDuration = new Histogram({
    name: 'gatehouse_job_duration_seconds', help: 'time a job ran, by queue', labelNames: ['queue'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30], registers,
  });
  const webhookAttempts = new Counter({
    name: 'gatehouse_webhook_attempts_total', help: 'webhook delivery attempts, by endpoint and outcome (delivered; retried: it failed and will be tried again; failed: given up)',
    labelNames: ['endpoint', 'outcome'], registers,
  });
  const webhookSeconds = new Histogram({
    name: 'gatehouse_webhook_attempt_seconds', help: 'time a webhook delivery attempt took, receiver\'s answer included, by endpoint', labelNames: ['endpoint'],
    buckets: [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10], registers,
  });
  const emails = new Counter({ name: 'gatehouse_emails_total', help: 'emails handed to the transport, by outcome (sent or failed)', labelNames: ['outcome'], registers });

  return {
    registry,
    request(route: string, method: string, status: number, errorCode: number | undefined, seconds: number): void {
      requests.inc({ route, method, status: String(status), error_code: errorCode === undefined ? '' : String(errorCode) });
      latency.observe({ route, method }, seconds);
    },
    argon2Waited: (seconds: number) => argon2Wait.observe(seconds),
    /** Reads the argon2 queue length at every scrape. */
    watchArgon2Queue(length: () => number): void {
      argon2Queue = length;
    },
    /** A refusal by the limit whose budget key is `key` (`login:account:…`): labelled by its first two parts. */
    refused: (key: string) => refusals.inc({ limit: key.split(':').slice(0, 2).join(':') }),
    job(queue: string, job: string, outcome: 'completed' | 'retried' | 'failed', seconds: number): void {
      jobs.inc({ queue, job, outcome });
      jobDuration.observe({ queue }, seconds);
    },
    email: (outcome: 'sent' | 'failed') => emails.inc({ outcome }),
    webhooks: {
      attempted(endpoint: string, outcome: 'delivered' | 'retried' | 'failed', seconds: number): void {
        webhookAttempts.inc({ endpoint, outcome });
        webhookSeconds.observe({ endpoint }, seconds);
      },
    },
    /** Webhook deliveries waiting, and the age of the oldest, by endpoint: read from the database at every scrape (workers). */
    watchWebhooks(db: Pick<Storage, 'webhooks'>, now: () => Date = () => new Date()): void {
      let inFlight: Promise<Array<{ endpoint: string; pending: number; oldest: Date }>> | undefined;
      const backlog = () => (inFlight ??= db.webhooks.listBacklog().finally(() => (inFlight = undefined)));
      new Gauge({
        name: 'gatehouse_webhook_pending', help: 'webhook deliveries not yet delivered nor given up, by endpoint', labelNames: ['endpoint'], registers,
        async collect() {
          const rows = await backlog();
          this.reset();
          for (const r of rows) this.set({ endpoint: r.endpoint }, r.pending);
        },
      });
      new Gauge({
        name: 'gatehouse_webhook_oldest_pending_seconds', help: 'age of the oldest webhook delivery not yet delivered nor given up, by endpoint', labelNames: ['endpoint'], registers,
        async collect() {
          const rows = await backlog();
          this.reset();
          for (const r of rows) this.set({ endpoint: r.endpoint }, Math.max(0, (now().getTime() - r.oldest.getTime()) / 1000));
        },
      });
    },
    /**
     * The outbox backlog, read from the database at every scrape: pending rows and the age of the
     * oldest, by queue, both from the same query of this very scrape.
     */
    watchOutbox(db: Pick<Storage, 'lagTolerant'>, now: () => Date = () => new Date()): void {
      type Backlog = Map<string, { pending: number; oldestSeconds: number }>;
      // the registry collects every gauge of a scrape at once: they share the query in flight
      let inFlight: Promise<Backlog> | undefined;
      const backlog = (): Promise<Backlog> => (inFlight ??= db.lagTolerant.outbox.backlog().then((rows) => new Map(rows.map((r) => [r.queue, {
        pending: r.pending, oldestSeconds: Math.max(0, (now().getTime() - r.oldest.getTime()) / 1000),
      }]))).finally(() => (inFlight = undefined)));
      const gauge = (name: string, help: string, value: (q: { pending: number; oldestSeconds: number } | undefined) => number) => new Gauge({
        name, help, labelNames: ['queue'], registers,
        async collect() {
          const current = await backlog();
          this.reset();
          for (const q of QUEUE_NAMES) this.set({ queue: q }, value(current.get(q)));
        },
      });
      gauge('gatehouse_outbox_pending', 'outbox rows not yet done (jobs committed but not finished), by queue', (q) => q?.pending ?? 0);
      gauge('gatehouse_outbox_oldest_pending_seconds', 'age of the oldest pending outbox row, by queue (0 when none)', (q) => q?.oldestSeconds ?? 0);
    },
  };
}
export type Metrics = ReturnType<typeof createMetrics>;

/**
 * The metrics port: GET /metrics (Prometheus text), plus /healthz and /readyz when `readiness`
 * is given (the worker has no other HTTP port). Listens on `host`; answers nothing else.
 */
export function serveMetrics(
  metrics: Metrics, port: number, host: string, logger: Logger, readiness?: () => Promise<Record<string, true | string>>,
): Promise<http.Server> {
  const server = http.createServer(async (req, res) => {
    const send = (status: number, type: string, body: string) => {
      res.writeHead(status, { 'Content-Type': type, 'Cache-Control': 'no-store' });
      res.end(body);
    };
    try {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method !== 'GET') return send(405, 'application/json', JSON.stringify({ stat: 'error', error_description: 'use GET' }));
      if (path === '/metrics') return send(200, metrics.registry.contentType, await metrics.registry.metrics());
      if (readiness && path === '/healthz') return send(200, 'application/json', JSON.stringify({ stat: 'ok' }));
      if (readiness && path === '/readyz') {
        const checks = await readiness();
        const ok = Object.values(checks).every((v) => v === true);
        return send(ok ? 200 : 503, 'application/json', JSON.stringify({ stat: ok ? 'ok' : 'error', checks }));
      }
      send(404, 'application/json', JSON.stringify({ stat: 'error', error_description: 'this port serves /metrics' + (readiness ? ', /healthz and /readyz' : '') }));
    } catch (err) {
      logger.warn({ err }, 'metrics scrape failed');
      send(500, 'application/json', JSON.stringify({ stat: 'error', error_description: 'the metrics could not be collected' }));
    }
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
