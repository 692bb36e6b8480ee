import { event } from '../../domain/events';
import { IndexNameError, MAX_INDEXED_ATTRIBUTES, indexName, type IndexedAttribute } from '../../domain/indexed-attributes';
import type { AdminCall, AdminDeps } from '../clients/deps';
import type { Services } from '../services';

/**
 * Indexed attributes (docs/entity-filters.md#indexed-attributes): an owner client (the admin API)
 * or an operator (the command line) declares an attribute of the records indexed; the maintenance
 * worker adds the existing records' values in batches, then /entity.find uses it.
 */

/**
 * Indexes `name` (a dotted path): its index is built in the background. IndexNameError when the
 * name cannot be indexed or the application has MAX_INDEXED_ATTRIBUTES already. Answers the index,
 * and whether this call declared it (false: it was already).
 */
export function indexAttribute(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { name: string }): Promise<{ index: IndexedAttribute; declared: boolean }> {
  const name = indexName(command.name);
  return deps.work.run(async (uow) => {
    const existing = await deps.db.attributeIndexes.list(command.applicationId, uow.tx);
    const found = existing.find((a) => a.name === name);
    if (found) return { index: found, declared: false };
    if (existing.length >= MAX_INDEXED_ATTRIBUTES) {
      throw new IndexNameError(`this application has ${MAX_INDEXED_ATTRIBUTES} indexed attributes, the most it may (each costs every write of a record); remove one first`);
    }
    const now = deps.clock.now();
    await deps.db.attributeIndexes.declare(command.applicationId, name, now, uow.tx);
    uow.record(event('attribute.indexed', command.applicationId, now, command.acting, { kind: 'attribute', id: name }, {}));
    return { index: { name, state: 'building' as const, created: now, ready: null }, declared: true };
  });
}

/** Removes `name`'s index; IndexNameError when it is not indexed. */
export function unindexAttribute(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { name: string }): Promise<void> {
  return deps.work.run(async (uow) => {
    if (!(await deps.db.attributeIndexes.remove(command.applicationId, command.name, uow.tx))) {
      throw new IndexNameError(`${command.name.slice(0, 64)} is not indexed in this application (see /attributes/list)`);
    }
    uow.record(event('attribute.unindexed', command.applicationId, deps.clock.now(), command.acting, { kind: 'attribute', id: command.name }, {}));
  });
}

/** The application's indexed attributes, oldest first, each building or ready. */
export function listIndexedAttributes(deps: Pick<Services, 'db'>, command: { applicationId: number }): Promise<IndexedAttribute[]> {
  return deps.db.attributeIndexes.list(command.applicationId);
}

/**
 * The maintenance worker's build: up to `maxBatches` batches of `batchSize` records added to the
 * indexes being built, each batch in a short transaction of its own. Answers the records added
 * and the indexes made ready (by application id and name).
 */
export async function buildAttributeIndexes(
  deps: Pick<Services, 'db' | 'clock'>, command: { batchSize: number; maxBatches: number },
): Promise<{ records: number; ready: { applicationId: number; name: string }[] }> {
  let records = 0;
  const ready: { applicationId: number; name: string }[] = [];
  for (let i = 0; i < command.maxBatches; i++) {
    const built = await deps.db.attributeIndexes.buildAlone(command.batchSize, deps.clock.now());
    if (!built) break;
    records += built.records;
    if (built.ready) ready.push({ applicationId: built.applicationId, name: built.name });
  }
  return { records, ready };
}
