import type { NewCredential } from '../domain/storage/credentials';
import type { OutboxJob } from '../domain/storage/outbox';

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

export const OUTBOX_COLUMNS = ['id', 'application_id', 'queue', 'name', 'payload', 'status', 'attempts', 'created_at', 'updated_at', 'entity_id'] as const;
export type OutboxColumn = (typeof OUTBOX_COLUMNS)[number];

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
  attempts: 0, created_at: time(now), updated_at: time(now), entity_id: j.entityId ?? null,
});

/** The column list of an INSERT into `table`: `INSERT INTO credentials (application_id, kind, …)`. */
export const insertInto = (table: string, columns: readonly string[]) => `INSERT INTO ${table} (${columns.join(', ')})`;

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
