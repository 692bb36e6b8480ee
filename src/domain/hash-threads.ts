import { Worker } from 'node:worker_threads';

/*
 * argon2 on threads of its own: one worker thread per core (ARGON2_CONCURRENCY), each computing
 * with the synchronous binding. Every thread holds its current job and the next one, so a
 * finished hash is followed by the next at once, with no round trip through the event loop; the
 * rest wait here, first come first served. The hashes never occupy libuv's pool, which DNS
 * look-ups, gzip and file reads share, and memory stays bounded: one hash per thread at a time.
 */

// the worker's whole program; it receives the binding's resolved path, so it runs the same
// whether the api runs from dist/ or from the TypeScript sources in tests
const PROGRAM = `
const { parentPort, workerData } = require('node:worker_threads');
const argon2 = require(workerData.binding);
parentPort.on('message', ({ op, args }) => {
  try {
    const value = op === 'hash' ? argon2.hashSync(args[0], workerData.options) : argon2.verifySync(args[0], args[1]);
    parentPort.postMessage({ value });
  } catch (e) {
    parentPort.postMessage({ error: String((e && e.message) || e) });
  }
});
`;

/** The hashing thread failed (not the input): the caller answers with a server error. */
export class HashThreadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HashThreadError';
  }
}

interface Job { op: 'hash' | 'verify'; args: string[]; resolve: (value: never) => void; reject: (err: Error) => void; queued: number; background?: boolean }
interface Slot { worker: Worker; sent: Job[]; failed: boolean }

/** Jobs a thread holds at once: the one it computes and the one it starts next. */
const HELD = 2;
/** A thread that failed sooner than this after its start is replaced after this pause. */
const RESTART_PAUSE_MS = 1000;

/** More hashes are waiting than the queue holds: the caller answers 503 and the client retries. */
export class HashQueueFullError extends Error {
  constructor(readonly waiting: number) {
    super(`${waiting} password hashes are already waiting`);
    this.name = 'HashQueueFullError';
  }
}

export interface HashThreads {
  hash(password: string): Promise<string>;
  /**
   * A hash in the background lane (bulk imports): on at most half the threads (one while requests'
   * hashes wait, so a batch always moves), so requests keep the other half however large the batch.
   */
  hashInBackground(password: string): Promise<string>;
  verify(stored: string, password: string): Promise<boolean>;
  /** Jobs waiting for a thread now. */
  waiting(): number;
  close(): Promise<void>;
}

/**
 * `maxWaiting` bounds the jobs waiting for a thread (a burst then gets HashQueueFullError instead
 * of growing memory and latency without end); `program` is the threads' code (PROGRAM; tests pass
 * one that fails on demand). One closure on purpose: the threads, the two lanes and the counters
 * are one state that every thread's callback changes; split apart, each piece would pass all of it.
 */
export function createHashThreads(
  count: number, options: object, maxWaiting = Infinity, program = PROGRAM, hooks: { waited?: (seconds: number) => void } = {},
): HashThreads {
  const binding = require.resolve('@node-rs/argon2');
  const waiting: Job[] = [];
  const background: Job[] = [];
  /** Background jobs on the threads at once, and the most they may hold (half the threads, at least one). */
  let backgroundRunning = 0;
  const backgroundLimit = Math.max(1, Math.floor(count / 2));
  const maxBackground = Math.max(maxWaiting, 1) * 16;
  const slots: Slot[] = [];
  let closed = false;

  /** Whether the background lane may start one more job now: up to its share when no request waits, else only its one. */
  const backgroundMayRun = () => background.length > 0 && backgroundRunning < backgroundLimit && (waiting.length === 0 || backgroundRunning === 0);
  /** The next job for a thread that has room: the background lane's one if it has none running, else a request's first. */
  const nextJob = (): Job | undefined => {
    if (backgroundMayRun()) {
      backgroundRunning++;
      return background.shift();
    }
    return waiting.shift();
  };

  const send = (slot: Slot, job: Job) => {
    if (slot.sent.length === 0) slot.worker.ref(); // kept alive until its answers arrive, as pending I/O is
    hooks.waited?.((performance.now() - job.queued) / 1000);
    slot.sent.push(job);
    slot.worker.postMessage({ op: job.op, args: job.args });
  };

  const start = (index: number): Slot => {
    const worker = new Worker(program, { eval: true, workerData: { binding, options } });
    const slot: Slot = { worker, sent: [], failed: false };
    const started = Date.now();
    // a thread answers in the order it was sent jobs
    worker.on('message', ({ value, error }: { value?: never; error?: string }) => {
      const job = slot.sent.shift()!;
      if (job.background) backgroundRunning--;
      const next = nextJob();
      if (next) send(slot, next);
      else if (slot.sent.length === 0) worker.unref();
      if (error === undefined) job.resolve(value as never);
      else job.reject(new Error(error));
    });
    const fail = (err: Error) => {
      if (slot.failed) return;
      slot.failed = true;
      for (const job of slot.sent.splice(0)) {
        if (job.background) backgroundRunning--;
        job.reject(new HashThreadError(`the hashing thread failed: ${err.message}`));
      }
      if (closed) return;
      const replace = () => {
        if (closed) return;
        slots[index] = start(index);
        for (let next = nextJob(); next; next = slots[index].sent.length < HELD ? nextJob() : undefined) send(slots[index], next);
      };
      // a thread that keeps failing at once is not restarted in a tight loop
      if (Date.now() - started >= RESTART_PAUSE_MS) replace();
      else setTimeout(replace, RESTART_PAUSE_MS); // ref'd: jobs may be waiting for it
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`exited with code ${code}`)));
    worker.unref(); // an idle thread never keeps the process alive (after the listeners, which ref it)
    return slot;
  };
  for (let i = 0; i < count; i++) slots.push(start(i));

  const run = <T>(op: Job['op'], args: string[], inBackground = false) => new Promise<T>((resolve, reject) => {
    if (closed) return reject(new HashThreadError('the password hasher is closed'));
    const job: Job = { op, args, resolve: resolve as (value: never) => void, reject, queued: performance.now(), background: inBackground };
    // the working thread holding the fewest jobs, if one has room; otherwise the job waits its turn
    const slot = slots.filter((s) => !s.failed).sort((a, b) => a.sent.length - b.sent.length)[0];
    if (inBackground) {
      // only onto an idle thread, and never past the lane's share of the threads
      if (background.length >= maxBackground) return reject(new HashQueueFullError(background.length));
      background.push(job);
      if (slot && slot.sent.length === 0 && backgroundMayRun()) {
        backgroundRunning++;
        send(slot, background.shift()!);
      }
      return;
    }
    if (slot && slot.sent.length < HELD && waiting.length === 0) send(slot, job);
    else if (waiting.length >= maxWaiting) reject(new HashQueueFullError(waiting.length));
    else waiting.push(job);
  });

  return {
    hash: (password) => run<string>('hash', [password]),
    hashInBackground: (password) => run<string>('hash', [password], true),
    verify: (stored, password) => run<boolean>('verify', [stored, password]),
    waiting: () => waiting.length,
    async close() {
      closed = true;
      for (const job of [...waiting.splice(0), ...background.splice(0)]) job.reject(new HashThreadError('the password hasher is closed'));
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
