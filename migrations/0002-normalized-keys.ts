import { QueryTypes, type QueryInterface } from 'sequelize';

/**
 * Emails and usernames are compared in Unicode NFC (see uniqueKey in src/db/repositories/entities.ts):
 * rows written before hold their keys as typed, so `josé` decomposed and precomposed had two keys.
 * Recomputes every key in batches by id. A row whose new key another row already holds keeps its
 * old key (both accounts stay usable; an operator merges them) instead of failing the migration.
 */
const BATCH = 500;

const key = (value: string | null) => (value === null ? null : value.normalize('NFC').toLowerCase());

export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const db = qi.sequelize;
  let after = 0;
  for (;;) {
    const rows = await db.query<{ id: number; email: string | null; username: string | null; email_key: string | null; username_key: string | null }>(
      'SELECT id, email, username, email_key, username_key FROM entities WHERE id > ? ORDER BY id LIMIT ?',
      { replacements: [after, BATCH], type: QueryTypes.SELECT },
    );
    if (rows.length === 0) return;
    for (const row of rows) {
      const email = key(row.email);
      const username = key(row.username);
      if (email === row.email_key && username === row.username_key) continue;
      try {
        await db.query('UPDATE entities SET email = ?, email_key = ?, username = ?, username_key = ? WHERE id = ?', {
          replacements: [row.email?.normalize('NFC') ?? null, email, row.username?.normalize('NFC') ?? null, username, row.id],
        });
      } catch (e) {
        if (!/unique|duplicate/i.test(String((e as Error).name) + String((e as Error).message))) throw e;
      }
    }
    after = Number(rows[rows.length - 1].id);
  }
}

export async function down(): Promise<void> {
  // keys in NFC are still valid keys for the older code: nothing to undo
}
