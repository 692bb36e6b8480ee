import { PASSWORD_FORMATS } from '../../domain/imported-hashes';
import type { Filter } from '../../domain/filter';
import { compileFilter, compileSort } from '../entity-filter';
import { DuplicateKeyError, type Sql } from '../sql';
import { reservationHash } from '../../domain/email-change';
import type { Tx } from '../../domain/storage/transactions';
import { toProfile } from './social';
import {
  DuplicateAttributeError, merged, nextState, normalized, StaleRecordError, uniqueKey,
  type Disabled, type RecordKey, type UserRecord, type NewRecord, type RecordChange,
} from '../../domain/storage/records';
import { formatTimestamp } from '../../domain/timestamps';
import { asDate, type EntityRow, type Models } from '../models';
import { createIndexedValues, type IndexedValues } from './attribute-indexes';

/** A stored row as a record. */
export const toRecord = (row: EntityRow): UserRecord => ({
  id: Number(row.id),
  applicationId: Number(row.application_id),
  typeName: row.type_name,
  uuid: row.uuid,
  email: row.email,
  username: row.username,
  passwordHash: row.password_hash,
  emailVerified: asDate(row.email_verified),
  attributes: JSON.parse(row.attributes),
  created: asDate(row.created),
  lastUpdated: asDate(row.last_updated),
  version: Number(row.version),
  disabled: row.disabled_at
    ? { at: asDate(row.disabled_at), until: row.disabled_until ? asDate(row.disabled_until) : null, reason: row.disabled_reason ?? null }
    : null,
});

/** The indexed column and value a key looks up. */
function keyColumn(key: RecordKey): [string, string | number] {
  if ('uuid' in key) return ['uuid', key.uuid];
  if ('id' in key) return ['id', key.id];
  if ('email' in key) return ['email_key', uniqueKey(key.email)!];
  return ['username_key', uniqueKey(key.username)!];
}

/** Which unique attribute a refused row collided on, from the index named in the error. */
function duplicateFrom({ message }: DuplicateKeyError): DuplicateAttributeError {
  return new DuplicateAttributeError(/email/.test(message) ? 'email' : /username/.test(message) ? 'username' : 'uuid');
}

/** The columns a write of a record sets, from its whole next state. */
const columns = (next: UserRecord, t: (d: Date) => string): [string, unknown][] => [
  ['email', next.email], ['email_key', uniqueKey(next.email)], ['username', next.username], ['username_key', uniqueKey(next.username)],
  ['password_hash', next.passwordHash], ['email_verified', next.emailVerified && t(next.emailVerified)], ['attributes', JSON.stringify(next.attributes)],
  ['last_updated', t(next.lastUpdated)], ['version', next.version],
];

/**
 * The records' store (RecordStore of the storage contract) in SQL, MySQL/MariaDB and SQLite alike.
 * Long as a list, not as logic: one short method per method of the contract, sharing the
 * closure's SQL helpers; splitting it would scatter one aggregate's queries over several files.
 */
