import { QueryTypes, type Sequelize } from 'sequelize';
import type { Umzug } from 'umzug';
import { MIGRATIONS } from '../../migrations';
import { installProcedure, markProcedures, missingProcedures, PROCEDURES } from '../../migrations/procedures';

/** Where umzug records the migrations applied (SequelizeStorage: one `name` per row). */
const STORAGE_TABLE = 'schema_migrations';

/**
 * The migrations the database has not applied, in order, read from STORAGE_TABLE: what umzug's
 * pending() answers, without loading umzug on every start and command.
 */
async function notApplied(sequelize: Sequelize): Promise<string[]> {
  const done = new Set<string>();
  if (await sequelize.getQueryInterface().tableExists(STORAGE_TABLE)) {
    const rows = await sequelize.query<{ name: string }>(`SELECT name FROM ${STORAGE_TABLE}`, { type: QueryTypes.SELECT });
    for (const row of rows) done.add(row.name);
  }
  return MIGRATIONS.map((m) => m.name).filter((name) => !done.has(name));
}

/** The umzug runner over the ordered migration list in migrations/index.ts. */
export function createMigrator({ sequelize, procedures }: Migratable): Umzug<ReturnType<Sequelize['getQueryInterface']>> {
  // umzug (with its command-line parser) loads only to apply or undo migrations, not with every start and command
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Umzug, SequelizeStorage } = require('umzug') as typeof import('umzug');
  return new Umzug({
    migrations: MIGRATIONS.map((m) => ({
      name: m.name,
      up: ({ context }) => m.up({ context, options: { procedures } }),
      down: ({ context }) => m.down({ context }),
    })),
    context: sequelize.getQueryInterface(),
    storage: new SequelizeStorage({ sequelize, tableName: STORAGE_TABLE }),
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
  const applied = (await notApplied(sequelize)).length > 0 ? (await createMigrator(db).up()).map((m) => m.name) : [];
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
  const pending = await notApplied(db.sequelize);
  // procedures the pending migrations install are theirs to install
  if (pending.length > 0 || !db.procedures) return pending;
  return (await missingProcedures(db.sequelize.getQueryInterface())).map((p) => `procedure ${p}`);
}
