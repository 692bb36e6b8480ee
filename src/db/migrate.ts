import { Sequelize } from 'sequelize';
import { Umzug, SequelizeStorage } from 'umzug';
import { MIGRATIONS } from '../../migrations';
import { installProcedure, markProcedures, missingProcedures, PROCEDURES } from '../../migrations/procedures';

/** The umzug runner over the ordered migration list in migrations/index.ts. */
export function createMigrator({ sequelize, procedures }: Migratable): Umzug<ReturnType<Sequelize['getQueryInterface']>> {
  return new Umzug({
    migrations: MIGRATIONS.map((m) => ({
      name: m.name,
      up: ({ context }) => m.up({ context, options: { procedures } }),
      down: ({ context }) => m.down({ context }),
    })),
    context: sequelize.getQueryInterface(),
    storage: new SequelizeStorage({ sequelize, tableName: 'schema_migrations' }),
    logger: undefined,
  });
}

/** An open database and whether it runs the stored procedures (Database is one; never on SQLite). */
export interface Migratable { sequelize: Sequelize; procedures: boolean }

/**
 * Applies pending migrations, then installs the current version of any stored procedure the
 * database lacks (one migrated with procedures off, now run with them on) and marks those
 * installed before procedures carried their version; returns what it applied and installed.
 */
export async function migrate(db: Migratable): Promise<string[]> {
  const { sequelize } = db;
  const applied = (await createMigrator(db).up()).map((m) => m.name);
  if (!db.procedures) return applied;
  await markProcedures(sequelize.getQueryInterface());
  for (const missing of await missingProcedures(sequelize.getQueryInterface())) {
    const [name] = missing.split(' ');
    await installProcedure(sequelize.getQueryInterface(), name, PROCEDURES[name]);
    applied.push(`procedure ${missing}`);
  }
  return applied;
}

/** Names of migrations not applied yet, and of stored procedures to install (`procedure <name> <version>`). */
export async function pendingMigrations(db: Migratable): Promise<string[]> {
  const pending = (await createMigrator(db).pending()).map((m) => m.name);
  // procedures the pending migrations install are theirs to install
  if (pending.length > 0 || !db.procedures) return pending;
  return (await missingProcedures(db.sequelize.getQueryInterface())).map((p) => `procedure ${p}`);
}
