import { DataTypes, Model, ModelStatic, Optional, Sequelize } from 'sequelize';

/** Row shapes, as stored. JSON-valued columns are TEXT holding JSON (portable across backends). */
export interface ApplicationRow { id: number; name: string; settings: string; created_at: Date; updated_at: Date }
export interface ClientRow {
  id: number; application_id: number; client_id: string; secret_sealed: string; description: string;
  features: string; settings: string; created_at: Date; updated_at: Date;
}
export interface FlowRow { id: number; application_id: number; name: string; version: number; definition: string; checksum: string; created_at: Date }
export interface EntityRow {
  id: number; application_id: number; type_name: string; uuid: string; email: string | null; email_key: string | null;
  username: string | null; username_key: string | null; password_hash: string | null; email_verified: Date | null;
  attributes: string; created: Date; last_updated: Date; version: number; disabled_at: Date | null; disabled_until: Date | null; disabled_reason: string | null;
}
export interface ProfileRow { id: number; application_id: number; entity_id: number; provider: string; identifier: string; data: string; created_at: Date }
export interface CredentialRow {
  id: number; application_id: number; kind: string; value_hash: string; entity_id: number | null; client_id: number | null;
  for_client_id: number | null; redirect_uri: string | null; extra: string | null; family: string | null;
  expires_at: Date; used_at: Date | null; created_at: Date;
}
export interface SocialProviderRow {
  id: number; application_id: number; name: string; kind: string; issuer: string; client_id: string; secret_sealed: string;
  scopes: string; created_at: Date;
}
export interface EntityVersionRow {
  id: number; application_id: number; entity_id: number; valid_from: Date; version: number; deleted: boolean; entity_uuid: string | null; snapshot: string; sign_ins: string | null;
}
export interface OutboxRow {
  id: string; application_id: number; queue: string; name: string; payload: string; status: string;
  attempts: number; last_error: string | null; created_at: Date; updated_at: Date; entity_id: number | null; event_id?: string | null;
}

type Nullable<T> = { [K in keyof T]: null extends T[K] ? K : never }[keyof T];
type Creation<T> = Optional<T, Extract<keyof T, 'id'> | Nullable<T>>;
export type ModelOf<T extends object> = ModelStatic<Model<T, Creation<T>> & T>;

export interface Models {
  Application: ModelOf<ApplicationRow>;
  Client: ModelOf<ClientRow>;
  Flow: ModelOf<FlowRow>;
  Entity: ModelOf<EntityRow>;
  Profile: ModelOf<ProfileRow>;
  Credential: ModelOf<CredentialRow>;
  EntityVersion: ModelOf<EntityVersionRow>;
  Outbox: ModelOf<OutboxRow>;
  SocialProvider: ModelOf<SocialProviderRow>;
}

const pk = { type: DataTypes.BIGINT, primaryKey: true, autoIncrement: true };
const bigint = (allowNull = false) => ({ type: DataTypes.BIGINT, allowNull });
const str = (n: number, allowNull = false) => ({ type: DataTypes.STRING(n), allowNull });
const text = (allowNull = false) => ({ type: DataTypes.TEXT, allowNull });
const time = (allowNull = false) => ({ type: DataTypes.DATE(6), allowNull });
const opts = (tableName: string) => ({ tableName, timestamps: false, underscored: true });

/** Binds the models to one Sequelize instance (no global model classes: tests may hold several). */
export function defineModels(sequelize: Sequelize): Models {
  return {
    Application: sequelize.define('Application', {
      id: pk, name: str(63), settings: text(), created_at: time(), updated_at: time(),
    }, opts('applications')) as unknown as ModelOf<ApplicationRow>,
    Client: sequelize.define('Client', {
      id: pk, application_id: bigint(), client_id: str(64), secret_sealed: str(255), description: str(1024),
      features: text(), settings: text(), created_at: time(), updated_at: time(),
    }, opts('clients')) as unknown as ModelOf<ClientRow>,
    Flow: sequelize.define('Flow', {
      id: pk, application_id: bigint(), name: str(64), version: { type: DataTypes.INTEGER, allowNull: false },
      definition: text(), checksum: str(64), created_at: time(),
    }, opts('flows')) as unknown as ModelOf<FlowRow>,
    Entity: sequelize.define('Entity', {
      id: pk, application_id: bigint(), type_name: str(64), uuid: str(36), email: str(254, true), email_key: str(254, true),
      username: str(191, true), username_key: str(191, true), password_hash: str(255, true), email_verified: time(true),
      attributes: text(), created: time(), last_updated: time(), version: { type: DataTypes.INTEGER, allowNull: false, defaultValue: 1 },
      disabled_at: time(true), disabled_until: time(true), disabled_reason: str(500, true),
    }, opts('entities')) as unknown as ModelOf<EntityRow>,
    Profile: sequelize.define('Profile', {
      id: pk, application_id: bigint(), entity_id: bigint(), provider: str(64), identifier: str(255), data: text(), created_at: time(),
    }, opts('profiles')) as unknown as ModelOf<ProfileRow>,
    Credential: sequelize.define('Credential', {
      id: pk, application_id: bigint(), kind: str(32), value_hash: str(64), entity_id: bigint(true), client_id: bigint(true),
      for_client_id: bigint(true), redirect_uri: str(2048, true), extra: text(true), family: str(64, true),
      expires_at: time(), used_at: time(true), created_at: time(),
    }, opts('credentials')) as unknown as ModelOf<CredentialRow>,
    EntityVersion: sequelize.define('EntityVersion', {
      id: pk, application_id: bigint(), entity_id: bigint(), valid_from: time(), version: { type: DataTypes.INTEGER, allowNull: false },
      deleted: { type: DataTypes.BOOLEAN, allowNull: false }, entity_uuid: str(36, true), snapshot: text(), sign_ins: text(true),
    }, opts('entity_versions')) as unknown as ModelOf<EntityVersionRow>,
    Outbox: sequelize.define('Outbox', {
      id: { type: DataTypes.STRING(36), primaryKey: true }, application_id: bigint(), queue: str(32), name: str(64),
      payload: text(), status: str(16), attempts: { type: DataTypes.INTEGER, allowNull: false }, last_error: str(1024, true),
      created_at: time(), updated_at: time(), entity_id: bigint(true), event_id: { type: DataTypes.STRING(36), allowNull: true },
    }, opts('outbox')) as unknown as ModelOf<OutboxRow>,
    SocialProvider: sequelize.define('SocialProvider', {
      id: pk, application_id: bigint(), name: str(64), kind: str(16), issuer: str(512), client_id: str(255), secret_sealed: str(1024),
      scopes: str(512), created_at: time(),
    }, opts('social_providers')) as unknown as ModelOf<SocialProviderRow>,
  };
}

/** Raw rows hold Date objects on MySQL and strings (`2026-01-02 03:04:05.678 +00:00`) on SQLite. */
export function asDate(value: Date | string): Date;
export function asDate(value: Date | string | null): Date | null;
export function asDate(value: Date | string | null): Date | null {
  if (value === null || value instanceof Date) return value;
  return new Date(value);
}

/**
 * A DATETIME(6) literal as the models store it. Raw-query replacements would format a Date
 * without its milliseconds, which breaks expiry comparisons by up to a second.
 */
export function sqlTime(dialect: string, date: Date): string {
  const iso = date.toISOString().replace('T', ' ');
  return dialect === 'sqlite' ? iso.replace('Z', ' +00:00') : iso.replace('Z', '');
}
