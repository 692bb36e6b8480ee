import { DataTypes, type QueryInterface } from 'sequelize';

/**
 * Webhooks (docs/webhooks.md): an application's endpoints, each with its secret sealed (and the
 * previous one for a day after a rotation), and one delivery per endpoint and event with its
 * attempts, so that a delivery is never lost and never made twice for one event; the outbox's
 * index on the account gains its queue and status.
 */
export async function up({ context: qi }: { context: QueryInterface }): Promise<void> {
  const longText = qi.sequelize.getDialect() === 'sqlite' ? DataTypes.TEXT : DataTypes.TEXT('medium');
  await qi.createTable('webhook_endpoints', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    endpoint_id: { type: DataTypes.STRING(40), allowNull: false },
    url: { type: DataTypes.STRING(2048), allowNull: false },
    event_types: { type: DataTypes.TEXT, allowNull: false },
    description: { type: DataTypes.STRING(200), allowNull: false },
    include_record: { type: DataTypes.BOOLEAN, allowNull: false },
    secret_sealed: { type: DataTypes.TEXT, allowNull: false },
    previous_secret_sealed: { type: DataTypes.TEXT, allowNull: true },
    previous_until: { type: DataTypes.DATE(6), allowNull: true },
    disabled_at: { type: DataTypes.DATE(6), allowNull: true },
    failing_since: { type: DataTypes.DATE(6), allowNull: true },
    // the newest event in the store when it was added (or enabled again): where the catch-up of its
    // first seconds reads from; none once they were read back
    events_from: { type: DataTypes.BIGINT, allowNull: true },
    // since when it gets events: when it was added, or enabled again
    listening_since: { type: DataTypes.DATE(6), allowNull: false },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    updated_at: { type: DataTypes.DATE(6), allowNull: false },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('webhook_endpoints', ['application_id', 'endpoint_id'], { name: 'webhook_endpoints_id', unique: true });
  // one per endpoint and event; an account's (`account_key`) go to an endpoint in the order of `event_seq`
  await qi.createTable('webhook_deliveries', {
    id: { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true, allowNull: false },
    application_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'applications', key: 'id' }, onDelete: 'CASCADE' },
    endpoint_id: { type: DataTypes.BIGINT, allowNull: false, references: { model: 'webhook_endpoints', key: 'id' }, onDelete: 'CASCADE' },
    message_id: { type: DataTypes.STRING(64), allowNull: false },
    type: { type: DataTypes.STRING(64), allowNull: false },
    account_key: { type: DataTypes.STRING(32), allowNull: false },
    // the account the event is about (none for the application's events and a ping)
    account_id: { type: DataTypes.BIGINT, allowNull: true },
    // the event's place in the event store: an account's deliveries go in this order (0 for a ping)
    event_seq: { type: DataTypes.BIGINT, allowNull: false },
    payload: { type: longText, allowNull: false },
    state: { type: DataTypes.STRING(16), allowNull: false },
    attempts: { type: DataTypes.INTEGER, allowNull: false },
    next_attempt_at: { type: DataTypes.DATE(6), allowNull: false },
    // the last worker's claim of it (the lease is next_attempt_at)
    claim: { type: DataTypes.STRING(24), allowNull: true },
    // tried until then (made, or sent again, plus a day and two hours); given up after
    give_up_at: { type: DataTypes.DATE(6), allowNull: false },
    last_attempt_at: { type: DataTypes.DATE(6), allowNull: true },
    last_status: { type: DataTypes.INTEGER, allowNull: true },
    last_ms: { type: DataTypes.INTEGER, allowNull: true },
    last_answer: { type: DataTypes.STRING(512), allowNull: true },
    created_at: { type: DataTypes.DATE(6), allowNull: false },
    finished_at: { type: DataTypes.DATE(6), allowNull: true },
  }, { charset: 'utf8mb4', collate: 'utf8mb4_bin' });
  await qi.addIndex('webhook_deliveries', ['endpoint_id', 'message_id'], { name: 'webhook_deliveries_message', unique: true });
  await qi.addIndex('webhook_deliveries', ['endpoint_id', 'state', 'event_seq', 'id'], { name: 'webhook_deliveries_order' });
  await qi.addIndex('webhook_deliveries', ['endpoint_id', 'created_at'], { name: 'webhook_deliveries_time' });
  await qi.addIndex('webhook_deliveries', ['state', 'next_attempt_at'], { name: 'webhook_deliveries_due' });
  // an account's deliveries, for its erasure
  await qi.addIndex('webhook_deliveries', ['account_id'], { name: 'webhook_deliveries_account' });
  // an account's outbox rows by queue and status (what a delivery waiting for an earlier event's
  // fan-out asks, and the versions lookups): in place of the index on the account alone, so a busy
  // account's thousands of finished rows are not read to find its few pending ones
  await qi.addIndex('outbox', ['entity_id', 'queue', 'status'], { name: 'outbox_entity_queue' });
  await qi.removeIndex('outbox', 'outbox_entity');
}

export async function down({ context: qi }: { context: QueryInterface }): Promise<void> {
  await qi.addIndex('outbox', ['entity_id'], { name: 'outbox_entity' });
  await qi.removeIndex('outbox', 'outbox_entity_queue');
  await qi.dropTable('webhook_deliveries');
  await qi.dropTable('webhook_endpoints');
}
