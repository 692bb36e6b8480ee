import type { Client } from '../../domain/clients';
import { isDisabled, type UserRecord } from '../../domain/storage/records';
import type { Application } from '../../domain/storage/applications';
import { randomToken } from '../../domain/secrets';
import { event, recordSubject, type Acting, type EventData } from '../../domain/events';
import type { Tx } from '../../domain/storage';
import type { Services } from '../services';

// docs/api.md#access-endpoints: what an application's backend issues for a record with its
// client's credentials (the access_issuer, owner and direct_access kinds), each stored in its own
// unit of work with an `access.issued` event (the audit log keeps who minted what for whom, never
// the value). The adapter has found the record and the client it is issued for.

type Deps = Pick<Services, 'tokens' | 'work' | 'clock'>;

/** A disabled user gets no access token or code (none would work). */
export class RecordDisabledError extends Error {}

interface ForRecord { app: Application; client: Client; record: UserRecord; forClientId: number | null; acting: Acting }

/** Refuses a disabled user (RecordDisabledError): adapters may check it first, to refuse it before anything else. */
export const assertEnabled = (record: UserRecord, now: Date) => {
  if (isDisabled(record, now)) throw new RecordDisabledError('the user is disabled: it gets no access token or code until an operator enables it again');
};

/** Issues in a unit of work with its event: what was issued, for which record (none for a creation token). */
const issuing = (deps: Pick<Deps, 'clock' | 'work'>, command: { app: Application; acting: Acting }, entityId: number | null, data: EventData['access.issued'], issue: (tx: Tx) => Promise<string>) =>
  deps.work.run(async (uow) => {
    const value = await issue(uow.tx);
    const subject = entityId === null ? { kind: 'application' as const, id: command.app.name } : recordSubject(entityId);
    uow.record(event('access.issued', command.app.id, deps.clock.now(), command.acting, subject, data));
    return value;
  });

/** /access/getAccessToken: a standalone access token for the record, for the calling client or `forClientId`. */
export function issueAccessToken(deps: Deps, command: ForRecord): Promise<string> {
  assertEnabled(command.record, deps.clock.now());
  return issuing(deps, command, command.record.id, { kind: 'access_token' },
    (tx) => deps.tokens.issueAccessToken(command.app, command.client, command.record.id, command.forClientId, tx));
}

/** /access/getAuthorizationCode: a code for the record, bound to `redirectUri`, handing `transactionState` back at its exchange. */
export function issueAuthorizationCode(
  deps: Deps, command: ForRecord & { redirectUri: string; transactionState?: Record<string, unknown>; seconds: number },
): Promise<string> {
  assertEnabled(command.record, deps.clock.now());
  const { app, client, record, forClientId, redirectUri, transactionState, seconds } = command;
  return issuing(deps, command, record.id, { kind: 'authorization_code' }, (tx) => deps.tokens.issue({
    kind: 'authorization_code', app, entityId: record.id, client, forClientId, redirectUri,
    extra: transactionState === undefined ? null : { transaction_state: transactionState }, family: randomToken(16), seconds,
  }, tx));
}

/** /access/getCreationToken: a one-time token that lets a client without a secret create one record. */
export function issueCreationToken(deps: Deps, command: Omit<ForRecord, 'record'> & { seconds: number }): Promise<string> {
  const { app, client, forClientId, seconds } = command;
  return issuing(deps, command, null, { kind: 'creation_token' }, (tx) => deps.tokens.issue({ kind: 'creation_token', app, entityId: null, client, forClientId, seconds }, tx));
}

/** /access/getVerificationCode: a one-time code that sets the time attribute `attribute` of the record when used. */
export function issueVerificationCode(deps: Deps, command: Omit<ForRecord, 'forClientId'> & { attribute: string; seconds: number }): Promise<string> {
  const { app, client, record, attribute, seconds } = command;
  return issuing(deps, command, record.id, { kind: 'verification_code', attribute }, (tx) => deps.tokens.issue({
    kind: 'verification_code', app, entityId: record.id, client, extra: { attribute_name: attribute }, seconds,
  }, tx));
}
