import type { Clock } from '../../domain/clients';
import type { Application } from '../../domain/storage/applications';
import { Refusal } from '../../domain/refusal';
import type { Acting } from '../../domain/events';
import type { Storage } from '../../domain/storage';
import type { UserRecord } from '../../domain/storage/records';
import type { Tx } from '../../domain/storage/transactions';
import type { RecordVersions } from '../../domain/versions';
import type { Work } from '../unit-of-work';

/** What an operator's action on an account needs (the services have it all). */
export interface OperatorDeps { db: Storage; work: Work; versions: RecordVersions; clock: Clock }

/**
 * An operator's action on one account: the application, the record, and who acts (an operator of
 * the command line or the console, or an application's owner or direct_access client), as the
 * audit log and the account's activity name them.
 */
export interface AccountCommand { app: Application; entityId: number; acting: Acting }

/** The operator as the events' actor (a command line has no request and no address). */
export const operatorActing = (name: string): Acting => ({ actor: { kind: 'operator', name }, origin: {} });

/** The record, locked for the change; `gone` when it was deleted meanwhile. */
export async function lockedRecord(db: Storage, command: AccountCommand, tx: Tx): Promise<UserRecord> {
  const record = await db.records.findForUpdate(command.app.id, command.entityId, tx);
  if (!record) throw new Refusal('gone', 'the record was deleted meanwhile');
  return record;
}
