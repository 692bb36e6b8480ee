import { AuditQueryError, auditQuery, type AuditFilters } from '../../domain/audit-query';
import type { Actor } from '../../domain/events';
import type { AuditEntry } from '../../domain/storage/audit';
import { formatTimestamp } from '../../domain/timestamps';
import { errors } from '../../errors';
import { listAudit } from '../../usecases/audit/list-audit';
import type { Handler } from '../context';

/** The parameter each filter of a listing comes from. */
const PARAMETER: Record<AuditQueryError['field'], string> = {
  type: 'type', actor: 'actor', subject: 'subject', since: 'since', until: 'until', limit: 'max_results', before: 'before',
};

/** How the API shows who acted: the kind, and the client_id, operator name, record id or SCIM token id. */
function shownActor(a: Actor): Record<string, unknown> {
  switch (a.kind) {
    case 'client': return { kind: a.kind, client_id: a.clientId };
    case 'operator': return { kind: a.kind, name: a.name };
    case 'scim': return { kind: a.kind, token_id: a.tokenId };
    case 'account': return { kind: a.kind, record_id: a.accountId, ...(a.clientId !== undefined && { client_id: a.clientId }) };
    case 'system': return { kind: a.kind };
  }
}

/** An entry as the API (and `gatehouse audit`) shows it. */
export const shownAuditEntry = (e: AuditEntry) => ({
  id: e.id, occurred_at: formatTimestamp(e.occurredAt), type: e.type, version: e.version, actor: shownActor(e.actor),
  subject: e.subject, data: e.data, address: e.address ?? null, request_id: e.requestId ?? null,
});

/** /audit/list: the application's audit log, newest first, one page. */
export const listAuditEntries: Handler = async (ctx) => {
  const p = ctx.params;
  const filters: AuditFilters = {
    type: p.get('type'), actor: p.get('actor'), subject: p.get('subject'), since: p.get('since'), until: p.get('until'), limit: p.get('max_results'), before: p.get('before'),
  };
  let query;
  try {
    query = auditQuery(filters);
  } catch (e) {
    if (e instanceof AuditQueryError) throw errors.invalidArgument(PARAMETER[e.field], e.message);
    throw e;
  }
  const page = await listAudit({ audit: ctx.services.db.audit }, { applicationId: ctx.app.id, ...query });
  return { results: page.entries.map(shownAuditEntry), next: page.next ?? null };
};
