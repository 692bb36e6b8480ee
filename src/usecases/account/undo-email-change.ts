import { SESSION_KINDS } from '../../domain/accounts';
import type { UndoExtra } from '../../domain/email-change';
import { sha256Hex } from '../../domain/secrets';
import type { Application } from '../../domain/storage/applications';
import { DuplicateAttributeError } from '../../domain/storage/records';
import type { Services } from '../services';

/**
 * An undo link's result: the old address is back (`restored`), the code is not usable (unknown,
 * spent or expired), or another account took the old address meanwhile (`taken`: nothing changed,
 * the code still works once that is resolved).
 */
export type UndoOutcome = { kind: 'restored'; email: string } | { kind: 'spent' } | { kind: 'taken' };

/**
 * docs/api.md#changing-the-email-address: the old address's answer to a change it did not make. In
 * one transaction: the undo code is spent (once, under concurrency too), the record gets its old
 * address back, verified now (the link proved it is read there), and every session, code and link
 * of the account ends, so whoever changed it is signed out and cannot finish a reset it started.
 */
export async function undoEmailChange(services: Services, app: Application, code: string): Promise<UndoOutcome> {
  const { db, outbox, versions, clock } = services;
  const hash = sha256Hex(code);
  try {
    return await outbox.commit<UndoOutcome>(async (tx) => {
      const now = clock.now();
      if (!(await db.credentials.consume(app.id, 'email_change_undo', hash, now, tx))) return { result: { kind: 'spent' }, jobs: [] };
      const row = (await db.credentials.find(app.id, 'email_change_undo', hash, tx))!;
      const extra = row.extra as unknown as UndoExtra;
      const record = row.entityId === null ? undefined : await db.records.findForUpdate(app.id, row.entityId, tx);
      if (!record || typeof extra?.previous_email !== 'string') return { result: { kind: 'spent' }, jobs: [] };
      const changed = await db.records.update(record, { email: extra.previous_email, emailVerified: now }, now, tx);
      await db.credentials.revokeForRecord(app.id, record.id, [...SESSION_KINDS, 'verification_code'], null, now, tx);
      return { result: { kind: 'restored', email: extra.previous_email }, jobs: [(await versions.written(changed, tx)).job] };
    });
  } catch (e) {
    if (!(e instanceof DuplicateAttributeError)) throw e;
    return { kind: 'taken' };
  }
}
