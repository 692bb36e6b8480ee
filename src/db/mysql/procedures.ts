import type { CredentialKind, NewCredential, RotationEvent, Successor } from '../../domain/storage/credentials';
import type { KeptEvent } from '../../domain/events';
import type { OutboxJob } from '../../domain/storage/outbox';
import type { UserRecord } from '../../domain/storage/records';
import type { Sql } from '../sql';
import { credentialRow, EVENT_COLUMNS, eventRow, outboxRow, procedureMembers, rotationEventRow } from '../hot-rows';

/**
 * The two hot writes as one CALL each on MySQL/MariaDB (DATABASE_PROCEDURES=on): the stored
 * procedures of migrations/procedures, whose versions migrations/procedures.ts names. Each runs
 * the same statements as the portable path in the repositories, in a transaction the procedure
 * commits before it answers; docs/decisions.md has what the round trips saved cost.
 */
export function createProcedureCalls(sql: Sql) {
  const t = sql.time;
  return {
    /** gh_rotate_with_event: see CredentialStore.rotateAlone. */
    async rotateAlone(
      applicationId: number, spentHash: string, ownerClientId: number, successors: { access: Successor; refresh: Successor }, now: Date, event: RotationEvent,
    ): Promise<boolean> {
      // the event's columns the procedure does not fill itself (its account, kinds, version and time are the rotation's)
      const e = rotationEventRow(event, t);
      const args = [
        applicationId, spentHash, ownerClientId, t(now), successors.access.valueHash, t(successors.access.expiresAt), successors.refresh.valueHash,
        t(successors.refresh.expiresAt), e.uid, e.type, e.client_id, e.address, e.user_agent, e.request_id, e.data,
      ];
      // a CALL that lost to a concurrent write runs again (Sql: a statement of its own is retried)
      const [rows] = await sql.select<Array<{ rotated: number }>>('CALL gh_rotate_with_event(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', args);
      return Number(rows?.[0]?.rotated) === 1;
    },

    /** gh_spend_with_event: see CredentialStore.consumeWithEventAlone. */
    async consumeWithEventAlone(applicationId: number, kind: CredentialKind, valueHash: string, now: Date, event: KeptEvent): Promise<boolean> {
      // the event's row one parameter a column, in the list's order
      const row = eventRow(event, t);
      const columns = EVENT_COLUMNS.filter((c) => c !== 'application_id');
      const [rows] = await sql.select<Array<{ spent: number }>>(`CALL gh_spend_with_event(?, ?, ?, ?, ${columns.map(() => '?').join(', ')})`, [
        applicationId, kind, valueHash, t(now), ...columns.map((c) => row[c]),
      ]);
      return Number(rows?.[0]?.spent) === 1;
    },

    /** gh_sign_in_with_events: see RecordStore.signInAlone. */
    async signInAlone(read: UserRecord, next: UserRecord, credentials: NewCredential[], jobs: OutboxJob[], happened: readonly KeptEvent[], now: Date): Promise<boolean> {
      // one JSON array of each table's rows, keyed by column, without what the procedure takes from its parameters
      const rows = JSON.stringify(credentials.map((c) => procedureMembers(credentialRow(c, now, t), ['application_id', 'entity_id', 'used_at', 'created_at'])));
      const outbox = JSON.stringify(jobs.map((j) => procedureMembers(outboxRow(j, now, t), ['application_id', 'status', 'attempts', 'created_at', 'updated_at'])));
      const events = JSON.stringify(happened.map((e) => procedureMembers(eventRow(e, t), ['application_id'])));
      const [result] = await sql.select<Array<{ signed_in: number }>>('CALL gh_sign_in_with_events(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)', [
        read.applicationId, read.id, read.version, next.passwordHash === read.passwordHash ? null : next.passwordHash, JSON.stringify(next.attributes),
        t(next.lastUpdated), t(now), rows, outbox, events,
      ]);
      return Number(result?.[0]?.signed_in) === 1;
    },
  };
}
export type ProcedureCalls = ReturnType<typeof createProcedureCalls>;
