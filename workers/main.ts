import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfigOrExit, NO_MAIL_TRANSPORT } from '../src/config';
import type { Database } from '../src/db';
import { answerHelp } from '../src/entry-help';
import { createLogger } from '../src/logger';
import { createMetrics, serveMetrics } from '../src/metrics';
import { createBullQueue, createBullWorkers, WORKER_DRAIN_MS } from '../src/queue/bullmq';
import { createOutbox } from '../src/queue/outbox';
import { SecretBox } from '../src/domain/secrets';
import { prepareSchema, SECRET_KEY_MISMATCH, secretKeyOpens } from '../src/runtime';
import { createProcessors } from '../src/jobs';
import { MAINTENANCE_SCHEDULE, relayEveryMs } from '../src/jobs/maintenance';
import { DELIVER_EVERY_MS, WEBHOOK_JOBS } from '../src/domain/webhooks';
import { createCore } from '../src/runtime';
import { systemClock } from '../src/domain/clients';

/** Touched every few seconds while the worker reaches Redis: a health check for deployments without METRICS_PORT (with it, use /readyz there). */
export const HEARTBEAT_FILE = path.join(os.tmpdir(), 'gatehouse-worker.alive');

type Queue = ReturnType<typeof createBullQueue>;
type Logger = ReturnType<typeof createLogger>;

/**
 * Schedules live in Redis, which may restart empty: they are registered again on every
 * (re)connection (upsertJobScheduler keeps one schedule however many workers do it).
 */
async function keepSchedules(queue: Queue, logger: Logger): Promise<void> {
  const schedules = [
    ...MAINTENANCE_SCHEDULE.filter((m) => m.name !== 'relay-outbox').map((m) => ({ queue: 'maintenance' as const, ...m })),
    { queue: 'webhooks' as const, name: WEBHOOK_JOBS.deliver, everyMs: DELIVER_EVERY_MS },
  ];
  const registerSchedules = async () => {
    for (const s of schedules) {
      await queue.schedule(s.queue, s.name, s.everyMs).catch((err: Error) =>
        logger.warn({ err: err.message, job: s.name }, 'could not register the schedule; will retry when Redis reconnects'));
    }
  };
  queue.connection.on('ready', () => void registerSchedules());
  if (queue.connection.status === 'ready') await registerSchedules();
}

/**
 * The outbox relay must not depend on anything kept in Redis: it runs on this process's own
 * timer and re-enqueues every row still pending after the grace period (a job id is its outbox
 * id, so rows relayed by several workers are enqueued once).
 */
function relayOutbox(outbox: ReturnType<typeof createOutbox>, graceMs: number, logger: Logger): NodeJS.Timeout {
  let relaying = false;
  return setInterval(() => {
    if (relaying) return;
    relaying = true;
    outbox.relay(graceMs)
      .then((relayed) => relayed > 0 && logger.info({ relayed }, 'outbox relay enqueued pending jobs'))
      .catch((err: Error) => logger.warn({ err }, 'outbox relay failed; will try again'))
      .finally(() => (relaying = false));
  }, relayEveryMs(graceMs));
}

/** Metrics, /healthz (the process answers) and /readyz (database and Redis reachable, SECRET_KEY right) on METRICS_PORT. */
async function serveWorkerMetrics(
  config: ReturnType<typeof loadConfigOrExit>, db: Database, queue: Queue, metrics: ReturnType<typeof createMetrics>, logger: Logger,
) {
  if (config.metricsPort === undefined) return undefined;
  const box = new SecretBox(config.secretKey);
  const check = async (work: () => Promise<unknown>) => work().then(() => true as const, () => 'is unreachable');
  return serveMetrics(metrics, config.metricsPort, config.host, logger, async () => ({
    database: await check(() => db.ping()),
    // each queue's counts, in its own slot on a cluster: not a PING, which any node answers
    redis: await check(() => queue.answers()),
    // emails carry links sealed with SECRET_KEY: a wrong key would fail every one
    secret_key: await secretKeyOpens(db, box).catch(() => SECRET_KEY_MISMATCH),
  })).catch((err: Error) => {
    logger.fatal({ err: err.message, port: config.metricsPort }, 'cannot listen for metrics');
    process.exit(1);
  });
}

