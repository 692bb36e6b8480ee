import type { RecordKey, UserRecord } from '../../domain/storage/records';
import type { Services } from '../services';

/**
 * The record a key names, or a deleted one by its history (docs/lifecycle.md#erase): by its uuid,
 * from its tombstone, or by its id as it is (its history, if any, says the rest). What erasing a
 * record and reading its history name. Undefined when no record has the key and none had.
 */
export async function recordOrHistory(
  deps: Pick<Services, 'db'>, command: { applicationId: number; key: RecordKey },
): Promise<{ record?: UserRecord; entityId: number } | undefined> {
  const { applicationId, key } = command;
  const record = await deps.db.records.find(applicationId, key);
  if (record) return { record, entityId: record.id };
  if ('id' in key) return { entityId: key.id };
  const deleted = 'uuid' in key ? await deps.db.versions.deletedEntityId(applicationId, key.uuid) : undefined;
  return deleted === undefined ? undefined : { entityId: deleted };
}
