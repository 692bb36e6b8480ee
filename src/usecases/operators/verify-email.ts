import { Refusal } from '../../domain/refusal';
import { formatTimestamp } from '../../domain/timestamps';
import { changeRecord, RecordGoneError } from '../records/change-record';
import type { RecordDeps } from '../records/deps';
import type { AccountCommand } from './deps';

/**
 * An operator marks an account's email address verified now (the console's action, the command
 * line's users:verify-email): a change of the record as the application's backend makes it, with
 * its version and its event naming the operator.
 */
export async function verifyEmailAsOperator(deps: Pick<RecordDeps, 'baseUrls' | 'clock' | 'db' | 'passwords' | 'versions' | 'work'>, command: AccountCommand): Promise<void> {
  const record = await deps.db.records.find(command.app.id, { id: command.entityId });
  if (!record) throw new Refusal('gone', 'the record was deleted meanwhile');
  if (!record.email) throw new Refusal('nothing_to_do', 'the account has no email address to verify');
  if (record.emailVerified) throw new Refusal('nothing_to_do', 'the email address is verified already');
  const at = formatTimestamp(deps.clock.now());
  try {
    await changeRecord(deps, {
      app: command.app, acting: command.acting, writer: { record, byUser: false, fresh: false, clientId: null }, kind: 'record.updated',
      change: (doc) => ({ ...doc, emailVerified: at }),
    });
  } catch (e) {
    if (e instanceof RecordGoneError) throw new Refusal('gone', 'the record was deleted meanwhile');
    throw e;
  }
}
