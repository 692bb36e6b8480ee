import type { UnitOfWork } from '../../domain/ports';
import type { UserRecord } from '../../domain/storage/records';
import { event, recordSubject, type Acting } from '../../domain/events';
import type { CallContext } from '../services';

/**
 * One more version of a record (locked in `uow`) for a change kept beside its attributes: its
 * linked identities (`profiles`) or how it signs in (`factors`). The version's snapshot is the
 * record as the versions API shows it, never a secret; `record.updated` names what changed.
 */
export async function writeVersion(ctx: CallContext<'clock' | 'db' | 'versions'>, uow: UnitOfWork, locked: UserRecord, acting: Acting, attributes: string[]): Promise<void> {
  const { db, clock, versions } = ctx.services;
  const { snapshot } = await versions.written(await db.records.touch(locked, clock.now(), uow.tx), uow.tx);
  uow.record(event('record.updated', ctx.app.id, clock.now(), acting, recordSubject(locked.id), { attributes }, { snapshot }));
}
