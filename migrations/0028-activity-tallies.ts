import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * The console's overview (docs/console.md#the-overview): what the kept events say per application
 * and day, tallied by a maintenance job so that the page reads a few dozen rows whatever the
 * traffic. `activity_tallies` counts sign-ins and registrations by method and failed sign-ins by
 * reason; `activity_sketches` holds each day's HyperLogLog of the accounts that were active (a
 * sign-in or a token refreshed), which merge into the active accounts of any span of days;
 * `activity_marks` is how far each source (the event store, the counted failures) has been
 * tallied. No personal data: counts, and registers of hashes of record ids.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const bin = { charset: 'utf8mb4', collate: 'utf8mb4_bin' };
  const app = { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' };
  // a day in UTC, as YYYY-MM-DD
  const day = { type: DataTypes.STRING(10), allowNull: false };

  await qi.createTable('activity_tallies', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    day,
    // signed_in, registered, failed
    metric: { type: DataTypes.STRING(16), allowNull: false },
    // the method (a sign-in's, a registration's) or the reason (a failure's)
    detail: { type: DataTypes.STRING(32), allowNull: false },
    count: { type: DataTypes.BIGINT, allowNull: false },
  }, bin);
  await qi.addIndex('activity_tallies', ['application_id', 'day', 'metric', 'detail'], { name: 'activity_tallies_day', unique: true });
  await qi.addIndex('activity_tallies', ['day'], { name: 'activity_tallies_all' });

  await qi.createTable('activity_sketches', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: app,
    day,
    registers: { type: DataTypes.BLOB, allowNull: false },
  }, bin);
  await qi.addIndex('activity_sketches', ['application_id', 'day'], { name: 'activity_sketches_day', unique: true });
  await qi.addIndex('activity_sketches', ['day'], { name: 'activity_sketches_all' });

  await qi.createTable('activity_marks', {
    source: { type: DataTypes.STRING(16), primaryKey: true, allowNull: false },
    last_id: { type: DataTypes.BIGINT, allowNull: false },
  }, bin);
  await qi.bulkInsert('activity_marks', [{ source: 'events', last_id: 0 }, { source: 'failures', last_id: 0 }]);
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.dropTable('activity_marks');
  await qi.dropTable('activity_sketches');
  await qi.dropTable('activity_tallies');
}
