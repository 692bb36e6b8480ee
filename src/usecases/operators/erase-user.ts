import { event, recordSubject } from '../../domain/events';
import { Refusal } from '../../domain/refusal';
import type { ErasureNeedles } from '../../domain/storage/erasures';
import type { AccountCommand, OperatorDeps } from './deps';
import type { SecretBox } from '../../domain/secrets';
import { erasedUuidDigest } from '../records/record-or-history';

/** The erasure's own outbox row is not written yet when the change purges: no row has this id. */
const NO_ROW = '';

/** What an erasure did: when, and whether it was done before (then nothing changed). */
export interface Erased { erasedAt: Date; already: boolean }

/**
 * Erases a user (docs/lifecycle.md#erase): its record with its credentials, identities, factors
 * and passkeys, its OpenID sessions and grants, every snapshot of its history, its outbox rows and
 * their payloads, and its events' and audit entries' personal facts, in one transaction; a
 * tombstone without personal data stays. The change leaves a job (the outbox's guarantee: it runs
 * until it finishes) that removes again whatever a worker wrote meanwhile, and the emails written
 * to the mail folder. A record deleted before (its history kept) is erased the same way; one
 * erased before answers when, and nothing changes.
 */
export function eraseUser(deps: Pick<OperatorDeps, 'clock' | 'db' | 'work'> & { box: SecretBox }, command: AccountCommand): Promise<Erased> {
  const { app, entityId } = command;
  const { db } = deps;
  return deps.work.run(async (uow) => {
    const { tx } = uow;
    const now = deps.clock.now();
    const record = await db.records.findForUpdate(app.id, entityId, tx);
    const history = await db.erasures.namesInHistory(app.id, entityId, tx);
    if (!record && history.uuids.length === 0) {
      const erasedAt = await db.erasures.erasedAt(app.id, entityId);
      if (erasedAt) return { erasedAt, already: true };
      throw new Refusal('gone', 'no record has this id, and no history of one does: there is nothing to erase');
    }
    // what names the person wherever its rows are not: its uuid, its addresses (then and now), its identities
    const profiles = record ? await db.social.profiles.forEntity(app.id, entityId, tx) : [];
    const unique = (values: Array<string | null | undefined>) => [...new Set(values.filter((v): v is string => typeof v === 'string' && v !== ''))];
    const needles: ErasureNeedles = {
      emails: unique([record?.email, ...history.emails]),
      uuids: unique([record?.uuid, ...history.uuids]),
      identifiers: unique([...profiles.map((p) => p.identifier), ...history.identifiers]),
    };
    if (record) await db.records.remove(record, tx);
    await db.oidcState.destroyOfRecord(app.id, entityId, tx);
    await db.erasures.purge(app.id, entityId, needles, NO_ROW, tx);
    const uuid = needles.uuids[0];
    if (!(await db.erasures.markErased(app.id, entityId, now, uuid === undefined ? null : erasedUuidDigest(deps.box, uuid), tx))) {
      // erased meanwhile by another call (a deleted record has no row to lock): that one is the erasure
      return { erasedAt: (await db.erasures.erasedAt(app.id, entityId)) ?? now, already: true };
    }
    uow.record(event('account.erased', app.id, now, command.acting, recordSubject(entityId), {}, { erasure: { entityId, needles } }));
    return { erasedAt: now, already: false };
  });
}
