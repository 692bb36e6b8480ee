import type { ConnectionSettings, ConnectionStore, StoredConnection } from '../../domain/storage/connections';
import { asDate } from '../models';
import type { Sql } from '../sql';

interface Row {
  id: number | string; application_id: number | string; organization_id: number | string; public_id: string; name: string; settings: string;
  secret_sealed: string | null; required: number | boolean | string; created_at: Date | string; updated_at: Date | string; org_public_id?: string;
}

const toConnection = (r: Row): StoredConnection => ({
  id: Number(r.id), applicationId: Number(r.application_id), organizationKey: Number(r.organization_id), publicId: r.public_id, name: r.name,
  settings: JSON.parse(r.settings) as ConnectionSettings, secretSealed: r.secret_sealed, required: r.required === true || Number(r.required) === 1,
  createdAt: asDate(r.created_at), updatedAt: asDate(r.updated_at),
});

/** Organizations' enterprise connections (ConnectionStore of the storage contract) in SQL. */
export function createConnectionQueries(sql: Sql): ConnectionStore {
  const t = sql.time;
  const find: ConnectionStore['find'] = async (applicationId, publicId, tx) => {
    const [row] = await sql.select<Row>(`SELECT * FROM organization_connections WHERE application_id = ? AND public_id = ?${tx ? sql.forUpdate : ''}`, [applicationId, publicId], tx);
    return row ? toConnection(row) : undefined;
  };
  const withOrganization = (rows: Row[]) => rows.map((r) => ({ connection: toConnection(r), organizationId: r.org_public_id! }));
  return {
    async insert(c, now, tx) {
      await sql.change(
        'INSERT INTO organization_connections (application_id, organization_id, public_id, type, name, settings, secret_sealed, required, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
        [c.applicationId, c.organizationKey, c.publicId, c.settings.type, c.name, JSON.stringify(c.settings), c.secretSealed, c.required, t(now), t(now)], tx,
      );
      return (await find(c.applicationId, c.publicId, tx))!;
    },
    find,
    async listOf(organizationKey, tx) {
      return (await sql.select<Row>('SELECT * FROM organization_connections WHERE organization_id = ? ORDER BY id', [organizationKey], tx)).map(toConnection);
    },
    async listOfApplication(applicationId, limit) {
      return withOrganization(await sql.select<Row>(
        'SELECT c.*, o.organization_id AS org_public_id FROM organization_connections c JOIN organizations o ON o.id = c.organization_id WHERE c.application_id = ? ORDER BY c.id LIMIT ?',
        [applicationId, limit],
      ));
    },
    async findByDomain(applicationId, domain) {
      return withOrganization(await sql.select<Row>(
        'SELECT c.*, o.organization_id AS org_public_id FROM organization_domains d JOIN organization_connections c ON c.organization_id = d.organization_id '
        + "JOIN organizations o ON o.id = d.organization_id WHERE d.application_id = ? AND d.domain = ? AND d.verified_at IS NOT NULL AND d.verified_by = 'operator' ORDER BY c.id",
        [applicationId, domain],
      ));
    },
    async summary(applicationId) {
      const rows = await sql.select<{ required: number | boolean | string }>('SELECT required FROM organization_connections WHERE application_id = ? ORDER BY required DESC LIMIT 1', [applicationId]);
      return { connections: rows.length > 0, required: rows.length > 0 && (rows[0].required === true || Number(rows[0].required) === 1) };
    },
    async findRequired(applicationId, entityId) {
      return withOrganization(await sql.select<Row>(
        'SELECT c.*, o.organization_id AS org_public_id FROM organization_members m JOIN organization_connections c ON c.organization_id = m.organization_id '
        + 'JOIN organizations o ON o.id = m.organization_id WHERE m.entity_id = ? AND c.application_id = ? AND c.required = ? ORDER BY c.id',
        [entityId, applicationId, true],
      ));
    },
    async update(applicationId, publicId, change, now, tx) {
      const sets: string[] = [];
      const values: unknown[] = [];
      if (change.name !== undefined) { sets.push('name = ?'); values.push(change.name); }
      if (change.settings !== undefined) { sets.push('settings = ?'); values.push(JSON.stringify(change.settings)); }
      if (change.secretSealed !== undefined) { sets.push('secret_sealed = ?'); values.push(change.secretSealed); }
      if (change.required !== undefined) { sets.push('required = ?'); values.push(change.required); }
      sets.push('updated_at = ?');
      values.push(t(now));
      return (await sql.change(`UPDATE organization_connections SET ${sets.join(', ')} WHERE application_id = ? AND public_id = ?`, [...values, applicationId, publicId], tx)) > 0;
    },
    async remove(applicationId, publicId, tx) {
      return (await sql.change('DELETE FROM organization_connections WHERE application_id = ? AND public_id = ?', [applicationId, publicId], tx)) > 0;
    },
  };
}
