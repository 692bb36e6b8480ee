import { event, recordSubject } from '../../src/domain/events';
import type { MailRequest } from '../../src/domain/mail';
import type { SecretBox } from '../../src/domain/secrets';
import type { Storage } from '../../src/domain/storage';
import type { Application } from '../../src/domain/storage/applications';
import type { OutboxJob } from '../../src/domain/storage/outbox';
import { mail } from '../../src/usecases/subscribers/mail';

/** An event that carries `request`, as a use case records one (the system acting on record 1). */
export const mailEvent = (app: Application, request: Omit<MailRequest, 'app'>) =>
  event('account.verification_requested', app.id, new Date(), { actor: { kind: 'system' }, origin: {} }, recordSubject(1), {}, { mail: { app, ...request } });

/** The outbox row the mail subscriber makes of an email (its link sealed to the row), not yet written. */
export function mailRow(box: SecretBox, app: Application, request: Omit<MailRequest, 'app'>): OutboxJob {
  return mail(box).jobs!(mailEvent(app, request))[0];
}

/** Writes rows as a unit of work does, in one transaction, without enqueuing them (a pod that died after the commit). */
export const writeRows = (db: Storage, rows: OutboxJob[]) => db.transaction((tx) => db.outbox.insert(rows, new Date(), tx));
