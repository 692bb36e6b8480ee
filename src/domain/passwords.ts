import { Algorithm, hash, verify } from '@node-rs/argon2';

/** OWASP's argon2id parameters: 19 MiB, 2 iterations, 1 lane. */
export interface PasswordPolicy { memoryCost: number; timeCost: number; parallelism: number }
export const OWASP_ARGON2ID: PasswordPolicy = { memoryCost: 19_456, timeCost: 2, parallelism: 1 };

/** Longest password accepted: argon2 takes any length, but hashing megabytes is a denial of service. */
export const MAX_PASSWORD_LENGTH = 1024;

export function createPasswordHasher(policy: PasswordPolicy = OWASP_ARGON2ID) {
  const options = { ...policy, algorithm: Algorithm.Argon2id };
  // verified against when an account does not exist, so that costs what a wrong password costs
  let dummy: Promise<string> | undefined;
  const dummyHash = () => (dummy ??= hash(`dummy-${Math.random()}`, options));
  return {
    /** Starts computing the dummy hash now, so the first unknown-account login is not faster. */
    warmUp: () => void dummyHash(),
    /** Does the work of a verify and answers false: for accounts that do not exist. */
    async verifyNothing(password: string): Promise<false> {
      await verify(await dummyHash(), password).catch(() => false);
      return false;
    },
    hash: (password: string) => hash(password, options),
    /** False for a wrong password and for a stored value that is not an argon2 hash. */
    async verify(stored: string, password: string): Promise<boolean> {
      try {
        return await verify(stored, password);
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
