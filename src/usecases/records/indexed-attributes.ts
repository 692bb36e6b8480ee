import { event } from '../../domain/events';
import { IndexBuildRaced, IndexNameError, MAX_INDEXED_ATTRIBUTES, indexName, type IndexedAttribute } from '../../domain/indexed-attributes';
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
    const now = deps.clock.now();
    // counted under the application's row, claimed (written) first: parallel declarations never pass the limit
    await deps.db.applications.claim(command.applicationId, now, uow.tx);
    const outcome = await deps.db.attributeIndexes.declare(command.applicationId, name, MAX_INDEXED_ATTRIBUTES, now, uow.tx);
    if (outcome === 'full') {
      throw new IndexNameError(`this application has ${MAX_INDEXED_ATTRIBUTES} indexed attributes, the most it may (each costs every write of a record); remove one first`);
    }
    if (outcome === 'removing') throw new IndexNameError(`the index of ${name} is being removed; index it again in a minute`);
    const index = (await deps.db.attributeIndexes.list(command.applicationId, uow.tx)).find((a) => a.name === name)!;
    if (outcome === 'exists') return { index, declared: false };
    uow.record(event('attribute.indexed', command.applicationId, now, command.acting, { kind: 'attribute', id: name }, {}));
    return { index, declared: true };
  });
}

/** Removes `name`'s index (its values go in the background); IndexNameError when it is not indexed. */
export function unindexAttribute(deps: Pick<AdminDeps, 'clock' | 'db' | 'work'>, command: AdminCall & { name: string }): Promise<void> {
  const name = command.name.trim();
  return deps.work.run(async (uow) => {
    const now = deps.clock.now();
    if (!(await deps.db.attributeIndexes.remove(command.applicationId, name, now, uow.tx))) {
      throw new IndexNameError(`${name.slice(0, 64)} is not indexed in this application (see /attributes/list)`);
    }
    uow.record(event('attribute.unindexed', command.applicationId, now, command.acting, { kind: 'attribute', id: name }, {}));
  });
}

/** The application's indexed attributes, oldest first, each building or ready. */
export function listIndexedAttributes(deps: Pick<Services, 'db'>, command: { applicationId: number }): Promise<IndexedAttribute[]> {
  return deps.db.attributeIndexes.list(command.applicationId);
}

/**
 * The maintenance worker's build: up to `maxBatches` batches of `batchSize` records added to the
 * indexes being built (or the values of removed ones deleted), each batch in a short transaction
 * of its own. Answers the records done, and the indexes made ready and those gone.
 */
export async function buildAttributeIndexes(
  deps: Pick<Services, 'db' | 'clock'>, command: { batchSize: number; maxBatches: number },
): Promise<{ records: number; ready: { applicationId: number; name: string }[]; removed: { applicationId: number; name: string }[] }> {
  let records = 0;
  const ready: { applicationId: number; name: string }[] = [];
  const removed: { applicationId: number; name: string }[] = [];
  for (let i = 0; i < command.maxBatches; i++) {
    let built;
    try {
      built = await deps.db.attributeIndexes.buildAlone(command.batchSize, deps.clock.now());
    } catch (e) {
      // another worker is building the same index: it goes on, this one stops for now
      if (e instanceof IndexBuildRaced) break;
      throw e;
    }
    if (!built) break;
    records += built.records;
    if (built.ready) ready.push({ applicationId: built.applicationId, name: built.name });
    if (built.removed) removed.push({ applicationId: built.applicationId, name: built.name });
  }
  return { records, ready, removed };
}
