import { invalidField } from '../../domain/refusal';
import type { Application } from '../../domain/storage/applications';
import type { StoredCredential } from '../../domain/storage/credentials';
import type { Tx } from '../../domain/storage';
import { sha256Hex } from '../../domain/secrets';
import { event, recordSubject, type Origin } from '../../domain/events';
import type { TokenDeps } from '../../domain/tokens';

/** One-time codes their holder spends for a change: verification codes, creation tokens. */
export function createCodeSpending({ db, clock, work, versions }: TokenDeps) {
  const now = () => clock.now();
  return {
    /**
     * Spends a verification code and sets its time attribute; answers the record's uuid. Its holder
     * is taken to be the person the record is (the code was mailed to them).
     */
    async useVerificationCode(app: Application, code: string, origin: Origin): Promise<string> {
      const hash = sha256Hex(code);
      const unknown = () => invalidField('verificationCode', 'the code is not recognized, was already used, or has expired');
      return work.run(async (uow) => {
        const { tx } = uow;
        if (!(await db.credentials.consume(app.id, 'verification_code', hash, now(), tx))) throw unknown();
        const found = (await db.credentials.find(app.id, 'verification_code', hash, tx))!;
        const record = found.entityId === null ? undefined : await db.records.findForUpdate(app.id, found.entityId, tx);
        // a disabled user's codes are spent when it is disabled; one issued around it does nothing either
        if (!record || record.disabledAt) throw unknown();
        const attribute = String(found.extra?.attribute_name ?? 'emailVerified');
        const changed = await db.records.setTime(record, attribute, now(), tx);
        const acting = { actor: { kind: 'account' as const, accountId: record.id }, origin };
        const { snapshot } = await versions.written(changed, tx);
        uow.record(event('record.updated', app.id, now(), acting, recordSubject(record.id), { attributes: [attribute] }, { snapshot }));
        if (attribute === 'emailVerified') uow.record(event('account.email_verified', app.id, now(), acting, recordSubject(record.id), {}));
        return record.uuid;
      });
    },

    /**
     * Spends a creation token. With a calling client: one issued for it (or by it for itself), or
     * for no client in particular. Without one (`null`): only a token issued for no client.
     */
    async consumeCreationToken(app: Application, token: string, clientId: number | null, tx: Tx): Promise<StoredCredential> {
      const hash = sha256Hex(token);
      const usable = (owner: number | null) => db.credentials.consume(app.id, 'creation_token', hash, now(), tx, owner);
      // a calling client may also spend a token bound to no client
      if (!(await usable(clientId)) && (clientId === null || !(await usable(null)))) {
        throw invalidField('creationToken', 'the creation token is invalid, expired, already used, or was issued for another client');
      }
      return (await db.credentials.find(app.id, 'creation_token', hash, tx))!;
    },
  };
}

