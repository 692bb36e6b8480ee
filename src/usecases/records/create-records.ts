import { event, recordSubject, type Acting, type EventData, type Origin } from '../../domain/events';
import type { Application } from '../../domain/storage/applications';
import type { UnitOfWork } from '../../domain/ports';
import { DuplicateAttributeError, type NewRecord, type UserRecord } from '../../domain/storage/records';
import { insertRecord } from './versions';
import type { RecordCall, RecordDeps } from './deps';
import { consumeCreationToken } from '../tokens/creation-tokens';
import { passwordMinimum, tooShortFor } from '../../domain/password-minimum';
import { invalidField } from '../../domain/refusal';
import { refuseClosedRegistration } from '../../domain/registration';
import { OPERATOR_ROLE_ATTRIBUTE } from '../../domain/operators';
import type { ImportedHash } from '../../domain/imported-hashes';

/**
 * A new record as the API sends it: its row, and its password in clear (hashed here) or a hash
 * from another system (kept as it is, verified and replaced at its first sign-in), if any.
 */
export interface NewRecordInput { entity: Omit<NewRecord, 'passwordHash'>; password?: string; hashed?: ImportedHash }

/** Creating many records failed at `index` (a taken email, username or uuid): nothing was created. */
export class BulkItemError extends Error {
  constructor(readonly index: number, readonly duplicate: DuplicateAttributeError) {
    super(duplicate.message);
  }
}

/** Refuses a password shorter than the application's minimum (never below 8): no path stores one. */
export function assertLongEnough(app: Application, password: string | undefined, field: string): void {
  const why = password === undefined ? undefined : tooShortFor(password, passwordMinimum(app.settings));
  if (why) throw invalidField(field, why);
}

/**
 * A record made through the API, an import or by an operator: inserted with its first version,
 * then `account.registered` (method `api`). `acting` may name the record itself.
 */
export async function insertRegistered(
  deps: Pick<RecordDeps, 'clock' | 'db' | 'versions'>, uow: UnitOfWork, record: NewRecord, acting: Acting | ((created: UserRecord) => Acting), inImport = false,
): Promise<UserRecord> {
  const { written, acting: who } = await insertRecord(deps, uow, record, acting, { inImport });
  const created = written.record;
  uow.record(event('account.registered', created.applicationId, created.created, who, recordSubject(created.id), { method: 'api' }, inImport ? { inImport: true } : undefined));
  return created;
}

/** The password hash formats of records an import brings, counted (imported hashes by their format, passwords in clear as argon2id). */
export function formatsOf(records: readonly NewRecordInput[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of records) {
    const format = r.hashed?.format ?? (r.password === undefined ? 'none' : 'argon2id');
    counts[format] = (counts[format] ?? 0) + 1;
  }
  return counts;
}

/** What an import did, as one event (its audit entry): records made, lines refused, weak hashes, the formats of the hashes it kept. */
export function recordImported(uow: UnitOfWork, acting: Acting, applicationId: number, at: Date, done: EventData['records.imported']): void {
  uow.record(event('records.imported', applicationId, at, acting, { kind: 'application', id: String(applicationId) }, done));
}

/**
 * /entity.create: one record, with its first snapshot. An owner `client` creates it for the
 * application; with a `creationToken` (a mobile app without a secret, `client` naming it when it
 * sent its client_id) the token is spent in the same transaction and the person registering is the
 * actor. A taken email, username or uuid raises DuplicateAttributeError.
 */
export async function createRecord(
  deps: Pick<RecordDeps, 'clock' | 'db' | 'passwords' | 'versions' | 'work'>,
  command: {
    app: Application; origin: Origin; client?: { id: number; clientId: string }; creationToken?: string; record: NewRecordInput;
    /** An operator creating it (`gatehouse users:create`), instead of a client or a token. */
    operator?: Acting;
  },
): Promise<UserRecord> {
  const { record, client, creationToken } = command;
  if (creationToken !== undefined) {
    // the person registering with a token an app was given: a registration like any other, where the application takes them,
    // and never an operator's role
    refuseClosedRegistration(command.app);
    if (record.entity.attributes[OPERATOR_ROLE_ATTRIBUTE] !== undefined) {
      throw invalidField(`attributes.${OPERATOR_ROLE_ATTRIBUTE}`, 'is an operator\'s role in the console, given by an operator (gatehouse operators:role), never with a creation token');
    }
  }
  assertLongEnough(command.app, record.password, 'attributes.password');
  const passwordHash = record.hashed?.stored ?? (record.password === undefined ? null : await deps.passwords.hash(record.password));
  return deps.work.run(async (uow) => {
    if (creationToken !== undefined) await consumeCreationToken(deps, uow.tx, { app: command.app, token: creationToken, clientId: client?.id ?? null });
    else if (!client && !command.operator) throw new Error('a record is created by an owner client, an operator or with a creation token');
    return insertRegistered(deps, uow, { ...record.entity, passwordHash }, (created): Acting => (creationToken !== undefined
      ? { actor: { kind: 'account', accountId: created.id, ...(client && { clientId: client.clientId }) }, origin: command.origin }
      : command.operator ?? { actor: { kind: 'client', clientId: client!.clientId }, origin: command.origin }));
  });
}

/**
 * /entity.bulkCreate: up to 1,000 records in one transaction, all or none. Passwords are hashed in
 * the background lane first (at most half the argon2 threads). A taken attribute raises BulkItemError
 * naming the item.
 */
export async function createRecords(deps: Pick<RecordDeps, 'clock' | 'db' | 'passwords' | 'versions' | 'work'>, command: RecordCall & { records: readonly NewRecordInput[] }): Promise<UserRecord[]> {
  for (const [n, r] of command.records.entries()) assertLongEnough(command.app, r.password, `all_attributes[${n}].password`);
  const hashes = await passwordHashes(deps, command.records);
  return deps.work.run(async (uow) => {
    const made = await insertRecords(deps, uow, command.acting, command.records, hashes, true);
    // one audit entry for the call, not two for each record it made
    recordImported(uow, command.acting, command.app.id, deps.clock.now(), {
      created: made.length, refused: 0, weak: command.records.filter((r) => r.hashed?.weak).length, formats: formatsOf(command.records),
    });
    return made;
  });
}

/** The password hash of each record: an imported one kept as it is, a password hashed in the background lane, or none. */
export const passwordHashes = (deps: Pick<RecordDeps, 'passwords'>, records: readonly NewRecordInput[]): Promise<(string | null)[]> =>
  Promise.all(records.map((r) => r.hashed?.stored ?? (r.password === undefined ? null : deps.passwords.hashInBackground(r.password))));

/** Inserts records in `uow` with their events and first snapshots; a taken attribute raises BulkItemError naming the item. */
export async function insertRecords(
  deps: Pick<RecordDeps, 'clock' | 'db' | 'versions'>, uow: UnitOfWork, acting: Acting, records: readonly NewRecordInput[], hashes: readonly (string | null)[], inImport = false,
): Promise<UserRecord[]> {
  const out: UserRecord[] = [];
  for (const [n, item] of records.entries()) {
    try {
      out.push(await insertRegistered(deps, uow, { ...item.entity, passwordHash: hashes[n] }, acting, inImport));
    } catch (e) {
      throw e instanceof DuplicateAttributeError ? new BulkItemError(n, e) : e;
    }
  }
  return out;
}