/**
 * The worker process (`npm run worker`): BullMQ workers for the mail, versions, maintenance and webhooks
 * queues, scaled separately from the api. It also owns the recurring maintenance jobs
 * (upsertJobScheduler: one schedule however many workers start) and relays the outbox.
 */
async function main(): Promise<void> {
  answerHelp('gatehouse worker (npm run worker)', 'the mail, versions, maintenance and webhooks queues of REDIS_URL');
  const config = loadConfigOrExit();
  const logger = createLogger(config.logLevel, undefined, config.logFormat).child({ process: 'worker' });
  if (!config.redisUrl) {
    logger.fatal('the worker process needs REDIS_URL; without it the api runs jobs in its own process');
    process.exit(78);
  }
  if (!config.mailTransport) {
    logger.fatal(NO_MAIL_TRANSPORT);
    process.exit(78);
  }
  const core = createCore(config, logger, systemClock, { cachesClients: false });
  const { db } = core;
  try {
    await prepareSchema(config, db);
  } catch (e) {
    logger.fatal({ err: e }, (e as Error).message);
    await core.close();
    process.exit(1);
  }
  const queue = createBullQueue(config.redisUrl, config.redisPrefix, logger);
  const outbox = createOutbox({ db, queue, logger });
  const metrics = createMetrics('worker');
  metrics.watchOutbox(db);
  metrics.watchWebhooks(db);
  const { processors, templates, close: closeProcessors } = createProcessors({ config, services: { db, work: core.workOf(outbox), clock: systemClock }, outbox, logger, metrics });
  try {
    await templates; // compiled once, now: a broken template stops the worker before it takes jobs
  } catch (e) {
    logger.fatal({ err: (e as Error).message }, 'email templates do not compile');
    process.exit(1);
  }
  const workers = createBullWorkers({ redisUrl: config.redisUrl, prefix: config.redisPrefix, processors, logger });
  if (!(await queue.ready())) logger.warn('redis is not reachable yet; jobs start once it is');
  await keepSchedules(queue, logger);
  const relay = relayOutbox(outbox, config.outboxRelayAfterSeconds * 1000, logger);
  const metricsServer = await serveWorkerMetrics(config, db, queue, metrics, logger);
  logger.info({ queues: workers.workers.map((w) => w.name), ...(config.metricsPort !== undefined && { metrics_port: config.metricsPort }) }, 'gatehouse worker ready');

  // liveness for container health checks: the file is fresh while Redis answers
  const heartbeat = setInterval(() => {
    void queue.connection.ping().then(() => fs.writeFileSync(HEARTBEAT_FILE, String(Date.now())), () => undefined);
  }, 5_000);
  heartbeat.unref();

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    clearInterval(heartbeat);
    clearInterval(relay);
    metricsServer?.close();
    logger.info({ signal, drain_ms: WORKER_DRAIN_MS }, 'worker shutting down: finishing jobs in progress');
    // the last resort, past the drain: something that never ends (the database's close)
    const force = setTimeout(() => process.exit(1), WORKER_DRAIN_MS + 5_000);
    force.unref();
    const { cutOff, abandoned } = await workers.close(WORKER_DRAIN_MS);
    if (cutOff > 0) logger.warn({ jobs: cutOff, drain_ms: WORKER_DRAIN_MS }, 'jobs still in progress at the end of the drain were cut off; they run again on another worker');
    else if (abandoned) logger.warn('redis is unreachable: stopped without recording the last jobs in BullMQ (their outbox rows say they are done, so they do nothing if taken again)');
    await queue.close();
    closeProcessors();
    await core.close();
    logger.info('worker stopped');
    process.exit(cutOff > 0 ? 1 : 0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
}

void main();
