import type { RecordKey, UserRecord } from '../../domain/storage/records';
import type { Services } from '../services';
import type { SecretBox } from '../../domain/secrets';

/**
 * The record a key names, or a deleted one by its history (docs/lifecycle.md#erase): by its uuid,
 * from its tombstone, or by its id as it is (its history, if any, says the rest). What erasing a
 * record and reading its history name. Undefined when no record has the key and none had.
 */
export async function recordOrHistory(
  deps: Pick<Services, 'box' | 'db'>, command: { applicationId: number; key: RecordKey },
): Promise<{ record?: UserRecord; entityId: number } | undefined> {
  const { applicationId, key } = command;
  const record = await deps.db.records.find(applicationId, key);
  if (record) return { record, entityId: record.id };
  if ('id' in key) return { entityId: key.id };
  if (!('uuid' in key)) return undefined;
  // deleted (its history names it), or erased (its tombstone keeps its uuid's keyed digest only)
  const deleted = await deps.db.versions.deletedEntityId(applicationId, key.uuid)
    ?? await deps.db.erasures.erasedByUuid(applicationId, erasedUuidDigest(deps.box, key.uuid));
  return deleted === undefined ? undefined : { entityId: deleted };
}

/** What an erasure's tombstone keeps of the record's uuid: a keyed digest (HMAC with the secret key), never the uuid. */
export const erasedUuidDigest = (box: SecretBox, uuid: string): string => box.tag(uuid.toLowerCase(), 'erased record uuid');
