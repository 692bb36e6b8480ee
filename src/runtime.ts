import type { Config } from './config';
import { type Database, openDatabase } from './db';
import { logReplicas, replicaCheck } from './db/replica-health';
import { migrate, pendingMigrations } from './db/migrate';
import { createBaseUrls } from './domain/base-urls';
import { createClientService, systemClock, type Clock } from './domain/clients';
import { createPasswordHasher, type PasswordHasher } from './domain/passwords';
import { createFlowService } from './domain/flows';
import { createRateLimiter } from './domain/rate-limit';
import { createMemoryReplayGuard, createRedisReplayGuard } from './http/replay-guard';
import { createProviderService } from './domain/social/providers';
import { createRelyingParty } from './domain/social/relying-party';
import { createSocialTokens } from './domain/social/tokens';
import { SecretBox } from './domain/secrets';
import { createIssuer } from './domain/tokens';
import { createRecordVersions } from './domain/versions';
import type { ApiServices } from './http/context';
import type { Logger } from './logger';
import { createBullQueue } from './queue/bullmq';
import { createRedisClientChanges } from './queue/client-changes';
import { createInProcessQueue } from './queue/in-process';
import { createOutbox, type RelayingOutbox } from './queue/outbox';
import { createWork, type Work } from './usecases/unit-of-work';
import { subscribers } from './usecases/subscribers';
import { watchWebhookSubscriptions } from './usecases/subscribers/webhooks';
import { DELIVER_EVERY_MS, WEBHOOK_JOBS } from './domain/webhooks';
import type { OutboxJob } from './domain/storage/outbox';
import { connectRedis, quietRedisErrors, scriptRuns } from './queue/redis';
import type { JobQueue, Processors } from './queue/port';
import { MAINTENANCE_SCHEDULE } from './jobs/maintenance';
import { createMetrics, type Metrics } from './metrics';
import { createJoinableDomains } from './usecases/organizations/joinable';

export { projectRoot } from './paths';

/**
 * Database and the services over it, without any queue: what the CLI needs. `cachesClients: false`
 * for a process that authenticates no API client (the worker, a CLI command): it publishes its
 * client changes to the others but keeps no cache, so no subscription (one Redis connection less).
 */
export function createCore(config: Config, logger: Logger, clock: Clock = systemClock, options: { cachesClients?: boolean } = {}) {
  const db = openDatabase(config.database, logReplicas(logger));
  const box = new SecretBox(config.secretKey);
  // with Redis, client changes reach every process's client cache (see client-changes.ts)
  const changes = config.redisUrl ? createRedisClientChanges(config.redisUrl, config.redisPrefix, logger) : undefined;
  const clients = createClientService({ clients: db.clients, box, clock, changes, ...(options.cachesClients === false && { cacheMs: 0 }) });
  const baseUrls = createBaseUrls(config.publicBaseUrl, config.defaultApp, config.console);
  const providers = createProviderService({ db, box });
  const webhooks = watchWebhookSubscriptions(db.webhooks);
  return {
    db, box, clients, providers, logger, baseUrls, clock,
    /** The unit of work over this database with every subscriber, enqueuing through `outbox` after each commit. */
    workOf(outbox: { dispatch(jobs: OutboxJob[]): Promise<void> }): Work {
      return createWork({ storage: db, subscribers: subscribers({ box, audit: db.audit, clients, webhooks, logouts: db.logouts }), dispatch: (jobs) => outbox.dispatch(jobs), now: () => clock.now() });
    },
    async close() {
      webhooks.close();
      changes?.close();
      await db.close();
    },
  };
}

/**
 * What a command of the CLI runs its use cases with: the core, a unit of work whose outbox rows go
 * to BullMQ when Redis is configured (connected when the first one is enqueued; without Redis they
 * stay pending, and the running api's relay, or the next start's, runs them), and the records'
 * versions. The CLI reaches the queue through this unit of work only.
 */
