import { DuplicateKeyError, type Sql } from '../sql';
import { IdentityTakenError, type StoredProfile, type StoredProvider } from '../../domain/storage/social';
import type { Tx } from '../../domain/storage/transactions';
import { asDate, type Models, type ProfileRow, type SocialProviderRow } from '../models';

const toProvider = (r: SocialProviderRow): StoredProvider => ({
  id: Number(r.id), applicationId: Number(r.application_id), name: r.name, kind: r.kind as StoredProvider['kind'], issuer: r.issuer,
  clientId: r.client_id, secretSealed: r.secret_sealed, scopes: r.scopes.split(' ').filter(Boolean),
});
export const toProfile = (r: ProfileRow): StoredProfile => ({
  id: Number(r.id), entityId: Number(r.entity_id), provider: r.provider, identifier: r.identifier, data: JSON.parse(r.data), created: asDate(r.created_at),
});

export function createSocialQueries({ SocialProvider, Profile }: Models, sql: Sql) {
  return {
    providers: {
      /** False when the application already has a provider of that name. */
      async insert(p: Omit<StoredProvider, 'id'>, now: Date, tx: Tx): Promise<boolean> {
        try {
          await sql.change(
            'INSERT INTO social_providers (application_id, name, kind, issuer, client_id, secret_sealed, scopes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
            [p.applicationId, p.name, p.kind, p.issuer, p.clientId, p.secretSealed, p.scopes.join(' '), sql.time(now)],
            tx,
          );
          return true;
        } catch (e) {
          if (e instanceof DuplicateKeyError) return false;
          throw e;
        }
      },
      /** A lag-tolerant read: a statement of sql.ts, bounded in time on a replica. */
      async list(applicationId: number): Promise<StoredProvider[]> {
        const rows = await sql.select<SocialProviderRow>('SELECT * FROM social_providers WHERE application_id = ? ORDER BY name', [applicationId]);
        return rows.map(toProvider);
      },
      async find(applicationId: number, name: string): Promise<StoredProvider | undefined> {
        const row = await SocialProvider.findOne({ where: { application_id: applicationId, name }, raw: true });
        return row ? toProvider(row) : undefined;
      },
      async remove(applicationId: number, name: string, tx: Tx): Promise<boolean> {
        return (await sql.change('DELETE FROM social_providers WHERE application_id = ? AND name = ?', [applicationId, name], tx)) > 0;
      },
    },
    profiles: {
      /** Links an identity to a record; IdentityTakenError when any record of the application has it. */
      async insert(
        p: { applicationId: number; entityId: number; provider: string; identifier: string; data: Record<string, unknown> },
        now: Date,
        transaction?: Tx,
      ): Promise<void> {
        try {
          // raw SQL: it joins the transactions that register a record and commit its email
          await sql.change(
            'INSERT INTO profiles (application_id, entity_id, provider, identifier, data, created_at) VALUES (?, ?, ?, ?, ?, ?)',
            [p.applicationId, p.entityId, p.provider, p.identifier, JSON.stringify(p.data), sql.time(now)],
            transaction,
          );
        } catch (e) {
          if (e instanceof DuplicateKeyError) throw new IdentityTakenError(p.identifier);
          throw e;
        }
      },
      /** A record's identities, oldest first; inside a transaction, as that transaction sees them. */
      async forEntity(applicationId: number, entityId: number, transaction?: Tx): Promise<StoredProfile[]> {
        // raw SQL: on every sign-in (capture_user) and every snapshot of a record
        const rows = await sql.select<ProfileRow>('SELECT * FROM profiles WHERE entity_id = ? AND application_id = ? ORDER BY id', [entityId, applicationId], transaction);
        return rows.map(toProfile);
      },
      /** The identities of many records in one query (entity.find), by record id; a lag-tolerant read (see list). */
      async forEntities(applicationId: number, entityIds: number[]): Promise<Map<number, StoredProfile[]>> {
        const out = new Map<number, StoredProfile[]>();
        if (entityIds.length === 0) return out;
        const rows = await sql.select<ProfileRow>(
          `SELECT * FROM profiles WHERE application_id = ? AND entity_id IN (${entityIds.map(() => '?').join(', ')}) ORDER BY id`, [applicationId, ...entityIds],
        );
        for (const p of rows.map(toProfile)) out.set(p.entityId, [...(out.get(p.entityId) ?? []), p]);
        return out;
      },
      async byIdentifier(applicationId: number, identifier: string): Promise<StoredProfile | undefined> {
        const row = await Profile.findOne({ where: { application_id: applicationId, identifier }, raw: true });
        return row ? toProfile(row) : undefined;
      },
      async remove(applicationId: number, entityId: number, identifier: string, transaction: Tx): Promise<boolean> {
        return (await sql.change('DELETE FROM profiles WHERE entity_id = ? AND identifier = ? AND application_id = ?', [entityId, identifier, applicationId], transaction)) > 0;
      },
    },
  };
}
export type SocialQueries = ReturnType<typeof createSocialQueries>;
