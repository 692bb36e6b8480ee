import { DataTypes, type QueryInterface } from 'sequelize';
import { installProcedure, installsProcedures, type MigrationOptions } from './procedures';

/**
 * The event store (docs/activity.md): every change's events, written in the change's transaction,
 * ordered by id, each with its own id (`uid`, a UUID) that the outbox rows made for it name
 * (`outbox.event_id`); and the failed sign-ins of each account, one row per account, reason and minute
 * with a count. Neither has a foreign key to records: a deleted record's activity stays until the
 * retention sweep removes it. gh_sign_in_with_events and gh_rotate_with_event write a sign-in's and a
 * rotation's events in their one call; they are new procedures beside gh_sign_in_events and
 * gh_rotate_refresh (their parameters differ), which the pods of the release before keep calling
 * until they are replaced.
 */
export async function up({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  await qi.createTable('events', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    // the event's own id (a UUID), which the jobs made for it name
    uid: { type: DataTypes.STRING(36), allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    type: { type: DataTypes.STRING(64), allowNull: false },
    version: { type: DataTypes.INTEGER, allowNull: false },
    // the record it is about, or the person who acted
    account_id: { type: DataTypes.BIGINT, allowNull: true },
    actor_kind: { type: DataTypes.STRING(16), allowNull: false },
    actor_id: { type: DataTypes.STRING(255), allowNull: false },
    client_id: { type: DataTypes.STRING(255), allowNull: true },
    subject_kind: { type: DataTypes.STRING(16), allowNull: false },
    subject_id: { type: DataTypes.STRING(255), allowNull: false },
    address: { type: DataTypes.STRING(64), allowNull: true },
    user_agent: { type: DataTypes.STRING(512), allowNull: true },
    request_id: { type: DataTypes.STRING(64), allowNull: true },
    occurred_at: { type: DataTypes.DATE(6), allowNull: false },
    data: { type: DataTypes.TEXT, allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  // an account's activity, newest first; an event by its own id (time-ordered, so each new one is
  // written at the end of the index). No more: every sign-in and refresh writes its events, and each
  // index costs each of them. The stream and the retention sweep read the primary key in order.
  await qi.addIndex('events', ['application_id', 'account_id', 'occurred_at', 'id'], { name: 'events_account' });
  await qi.addIndex('events', ['uid'], { name: 'events_uid', unique: true });
  // an outbox row names the event it is for
  await qi.addColumn('outbox', 'event_id', { type: DataTypes.STRING(36), allowNull: true });

  await qi.createTable('sign_in_failures', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    account_id: { type: DataTypes.BIGINT, allowNull: false },
    reason: { type: DataTypes.STRING(32), allowNull: false },
    // the minute counted, and the first and last failure in it
    minute: { type: DataTypes.DATE, allowNull: false },
    first_at: { type: DataTypes.DATE(6), allowNull: false },
    last_at: { type: DataTypes.DATE(6), allowNull: false },
    count: { type: DataTypes.INTEGER, allowNull: false },
    // of the last failure counted
    client_id: { type: DataTypes.STRING(255), allowNull: true },
    address: { type: DataTypes.STRING(64), allowNull: true },
    user_agent: { type: DataTypes.STRING(512), allowNull: true },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('sign_in_failures', ['application_id', 'account_id', 'minute', 'reason'], { name: 'sign_in_failures_minute', unique: true });
  await qi.addIndex('sign_in_failures', ['application_id', 'account_id', 'first_at', 'id'], { name: 'sign_in_failures_account' });
  await qi.addIndex('sign_in_failures', ['minute'], { name: 'sign_in_failures_time' });

  if (installsProcedures(qi, options)) {
    await installProcedure(qi, 'gh_sign_in_with_events', 1);
    await installProcedure(qi, 'gh_rotate_with_event', 1);
  }
}

export async function down({ context: qi, options }: { context: QueryInterface; options?: MigrationOptions }): Promise<void> {
  if (installsProcedures(qi, options)) {
    await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_rotate_with_event');
    await qi.sequelize.query('DROP PROCEDURE IF EXISTS gh_sign_in_with_events');
  }
  await qi.removeColumn('outbox', 'event_id');
  await qi.dropTable('sign_in_failures');
  await qi.dropTable('events');
}
