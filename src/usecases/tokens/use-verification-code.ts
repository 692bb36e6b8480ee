import { isDisabled } from '../../domain/storage/records';
import type { Application } from '../../domain/storage/applications';
import { sha256Hex } from '../../domain/secrets';
import { event, recordSubject, type Origin } from '../../domain/events';
import { invalidField } from '../../domain/refusal';
import type { Services } from '../services';
import { markTime } from '../records/versions';

/**
 * Spends a verification code and sets its time attribute (emailVerified unless the code names
 * another); answers the record's uuid. Its holder is taken to be the person the record is (the
 * code was mailed to them). A code that is unknown, spent, expired or of a disabled user is refused
 * alike.
 */
export async function useVerificationCode(
  { db, clock, work, versions }: Pick<Services, 'db' | 'clock' | 'work' | 'versions'>, command: { app: Application; code: string; origin: Origin },
): Promise<string> {
  const { app, origin } = command;
  const now = () => clock.now();
  const hash = sha256Hex(command.code);
  const unknown = () => invalidField('verificationCode', 'the code is not recognized, was already used, or has expired');
  return work.run(async (uow) => {
    const { tx } = uow;
    if (!(await db.credentials.consume(app.id, 'verification_code', hash, now(), tx))) throw unknown();
    const found = (await db.credentials.find(app.id, 'verification_code', hash, tx))!;
    const record = found.entityId === null ? undefined : await db.records.findForUpdate(app.id, found.entityId, tx);
    // a disabled user's codes are spent when it is disabled; one issued around it does nothing either
    if (!record || isDisabled(record, now())) throw unknown();
    const attribute = String(found.extra?.attribute_name ?? 'emailVerified');
    const acting = { actor: { kind: 'account' as const, accountId: record.id }, origin };
    await markTime({ db, clock, versions }, uow, record, attribute, acting);
    if (attribute === 'emailVerified') uow.record(event('account.email_verified', app.id, now(), acting, recordSubject(record.id), {}));
    return record.uuid;
  });
}
