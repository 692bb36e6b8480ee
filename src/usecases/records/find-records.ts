import type { Filter } from '../../domain/filter';
import { pick } from '../../domain/entity-attributes';
import { renderWithProfiles } from '../../domain/users';
import type { RecordDeps } from './deps';

/** Bytes of stored attributes one page of a search carries at most. */
export const MAX_ANSWER_BYTES = 10 * 1024 * 1024;

/** A page would carry more than MAX_ANSWER_BYTES: `fits` records of it would not. */
export class PageTooLargeError extends Error {
  constructor(readonly records: number, readonly fits: number) {
    super(`the ${records} records of this page hold more than ${MAX_ANSWER_BYTES / (1024 * 1024)} MiB`);
  }
}

/**
 * /entity.find: one page of the records matching `filter`, sorted by `sortOn`, as the API shows
 * them (only `paths` of each when given), and how many match in all when asked. Read from a replica
 * when there is one (docs/scaling.md#read-replicas): a search may miss the last changes. The sizes
 * are known before anything large is read: a page over MAX_ANSWER_BYTES is refused
 * (PageTooLargeError). FilterUseError and StatementTimeoutError come from storage.
 */
export async function findRecords(
  deps: Pick<RecordDeps, 'db' | 'entityQueryTimeoutMs'>,
  query: { applicationId: number; filter?: Filter; sortOn: readonly string[]; limit: number; offset: number; paths?: string[][]; total: boolean },
): Promise<{ results: Record<string, unknown>[]; total?: number }> {
  const { db, entityQueryTimeoutMs } = deps;
  const reads = db.lagTolerant;
  const page = await reads.records.searchPage(query.applicationId, query.filter, query.sortOn, { limit: query.limit, offset: query.offset }, entityQueryTimeoutMs);
  let bytes = 0;
  const fits = page.findIndex((r) => (bytes += r.bytes) > MAX_ANSWER_BYTES);
  if (fits >= 0) throw new PageTooLargeError(page.length, Math.max(1, fits));
  const records = await reads.records.findByIds(query.applicationId, page.map((r) => r.id));
  const profiles = await reads.profiles.forEntities(query.applicationId, records.map((r) => r.id));
  const results = records.map((r) => {
    const rendered = renderWithProfiles(r, profiles.get(r.id) ?? []);
    return query.paths ? pick(rendered, query.paths) : rendered;
  });
  return { results, ...(query.total && { total: await reads.records.count(query.applicationId, query.filter, entityQueryTimeoutMs) }) };
}

/**
 * Whether a search could use this filter or this sort (FilterUseError when not), checked before the
 * search runs: the API refuses what is wrong in the order it reads its parameters.
 */
export function checkSearch(deps: Pick<RecordDeps, 'db'>, part: { filter: Filter } | { sortOn: readonly string[] }): void {
  deps.db.records.checkSearch(part);
}

/** /entity.count: how many records match `filter` (from a replica when there is one). */
export function countRecords(deps: Pick<RecordDeps, 'db' | 'entityQueryTimeoutMs'>, query: { applicationId: number; filter?: Filter }): Promise<number> {
  return deps.db.lagTolerant.records.count(query.applicationId, query.filter, deps.entityQueryTimeoutMs);
}
