import { asDate } from '../models';
import { DuplicateKeyError, type Sql } from '../sql';
import type { KeySlot, SigningAlg, SigningKeyStore, StoredSigningKey } from '../../domain/storage/signing-keys';
import type { Tx } from '../../domain/storage/transactions';

interface SigningKeyRow {
  application_id: number | string; kid: string; alg: string; slot: string | null; public_jwk: string; private_sealed: string;
  created_at: Date | string; retired_at: Date | string | null;
}

const toKey = (r: SigningKeyRow): StoredSigningKey => ({
  applicationId: Number(r.application_id), kid: r.kid, alg: r.alg as SigningAlg, slot: r.slot as KeySlot | null,
  publicJwk: JSON.parse(r.public_jwk) as Record<string, unknown>, privateSealed: r.private_sealed,
  createdAt: asDate(r.created_at), retiredAt: r.retired_at === null ? null : asDate(r.retired_at),
});

const INSERT = 'INSERT INTO signing_keys (application_id, kid, alg, slot, public_jwk, private_sealed, created_at, retired_at) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)';

/** The signing keys' store (SigningKeyStore of the storage contract) in SQL: the unique slot index makes each change single. */
export function createSigningKeyQueries(sql: Sql): SigningKeyStore {
  const insert = (k: Parameters<SigningKeyStore['add']>[0][number], tx: Tx) =>
    sql.insert(INSERT, [k.applicationId, k.kid, k.alg, k.slot, JSON.stringify(k.publicJwk), k.privateSealed, sql.time(k.createdAt)], tx);
  return {
    async published(applicationId, retiredAfter, tx) {
      const rows = await sql.select<SigningKeyRow>(
        'SELECT * FROM signing_keys WHERE application_id = ? AND (slot IS NOT NULL OR retired_at > ?) ORDER BY created_at, kid',
        [applicationId, sql.time(retiredAfter)], tx,
      );
      return rows.map(toKey);
    },
    async add(keys, tx) {
      try {
        for (const k of keys) await insert(k, tx);
        return true;
      } catch (e) {
        if (e instanceof DuplicateKeyError) return false;
        throw e;
      }
    },
    async rotate(applicationId, alg, nextKid, fresh, now, tx) {
      // the next key out of its slot first, by one conditional UPDATE: of rotations at once one
      // moves it (the others wait on its row, then find it gone) and the others write nothing
      const moved = await sql.change('UPDATE signing_keys SET slot = NULL WHERE application_id = ? AND slot = ? AND kid = ?', [applicationId, `next:${alg}`, nextKid], tx);
      if (moved !== 1) return false;
      await sql.change('UPDATE signing_keys SET slot = NULL, retired_at = ? WHERE application_id = ? AND slot = ?', [sql.time(now), applicationId, `current:${alg}`], tx);
      await sql.change('UPDATE signing_keys SET slot = ? WHERE application_id = ? AND kid = ?', [`current:${alg}`, applicationId, nextKid], tx);
      try {
        await insert(fresh, tx);
      } catch (e) {
        if (e instanceof DuplicateKeyError) throw new Error(`a next ${alg} key appeared while rotating: the rotation is rolled back`);
        throw e;
      }
      return true;
    },
    async sweepAlone(before) {
      return sql.change('DELETE FROM signing_keys WHERE slot IS NULL AND retired_at < ?', [sql.time(before)]);
    },
  };
}
