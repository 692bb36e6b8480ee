import type { CallContext } from '../services';

/**
 * How many user codes may be typed in the whole application in 15 minutes (docs/openid-connect.md#devices):
 * with a code of 20 letters to the power of 8, guessing a live one stays hopeless, whoever guesses from where.
 */
export const DEVICE_CODES_PER_APPLICATION = { max: 1000, windowSeconds: 900 };

/**
 * Takes one attempt at typing a device's user code (docs/openid-connect.md#devices) from the
 * client address's budget (LOGIN_LIMIT_ADDRESS's size) and the application's, shared by every pod,
 * before the code is looked up; past either budget none is looked up (LimitReachedError, with the
 * seconds to wait). `giveBack` returns the attempt to both: what found a code does not count.
 */
export async function takeUserCodeAttempt(ctx: CallContext<'loginLimits' | 'rateLimiter'>): Promise<{ giveBack(): Promise<void> }> {
  const keys = [`device:address:${ctx.app.id}:${ctx.clientAddress}`, `device:application:${ctx.app.id}:all`];
  const taken = await ctx.services.rateLimiter.take([[keys[0], ctx.services.loginLimits.address], [keys[1], DEVICE_CODES_PER_APPLICATION]]);
  return { giveBack: () => taken.settle({ giveBack: keys }) };
}
