import type { NewCredential, RotationEvent } from '../domain/storage/credentials';
import type { OutboxJob } from '../domain/storage/outbox';
import { accountOf, clientOf, keptUserAgent, type KeptEvent } from '../domain/events';
import { actorId } from '../domain/storage/audit';
import type { Tx } from '../domain/storage/transactions';
import type { Sql } from './sql';

/**
 * The rows of the two hot writes (a sign-in, a refresh-token rotation), written once: the columns
 * of a new credential and of a new outbox row, and each row's values by column. The portable
 * statements insert them as they are (repositories/credentials.ts, repositories/outbox.ts); a CALL
 * hands them to the stored procedures as JSON objects keyed by the same column names
 * (mysql/procedures.ts); test/unit/hot-rows.test.ts checks that the procedures the code calls insert
 * exactly these columns and read only these members.
 */
export const CREDENTIAL_COLUMNS = [
  'application_id', 'kind', 'value_hash', 'entity_id', 'client_id', 'for_client_id', 'redirect_uri', 'extra', 'family', 'expires_at', 'used_at', 'created_at',
] as const;
export type CredentialColumn = (typeof CREDENTIAL_COLUMNS)[number];

export const OUTBOX_COLUMNS = ['id', 'application_id', 'queue', 'name', 'payload', 'status', 'attempts', 'created_at', 'updated_at', 'entity_id', 'event_id'] as const;
export type OutboxColumn = (typeof OUTBOX_COLUMNS)[number];

export const EVENT_COLUMNS = [
  'application_id', 'uid', 'type', 'version', 'account_id', 'actor_kind', 'actor_id', 'client_id', 'subject_kind', 'subject_id',
  'address', 'user_agent', 'request_id', 'occurred_at', 'data',
] as const;
export type EventColumn = (typeof EVENT_COLUMNS)[number];

/** How an engine's statements write a time. */
type Time = (date: Date) => string;

/** A new credential's row: not spent, created `now`. */
export const credentialRow = (c: NewCredential, now: Date, time: Time): Record<CredentialColumn, unknown> => ({
  application_id: c.applicationId, kind: c.kind, value_hash: c.valueHash, entity_id: c.entityId, client_id: c.clientId,
  for_client_id: c.forClientId, redirect_uri: c.redirectUri, extra: c.extra ? JSON.stringify(c.extra) : null, family: c.family,
  expires_at: time(c.expiresAt), used_at: null, created_at: time(now),
});

/** A new outbox row: pending, not tried yet, written `now`. */
export const outboxRow = (j: OutboxJob, now: Date, time: Time): Record<OutboxColumn, unknown> => ({
  id: j.id, application_id: j.applicationId, queue: j.queue, name: j.name, payload: JSON.stringify(j.payload), status: 'pending',
  attempts: 0, created_at: time(now), updated_at: time(now), entity_id: j.entityId ?? null, event_id: j.eventId ?? null,
});

/** An event's row in the event store (its id is the store's: the order it was written in). */
export const eventRow = (e: KeptEvent, time: Time): Record<EventColumn, unknown> => ({
  application_id: e.applicationId, uid: e.eventId, type: e.type, version: e.version, account_id: accountOf(e) ?? null, actor_kind: e.actor.kind,
  actor_id: actorId(e.actor), client_id: clientOf(e)?.slice(0, 255) ?? null, subject_kind: e.subject.kind, subject_id: e.subject.id.slice(0, 255),
  address: e.origin.address?.slice(0, 64) ?? null, user_agent: keptUserAgent(e.origin.userAgent) ?? null, request_id: e.origin.requestId?.slice(0, 64) ?? null,
  occurred_at: time(e.occurredAt), data: JSON.stringify(e.data),
});

/**
 * A rotation's event as its row, before the rotation found the spent token's record: account_id,
 * actor_id and subject_id are that record's, which the rotation's statements fill in (null here).
 */
export const rotationEventRow = (e: RotationEvent, time: Time): Record<EventColumn, unknown> => ({
  ...eventRow({ ...e, actor: { kind: 'account', accountId: 0, clientId: e.clientId }, subject: { kind: 'record', id: '' } }, time),
  account_id: null, actor_id: null, subject_id: null,
});

/** The column list of an INSERT into `table`: `INSERT INTO credentials (application_id, kind, …)`. */
export const insertInto = (table: string, columns: readonly string[]) => `INSERT INTO ${table} (${columns.join(', ')})`;

/**
 * Rows per INSERT: SQLite's driver binds parameters by name, looking each one up among all of the
 * statement's, so a statement of thousands of parameters costs their square (an import's batch of
 * a thousand records' events took seconds); MySQL takes larger statements at no such cost.
 */
const ROWS_PER_STATEMENT = { sqlite: 64, mysql: 500 } as const;

/** Inserts `rows` in as few statements as the dialect takes well (one for the few rows of a request). */
export async function insertAll<C extends string>(sql: Sql, table: string, columns: readonly C[], rows: Record<C, unknown>[], tx?: Tx): Promise<void> {
  const per = ROWS_PER_STATEMENT[sql.dialect];
  for (let i = 0; i < rows.length; i += per) {
    const statement = insertRows(table, columns, rows.slice(i, i + per));
    await sql.change(statement.sql, statement.values, tx);
  }
}

/** One multi-row INSERT of `rows` into `table`, every value bound, in the columns' order. */
export function insertRows<C extends string>(table: string, columns: readonly C[], rows: Record<C, unknown>[]): { sql: string; values: unknown[] } {
  const tuple = `(${columns.map(() => '?').join(', ')})`;
  return { sql: `${insertInto(table, columns)} VALUES ${rows.map(() => tuple).join(', ')}`, values: rows.flatMap((r) => columns.map((c) => r[c])) };
}

/**
 * `row` as a procedure reads it from its JSON array: the members it does not take from its own
 * parameters, without the NULL ones (a missing member reads as NULL on MySQL and MariaDB alike).
 */
export const procedureMembers = <R extends Record<string, unknown>>(row: R, fromParameters: readonly (keyof R & string)[]): Partial<R> =>
  Object.fromEntries(Object.entries(row).filter(([column, v]) => v !== null && !fromParameters.includes(column))) as Partial<R>;
