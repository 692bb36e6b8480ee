import type { Transaction } from 'sequelize';
import { DuplicateKeyError, type AnyTx, type Sql } from '../sql';
import { formatTimestamp } from '../../domain/timestamps';
import { asDate, type EntityRow, type Models } from '../models';

/** A user record as stored; `attributes` holds every attribute without a column of its own. */
export interface EntityRecord {
  id: number;
  applicationId: number;
  typeName: string;
  uuid: string;
  email: string | null;
  username: string | null;
  passwordHash: string | null;
  emailVerified: Date | null;
  attributes: Record<string, unknown>;
  created: Date;
  lastUpdated: Date;
}

export type NewEntity = Omit<EntityRecord, 'id' | 'created' | 'lastUpdated'>;

/** The unique attributes a record can be found by (SPEC 2.3: `key_attribute`). */
export type EntityKey = { uuid: string } | { id: number } | { email: string } | { username: string };

export class DuplicateAttributeError extends Error {
  constructor(readonly attribute: 'email' | 'username' | 'uuid') {
    super(`${attribute} is already in use`);
  }
}

const toRecord = (row: EntityRow): EntityRecord => ({
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
});

/**
 * Emails and usernames as stored: Unicode NFC, so `josé` typed precomposed (é) or decomposed
 * (e + combining acute) is one and the same address.
 */
export const normalized = <T extends string | null | undefined>(value: T): T => (typeof value === 'string' ? value.normalize('NFC') as T : value);

/** The unique key of an email or username: NFC, then lower case, so case and composition never make a second account. */
export const uniqueKey = (value: string | null) => (value === null ? null : value.normalize('NFC').toLowerCase());

/** The indexed column and value a key looks up. */
function keyColumn(key: EntityKey): [string, string | number] {
  if ('uuid' in key) return ['uuid', key.uuid];
  if ('id' in key) return ['id', key.id];
  if ('email' in key) return ['email_key', uniqueKey(key.email)!];
  return ['username_key', uniqueKey(key.username)!];
}

/** Which unique attribute a refused row collided on, from the index named in the error. */
function duplicateFrom({ message }: DuplicateKeyError): DuplicateAttributeError {
  return new DuplicateAttributeError(/email/.test(message) ? 'email' : /username/.test(message) ? 'username' : 'uuid');
}

