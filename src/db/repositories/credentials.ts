import { Op } from 'sequelize';
import type { Sql } from '../sql';
import { credentialRow, CREDENTIAL_COLUMNS, EVENT_COLUMNS, insertAll, insertInto, insertRows, rotationEventRow } from '../hot-rows';
import type { CredentialKind, NewCredential, RotationEvent, StoredCredential, Successor } from '../../domain/storage/credentials';
import type { Tx } from '../../domain/storage/transactions';
import { asDate, type CredentialRow, type Models } from '../models';

const toCredential = (row: CredentialRow): StoredCredential => ({
  id: Number(row.id),
  valueHash: row.value_hash,
  applicationId: Number(row.application_id),
  kind: row.kind as CredentialKind,
  entityId: row.entity_id === null ? null : Number(row.entity_id),
  clientId: row.client_id === null ? null : Number(row.client_id),
  forClientId: row.for_client_id === null ? null : Number(row.for_client_id),
  redirectUri: row.redirect_uri,
  extra: row.extra ? JSON.parse(row.extra) : null,
  family: row.family,
  expiresAt: asDate(row.expires_at),
  usedAt: asDate(row.used_at),
  createdAt: asDate(row.created_at),
});

/** The row is live: neither spent nor expired (bind the time). The one place this rule is written, beside the procedures' sources. */
const LIVE = 'used_at IS NULL AND expires_at > ?';
/** The row belongs to a client (bind its id twice): issued for it, or by it for itself (see ownerOf). */
const OWNED_BY = '(for_client_id = ? OR (for_client_id IS NULL AND client_id = ?))';
/**
 * The credential's user (if it has one) is not disabled now, and the credential was not issued
 * while it was (bind the time): one primary-key probe (`table`: how the statement names
 * credentials). A disable whose `until` has passed is over, but what a sign-in in flight issued
 * during it stays refused (enabling spends it; an `until` passing cannot).
 */
const notDisabled = (table: string) => `NOT EXISTS (SELECT 1 FROM entities d WHERE d.id = ${table}.entity_id AND d.disabled_at IS NOT NULL
  AND (d.disabled_until IS NULL OR d.disabled_until > ? OR (${table}.created_at >= d.disabled_at AND ${table}.created_at < d.disabled_until)))`;

/**
 * The credentials' store (CredentialStore of the storage contract) in SQL. Long as a list, not as
 * logic: one short method per method of the contract, each using the LIVE, OWNED_BY and
 * notDisabled rules above, so that every "live" and "owned by" is written once, here.
 */