export function createCommandCore(config: Config, logger: Logger) {
  const base = createCore(config, logger, systemClock, { cachesClients: false });
  let queue: JobQueue | undefined;
  const opened = () => (queue ??= config.redisUrl ? createBullQueue(config.redisUrl, config.redisPrefix, logger) : undefined);
  // a job held back by the outbox's coalescing past the command's end stays pending: the relay enqueues it
  let closed = false;
  const commandQueue: JobQueue = {
    enqueue: async (job) => (closed ? undefined : opened()?.enqueue(job)), schedule: async () => undefined,
    close: async () => {
      closed = true;
      await queue?.close();
    },
  };
  // argon2's threads start when a command first hashes (users:import with passwords in clear), not for every command
  let hasher: PasswordHasher | undefined;
  const hashing = () => (hasher ??= createPasswordHasher(config.passwordPolicy, config.hashConcurrency, config.hashQueueMax));
  const passwords: PasswordHasher = {
    warmUp: () => hashing().warmUp(), verifyNothing: (p) => hashing().verifyNothing(p), hash: (p) => hashing().hash(p),
    hashInBackground: (p) => hashing().hashInBackground(p), verify: (stored, p) => hashing().verify(stored, p),
    waiting: () => hasher?.waiting() ?? 0, needsRehash: (stored) => hashing().needsRehash(stored), close: async () => hasher?.close(),
  };
  return {
    ...base,
    // a versions job records every pending snapshot: one per 50 ms wakes a worker (an import writes thousands)
    work: base.workOf(createOutbox({ db: base.db, queue: commandQueue, logger, coalesce: { queues: ['versions'], ms: 50 } })),
    versions: createRecordVersions({ db: base.db }),
    tokens: createIssuer({ db: base.db, clock: systemClock, box: base.box }),
    passwords,
    webhooks: config.webhooks,
    joinableDomains: createJoinableDomains(base.db.organizations, systemClock),
    async close() {
      await commandQueue.close();
      await passwords.close();
      await base.close();
    },
  };
}

/**
 * Brings the schema up to date where that is this process's job: a SQLite database (the
 * embedded default) is migrated on start; MySQL is migrated by `gatehouse migrate`, and a
 * process refuses to start while migrations are pending.
 */
export async function prepareSchema(config: Config, db: Database): Promise<string[]> {
  if (config.database.dialect === 'sqlite') return migrate(db);
  const pending = await pendingMigrations(db);
  if (pending.length > 0) {
    throw new Error(`the database has ${pending.length} pending migration(s) (${pending.join(', ')}); run: npx gatehouse migrate`);
  }
  return [];
}

/** Why readiness fails when SECRET_KEY is not the key the stored secrets were sealed with. */
export const SECRET_KEY_MISMATCH = 'does not open the stored client secrets: it is not the key the data was sealed with (every process needs the same SECRET_KEY)';

/**
 * Opens one stored client secret: a well-formed but wrong SECRET_KEY passes every other check,
 * then fails every client-authenticated call (and every email's sealed link).
 */
export async function secretKeyOpens(db: Database, box: SecretBox): Promise<true> {
  const stored = await db.clients.first();
  if (stored) box.open(stored.secretSealed, stored.clientId);
  return true;
}

export interface Runtime {
  config: Config;
  db: Database;
  /** `idle`: the in-process runner has no job left; `answers`: Redis runs every queue's scripts (BullMQ). */
  queue: JobQueue & { idle?: () => Promise<void>; answers?: () => Promise<void> };
  services: ApiServices;
  /** The outbox after commit: dispatch, and the relay of rows whose enqueue was lost (the maintenance job's). */
  outbox: RelayingOutbox;
  /**
   * GET /readyz: database reachable, migrations current, default application present, SECRET_KEY
   * opens the stored secrets, Redis runs scripts in every slot Gatehouse uses; and, with replicas,
   * whether each takes its reads (a note, never a failure: see replicaCheck).
   */
  readiness(): Promise<Record<string, true | string | { degraded: string }>>;
  /** Starts the recurring maintenance jobs (in-process runner or BullMQ job schedulers). */
  scheduleMaintenance(): Promise<void>;
  /** This process's Prometheus metrics (served on METRICS_PORT by server.ts). */
  metrics: Metrics;
  close(): Promise<void>;
}

/**
 * The queue and the outbox: BullMQ when REDIS_URL is set (the workers run the processors), else
 * the in-process runner with the same processors as the workers.
 */
function createJobs(config: Config, db: Database, logger: Logger, clock: Clock, metrics: Metrics, workOf: (outbox: RelayingOutbox) => Work): { queue: Runtime['queue']; outbox: RelayingOutbox; closeProcessors: () => void } {
  if (config.redisUrl) {
    const queue = createBullQueue(config.redisUrl, config.redisPrefix, logger);
    // a version job drains every pending snapshot: one wake-up per 20 ms per pod is enough
    const outbox = createOutbox({ db, queue, logger, now: () => clock.now(), coalesce: { queues: ['versions'], ms: 20 } });
    return { queue, outbox, closeProcessors: () => {} };
  }
  // processors are looked up per job, so they can be filled in after the outbox exists
  const processors = {} as Processors;
  const queue = createInProcessQueue({ processors, logger });
  const outbox = createOutbox({ db, queue, logger, now: () => clock.now() });
  // loaded here only: the processors bring the mail transport, the templates and every job's code,
  // which an api process with Redis never needs (its workers run the jobs)
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { createProcessors } = require('./jobs') as typeof import('./jobs');
  // the webhooks' backlog is this process's to show, as its jobs are
  metrics.watchWebhooks(db, () => clock.now());
  const made = createProcessors({ config, services: { db, work: workOf(outbox), clock }, outbox, logger, metrics });
  Object.assign(processors, made.processors);
  return { queue, outbox, closeProcessors: made.close };
}

