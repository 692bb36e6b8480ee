import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { Queue, Worker } from 'bullmq';
import { simpleParser } from 'mailparser';
import { loadConfig } from '../../src/config';
import { createLogger } from '../../src/logger';
import { createBullWorkers } from '../../src/queue/bullmq';
import { createInProcessQueue } from '../../src/queue/in-process';
import { createOutbox } from '../../src/queue/outbox';
import { backoffDelay, RETRY, retryWindowMs, type JobQueue, type Processors } from '../../src/queue/port';
import { sha256Hex } from '../../src/domain/secrets';
import { createProcessors } from '../../src/jobs';
import { mailEvent, mailRow, writeRows } from '../helpers/outbox-rows';
import { redisUrl, startTestApp, type TestApp, skipUnless } from '../helpers/backend';

// (these jobs are not webhooks: no endpoint is removed or disabled here)

const logger = createLogger('silent');

async function until(check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const WELCOME = { template: 'welcome', locale: 'en-US', to: 'ada@example.com', link: 'https://app.example/verify?verification_code=secret-code' } as const;

/** A welcome email whose recipient name is `name` (it ends up in the subject-free body), as the mail subscriber makes its row. */
async function welcome(t: TestApp, name: string) {
  const app = (await t.runtime.db.applications.findByName('local'))!;
  return mailRow(t.runtime.services.box, app, { ...WELCOME, name });
}

/** Commits rows as a unit of work does, then enqueues them. */
async function commit(t: TestApp, rows: Awaited<ReturnType<typeof welcome>>[], outbox = t.runtime.outbox) {
  await writeRows(t.runtime.db, rows);
  await outbox.dispatch(rows);
}

describe('outbox with the in-process runner (embedded default)', () => {
  let t: TestApp;
  let appId: number;
  beforeAll(async () => {
    t = await startTestApp();
    appId = (await t.runtime.db.applications.findByName('local'))!.id;
  });
  afterAll(() => t.close());
  const mailDir = () => t.runtime.config.mailDir;

  it('commits the job with the change, then runs it: the email is written once as .eml', async () => {
    const { outbox, db } = t.runtime;
    const job = await welcome(t, 'Ada');
    // the link's code is sealed in the outbox row, never stored in clear
    expect(JSON.stringify(job.payload)).not.toContain('secret-code');
    await commit(t, [job]);
    await t.runtime.queue.idle!();
    const file = path.join(mailDir(), `${job.id}.eml`);
    const mail = await simpleParser(fs.readFileSync(file));
    expect(mail.subject).toBe('Welcome to Gatehouse');
    expect(mail.text).toContain('Welcome, Ada!');
    expect(mail.html).toContain('verification_code=secret-code');
    const done = await db.outbox.find(job.id);
    expect(done?.status).toBe('done');
    expect(JSON.stringify(done?.payload)).not.toMatch(/sealed|secret/); // sent: the link is gone

    // a repeated delivery of the same job is a no-op
    fs.writeFileSync(file, 'original');
    await outbox.dispatch([job]);
    await t.runtime.queue.idle!();
    expect(fs.readFileSync(file, 'utf8')).toBe('original');
  });

  it('nothing is written when the unit of work rolls back', async () => {
    const { work } = t.runtime.services;
    const { db } = t.runtime;
    const app = (await db.applications.findByName('local'))!;
    const pending = async () => (await db.outbox.backlog()).find((b) => b.queue === 'mail')?.pending ?? 0;
    const before = await pending();
    await expect(work.run(async (uow) => {
      uow.record(mailEvent(app, { ...WELCOME, name: 'Never' }));
      throw new Error('the change failed after the event was recorded');
    })).rejects.toThrow('the change failed');
    expect(await pending()).toBe(before);
  });

  it('the maintenance relay runs jobs whose enqueue was lost', async () => {
    const { outbox, db } = t.runtime;
    const job = await welcome(t, 'Relayed');
    await writeRows(db, [job]); // committed, never dispatched
    expect((await db.outbox.find(job.id))?.status).toBe('pending');
    expect(await outbox.relay(0)).toBeGreaterThanOrEqual(1);
    await t.runtime.queue.idle!();
    expect((await db.outbox.find(job.id))?.status).toBe('done');
    expect(fs.existsSync(path.join(mailDir(), `${job.id}.eml`))).toBe(true);
  });

  /**
   * Rows committed one second apart on `day` (2000-01-`day`), long before anything else in this
   * database, with an outbox whose clock stands a minute after them: its relay reads these rows
   * alone, in this order. Its queue is the app's, except that an enqueue of a row in `refused`
   * fails as BullMQ's does while Redis comes back; `tried` lists every enqueue, in order. The rows
   * left pending are marked done after `test`, so no later relay run of this file meets them.
   */
  async function relayingThrough(day: number, rows: number, test: (relaying: Relaying) => Promise<void>) {
    const { db } = t.runtime;
    const at = (s: number) => new Date(Date.UTC(2000, 0, day, 0, 0, s));
    const jobs: Awaited<ReturnType<typeof welcome>>[] = [];
    for (let i = 0; i < rows; i++) {
      const job = await welcome(t, `Straggler ${i}`);
      await db.transaction((tx) => db.outbox.insert([job], at(i), tx));
      jobs.push(job);
    }
    const refused = new Set<string>();
    const tried: string[] = [];
    const queue: JobQueue = {
      ...t.runtime.queue,
      async enqueue(job) {
        tried.push(job.id);
        if (refused.has(job.id)) throw new Error('enqueue timed out after 1000 ms');
        await t.runtime.queue.enqueue(job);
      },
    };
    const outbox = createOutbox({ db, queue, logger, now: () => at(60) });
    const statuses = async () => {
      await t.runtime.queue.idle!();
      return Promise.all(jobs.map(async (j) => (await db.outbox.find(j.id))?.status));
    };
    try {
      await test({ ids: jobs.map((j) => j.id), refused, tried, outbox, statuses });
    } finally {
      await t.runtime.queue.idle!();
      for (const j of jobs) await db.outbox.completeAlone(j.id, new Date());
    }
  }
  interface Relaying {
    ids: string[]; refused: Set<string>; tried: string[]; outbox: ReturnType<typeof createOutbox>;
    statuses(): Promise<(string | undefined)[]>;
  }

  it('one enqueue failing in the middle of a relay run does not end it: the others go, the failed row waits for the next run', async () => {
    await relayingThrough(1, 5, async ({ ids, refused, tried, outbox, statuses }) => {
      refused.add(ids[1]);
      expect(await outbox.relay(0)).toBe(4);
      expect(tried).toEqual(ids);
      expect(await statuses()).toEqual(['done', 'pending', 'done', 'done', 'done']);

      refused.clear();
      tried.length = 0;
      expect(await outbox.relay(0)).toBe(1);
      expect(tried).toEqual([ids[1]]);
      expect(await statuses()).toEqual(Array(5).fill('done'));
    });
  });

  it('three enqueues failing in a row end a relay run (Redis is down); failures apart do not add up', async () => {
    await relayingThrough(2, 8, async ({ ids, refused, tried, outbox, statuses }) => {
      // two fail, one goes (the count starts again), then three fail: the run stops before the last row
      for (const i of [1, 2, 4, 5, 6]) refused.add(ids[i]);
      expect(await outbox.relay(0)).toBe(2);
      expect(tried).toEqual(ids.slice(0, 7));
      expect(await statuses()).toEqual(['done', 'pending', 'pending', 'done', 'pending', 'pending', 'pending', 'pending']);

      refused.clear();
      expect(await outbox.relay(0)).toBe(6);
      expect(await statuses()).toEqual(Array(8).fill('done'));
    });
  });

  it('a job that keeps failing is retried with backoff, then stays visible as failed', async () => {
    const { db } = t.runtime;
    // an SMTP server that does not exist
    const config = { ...loadConfig({ DATABASE_URL: 'sqlite:x', SECRET_KEY: 'a'.repeat(64) }, t.backend.dir), smtpUrl: 'smtp://127.0.0.1:1' };
    const processors = {} as Processors;
    const queue = createInProcessQueue({ processors, logger, attempts: 3, backoffMs: 10 });
    const outbox = createOutbox({ db, queue, logger });
    const made = createProcessors({ config, services: { ...t.runtime.services, db }, outbox, logger });
    Object.assign(processors, made.processors);
    const job = await welcome(t, 'Doomed');
    await commit(t, [job], outbox);
    await queue.idle();
    const row = await db.outbox.find(job.id);
    expect(row).toMatchObject({ status: 'failed', attempts: 3 });
    await queue.close();
    made.close();
  });

  it('the sweep deletes expired and spent credentials in bounded batches, keeping live ones', async () => {
    const { models } = t.runtime.db;
    const now = Date.now();
    const rows = (n: number, expires: number, used: Date | null) => Array.from({ length: n }, () => ({
      application_id: appId, kind: 'authorization_code', value_hash: sha256Hex(randomUUID()),
      expires_at: new Date(expires), used_at: used, created_at: new Date(now - 3 * 86400_000),
    }));
    await models.Credential.bulkCreate([
      ...rows(700, now - 2 * 86400_000, null),
      ...rows(30, now + 3600_000, new Date(now - 2 * 86400_000)),
      ...rows(25, now + 3600_000, null),
    ]);
    const sweep = createProcessors({ config: t.runtime.config, services: t.runtime.services, outbox: t.runtime.outbox, logger, maintenance: { batchSize: 200 } });
    const result = await sweep.processors.maintenance({ id: 'sweep-test', queue: 'maintenance', name: 'sweep', data: {} }, { attempt: 1, finalAttempt: true });
    expect(result).toMatchObject({ credentials: 730 });
    expect(await models.Credential.count()).toBe(25);
  });

  it('an unknown job name fails loudly instead of vanishing', async () => {
    const { processors } = createProcessors({ config: t.runtime.config, services: t.runtime.services, outbox: t.runtime.outbox, logger });
    await expect(processors.maintenance({ id: 'x', queue: 'maintenance', name: 'nope', data: {} }, { attempt: 1, finalAttempt: true }))
      .rejects.toThrow('no job named "nope"');
  });
});

skipUnless(redisUrl !== undefined, 'outbox with BullMQ needs REDIS_URL')('outbox with BullMQ (REDIS_URL)', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ redis: true });
  });
  afterAll(() => t.close());

  it('enqueues after commit with the outbox id as job id; a worker runs it once', async () => {
    const { config, db, outbox } = t.runtime;
    expect(config.redisUrl).toBeDefined();
    const job = await welcome(t, 'Via BullMQ');
    await commit(t, [job]);
    await outbox.dispatch([job]); // a second enqueue of the same id is a no-op

    const queue = new Queue('mail', { connection: { url: config.redisUrl }, prefix: config.redisPrefix });
    const counts = await queue.getJobCounts('waiting', 'active', 'completed', 'failed', 'delayed');
    expect(Object.values(counts).reduce((a, b) => a + b, 0)).toBe(1);
    // no payload in Redis: the outbox id, and what the job is for without the address
    const local = (await db.applications.findByName('local'))!;
    expect((await queue.getJob(job.id))?.data).toEqual({ outboxId: job.id, about: `welcome email, en-US, application ${local.id}` });
    expect(JSON.stringify((await queue.getJob(job.id))?.data)).not.toContain('@');

    const { processors, close } = createProcessors({ config, services: { ...t.runtime.services, db }, outbox, logger });
    const workers = createBullWorkers({ redisUrl: config.redisUrl!, prefix: config.redisPrefix, processors, logger });
    await until(async () => (await db.outbox.find(job.id))?.status === 'done');
    expect((await simpleParser(fs.readFileSync(path.join(config.mailDir, `${job.id}.eml`)))).text).toContain('Welcome, Via BullMQ!');
    await workers.close();
    close();
    await queue.close();
  });

  it('a queue worker whose fetch loop stays parked on Redis is replaced, and the waiting job runs', async () => {
    const { config } = t.runtime;
    const prefix = `${config.redisPrefix}-stuck`;
    const ran: string[] = [];
    const done = async (job: { id: string }) => {
      ran.push(job.id);
    };
    const lines: string[] = [];
    const watched = createLogger('info', { write: (line: string) => lines.push(line) });
    let parked = 0;
    const workers = createBullWorkers({
      redisUrl: config.redisUrl!, prefix, logger: watched, stuckAfterMs: 1_200,
      processors: { mail: done, versions: done, maintenance: done, webhooks: done },
      // the first mail worker's loop waits for ever once the queue is empty, as one was seen to
      // do after a Redis Cluster node restarted
      makeWorker: (queue, processor, options) => {
        const worker = new Worker(queue, processor, options);
        if (queue === 'mail' && parked++ === 0) Object.assign(worker, { waitForJob: () => new Promise(() => undefined) });
        return worker;
      },
    });
    const queue = new Queue('mail', { connection: { url: config.redisUrl }, prefix });
    try {
      await new Promise((r) => setTimeout(r, 500)); // the parked loop has drained the empty queue
      await queue.add('send', {}, { jobId: 'waits-for-a-new-worker' });
      await until(async () => ran.includes('waits-for-a-new-worker'), 10_000);
      expect(parked).toBe(2);
      expect(lines.filter((l) => /replacing its queue worker/.test(l))).toHaveLength(1);
      expect(JSON.parse(lines.find((l) => /replacing its queue worker/.test(l))!)).toMatchObject({ queue: 'mail', waiting: 1 });
      // the other queues kept their workers
      expect(workers.workers.map((w) => w.name)).toEqual(['mail', 'versions', 'maintenance', 'webhooks']);
    } finally {
      await workers.close();
      await queue.obliterate({ force: true });
      await queue.close();
    }
  });

  it('a failing job is retried over about two hours: waits double from 2 s and are capped at 10 minutes', async () => {
    expect(retryWindowMs()).toBe((1022 + 10 * 600) * 1000); // 1 h 57 min
    expect(Array.from({ length: RETRY.attempts - 1 }, (_, i) => backoffDelay(i + 1))).toEqual(
      [2, 4, 8, 16, 32, 64, 128, 256, 512, ...Array(10).fill(600)].map((s) => s * 1000));
    const { config } = t.runtime;
    const failing = async () => {
      throw new Error('the SMTP server is down');
    };
    const processors = { mail: failing, versions: failing, maintenance: failing, webhooks: failing };
    const workers = createBullWorkers({ redisUrl: config.redisUrl!, prefix: config.redisPrefix, processors, logger });
    const queue = new Queue('mail', { connection: { url: config.redisUrl }, prefix: config.redisPrefix });
    await t.runtime.queue.enqueue({ id: 'retry-window-test', queue: 'mail', name: 'send', data: {} });
    await until(async () => (await queue.getJob('retry-window-test'))?.attemptsMade === 1);
    const job = (await queue.getJob('retry-window-test'))!;
    expect(job.opts.attempts).toBe(20);
    expect(await job.getState()).toBe('delayed');
    expect(job.delay).toBe(2000);
    await workers.close();
    await queue.close();
  });
});
