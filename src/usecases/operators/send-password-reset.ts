import { recordLocale } from '../../domain/email-change';
import { Refusal } from '../../domain/refusal';
import { accountClient } from '../account/account-client';
import { mailPasswordReset } from '../login/email-requests';
import type { Services } from '../services';
import type { AccountCommand } from './deps';

/**
 * An operator mails an account a password reset link (the console's "send a reset email"): the
 * link a person's "forgot password" would get, from the application's own login client (the
 * account page's), in the account's language; the event names the operator.
 */
export async function sendPasswordReset(deps: Pick<Services, 'baseUrls' | 'clients' | 'clock' | 'db' | 'tokens' | 'work'>, command: AccountCommand): Promise<void> {
  const { app } = command;
  const record = await deps.db.records.find(app.id, { id: command.entityId });
  if (!record) throw new Refusal('gone', 'the record was deleted meanwhile');
  const client = await accountClient(deps, app);
  if (!client) throw new Refusal('misconfigured', 'the application has no login client to send a reset link from (set account_client_id)');
  const ctx = { origin: command.acting.origin, app, clientAddress: '', services: { baseUrls: deps.baseUrls, clock: deps.clock, tokens: deps.tokens, work: deps.work } };
  await mailPasswordReset(ctx, { client, record, locale: recordLocale(record), acting: command.acting });
}
