import { availableParallelism } from 'node:os';
import type { Algorithm } from '@node-rs/argon2';
import { BusyError } from './refusal';
import { createHashThreads, HashQueueFullError, HashThreadError } from './hash-threads';
import { IMPORTED_HASH_PROGRAM, importedHashLibraries, isImported } from './imported-hashes';

/** OWASP's argon2id parameters: 19 MiB, 2 iterations, 1 lane. */
export interface PasswordPolicy { memoryCost: number; timeCost: number; parallelism: number }
export const OWASP_ARGON2ID: PasswordPolicy = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };
/** @node-rs/argon2's `Algorithm.Argon2id`: its type is a const enum, which code compiled file by file cannot read. */
export const ARGON2ID: Algorithm = 2;

/** Longest password accepted: argon2 takes any length, but hashing megabytes is a denial of service. */
export const MAX_PASSWORD_LENGTH = 1024;

/** Hashes allowed to wait per thread by default: about two seconds of work at OWASP's parameters. */
export const WAITING_PER_THREAD = 64;

/**
 * Imported hashes verified at once beyond which a sign-in on one answers 503 at once: each costs up
 * to about a second of a core (imported-hashes.ts LIMITS), so a few keep a thread busy for seconds.
 */
export const IMPORTED_WAITING = 4;

/** A full queue is BusyError (the API: 503 with Retry-After); other failures pass as they are. */
const busyWhenFull = (err: unknown): never => {
  throw err instanceof HashQueueFullError ? new BusyError(1) : err;
};

/**
 * argon2id hashing and verification on `threads` threads of their own (hash-threads.ts): one
 * per core by default, since more only make the hashes evict each other from the CPU caches.
 * At most `maxWaiting` hashes wait for a thread; beyond that a request is refused at once (503).
 */
export function createPasswordHasher(
  policy: PasswordPolicy = OWASP_ARGON2ID, threads = availableParallelism(), maxWaiting = threads * WAITING_PER_THREAD,
  hooks: { waited?: (seconds: number) => void } = {},
) {
  const argon2 = createHashThreads(threads, { ...policy, algorithm: ARGON2ID }, maxWaiting, undefined, hooks);
  // hashes imported from other systems, on threads of their own (half the cores, at least one), started at the first one:
  // never on libuv's pool, which the database driver needs, and never in argon2's queue, which sign-ins need
  let imported: ReturnType<typeof createHashThreads> | undefined;
  const verifyImported = async (stored: string, password: string): Promise<boolean> => {
    imported ??= createHashThreads(Math.max(1, Math.floor(threads / 2)), importedHashLibraries(), IMPORTED_WAITING, IMPORTED_HASH_PROGRAM);
    try {
      return await imported.verify(stored, password);
    } catch (err) {
      return busyWhenFull(err);
    }
  };
  /** argon2's verify on the threads: false for a wrong password and a value that is not an argon2 hash; throws if the thread failed or the queue is full. */
  const verifyArgon2 = async (stored: string, password: string): Promise<boolean> => {
    try {
      return await argon2.verify(stored, password);
    } catch (err) {
      if (err instanceof HashThreadError || err instanceof HashQueueFullError) return busyWhenFull(err);
      return false;
    }
  };
  // verified against when an account does not exist, so that costs what a wrong password costs
  let dummy: Promise<string> | undefined;
  const dummyHash = () => (dummy ??= argon2.hash(`dummy-${Math.random()}`).catch((err) => {
    dummy = undefined; // computed again next time
    throw err;
  }));
  /**
   * False for a wrong password and for a stored value no format reads; throws if the thread failed
   * or the queue is full. A hash imported from another system (an argon2 one costlier than the
   * policy's too) is verified by its own algorithm, on the imported hashes' threads (a bounded
   * queue: 503 past a few at once), beside an argon2 verify of nothing at the policy's cost: it
   * takes at least what an unknown account's sign-in takes (a fast digest answers in microseconds),
   * and waits in the argon2 threads' bounded queue too.
   */
  const verify = async (stored: string, password: string): Promise<boolean> => {
    if (!isImported(stored, policy)) return verifyArgon2(stored, password);
    const [ok] = await Promise.all([verifyImported(stored, password), dummyHash().then((d) => verifyArgon2(d, password))]);
    return ok;
  };
  return {
    /** Starts computing the dummy hash now, so the first unknown-account login is not faster. */
    warmUp: () => void dummyHash().catch(() => undefined),
    /** Does the work of a verify and answers false: for accounts that do not exist. */
    async verifyNothing(password: string): Promise<false> {
      await verify(await dummyHash(), password);
      return false;
    },
    hash: (password: string) => argon2.hash(password).catch(busyWhenFull),
    /** A hash for a bulk import: on at most half the threads, so sign-ins keep the rest (see HashThreads.hashInBackground). */
    hashInBackground: (password: string) => argon2.hashInBackground(password).catch(busyWhenFull),
    verify,
    /** Hashes waiting for a thread now (a metric). */
    waiting: () => argon2.waiting(),
    /**
     * True when the stored hash is not argon2id at the policy's parameters (rehash on next login):
     * weaker ones, and costlier ones too, which the imported hashes' threads verify until then.
     */
    needsRehash(stored: string): boolean {
      const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(stored);
      return !m || Number(m[1]) !== policy.memoryCost || Number(m[2]) !== policy.timeCost || Number(m[3]) !== policy.parallelism;
    },
    /** Stops the threads; hashes still waiting fail. */
    close: async () => {
      await Promise.all([argon2.close(), imported?.close()]);
    },
  };
}
export type PasswordHasher = ReturnType<typeof createPasswordHasher>;
