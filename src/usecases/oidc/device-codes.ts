import type { CallContext } from '../services';

/**
 * How many user codes may be typed in the whole application in 15 minutes (docs/openid-connect.md#devices):
 * with a code of 20 letters to the power of 8, guessing a live one stays hopeless, whoever guesses from where.
 */
export const DEVICE_CODES_PER_APPLICATION = { max: 1000, windowSeconds: 900 };

/**
 * Takes one attempt at typing a device's user code (docs/openid-connect.md#devices) from the
 * client address's budget (LOGIN_LIMIT_ADDRESS's size) and the application's, shared by every pod,
 * before the code is looked up: a wrong code is counted whatever it was, and past either budget
 * none is looked up (510 LimitReachedError, with the seconds to wait).
 */
export async function takeUserCodeAttempt(ctx: CallContext<'loginLimits' | 'rateLimiter'>): Promise<void> {
  await ctx.services.rateLimiter.take([
    [`device:address:${ctx.app.id}:${ctx.clientAddress}`, ctx.services.loginLimits.address],
    [`device:application:${ctx.app.id}:all`, DEVICE_CODES_PER_APPLICATION],
  ]);
}