export function createCredentialQueries({ Credential }: Models, sql: Sql) {
  /** One multi-row INSERT in raw SQL: it is on every sign-in and token path. */
  async function insert(rows: NewCredential[], now: Date, transaction?: Tx): Promise<void> {
    if (rows.length === 0) return;
    await insertAll(sql, 'credentials', CREDENTIAL_COLUMNS, rows.map((c) => credentialRow(c, now, sql.time)), transaction);
  }

  /** One credential by one statement: inserted, or given this `extra` when its hash is stored already. */
  async function save(row: NewCredential, now: Date, transaction: Tx | undefined): Promise<void> {
    const statement = insertRows('credentials', CREDENTIAL_COLUMNS, [credentialRow(row, now, sql.time)]);
    // saved again: its new payload, and the account and grant it came to name (a device code once the person confirmed it)
    const again = sql.dialect === 'mysql'
      ? ' ON DUPLICATE KEY UPDATE extra = VALUES(extra), entity_id = COALESCE(VALUES(entity_id), entity_id), family = COALESCE(VALUES(family), family)'
      : ' ON CONFLICT (value_hash) DO UPDATE SET extra = excluded.extra, entity_id = COALESCE(excluded.entity_id, entity_id), family = COALESCE(excluded.family, family)';
    await sql.change(statement.sql + again, statement.values, transaction);
  }

  /**
   * The one way to spend a one-time credential: a conditional UPDATE that must touch exactly one
   * row. Under concurrency the database lets exactly one caller see `true`; the row lock taken
   * here is held to the end of the caller's transaction.
   */
  async function consume(
    applicationId: number,
    kind: CredentialKind,
    valueHash: string,
    now: Date,
    transaction: Tx | undefined,
    /**
     * A client id: only when it belongs to this client (issued for it, or by it for itself).
     * null: only when it was issued for no client in particular. undefined: whoever holds it.
     */
    ownerClientId?: number | null,
  ): Promise<boolean> {
    const t = sql.time;
    const [owned, owner] = ownerClientId === undefined ? ['', []] : ownerClientId === null
      ? [' AND for_client_id IS NULL', []]
      : [` AND ${OWNED_BY}`, [ownerClientId, ownerClientId]];
    return (await sql.change(
      `UPDATE credentials SET used_at = ? WHERE value_hash = ? AND application_id = ? AND kind = ? AND ${LIVE}${owned}`,
      [t(now), valueHash, applicationId, kind, t(now), ...owner],
      transaction,
    )) === 1;
  }

  return {
    insert,

    async save(row: NewCredential, now: Date, transaction: Tx): Promise<void> {
      return save(row, now, transaction);
    },
    async saveAlone(row: NewCredential, now: Date): Promise<void> {
      return save(row, now, undefined);
    },
    /** An insert that skips a row whose hash is stored (INSERT IGNORE, INSERT OR IGNORE): its count says which. */
    async insertSpentAlone(row: NewCredential, now: Date): Promise<boolean> {
      const statement = insertRows('credentials', CREDENTIAL_COLUMNS, [{ ...credentialRow(row, now, sql.time), used_at: sql.time(now) }]);
      const ignoring = statement.sql.replace(/^INSERT INTO/, sql.dialect === 'mysql' ? 'INSERT IGNORE INTO' : 'INSERT OR IGNORE INTO');
      return (await sql.change(ignoring, statement.values)) === 1;
    },

    /** The credential with this hash in this application, spent or not. */
    async find(applicationId: number, kind: CredentialKind, valueHash: string, transaction?: Tx): Promise<StoredCredential | undefined> {
      const [row] = await sql.select<CredentialRow>(
        'SELECT * FROM credentials WHERE value_hash = ? AND application_id = ? AND kind = ?', [valueHash, applicationId, kind], transaction,
      );
      return row ? toCredential(row) : undefined;
    },

    /** A credential of `kind` with this hash in this application that is neither spent nor expired. */
    async findActive(applicationId: number, kind: CredentialKind, valueHash: string, now: Date): Promise<StoredCredential | undefined> {
      // a credential of a disabled user never works, even one issued while it was being disabled
      const [row] = await sql.select<CredentialRow>(
        `SELECT c.* FROM credentials c WHERE c.value_hash = ? AND c.application_id = ? AND c.kind = ? AND ${LIVE} AND ${notDisabled('c')}`,
        [valueHash, applicationId, kind, sql.time(now), sql.time(now)],
      );
      return row ? toCredential(row) : undefined;
    },

    /** Replaces the `extra` of a live credential; false when it is spent, expired or unknown. */
    async setExtra(applicationId: number, kind: CredentialKind, valueHash: string, extra: Record<string, unknown>, now: Date, transaction: Tx): Promise<boolean> {
      return (await sql.change(
        `UPDATE credentials SET extra = ? WHERE value_hash = ? AND application_id = ? AND kind = ? AND ${LIVE}`,
        [JSON.stringify(extra), valueHash, applicationId, kind, sql.time(now)],
        transaction,
      )) === 1;
    },

    async consume(applicationId: number, kind: CredentialKind, valueHash: string, now: Date, transaction: Tx, ownerClientId?: number | null): Promise<boolean> {
      return consume(applicationId, kind, valueHash, now, transaction, ownerClientId);
    },
    /** `consume` committed on its own: one statement, no transaction around it. */
    async consumeAlone(applicationId: number, kind: CredentialKind, valueHash: string, now: Date, ownerClientId?: number | null): Promise<boolean> {
      return consume(applicationId, kind, valueHash, now, undefined, ownerClientId);
    },

    /**
     * The refresh grant's hot path: spend the old token (the conditional UPDATE of `consume`, for
     * its owner only) and insert its successor access and refresh tokens with the spent row's
     * record and family, in the caller's transaction. False when nothing was spent. (Database's
     * `credentials.rotateAlone` commits it, or has the stored procedure do it in one call.)
     */
    async rotateIn(
      applicationId: number,
      spentHash: string,
      ownerClientId: number,
      successors: { access: Successor; refresh: Successor },
      now: Date,
      event: RotationEvent,
      transaction: Tx,
    ): Promise<boolean> {
      const t = sql.time;
      const spent = await sql.change(
        `UPDATE credentials SET used_at = ? WHERE value_hash = ? AND application_id = ? AND kind = 'refresh_token'
           AND ${LIVE} AND ${OWNED_BY} AND ${notDisabled('credentials')}`,
        [t(now), spentHash, applicationId, t(now), ownerClientId, ownerClientId, t(now)],
        transaction,
      );
      if (spent !== 1) return false;
      // the successors carry the spent token's extra: the session's facts (how and when the person signed in)
      const select = `SELECT application_id, ?, ?, entity_id, ?, NULL, NULL, extra, family, ?, NULL, ? FROM credentials WHERE value_hash = ?`;
      const rows = [['access_token', successors.access], ['refresh_token', successors.refresh]] as const;
      await sql.change(
        `${insertInto('credentials', CREDENTIAL_COLUMNS)} ${rows.map(() => select).join(' UNION ALL ')}`,
        rows.flatMap(([kind, c]) => [kind, c.valueHash, ownerClientId, t(c.expiresAt), t(now), spentHash]),
        transaction,
      );
      // its event, about the spent token's record
      const row = rotationEventRow(event, t);
      const fromRecord: readonly string[] = ['account_id', 'actor_id', 'subject_id'];
      await sql.change(
        `${insertInto('events', EVENT_COLUMNS)} SELECT ${EVENT_COLUMNS.map((c) => (c === 'account_id' ? 'entity_id' : fromRecord.includes(c) ? 'CAST(entity_id AS CHAR)' : '?')).join(', ')}
         FROM credentials WHERE value_hash = ?`,
        [...EVENT_COLUMNS.filter((c) => !fromRecord.includes(c)).map((c) => row[c]), spentHash],
        transaction,
      );
      return true;
    },

    /** Spends a record's live tokens of `kinds`, except those of one family (the caller's session). */
    async revokeForRecord(applicationId: number, entityId: number, kinds: CredentialKind[], exceptFamily: string | null, now: Date, transaction?: Tx): Promise<number> {
      if (kinds.length === 0) return 0;
      const [except, family] = exceptFamily === null ? ['', []] : [' AND (family IS NULL OR family <> ?)', [exceptFamily]];
      return sql.change(
        `UPDATE credentials SET used_at = ? WHERE application_id = ? AND entity_id = ? AND kind IN (${kinds.map(() => '?').join(', ')}) AND used_at IS NULL${except}`,
        [sql.time(now), applicationId, entityId, ...kinds, ...family],
        transaction,
      );
    },

    /** A record's live credentials of `kind`. */
    async liveOfRecord(applicationId: number, entityId: number, kind: CredentialKind, now: Date, transaction?: Tx): Promise<StoredCredential[]> {
      const rows = await sql.select<CredentialRow>(
        `SELECT * FROM credentials WHERE application_id = ? AND entity_id = ? AND kind = ? AND ${LIVE}`, [applicationId, entityId, kind, sql.time(now)], transaction,
      );
      return rows.map(toCredential);
    },

    /** Holds a hash for a record until `expiresAt`: the earlier row with that hash (ended, or the record's own) goes. */
    async reserve(applicationId: number, kind: CredentialKind, valueHash: string, entityId: number, expiresAt: Date, now: Date, transaction: Tx): Promise<void> {
      await sql.change('DELETE FROM credentials WHERE value_hash = ?', [valueHash], transaction);
      await insert([{ applicationId, kind, valueHash, entityId, clientId: null, forClientId: null, redirectUri: null, extra: null, family: null, expiresAt }], now, transaction);
    },

    /**
     * Spends every live credential of a family (refresh-token reuse, code replay). Run it in a
     * READ COMMITTED transaction (see TransactionOptions): many families revoked at once
     * beside ongoing rotations must not deadlock.
     */
    async ownerOfFamily(applicationId: number, family: string, transaction?: Tx): Promise<number | null> {
      const [row] = await sql.select<{ entity_id: number | string | null }>(
        'SELECT entity_id FROM credentials WHERE family = ? AND application_id = ? AND entity_id IS NOT NULL LIMIT 1', [family, applicationId], transaction,
      );
      return row ? Number(row.entity_id) : null;
    },

    async revokeFamily(applicationId: number, family: string, now: Date, transaction: Tx): Promise<number> {
      return sql.change(
        'UPDATE credentials SET used_at = ? WHERE family = ? AND application_id = ? AND used_at IS NULL',
        [sql.time(now), family, applicationId],
        transaction,
      );
    },

    /**
     * Deletes up to `limit` rows that expired, or were spent, before `before`. Bounded batches keep
     * every delete short, so the sweep never holds locks that requests wait on. Each half reads its
     * own index (`credentials_expires`, `credentials_used`): one condition on both columns would read
     * the whole table for each batch.
     */
    async sweepAlone(before: Date, limit: number): Promise<number> {
      const expired = await Credential.findAll({ attributes: ['id'], where: { expires_at: { [Op.lt]: before } }, limit, raw: true });
      // (spent and not yet expired: what expired is the first half's, so a batch is never short by its overlap)
      const spent = expired.length < limit
        ? await Credential.findAll({ attributes: ['id'], where: { used_at: { [Op.lt]: before }, expires_at: { [Op.gte]: before } }, limit: limit - expired.length, raw: true })
        : [];
      const ids = [...expired, ...spent].map((r) => r.id);
      if (ids.length === 0) return 0;
      return Credential.destroy({ where: { id: ids } });
    },
  };
}
export type CredentialQueries = ReturnType<typeof createCredentialQueries>;
