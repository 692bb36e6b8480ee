import { BUDGET_KEYS } from '../../domain/budget-keys';
import { LimitReachedError } from '../../domain/refusal';
import type { Spacing } from '../../domain/rate-limit';
import type { CallContext } from '../services';

/**
 * Wrong user codes typed in the whole application in 15 minutes past which the application counts
 * as under a guessing attack (docs/openid-connect.md#devices): then each client address may type
 * only DEVICE_MISSES_UNDER_ATTACK wrong codes, not LOGIN_LIMIT_ADDRESS's. With a code of 20 letters
 * to the power of 8, guessing a live one stays hopeless however many addresses guess.
 */
export const DEVICE_CODES_PER_APPLICATION = { max: 1000, windowSeconds: 900 };
/** Wrong codes one client address may type in 15 minutes while the application is under a guessing attack. */
export const DEVICE_MISSES_UNDER_ATTACK = { max: 3, windowSeconds: 900 };
/** The application's counter of wrong codes counts without refusing: it never stops a right code. */
const COUNTED_ONLY = { max: Number.MAX_SAFE_INTEGER, windowSeconds: DEVICE_CODES_PER_APPLICATION.windowSeconds };

/**
 * An address past its budget is slowed, never refused a right code: its attempts are looked up one
 * at a time, each `delayMs` after the one before, by turns every pod shares (through Redis, as the
 * budgets); past `waiting` of them booked at once (a flood from one address), the page says how
 * long to wait.
 */
export const DEVICE_SLOWED: Spacing = { delayMs: 3_000, waiting: 6 };

/** An attempt at a user code: taken (to look up after `waitMs`), or refused for a flood, for `retryAfterSeconds`. */
export type UserCodeAttempt = { waitMs: number; giveBack(): Promise<void> } | { retryAfterSeconds: number };

/**
 * Takes one attempt at typing a device's user code (docs/openid-connect.md#devices) before the code
 * is looked up, shared by every pod: from the client address's budget (LOGIN_LIMIT_ADDRESS's size;
 * DEVICE_MISSES_UNDER_ATTACK's while the whole application took more than DEVICE_CODES_PER_APPLICATION
 * wrong codes), and counted in the application's tally, which refuses nobody. Past the address's
 * budget the attempt waits its turn (DEVICE_SLOWED), and is not refused: a person who mistyped,
 * or who shares an address with a guesser, still gets a right code through. `giveBack` returns
 * the attempt: only misses count.
 */
export async function takeUserCodeAttempt(ctx: CallContext<'loginLimits' | 'rateLimiter'>): Promise<UserCodeAttempt> {
  const address = BUDGET_KEYS.deviceAddress(ctx.app.id, ctx.clientAddress);
  const application = BUDGET_KEYS.deviceApplication(ctx.app.id);
  const [misses] = await ctx.services.rateLimiter.count([application]);
  const addressBudget = misses >= DEVICE_CODES_PER_APPLICATION.max ? DEVICE_MISSES_UNDER_ATTACK : ctx.services.loginLimits.address;
  try {
    const taken = await ctx.services.rateLimiter.take([[address, addressBudget], [application, COUNTED_ONLY]]);
    return { waitMs: 0, giveBack: () => taken.settle({ giveBack: [address, application] }) };
  } catch (e) {
    if (!(e instanceof LimitReachedError)) throw e;
    const waitMs = await ctx.services.rateLimiter.turn(BUDGET_KEYS.deviceTurn(ctx.app.id, ctx.clientAddress), DEVICE_SLOWED);
    if (waitMs === undefined) return { retryAfterSeconds: Math.ceil((DEVICE_SLOWED.waiting * DEVICE_SLOWED.delayMs) / 1000) };
    const counted = await ctx.services.rateLimiter.take([[application, COUNTED_ONLY]]);
    return { waitMs, giveBack: () => counted.settle({ giveBack: [application] }) };
  }
}
