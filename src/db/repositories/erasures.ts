import type { Sql } from '../sql';
import type { ErasureCounts, ErasureNeedles, ErasureStore } from '../../domain/storage/erasures';
import type { Transact, Tx } from '../../domain/storage/transactions';
import { asDate } from '../models';

/**
 * A LIKE pattern for a JSON member named `name` holding exactly `value` as stored (`"to":"ann@x.com"`):
 * the member's name and the value's quotes are part of it, so erasing `ann@x.com` never touches
 * `joann@x.com`, and a value such as `email` never matches a member's name. JSON.stringify writes
 * the member as the stores wrote it (no space after the colon).
 */
const escapeLike = (text: string) => text.replace(/[\\%_]/g, (c) => `\\${c}`);
const memberPattern = (name: string, value: string) => `%${escapeLike(`${JSON.stringify(name)}:${JSON.stringify(value)}`)}%`;

/** The erasures' store (ErasureStore of the storage contract) in SQL. */
export function createErasureQueries(sql: Sql, transaction: Transact): ErasureStore {
  const t = sql.time;
  const escape = sql.dialect === 'sqlite' ? " ESCAPE '\\'" : '';
  /** `column` holds one of the members (name and value) given, or nothing when none are given. */
  const holdsAny = (column: string, members: Array<[string, string]>) => ({
    clause: members.length === 0 ? '0 = 1' : `(${members.map(() => `${column} LIKE ?${escape}`).join(' OR ')})`,
    values: members.map(([name, value]) => memberPattern(name, value)),
  });
  /**
   * Deletes the rows of `table` a SELECT finds, by their primary key: the SELECT is a plain read
   * (no lock on every row it scans, as a DELETE with these conditions would take on MySQL), and
   * the DELETE locks only the rows it removes.
   */
  async function deleteFound(table: string, where: string, values: unknown[], tx: Tx): Promise<number> {
    const found = await sql.select<{ id: string | number }>(`SELECT id FROM ${table} WHERE ${where}`, values, tx);
    let deleted = 0;
    for (let i = 0; i < found.length; i += 500) {
      const ids = found.slice(i, i + 500).map((r) => r.id);
      deleted += await sql.change(`DELETE FROM ${table} WHERE id IN (${ids.map(() => '?').join(', ')})`, ids, tx);
    }
    return deleted;
  }

  async function purge(applicationId: number, entityId: number, needles: ErasureNeedles, keep: string, tx: Tx): Promise<ErasureCounts> {
    const id = entityId;
    // the outbox first: a snapshot row a versions worker holds is waited for, then its snapshot is deleted below.
    // Its rows: the record's snapshots, the jobs of its events, and emails to its addresses queued before the events were kept
    const mail = holdsAny('payload', needles.emails.flatMap((e) => [['to', e], ['newEmail', e]] as Array<[string, string]>));
    // (but the webhooks row of the erasure itself: it tells the apps, which knew the account by its uuid, to erase it too;
    // and the logout tokens its end of sessions owes the apps, sent as they are: docs/openid-connect.md#back-channel-logout)
    const erasedEvents = `SELECT uid FROM events WHERE application_id = ? AND account_id = ? AND type = 'account.erased'`;
    const outboxRows = await deleteFound('outbox', `application_id = ? AND id <> ? AND (entity_id = ?
         OR event_id IN (SELECT uid FROM events WHERE application_id = ? AND account_id = ?)
         OR (queue = 'mail' AND ${mail.clause}))
         AND NOT (queue = 'webhooks' AND (event_id IN (${erasedEvents}) OR name = 'backchannel-logout'))`, [applicationId, keep, id, applicationId, id, ...mail.values, applicationId, id], tx);
    // its webhook deliveries (each names its uuid) but the one that says it was erased: what was not sent yet, the erasure supersedes
    const webhookDeliveries = await deleteFound('webhook_deliveries', "application_id = ? AND account_id = ? AND type <> 'user.erased'", [applicationId, id], tx);
    // the logout tokens sent to its apps (each names its uuid); those still being sent are kept until they are, then forget it
    const logoutDeliveries = await deleteFound('logout_deliveries', "application_id = ? AND account_id = ? AND state <> 'pending'", [applicationId, id], tx);
    const snapshots = await sql.change('DELETE FROM entity_versions WHERE application_id = ? AND entity_id = ?', [applicationId, id], tx);
    const events = await sql.change(
      `UPDATE events SET data = '{}', address = NULL, user_agent = NULL
       WHERE application_id = ? AND account_id = ? AND type <> 'account.erased' AND (data <> '{}' OR address IS NOT NULL OR user_agent IS NOT NULL)`,
      [applicationId, id], tx,
    );
    const failures = await sql.change('DELETE FROM sign_in_failures WHERE application_id = ? AND account_id = ?', [applicationId, id], tx);
    const auditEntries = await sql.change(
      `UPDATE audit_log SET data = '{}', address = NULL
       WHERE application_id = ? AND event_type <> 'account.erased' AND (data <> '{}' OR address IS NOT NULL)
         AND ((subject_kind = 'record' AND subject_id = ?) OR (actor_kind = 'account' AND actor_id = ?))`,
      [applicationId, String(id), String(id)], tx,
    );
    // the OpenID provider's state of the account: its rows, and those naming it (an interaction's result) by its uuid
    const state = holdsAny('payload', needles.uuids.map((u) => ['accountId', u] as [string, string]));
    const oidcState = await deleteFound('oidc_state', `application_id = ? AND (entity_id = ? OR ${state.clause})`, [applicationId, id, ...state.values], tx);
    // its credentials, and social sign-ins in flight that carry one of its identities or addresses
    const social = holdsAny('extra', [
      ...needles.identifiers.map((i) => ['identifier', i] as [string, string]),
      ...needles.emails.flatMap((e) => [['email', e], ['verifiedEmail', e]] as Array<[string, string]>),
    ]);
    const credentials = await deleteFound('credentials', `application_id = ? AND (entity_id = ?
         OR (entity_id IS NULL AND kind IN ('social_token', 'social_state') AND ${social.clause}))`, [applicationId, id, ...social.values], tx);
    // what the record's row takes with it (its foreign keys cascade), for a purge that runs again
    for (const table of ['profiles', 'second_factors', 'passkeys', 'account_roles']) {
      await sql.change(`DELETE FROM ${table} WHERE application_id = ? AND entity_id = ?`, [applicationId, id], tx);
    }
    // (its claim names no application: the record's id is the application's own)
    await sql.change('DELETE FROM account_claims WHERE entity_id = ?', [id], tx);
    // its memberships (their roles go with them), the invitations to its addresses or that it accepted; one it sent keeps no link to it
    const memberships = await deleteFound('organization_members', 'application_id = ? AND entity_id = ?', [applicationId, id], tx);
    // what its organizations' directories wrote of it (SCIM: its names, addresses, groups)
    const provisioned = await deleteFound('scim_users', 'application_id = ? AND entity_id = ?', [applicationId, id], tx);
    const addresses = needles.emails.map((e) => e.trim().normalize('NFC').toLowerCase());
    const invitations = await deleteFound('organization_invitations', `application_id = ? AND (accepted_by = ?${addresses.length > 0 ? ` OR email IN (${addresses.map(() => '?').join(', ')})` : ''})`,
      [applicationId, id, ...addresses], tx);
    await sql.change("UPDATE organization_invitations SET inviter_entity_id = NULL, inviter = 'account:erased' WHERE application_id = ? AND inviter_entity_id = ?", [applicationId, id], tx);
    return { snapshots, outboxRows, events, failures, auditEntries, oidcState, credentials, webhookDeliveries, logoutDeliveries, organizationRows: memberships + invitations + provisioned };
  }

  return {
    async markErased(applicationId, entityId, at, uuidDigest, tx) {
      // two erasures of one deleted record at once (no record row to lock): the second finds the tombstone
      const inserted = await sql.change(
        `INSERT INTO erasures (application_id, entity_id, erased_at, uuid_digest) VALUES (?, ?, ?, ?)${sql.dialect === 'mysql' ? ' ON DUPLICATE KEY UPDATE id = id' : ' ON CONFLICT DO NOTHING'}`,
        [applicationId, entityId, t(at), uuidDigest], tx,
      );
      return inserted === 1;
    },

    async erasedByUuid(applicationId, uuidDigest) {
      const [row] = await sql.select<{ entity_id: number | string }>('SELECT entity_id FROM erasures WHERE application_id = ? AND uuid_digest = ?', [applicationId, uuidDigest]);
      return row ? Number(row.entity_id) : undefined;
    },

    async scrubFilesAlone() {
      if (sql.dialect !== 'sqlite') return true;
      // [busy, log frames, frames checkpointed]: busy when a reader held the log and it could not be reset
      const [row] = await sql.select<{ busy: number }>('PRAGMA wal_checkpoint(TRUNCATE)', []);
      return Number(row?.busy ?? 0) === 0;
    },

    async erasedAt(applicationId, entityId) {
      const [row] = await sql.select<{ erased_at: Date | string }>('SELECT erased_at FROM erasures WHERE application_id = ? AND entity_id = ?', [applicationId, entityId]);
      return row ? asDate(row.erased_at) : undefined;
    },

    async namesInHistory(applicationId, entityId, tx): Promise<ErasureNeedles> {
      const rows = await sql.select<{ doc: string | null; uuid: string | null }>(
        `SELECT snapshot AS doc, entity_uuid AS uuid FROM entity_versions WHERE application_id = ? AND entity_id = ?
         UNION ALL SELECT payload AS doc, NULL AS uuid FROM outbox WHERE application_id = ? AND entity_id = ? AND queue = 'versions' AND payload <> '{}'`,
        [applicationId, entityId, applicationId, entityId], tx,
      );
      const found = { emails: new Set<string>(), uuids: new Set<string>(), identifiers: new Set<string>() };
      const keep = (into: Set<string>, v: unknown) => typeof v === 'string' && v !== '' && into.add(v);
      for (const { doc, uuid } of rows) {
        keep(found.uuids, uuid);
        const parsed = doc ? JSON.parse(doc) as Record<string, unknown> | null : null;
        // a pending row is a payload (its uuid beside the snapshot), a recorded one the snapshot itself (a tombstone's is null)
        const record = (parsed && 'validFrom' in parsed ? parsed.snapshot : parsed) as Record<string, unknown> | null;
        if (parsed && 'validFrom' in parsed) keep(found.uuids, parsed.uuid);
        keep(found.uuids, record?.uuid);
        keep(found.emails, record?.email);
        if (Array.isArray(record?.profiles)) for (const p of record.profiles as Array<Record<string, unknown> | null>) keep(found.identifiers, p?.identifier);
      }
      return { emails: [...found.emails], uuids: [...found.uuids], identifiers: [...found.identifiers] };
    },

    purge,
    purgeAlone: (applicationId, entityId, needles, keep) => transaction((tx) => purge(applicationId, entityId, needles, keep, tx)),
  };
}
