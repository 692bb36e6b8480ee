import { asDate } from '../models';
import type { Sql } from '../sql';
import type { FactorStore, StoredTotp } from '../../domain/storage/factors';
import type { Tx } from '../../domain/storage/transactions';

interface TotpRow {
  application_id: number | string; entity_id: number | string; secret_sealed: string; confirmed_at: Date | string | null;
  last_step: number | string | null; created_at: Date | string;
}

const toTotp = (r: TotpRow): StoredTotp => ({
  applicationId: Number(r.application_id), entityId: Number(r.entity_id), secretSealed: r.secret_sealed,
  confirmedAt: r.confirmed_at === null ? null : asDate(r.confirmed_at), lastStep: r.last_step === null ? null : Number(r.last_step), createdAt: asDate(r.created_at),
});

/** The second factors' store (FactorStore of the storage contract) in SQL: each change one conditional statement. */
export function createFactorQueries(sql: Sql): FactorStore {
  const OWN = "application_id = ? AND entity_id = ? AND kind = 'totp'";
  return {
    async summary(applicationId: number, entityId: number) {
      const [row] = await sql.select<{ totp: number | string; passkeys: number | string }>(
        `SELECT EXISTS (SELECT 1 FROM second_factors WHERE ${OWN} AND confirmed_at IS NOT NULL) AS totp,
           EXISTS (SELECT 1 FROM passkeys WHERE application_id = ? AND entity_id = ?) AS passkeys`,
        [applicationId, entityId, applicationId, entityId],
      );
      return { totp: Number(row?.totp) === 1, passkeys: Number(row?.passkeys) === 1 };
    },
    async totp(applicationId: number, entityId: number, tx?: Tx) {
      const [row] = await sql.select<TotpRow>(`SELECT * FROM second_factors WHERE ${OWN}`, [applicationId, entityId], tx);
      return row ? toTotp(row) : undefined;
    },
    async startTotp(applicationId: number, entityId: number, secretSealed: string, now: Date, tx: Tx) {
      // an enrollment not confirmed yet is replaced; a confirmed authenticator stays
      await sql.change(`DELETE FROM second_factors WHERE ${OWN} AND confirmed_at IS NULL`, [applicationId, entityId], tx);
      const kept = await sql.select<{ n: number }>(`SELECT 1 AS n FROM second_factors WHERE ${OWN}${sql.forUpdate}`, [applicationId, entityId], tx);
      if (kept.length > 0) return false;
      await sql.change(
        `INSERT INTO second_factors (application_id, entity_id, kind, secret_sealed, confirmed_at, last_step, created_at) VALUES (?, ?, 'totp', ?, NULL, NULL, ?)`,
        [applicationId, entityId, secretSealed, sql.time(now)], tx,
      );
      return true;
    },
    async confirmTotp(applicationId: number, entityId: number, secretSealed: string, step: number, now: Date, tx: Tx) {
      return (await sql.change(
        `UPDATE second_factors SET confirmed_at = ?, last_step = ? WHERE ${OWN} AND confirmed_at IS NULL AND secret_sealed = ?`,
        [sql.time(now), step, applicationId, entityId, secretSealed], tx,
      )) === 1;
    },
    async takeTotpStep(applicationId: number, entityId: number, step: number, tx: Tx) {
      return (await sql.change(
        `UPDATE second_factors SET last_step = ? WHERE ${OWN} AND confirmed_at IS NOT NULL AND (last_step IS NULL OR last_step < ?)`,
        [step, applicationId, entityId, step], tx,
      )) === 1;
    },
    async removeTotp(applicationId: number, entityId: number, tx: Tx) {
      return (await sql.change(`DELETE FROM second_factors WHERE ${OWN}`, [applicationId, entityId], tx)) > 0;
    },
  };
}
