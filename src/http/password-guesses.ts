import type { Limit } from '../domain/rate-limit';
import { errors } from '../errors';
import type { RequestContext } from './context';

/**
 * Failed password checks are limited per account and per client address, shared by every pod
 * (Redis) and counted before the code knows whether the account exists. Sign-in and the current
 * password of changePasswordForm draw on the same per-account budget: a stolen access token does
 * not open a second way to guess the password.
 */
export async function guardPasswordGuesses(ctx: RequestContext, account: string) {
  const { rateLimiter, loginLimits } = ctx.services;
  const keys: [string, Limit][] = [
    [`login:account:${ctx.app.id}:${account.toLowerCase().slice(0, 256)}`, loginLimits.account],
    [`login:address:${ctx.app.id}:${ctx.clientAddress}`, loginLimits.address],
  ];
  const { wait, failures } = await rateLimiter.check(keys);
  if (wait > 0) throw errors.apiLimit(wait);
  return {
    /** Counts a wrong password against the account and the address. */
    failed: () => Promise.all(keys.map(([key, limit]) => rateLimiter.fail(key, limit))).then(() => undefined),
    /** A right password clears the account's count (the address keeps its own). */
    succeeded: () => (failures ? rateLimiter.reset(keys[0][0]) : Promise.resolve()),
  };
}