/**
 * Wires one process: database, queue (BullMQ when REDIS_URL is set, else the in-process runner
 * with the same processors as the workers), outbox and services. Everything is handed in from
 * here; nothing else reaches for a global.
 */
export function createRuntime(config: Config, logger: Logger, clock: Clock = systemClock): Runtime {
  const core = createCore(config, logger, clock);
  const metrics = createMetrics('api');
  metrics.watchOutbox(core.db, () => clock.now());
  const { db, box, clients, providers, baseUrls } = core;

  // rate-limit counters shared by all pods; fails fast while Redis is down (each pod then counts
  // in memory: see createRateLimiter)
  // commands issued in one tick (a sign-in's two budgets, then its clear and give-back) leave in one write
  const redis = config.redisUrl ? connectRedis(config.redisUrl, { enableOfflineQueue: false, maxRetriesPerRequest: 1, enableAutoPipelining: true }) : undefined;
  const warn = quietRedisErrors(logger);
  redis?.on('error', (err: Error) => warn('redis connection error (rate limits)', err));
  const { queue, outbox, closeProcessors } = createJobs(config, db, logger, clock, metrics, (o) => core.workOf(o));

  const passwords = createPasswordHasher(config.passwordPolicy, config.hashConcurrency, config.hashQueueMax, { waited: metrics.argon2Waited });
  metrics.watchArgon2Queue(passwords.waiting);
  passwords.warmUp();
  const versions = createRecordVersions({ db });
  const work = core.workOf(outbox);
  const services: ApiServices = {
    db, clients, work, versions, clock, logger, baseUrls,
    tokens: createIssuer({ db, clock, box }),
    passwords,
    flows: createFlowService({ db, now: () => clock.now() }),
    rateLimiter: createRateLimiter({ redis, prefix: config.redisPrefix, refused: metrics.refused }),
    socialTokens: createSocialTokens({ db, clock, work }),
    providers,
    relyingParty: createRelyingParty(),
    replays: redis ? createRedisReplayGuard(redis, config.redisPrefix) : createMemoryReplayGuard(() => clock.now().getTime()),
    loginLimits: config.loginLimits,
    mailLimits: config.mailLimits,
    registrationLimit: config.registrationLimit,
    scimLimit: config.scimLimit,
    entityQueryTimeoutMs: config.entityQueryTimeoutMs,
    webhooks: config.webhooks,
    joinableDomains: createJoinableDomains(db.organizations, clock),
    box,
  };
  let migrationsCurrent = false; // once current, they stay current for this process's life
  const check = async (work: () => Promise<true | string>, failure: string) => work().catch(() => failure);
  return {
    config,
    db,
    queue,
    services,
    outbox,
    metrics,
    async readiness() {
      const checks: Record<string, true | string | { degraded: string }> = {
        database: await check(async () => (await db.ping(), true), 'is unreachable'),
      };
      const replicas = db.replicaHealth();
      if (replicas.length > 0) checks.replicas = replicaCheck(replicas);
      if (checks.database === true) {
        checks.migrations = migrationsCurrent || await check(async () => {
          const pending = await pendingMigrations(db);
          migrationsCurrent = pending.length === 0;
          return migrationsCurrent || `are pending (${pending.join(', ')}): run npx gatehouse migrate`;
        }, 'cannot be read');
        checks.default_application = await check(async () => (await db.applications.findByName(config.defaultApp))
          ? true : `"${config.defaultApp}" does not exist: create it with npx gatehouse apps:create ${config.defaultApp}`, 'cannot be read');
        // a wrong (but well-formed) SECRET_KEY would answer every client-authenticated call with 500
        checks.secret_key = await check(() => secretKeyOpens(db, services.box), SECRET_KEY_MISMATCH);
      }
      // scripts, not a PING (which any node answers): the limits' script in an application's slot,
      // and each queue's counts in the queue's own slot
      if (redis) {
        checks.redis = await check(async () => {
          await scriptRuns(redis, `${config.redisPrefix}:rl:{ready}`);
          await queue.answers?.();
          return true;
        }, 'cannot run scripts or take writes (unreachable, or a cluster without a master for a slot)');
      }
      return checks;
    },
    async scheduleMaintenance() {
      for (const s of MAINTENANCE_SCHEDULE) await queue.schedule('maintenance', s.name, s.everyMs);
      await queue.schedule('webhooks', WEBHOOK_JOBS.deliver, DELIVER_EVERY_MS);
    },
    async close() {
      redis?.disconnect();
      await queue.close();
      closeProcessors();
      await passwords.close();
      await core.close();
    },
  };
}
