import { event, recordSubject } from '../../domain/events';
import { logoutsOwed } from '../../domain/accounts';
import { Refusal } from '../../domain/refusal';
import type { ErasureNeedles } from '../../domain/storage/erasures';
import type { AccountCommand, OperatorDeps } from './deps';
import type { SecretBox } from '../../domain/secrets';
import { erasedUuidDigest } from '../records/record-or-history';
import { erasurePayloadOf } from '../../domain/payloads';
import type { MailFolder } from '../../domain/ports';
import type { Services } from '../services';

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
    // its apps signed in through the provider are told (the logout tokens name it by its uuid, as the apps know it), once the erasure is sure
    const logouts = await logoutsOwed(db, tx, app.id, entityId, now);
    if (record) await db.records.remove(record, tx);
    await db.oidcState.destroyOfRecord(app.id, entityId, tx);
    await db.erasures.purge(app.id, entityId, needles, NO_ROW, tx);
    const uuid = needles.uuids[0];
    if (!(await db.erasures.markErased(app.id, entityId, now, uuid === undefined ? null : erasedUuidDigest(deps.box, uuid), tx))) {
      // erased meanwhile by another call (a deleted record has no row to lock): that one is the erasure
      return { erasedAt: (await db.erasures.erasedAt(app.id, entityId)) ?? now, already: true };
    }
    if (logouts) uow.record(logouts);
    uow.record(event('account.erased', app.id, now, command.acting, recordSubject(entityId), {}, { erasure: { entityId, needles } }));
    return { erasedAt: now, already: false };
  });
}

/** What an erasure's job removed: rows by kind, and emails of the mail folder; or why it had nothing to do. */
export type ErasureFinished = { kind: 'finished'; removed: Record<string, number> } | { kind: 'skipped'; why: string };

/**
 * An erasure's job (docs/lifecycle.md#erase): removes again what names the person outside the
 * record's rows, then the emails of the mail folder addressed to it, then the database's files'
 * copies (SQLite's log), then clears its own outbox row. Each step finds nothing the second time,
 * so a job stopped midway simply runs again. Throws when a step fails (the failure counted on the
 * row; failed for good on the `finalAttempt`).
 */
export async function finishErasure(
  deps: Pick<Services, 'db' | 'clock' | 'box'> & { mailFolder?: MailFolder },
  command: { outboxId: string; finalAttempt: boolean },
): Promise<ErasureFinished> {
  const { db, clock } = deps;
  const { outboxId } = command;
  const row = await db.outbox.find(outboxId);
  if (!row || row.status !== 'pending') return { kind: 'skipped', why: 'finished already' };
  try {
    const { entityId, sealedNeedles } = erasurePayloadOf(row.payload);
    const needles = JSON.parse(deps.box.open(sealedNeedles, outboxId)) as ErasureNeedles;
    const purged = await db.erasures.purgeAlone(row.applicationId, entityId, needles, outboxId);
    const mails = deps.mailFolder ? await deps.mailFolder.removeMailsTo(needles.emails) : 0;
    // the database's files follow: nothing of the person left in SQLite's log (a reader may hold it a moment)
    let scrubbed = await db.erasures.scrubFilesAlone();
    for (let tries = 0; !scrubbed && tries < 50; tries++) {
      await new Promise((r) => setTimeout(r, 100));
      scrubbed = await db.erasures.scrubFilesAlone();
    }
    if (!scrubbed) throw new Error('the database\'s write-ahead log stayed in use through 50 checkpoints; the erasure\'s job tries again');
    await db.outbox.completeAlone(outboxId, clock.now(), {});
    return { kind: 'finished', removed: { ...purged, mails } };
  } catch (err) {
    await db.outbox.recordFailureAlone(outboxId, (err as Error).message, command.finalAttempt, clock.now());
    throw err;
  }
}
