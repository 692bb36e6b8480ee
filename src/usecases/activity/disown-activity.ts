import { endSessionsOf, SESSION_KINDS } from '../../domain/accounts';
import { event, recordSubject } from '../../domain/events';
import type { StoredCredential } from '../../domain/storage/credentials';
import { accountOfToken } from '../factors/account';
import { asAccount, type CallContext } from '../services';

/**
 * "This wasn't me" (docs/activity.md): the person says something in their activity was not them.
 * Every session and token of the account but the one they said it from ends at once (whoever
 * signed in elsewhere is signed out), and the event says so; the account page then asks them for a
 * new password, since whoever it was may know the old one.
 */
export async function disownActivity(ctx: CallContext<'clock' | 'db' | 'work'>, command: { token: StoredCredential }): Promise<{ sessions: number }> {
  const { db, clock, work } = ctx.services;
  const { record, client } = await accountOfToken(ctx, command.token);
  return work.run(async (uow) => {
    const now = clock.now();
    const sessions = await endSessionsOf(db, ctx.app.id, record.id, SESSION_KINDS, command.token.family, now, uow);
    uow.record(event('account.activity_disowned', ctx.app.id, now, asAccount(ctx, record.id, client), recordSubject(record.id), { sessions }));
    return { sessions };
  }, { readCommitted: true });
}