export function createEntityQueries({ Entity }: Models, sql: Sql) {
  return {
    /** Inserts a record; a taken email, username or uuid raises DuplicateAttributeError. */
    async insert(e: NewEntity, now: Date, transaction?: AnyTx): Promise<EntityRecord> {
      const t = sql.time;
      try {
        // raw SQL: on every registration
        const id = await sql.insert(
          `INSERT INTO entities (application_id, type_name, uuid, email, email_key, username, username_key, password_hash, email_verified, attributes, created, last_updated)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
          [
            e.applicationId, e.typeName, e.uuid, normalized(e.email), uniqueKey(e.email), normalized(e.username), uniqueKey(e.username), e.passwordHash,
            e.emailVerified && t(e.emailVerified), JSON.stringify(e.attributes), t(now), t(now),
          ],
          transaction,
        );
        return { ...e, email: normalized(e.email), username: normalized(e.username), id, created: now, lastUpdated: now };
      } catch (err) {
        throw err instanceof DuplicateKeyError ? duplicateFrom(err) : err;
      }
    },

    /** Changes a record; a taken email or username raises DuplicateAttributeError. */
    async update(
      record: EntityRecord,
      change: { email?: string; username?: string; passwordHash?: string; attributes?: Record<string, unknown> },
      now: Date,
      transaction?: AnyTx,
    ): Promise<void> {
      const set: [string, unknown][] = [
        ...(change.email !== undefined ? [['email', normalized(change.email)], ['email_key', uniqueKey(change.email)]] as [string, unknown][] : []),
        ...(change.username !== undefined ? [['username', normalized(change.username)], ['username_key', uniqueKey(change.username)]] as [string, unknown][] : []),
        ...(change.passwordHash !== undefined ? [['password_hash', change.passwordHash]] as [string, unknown][] : []),
        ...(change.attributes ? [['attributes', JSON.stringify({ ...record.attributes, ...change.attributes })]] as [string, unknown][] : []),
        ['last_updated', sql.time(now)],
      ];
      try {
        // raw SQL: a sign-in writes lastLogin here every time
        await sql.change(
          `UPDATE entities SET ${set.map(([column]) => `${column} = ?`).join(', ')} WHERE id = ? AND application_id = ?`,
          [...set.map(([, v]) => v), record.id, record.applicationId],
          transaction,
        );
      } catch (err) {
        throw err instanceof DuplicateKeyError ? duplicateFrom(err) : err;
      }
    },

    /** Scoped to the application: another application's record is never found. */
    async find(applicationId: number, key: EntityKey, transaction?: AnyTx): Promise<EntityRecord | undefined> {
      // raw SQL: this lookup is on every sign-in, token and profile path
      const [column, value] = keyColumn(key);
      const rows = await sql.select<EntityRow>(`SELECT * FROM entities WHERE ${column} = ? AND application_id = ? LIMIT 1`, [value, applicationId], transaction);
      return rows[0] ? toRecord(rows[0]) : undefined;
    },

    /** Records matching a compiled filter (src/db/entity-filter.ts), in the compiled order, one page. */
    async search(
      applicationId: number, filter: { where: string; values: unknown[] }, sort: { orderBy: string; values: unknown[] }, limit: number, offset: number,
    ): Promise<EntityRecord[]> {
      const rows = await sql.select<EntityRow>(
        `SELECT e.* FROM entities e WHERE e.application_id = ? AND (${filter.where}) ORDER BY ${sort.orderBy} LIMIT ? OFFSET ?`,
        [applicationId, ...filter.values, ...sort.values, limit, offset],
      );
      return rows.map(toRecord);
    },

    async count(applicationId: number, filter: { where: string; values: unknown[] }): Promise<number> {
      const [row] = await sql.select<{ n: number | string }>(
        `SELECT COUNT(*) AS n FROM entities e WHERE e.application_id = ? AND (${filter.where})`, [applicationId, ...filter.values],
      );
      return Number(row.n);
    },

    /** The record, locked until the transaction ends (MySQL: FOR UPDATE; SQLite writes one at a time). */
    async findForUpdate(applicationId: number, id: number, transaction: AnyTx): Promise<EntityRecord | undefined> {
      const lock = sql.dialect === 'mysql' ? ' FOR UPDATE' : '';
      const rows = await sql.select<EntityRow>(`SELECT * FROM entities WHERE id = ? AND application_id = ?${lock}`, [id, applicationId], transaction);
      return rows[0] ? toRecord(rows[0]) : undefined;
    },

    /**
     * Writes a record's whole state (entity.update and entity.replace compute it): email, username,
     * emailVerified and the attribute set; the password hash only when given.
     */
    async rewrite(
      record: EntityRecord,
      next: { email: string | null; username: string | null; emailVerified: Date | null; attributes: Record<string, unknown>; passwordHash?: string | null },
      now: Date,
      transaction: AnyTx,
    ): Promise<void> {
      const t = sql.time;
      try {
        await sql.change(
          `UPDATE entities SET email = ?, email_key = ?, username = ?, username_key = ?, email_verified = ?, attributes = ?, last_updated = ?${next.passwordHash !== undefined ? ', password_hash = ?' : ''}
           WHERE id = ? AND application_id = ?`,
          [
            normalized(next.email), uniqueKey(next.email), normalized(next.username), uniqueKey(next.username), next.emailVerified && t(next.emailVerified),
            JSON.stringify(next.attributes), t(now), ...(next.passwordHash !== undefined ? [next.passwordHash] : []), record.id, record.applicationId,
          ],
          transaction,
        );
      } catch (err) {
        throw err instanceof DuplicateKeyError ? duplicateFrom(err) : err;
      }
    },

    /** Deletes a record; its credentials and linked identities go with it (ON DELETE CASCADE). */
    async remove(record: EntityRecord, transaction?: AnyTx): Promise<boolean> {
      return (await sql.change('DELETE FROM entities WHERE id = ? AND application_id = ?', [record.id, record.applicationId], transaction)) === 1;
    },

    /** Sets a time attribute (emailVerified has a column; others live in attributes). */
    async setTime(record: EntityRecord, attribute: string, at: Date, transaction?: Transaction): Promise<void> {
      const change = attribute === 'emailVerified'
        ? { email_verified: at }
        // lastLogin is kept as ISO (renderUser formats it); others as the API shows timestamps
        : { attributes: JSON.stringify({ ...record.attributes, [attribute]: attribute === 'lastLogin' ? at.toISOString() : formatTimestamp(at) }) };
      await Entity.update({ ...change, last_updated: at }, { where: { id: record.id, application_id: record.applicationId }, transaction });
    },
  };
}
export type EntityQueries = ReturnType<typeof createEntityQueries>;
