import { skipUnless } from '../helpers/backend';
import { freePort, until, ownRedis, redisServerInstalled as redisServer } from '../helpers/processes';
import { createLogger } from '../../src/logger';
import { createBullQueue, createBullWorkers } from '../../src/queue/bullmq';
import type { Processor } from '../../src/queue/port';

// How a worker process's queue workers stop (createBullWorkers' close) while Redis is down:
// BullMQ's own close waits for Redis and never ends then; the stop must still end within its drain.

const logger = createLogger('silent');

/** A Redis of this test's own, killed (SIGKILL) and started again. */

skipUnless(redisServer, 'the worker stop tests need the redis-server program')('stopping the queue workers', () => {
  let redis: ReturnType<typeof ownRedis>;
  let url: string;
  let n = 0;
  beforeAll(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    redis = ownRedis(port);
  });
  beforeEach(() => redis.start());
  afterEach(() => redis.kill());

  /** Queue workers whose mail jobs wait for `release` (one in progress once `started` resolves). */
  const workersWithAJob = async () => {
    const prefix = `ghstop${++n}`;
    let release: () => void = () => undefined;
    let finished = false;
    let markStarted: () => void = () => undefined;
    const started = new Promise<void>((r) => (markStarted = r));
    const mail: Processor = async () => {
      markStarted();
      await new Promise<void>((r) => (release = r));
      finished = true;
    };
    const idle: Processor = async () => undefined;
    const workers = createBullWorkers({ redisUrl: url, prefix, processors: { mail, versions: idle, maintenance: idle, webhooks: idle }, logger });
    const queue = createBullQueue(url, prefix, logger);
    expect(await queue.ready()).toBe(true);
    await queue.enqueue({ id: 'in-progress', queue: 'mail', name: 'send', data: {} });
    await queue.close();
    await started;
    return { workers, release: () => release(), finished: () => finished };
  };

  it('with Redis up: waits for the job in progress, and BullMQ closes', async () => {
    const { workers, release, finished } = await workersWithAJob();
    setTimeout(release, 500);
    const t0 = Date.now();
    expect(await workers.close(10_000)).toEqual({ cutOff: 0, abandoned: false });
    expect(finished()).toBe(true);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it('with Redis down: waits for the job in progress, then closes BullMQ without waiting for Redis (which never ends while it is down)', async () => {
    const { workers, release, finished } = await workersWithAJob();
    await redis.kill();
    setTimeout(release, 1_000);
    const t0 = Date.now();
    expect(await workers.close(10_000)).toEqual({ cutOff: 0, abandoned: true });
    expect(finished()).toBe(true);
    // the job's second, and no more
    expect(Date.now() - t0).toBeGreaterThanOrEqual(900);
    expect(Date.now() - t0).toBeLessThan(4_000);
  });

  it('with Redis down and a job that outlasts the drain: stops at the drain\'s end and says one job was cut off', async () => {
    const { workers, release } = await workersWithAJob();
    await redis.kill();
    const t0 = Date.now();
    expect(await workers.close(1_500)).toEqual({ cutOff: 1, abandoned: true });
    expect(Date.now() - t0).toBeLessThan(3_000);
    release();
  });

  it('with Redis down before the stop and nothing in progress: stops within a few seconds', async () => {
    const prefix = `ghstop${++n}`;
    const idle: Processor = async () => undefined;
    const workers = createBullWorkers({ redisUrl: url, prefix, processors: { mail: idle, versions: idle, maintenance: idle, webhooks: idle }, logger });
    await until('the workers run', () => workers.workers.every((w) => w.isRunning()), 10_000);
    await redis.kill();
    await new Promise((r) => setTimeout(r, 1_000));
    const t0 = Date.now();
    expect(await workers.close()).toEqual({ cutOff: 0, abandoned: true });
    expect(Date.now() - t0).toBeLessThan(4_000);
  });
});
