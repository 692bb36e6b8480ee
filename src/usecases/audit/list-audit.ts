import { MAX_AUDIT_PAGE } from '../../domain/audit-query';
import type { AuditEntry, AuditQuery, AuditStore } from '../../domain/storage/audit';

/** One page of the audit log, newest first, and where the next page continues (none after the last). */
export interface AuditPage { entries: AuditEntry[]; next?: string }


/**
 * docs/audit.md: the audit log of an application, newest first, narrowed by the query's filters; a
 * page continues after the last entry of the one before (`before`), so entries written meanwhile
 * never shift it.
 */
export async function listAudit(deps: { audit: Pick<AuditStore, 'list'> }, query: AuditQuery): Promise<AuditPage> {
  const limit = Math.min(MAX_AUDIT_PAGE, Math.max(1, query.limit));
  const found = await deps.audit.list({ ...query, limit: limit + 1 });
  const entries = found.slice(0, limit);
  return { entries, ...(found.length > limit && { next: entries[entries.length - 1].id }) };
}
