import { BUDGET_KEYS } from '../../domain/budget-keys';
import { sha256Hex } from '../../domain/secrets';
import type { Budget } from '../../domain/rate-limit';
import type { CallContext } from '../services';

/**
 * Whose per-account budget a password guess draws on: the account's own (by id) when it exists,
 * so its email and its username share one budget; else the identifier as the account lookup
 * normalized it (hashed: the store of the limits never holds an address), so guesses at an
 * unknown name are limited just the same.
 */
export const accountSubject = (record: { id: number } | undefined, normalizedIdentifier: string) =>
  record ? `id:${record.id}` : `name:${sha256Hex(normalizedIdentifier.slice(0, 256))}`;

/**
 * Password checks are limited per account and per client address, shared by every pod (Redis).
 * Each check takes an attempt from both budgets *before* argon2 runs, so parallel guesses can
 * never verify more passwords than the limit. Sign-in and the current password of
 * changePasswordForm draw on the same per-account budget: a stolen access token does not open a
 * second way to guess the password.
 */
export async function guardPasswordGuesses(ctx: CallContext<'loginLimits' | 'rateLimiter'>, subject: string) {
  const { rateLimiter, loginLimits } = ctx.services;
  const account = BUDGET_KEYS.loginAccount(ctx.app.id, subject);
  const address = BUDGET_KEYS.loginAddress(ctx.app.id, ctx.clientAddress);
  const budgets: Budget[] = [[account, loginLimits.account], [address, loginLimits.address]];
  const taken = await rateLimiter.take(budgets);
  return {
    /** A right password: the account's failures are forgotten and the address gets its attempt back. */
    async succeeded() {
      await taken.settle({ clear: [account], giveBack: [address] });
    },
    /**
     * A right password of an account that owes a second factor: the address gets its attempt back,
     * and the account's count stays (with this attempt in it) until the second factor is right too,
     * so a known password never buys the codes a fresh budget.
     */
    async firstOfTwo() {
      await taken.settle({ giveBack: [address] });
    },
    /**
     * A right password that signs nobody in (a disabled account): the attempt is given back to both
     * budgets, and the account's earlier failures stay, so the account is not locked when it is enabled again.
     */
    async givenBack() {
      await taken.settle({ giveBack: [account, address] });
    },
  };
}
