import { availableParallelism } from 'node:os';

/*
 * Imported first by every entry point that hashes passwords. argon2 runs in libuv's thread pool
 * (4 threads unless told), as do DNS look-ups and file reads. At most ARGON2_CONCURRENCY hashes
 * run at once (default: one per core), and the pool gets two threads beyond that, so a burst of
 * sign-ins never leaves a DNS look-up waiting behind the hashes. libuv reads the variable when
 * the pool first starts, which has not happened while the entry point's imports load.
 */
if (process.env.UV_THREADPOOL_SIZE === undefined) {
  const hashes = Number(process.env.ARGON2_CONCURRENCY) || availableParallelism();
  process.env.UV_THREADPOOL_SIZE = String(Math.min(1024, Math.max(4, hashes + 2)));
}