export function createRecordQueries(_models: Models, sql: Sql, indexed: IndexedValues = createIndexedValues(sql)) {
  const compiled = (tree: Filter | undefined, ready: ReadonlyMap<string, number> = new Map()) => (tree === undefined ? { where: '1 = 1', values: [] } : compileFilter(tree, sql.dialect, ready));
  /** The application's indexed attributes a search may use (built: docs/entity-filters.md#indexed-attributes), by name. */
  const readyIndexes = async (applicationId: number) => new Map((await indexed.definitions(applicationId)).filter((d) => d.state === 'ready').map((d) => [d.name, d.id]));
  /**
   * An address another record may take back (a live reservation, email-change.ts) is taken like one
   * another record holds: DuplicateAttributeError, before any write.
   */
  async function refuseReserved(applicationId: number, email: string | null, ownId: number | null, now: Date, transaction?: Tx): Promise<void> {
    if (email === null) return;
    const held = await sql.select<{ entity_id: number }>(
      `SELECT entity_id FROM credentials WHERE value_hash = ? AND application_id = ? AND kind = 'email_reservation' AND used_at IS NULL AND expires_at > ?
         AND entity_id <> ?`,
      [reservationHash(applicationId, email), applicationId, sql.time(now), ownId ?? 0],
      transaction,
    );
    if (held.length > 0) throw new DuplicateAttributeError('email');
  }

  /**
   * Writes the next state of a record that `locked` holds locked in this transaction
   * (findForUpdate), as nextState computes it. Answers the record as it commits. The version in
   * the WHERE clause turns a write from a state read without the lock into StaleRecordError
   * instead of a lost update (the sign-in relies on it to skip the locking read when nothing
   * changed meanwhile).
   */
  async function write(locked: UserRecord, change: RecordChange, now: Date, transaction: Tx): Promise<UserRecord> {
    const next = nextState(locked, change, now);
    if (uniqueKey(next.email) !== uniqueKey(locked.email)) await refuseReserved(locked.applicationId, next.email, locked.id, now, transaction);
    const set = columns(next, sql.time);
    let changed: number;
    try {
      // raw SQL: a sign-in writes lastLogin here every time
      changed = await sql.change(
        `UPDATE entities SET ${set.map(([column]) => `${column} = ?`).join(', ')} WHERE id = ? AND application_id = ? AND version = ?`,
        [...set.map(([, v]) => v), locked.id, locked.applicationId, locked.version],
        transaction,
      );
    } catch (err) {
      throw err instanceof DuplicateKeyError ? duplicateFrom(err) : err;
    }
    if (changed !== 1) throw new StaleRecordError(`record ${locked.id} changed (or was deleted) after it was read: lock it first (findForUpdate)`);
    await indexed.keep(locked.applicationId, locked.id, locked.attributes, next.attributes, transaction);
    return next;
  }

  return {
    /** Inserts a record; a taken email, username or uuid raises DuplicateAttributeError. */
    async insert(e: NewRecord, now: Date, transaction?: Tx): Promise<UserRecord> {
      const t = sql.time;
      await refuseReserved(e.applicationId, e.email, null, now, transaction);
      try {
        // raw SQL: on every registration
        const id = await sql.insert(
          `INSERT INTO entities (application_id, type_name, uuid, email, email_key, username, username_key, password_hash, email_verified, attributes, created, last_updated, version)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 1)`,
          [
            e.applicationId, e.typeName, e.uuid, normalized(e.email), uniqueKey(e.email), normalized(e.username), uniqueKey(e.username), e.passwordHash,
            e.emailVerified && t(e.emailVerified), JSON.stringify(e.attributes), t(now), t(now),
          ],
          transaction,
        );
        await indexed.keep(e.applicationId, id, null, e.attributes, transaction);
        return { ...e, email: normalized(e.email), username: normalized(e.username), id, created: now, lastUpdated: now, version: 1, disabled: null };
      } catch (err) {
        throw err instanceof DuplicateKeyError ? duplicateFrom(err) : err;
      }
    },

    /**
     * Changes a record locked in this transaction (findForUpdate): `attributes` are merged into
     * its attribute set, the other parts replaced. A taken email or username raises
     * DuplicateAttributeError. Answers the record as it commits.
     */
    async update(locked: UserRecord, change: RecordChange, now: Date, transaction: Tx): Promise<UserRecord> {
      return write(locked, merged(locked, change), now, transaction);
    },

    /**
     * Writes a record's whole client-written state (entity.update and entity.replace compute it):
     * email, username, emailVerified and the attribute set; the password hash only when given.
     */
    replace: (locked: UserRecord, next: Required<Omit<RecordChange, 'passwordHash'>> & Pick<RecordChange, 'passwordHash'>, now: Date, transaction: Tx) =>
      write(locked, next, now, transaction),

    /** A change of what belongs to the record without being a column of it (linked identities): a new version. */
    touch: (locked: UserRecord, now: Date, transaction: Tx) => write(locked, {}, now, transaction),

    async claim(entityId: number, now: Date, transaction: Tx): Promise<void> {
      await sql.change(sql.dialect === 'mysql'
        ? `INSERT INTO account_claims (entity_id, claimed_at) VALUES (?, ?) ON DUPLICATE KEY UPDATE claimed_at = ${sql.later('claimed_at')}`
        : 'INSERT INTO account_claims (entity_id, claimed_at) VALUES (?, ?) ON CONFLICT (entity_id) DO UPDATE SET claimed_at = excluded.claimed_at',
      sql.dialect === 'mysql' ? [entityId, sql.time(now), sql.time(now)] : [entityId, sql.time(now)], transaction);
    },

    /** Sets a time attribute of a locked record (emailVerified has a column; others live in attributes). */
    setTime(locked: UserRecord, attribute: string, at: Date, transaction: Tx): Promise<UserRecord> {
      return write(locked, attribute === 'emailVerified'
        ? { emailVerified: at }
        // lastLogin is kept as ISO (renderUser formats it); others as the API shows timestamps
        : { attributes: { ...locked.attributes, [attribute]: attribute === 'lastLogin' ? at.toISOString() : formatTimestamp(at) } }, at, transaction);
    },

    /**
     * A sign-in's write of the record, in the caller's transaction: `next` (updated(read, …):
     * lastLogin, and a rehashed password) if the record is still at the version `read` has. False
     * when it changed since: nothing is written. (Database's `records.signInAlone` adds the credentials
     * and the snapshot's outbox row in the same commit, or has the stored procedure do it all.)
     */
    async writeSignIn(read: UserRecord, next: UserRecord, transaction: Tx): Promise<boolean> {
      try {
        await write(read, { passwordHash: next.passwordHash, attributes: next.attributes }, next.lastUpdated, transaction);
        return true;
      } catch (e) {
        if (e instanceof StaleRecordError) return false;
        throw e;
      }
    },

    /** Scoped to the application: another application's record is never found. */
    async find(applicationId: number, key: RecordKey, transaction?: Tx): Promise<UserRecord | undefined> {
      // raw SQL: this lookup is on every sign-in, token and profile path
      const [column, value] = keyColumn(key);
      const rows = await sql.select<EntityRow>(`SELECT * FROM entities WHERE ${column} = ? AND application_id = ? LIMIT 1`, [value, applicationId], transaction);
      return rows[0] ? toRecord(rows[0]) : undefined;
    },

    /**
     * `find` by email or username with the record's identities, read in the same statement: the
     * sign-in answers capture_user and writes a snapshot with them, and this saves it a query.
     */
    async findWithProfiles(applicationId: number, key: { email: string } | { username: string }) {
      const [column, value] = keyColumn(key);
      const rows = await sql.select<EntityRow & {
        p_id: number | null; p_provider: string; p_identifier: string; p_data: string; p_created_at: Date; f_totp: number | string; f_passkeys: number | string;
      }>(
        // with what the account signs in with beside its password (the sign-in asks next): one statement
        `SELECT e.*, p.id AS p_id, p.provider AS p_provider, p.identifier AS p_identifier, p.data AS p_data, p.created_at AS p_created_at,
           EXISTS (SELECT 1 FROM second_factors f WHERE f.application_id = e.application_id AND f.entity_id = e.id AND f.kind = 'totp' AND f.confirmed_at IS NOT NULL) AS f_totp,
           EXISTS (SELECT 1 FROM passkeys k WHERE k.application_id = e.application_id AND k.entity_id = e.id) AS f_passkeys
         FROM entities e LEFT JOIN profiles p ON p.entity_id = e.id AND p.application_id = e.application_id
         WHERE e.${column} = ? AND e.application_id = ?`,
        [value, applicationId],
      );
      if (rows.length === 0) return undefined;
      const record = toRecord(rows[0]);
      // ordered here: ORDER BY on this join sorts in a temporary table (the row has TEXT columns), several times the cost of the lookup
      const profiles = rows.filter((r) => r.p_id !== null).map((r) => toProfile({
        id: r.p_id!, application_id: r.application_id, entity_id: r.id, provider: r.p_provider, identifier: r.p_identifier, data: r.p_data, created_at: r.p_created_at,
      })).sort((a, b) => a.id - b.id);
      return { record, profiles, factors: { totp: Number(rows[0].f_totp) === 1, passkeys: Number(rows[0].f_passkeys) === 1 } };
    },

    /**
     * The ids of the records matching `filter` (all without one), one page sorted by `sortOn`, with
     * the bytes of each one's stored attributes: what reading them would cost, known before
     * anything large is read. Both are compiled here for this engine (src/db/entity-filter.ts:
     * FilterUseError for what they cannot use). The database stops it after `timeoutMs`.
     */
    async searchPage(
      applicationId: number, filterTree: Filter | undefined, sortOn: readonly string[],
      page: { limit: number; offset: number }, timeoutMs: number,
    ): Promise<{ id: number; bytes: number }[]> {
      const filter = compiled(filterTree, await readyIndexes(applicationId));
      const sort = compileSort([...sortOn], sql.dialect);
      const bytes = sql.dialect === 'mysql' ? 'LENGTH(e.attributes)' : 'LENGTH(CAST(e.attributes AS BLOB))';
      const rows = await sql.selectBounded<{ id: number | string; bytes: number | string }>(
        `SELECT e.id, ${bytes} AS bytes FROM entities e WHERE e.application_id = ? AND (${filter.where}) ORDER BY ${sort.orderBy} LIMIT ? OFFSET ?`,
        [applicationId, ...filter.values, ...sort.values, page.limit, page.offset], timeoutMs,
      );
      return rows.map((r) => ({ id: Number(r.id), bytes: Number(r.bytes) }));
    },

    /** Compiles the filter or the sort for this engine and drops it: FilterUseError for what a search could not use. */
    checkSearch(part: { filter: Filter } | { sortOn: readonly string[] }): void {
      if ('filter' in part) compiled(part.filter);
      else compileSort([...part.sortOn], sql.dialect);
    },

    /** The records with these ids, in the order of `ids` (one that was deleted meanwhile is left out). */
    async findByIds(applicationId: number, ids: number[]): Promise<UserRecord[]> {
      if (ids.length === 0) return [];
      const rows = await sql.select<EntityRow>(
        `SELECT * FROM entities WHERE application_id = ? AND id IN (${ids.map(() => '?').join(', ')})`, [applicationId, ...ids],
      );
      const byId = new Map(rows.map((r) => [Number(r.id), r]));
      return ids.flatMap((id) => (byId.has(id) ? [toRecord(byId.get(id)!)] : []));
    },

    /** How many records match `filter` (all without one); the database stops it after `timeoutMs`. */
    async count(applicationId: number, filterTree: Filter | undefined, timeoutMs: number, cap?: number): Promise<number> {
      const filter = compiled(filterTree, await readyIndexes(applicationId));
      const matching = `FROM entities e WHERE e.application_id = ? AND (${filter.where})`;
      const [row] = await sql.selectBounded<{ n: number | string }>(
        cap === undefined ? `SELECT COUNT(*) AS n ${matching}` : `SELECT COUNT(*) AS n FROM (SELECT 1 AS one ${matching} LIMIT ${Math.max(0, Math.floor(cap)) + 1}) capped`,
        [applicationId, ...filter.values], timeoutMs,
      );
      return Number(row.n);
    },

    async countPasswordFormats(applicationId: number): Promise<Record<string, number>> {
      // each prefix compared as bytes (SUBSTR, not LIKE: a prefix holds _), the first that matches names the format
      const cases = PASSWORD_FORMATS.map(() => 'WHEN SUBSTR(password_hash, 1, ?) = ? THEN ?').join(' ');
      const rows = await sql.select<{ format: string; n: number | string }>(
        `SELECT CASE WHEN password_hash IS NULL THEN 'none' ${cases} ELSE 'other' END AS format, COUNT(*) AS n FROM entities WHERE application_id = ? GROUP BY 1`,
        [...PASSWORD_FORMATS.flatMap(([prefix, format]) => [prefix.length, prefix, format]), applicationId],
      );
      const counts: Record<string, number> = {};
      for (const r of rows) counts[r.format] = (counts[r.format] ?? 0) + Number(r.n);
      return counts;
    },

    /** The record, locked until the transaction ends (MySQL: FOR UPDATE; SQLite writes one at a time). */
    async findForUpdate(applicationId: number, id: number, transaction: Tx): Promise<UserRecord | undefined> {
      const rows = await sql.select<EntityRow>(`SELECT * FROM entities WHERE id = ? AND application_id = ?${sql.forUpdate}`, [id, applicationId], transaction);
      return rows[0] ? toRecord(rows[0]) : undefined;
    },

    /**
     * Disables a user or enables it again (null): a state of the account, not of its attributes,
     * so the record's version and snapshots stay as they are.
     */
    async setDisabled(applicationId: number, id: number, disabled: Disabled | null, transaction: Tx): Promise<void> {
      await sql.change(
        'UPDATE entities SET disabled_at = ?, disabled_until = ?, disabled_reason = ? WHERE id = ? AND application_id = ?',
        [disabled && sql.time(disabled.at), disabled?.until ? sql.time(disabled.until) : null, disabled?.reason ?? null, id, applicationId],
        transaction,
      );
    },

    /** Whether a sign-in's write from `read` to `next` changes a value an index keeps (then it runs as statements, which keep it). */
    indexedChange: (read: UserRecord, next: UserRecord) => indexed.changes(read.applicationId, read.attributes, next.attributes),

    /** Deletes a record; its credentials, linked identities and indexed values go with it (ON DELETE CASCADE). */
    async remove(record: UserRecord, transaction: Tx): Promise<boolean> {
      return (await sql.change('DELETE FROM entities WHERE id = ? AND application_id = ?', [record.id, record.applicationId], transaction)) === 1;
    },
  };
}
export type EntityQueries = ReturnType<typeof createRecordQueries>;
