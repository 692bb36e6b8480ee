import { availableParallelism } from 'node:os';
import { Algorithm, hash, verify } from '@node-rs/argon2';

/** OWASP's argon2id parameters: 19 MiB, 2 iterations, 1 lane. */
export interface PasswordPolicy { memoryCost: number; timeCost: number; parallelism: number }
export const OWASP_ARGON2ID: PasswordPolicy = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** Longest password accepted: argon2 takes any length, but hashing megabytes is a denial of service. */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * Runs at most `max` pieces of work at once; the others wait their turn, first come first served.
 * A slot that frees goes straight to the next in line.
 */
export function createLimiter(max: number) {
  let running = 0;
  const waiting: Array<() => void> = [];
  return {
    async run<T>(work: () => Promise<T>): Promise<T> {
      if (running < max) running++;
      else await new Promise<void>((resolve) => waiting.push(resolve));
      try {
        return await work();
      } finally {
        const next = waiting.shift();
        if (next) next();
        else running--;
      }
    },
  };
}

/**
 * argon2id hashing and verification. At most `concurrency` computations run at once (each holds
 * `memoryCost` KiB): more than the cores only make them evict each other from the CPU caches, and
 * a hash never occupies the whole libuv pool that DNS look-ups and file reads share.
 */
export function createPasswordHasher(policy: PasswordPolicy = OWASP_ARGON2ID, concurrency = availableParallelism()) {
  const options = { ...policy, algorithm: Algorithm.Argon2id };
  const limiter = createLimiter(concurrency);
  const hashLimited = (password: string) => limiter.run(() => hash(password, options));
  const verifyLimited = (stored: string, password: string) => limiter.run(() => verify(stored, password));
  // verified against when an account does not exist, so that costs what a wrong password costs
  let dummy: Promise<string> | undefined;
  const dummyHash = () => (dummy ??= hashLimited(`dummy-${Math.random()}`));
  return {
    /** Starts computing the dummy hash now, so the first unknown-account login is not faster. */
    warmUp: () => void dummyHash(),
    /** Does the work of a verify and answers false: for accounts that do not exist. */
    async verifyNothing(password: string): Promise<false> {
      await verifyLimited(await dummyHash(), password).catch(() => false);
      return false;
    },
    hash: hashLimited,
    /** False for a wrong password and for a stored value that is not an argon2 hash. */
    async verify(stored: string, password: string): Promise<boolean> {
      try {
        return await verifyLimited(stored, password);
      } catch {
        return false;
      }
    },
    /** True when the stored hash used weaker parameters than the policy (rehash on next login). */
    needsRehash(stored: string): boolean {
      const m = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$/.exec(stored);
      return !m || Number(m[1]) < policy.memoryCost || Number(m[2]) < policy.timeCost || Number(m[3]) < policy.parallelism;
    },
  };
}
export type PasswordHasher = ReturnType<typeof createPasswordHasher>;
