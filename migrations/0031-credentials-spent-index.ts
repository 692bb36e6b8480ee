import type { QueryInterface } from 'sequelize';

/**
 * Spent credentials by the time they were spent, for the sweep (docs/operations.md):
 * it deletes what expired, by `credentials_expires`, and what was spent before the retention, by this
 * index; without it the second half read the whole table for each batch, a cost growing with the
 * live tokens (measured by `npm run bench:growth`). A spend writes the entry near the newest ones.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addIndex('credentials', ['used_at'], { name: 'credentials_used' });
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.removeIndex('credentials', 'credentials_used');
}
