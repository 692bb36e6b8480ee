import type { Client } from '../../domain/clients';
import type { UserRecord } from '../../domain/storage/records';
import type { Application } from '../../domain/storage/applications';
import { randomToken } from '../../domain/secrets';
import type { Services } from '../services';

// docs/api.md#access-endpoints: what an application's backend issues for a record with its
// client's credentials (the access_issuer, owner and direct_access kinds), each stored in its own
// unit of work. The adapter has found the record and the client it is issued for.

type Deps = Pick<Services, 'tokens' | 'work'>;

/** A disabled user gets no access token or code (none would work). */
export class RecordDisabledError extends Error {}

interface ForRecord { app: Application; client: Client; record: UserRecord; forClientId: number | null }

const enabled = (record: UserRecord) => {
  if (record.disabledAt) throw new RecordDisabledError('the user is disabled: it gets no access token or code until an operator enables it again');
};

/** /access/getAccessToken: a standalone access token for the record, for the calling client or `forClientId`. */
export function issueAccessToken(deps: Deps, command: ForRecord): Promise<string> {
  enabled(command.record);
  return deps.work.run(({ tx }) => deps.tokens.issueAccessToken(command.app, command.client, command.record.id, command.forClientId, tx));
}

/** /access/getAuthorizationCode: a code for the record, bound to `redirectUri`, handing `transactionState` back at its exchange. */
export function issueAuthorizationCode(
  deps: Deps, command: ForRecord & { redirectUri: string; transactionState?: Record<string, unknown>; seconds: number },
): Promise<string> {
  enabled(command.record);
  const { app, client, record, forClientId, redirectUri, transactionState, seconds } = command;
  return deps.work.run(({ tx }) => deps.tokens.issue({
    kind: 'authorization_code', app, entityId: record.id, client, forClientId, redirectUri,
    extra: transactionState === undefined ? null : { transaction_state: transactionState }, family: randomToken(16), seconds,
  }, tx));
}

/** /access/getCreationToken: a one-time token that lets a client without a secret create one record. */
export function issueCreationToken(deps: Deps, command: Omit<ForRecord, 'record'> & { seconds: number }): Promise<string> {
  const { app, client, forClientId, seconds } = command;
  return deps.work.run(({ tx }) => deps.tokens.issue({ kind: 'creation_token', app, entityId: null, client, forClientId, seconds }, tx));
}

/** /access/getVerificationCode: a one-time code that sets the time attribute `attribute` of the record when used. */
export function issueVerificationCode(deps: Deps, command: Omit<ForRecord, 'forClientId'> & { attribute: string; seconds: number }): Promise<string> {
  const { app, client, record, attribute, seconds } = command;
  return deps.work.run(({ tx }) => deps.tokens.issue({
    kind: 'verification_code', app, entityId: record.id, client, extra: { attribute_name: attribute }, seconds,
  }, tx));
}
