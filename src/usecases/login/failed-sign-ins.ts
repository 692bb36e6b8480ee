import type { FailureReason } from '../../domain/storage/events';
import type { CallContext } from '../services';

/**
 * Counts a failed sign-in of a known account in its activity (docs/activity.md): one row per
 * account, reason and minute, whose count grows, so guessing never grows the store without bound.
 * A sign-in that fails changes nothing, so this is a write of its own; one that cannot be made is
 * logged, and the person still gets the refusal they are owed. It never throws: a wrong password's
 * count is not waited for (the refusal of a known account then takes as long as an unknown one's).
 */
export async function countFailedSignIn(ctx: CallContext<'clock' | 'db' | 'logger'>, accountId: number, reason: FailureReason, client?: { clientId: string }): Promise<void> {
  const { db, clock, logger } = ctx.services;
  try {
    await db.events.countFailureAlone({
      applicationId: ctx.app.id, accountId, reason, at: clock.now(), clientId: client?.clientId ?? ctx.origin.clientId,
      address: ctx.origin.address, userAgent: ctx.origin.userAgent,
    });
  } catch (err) {
    logger.warn({ err: (err as Error).message, reason }, 'a failed sign-in could not be counted in the account\'s activity');
  }
}
